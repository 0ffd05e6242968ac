#pragma once
// Reading requests off a connection as the server does: one parser per
// request with our limits, and the answer to each way a request can be bad.
// The server and the HTTP fuzz target share it, so what is fuzzed is what is
// served.

#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "snowflake/http/responses.hpp"

namespace snowflake::http {

using RequestParser = beast_http::request_parser<beast_http::empty_body>;

struct RequestLimits {
  std::size_t header_bytes = std::size_t{8} * 1024;
  std::size_t header_fields = 100;
};

// Sets a fresh parser up for the next request of a connection.
void apply_limits(RequestParser& parser, const RequestLimits& limits);

// The server reads bytes itself and feeds them to the parser here, rather
// than with Beast's http::async_read_some, which reads on until the parser
// makes progress: the first byte of a request starts its deadline
// (request_timeout) even while its header is still incomplete.
//
// Feeds the buffered bytes to the parser and consumes what it used. No error
// with parser.is_done(): a request is whole (bytes of the next one may stay
// buffered). http::error::need_more: read more. Anything else: a parse error
// for refusal_for_read_error.
boost::beast::error_code parse_buffered(RequestParser& parser, boost::beast::flat_buffer& buffer);
// The peer closed the connection before the request was whole:
// end_of_stream if it sent nothing of it, else the parser's error.
boost::beast::error_code parse_end(RequestParser& parser);

// An answer to a request that is refused before it is routed.
struct Refusal {
  Status status;
  std::string_view code;  // one of the README's error codes
  std::string message;
};

// For a read that ended with `error` before the request was whole: what to
// answer, or nothing when there is nobody to answer (the peer closed or the
// connection failed).
std::optional<Refusal> refusal_for_read_error(const boost::beast::error_code& error,
                                              const RequestLimits& limits);

// For a request the parser accepted whole: a limit the parser does not check.
std::optional<Refusal> refusal_for_request(const Request& request, const RequestLimits& limits);

}  // namespace snowflake::http
