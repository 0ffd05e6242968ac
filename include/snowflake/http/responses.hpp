#pragma once
// Building HTTP responses: JSON, plain text, and the JSON errors every
// failure path answers with: {"error":"<stable_code>","message":"..."}.
// Shared by the router (routes) and the server (malformed requests).

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace snowflake::http {

namespace beast_http = boost::beast::http;
using Request = beast_http::request<beast_http::empty_body>;
using Response = beast_http::response<beast_http::string_body>;
using Status = beast_http::status;

inline constexpr unsigned kHttp11 = 11;

// Beast in Boost 1.74 speaks boost::string_view; the rest of us std's.
inline std::string_view to_std(boost::beast::string_view s) noexcept {
  return {s.data(), s.size()};
}
inline boost::beast::string_view to_beast(std::string_view s) noexcept {
  return {s.data(), s.size()};
}

Response json_response(Status status, std::string body, unsigned version = kHttp11);
Response text_response(Status status, std::string body, unsigned version = kHttp11);
Response error_response(Status status, std::string_view code, std::string_view message,
                        unsigned version = kHttp11);
// For HEAD: the headers a GET would get, Content-Length included (none for
// a probe_response), without the body (which a client would read as the
// start of the next response).
void omit_body(Response& res);
// HEAD on a route that hands out IDs or numbers: 200 with a GET's headers
// and no Content-Length (a GET's length depends on the numbers, and none is
// taken for a HEAD: a probe must not burn invoice numbers). omit_body
// leaves it without one.
Response probe_response(bool text, unsigned version = kHttp11);
// 503 with Retry-After: how long a client should wait, in whole seconds (>= 1).
Response unavailable_response(std::string_view code, std::string_view message,
                              std::chrono::milliseconds retry_after, unsigned version = kHttp11);

}  // namespace snowflake::http
