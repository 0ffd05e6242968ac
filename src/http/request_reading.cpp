#include "snowflake/http/request_reading.hpp"

#include <fmt/format.h>
#include <boost/beast/http/error.hpp>

#include <cstdint>
#include <iterator>

namespace snowflake::http {

void apply_limits(RequestParser& parser, const RequestLimits& limits) {
  parser.header_limit(static_cast<std::uint32_t>(limits.header_bytes));
  parser.body_limit(0);  // no request of this API has a body
}

boost::beast::error_code parse_buffered(RequestParser& parser, boost::beast::flat_buffer& buffer) {
  boost::beast::error_code ec;
  while (!parser.is_done()) {
    if (buffer.size() == 0) return beast_http::error::need_more;
    const std::size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec) return ec;
  }
  return ec;
}

boost::beast::error_code parse_end(RequestParser& parser) {
  if (!parser.got_some()) return beast_http::error::end_of_stream;
  boost::beast::error_code ec;
  parser.put_eof(ec);
  return ec;
}

std::optional<Refusal> refusal_for_read_error(const boost::beast::error_code& error,
                                              const RequestLimits& limits) {
  using he = beast_http::error;
  if (error == he::end_of_stream) return std::nullopt;  // closed between requests
  if (error == he::header_limit) {
    return Refusal{Status::request_header_fields_too_large, "headers_too_large",
                   fmt::format("request headers are over {} bytes", limits.header_bytes)};
  }
  if (error == he::body_limit || error == he::unexpected_body) {
    return Refusal{Status::payload_too_large, "body_not_allowed",
                   "requests to this API carry no body"};
  }
  if (error.category() == beast_http::make_error_code(he::bad_method).category()) {
    // Any other parse error: garbage, HTTP/0.9, a bad header line, a request
    // cut off by the peer.
    return Refusal{Status::bad_request, "bad_request", "malformed HTTP request"};
  }
  return std::nullopt;  // the connection failed
}

std::optional<Refusal> refusal_for_request(const Request& request, const RequestLimits& limits) {
  const auto fields = static_cast<std::size_t>(std::distance(request.begin(), request.end()));
  if (fields > limits.header_fields) {
    return Refusal{Status::request_header_fields_too_large, "headers_too_large",
                   fmt::format("more than {} header fields", limits.header_fields)};
  }
  return std::nullopt;
}

}  // namespace snowflake::http
