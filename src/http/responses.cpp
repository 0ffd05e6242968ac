#include "snowflake/http/responses.hpp"

#include <boost/beast/http/field.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace snowflake::http {

namespace {

Response make(Status status, std::string_view content_type, std::string body, unsigned version) {
  Response res{status, version};
  res.set(beast_http::field::content_type, to_beast(content_type));
  // IDs must never come from a cache: a cached ID handed out twice is a duplicate.
  res.set(beast_http::field::cache_control, "no-store");
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

}  // namespace

Response json_response(Status status, std::string body, unsigned version) {
  return make(status, "application/json", std::move(body), version);
}

Response text_response(Status status, std::string body, unsigned version) {
  return make(status, "text/plain; charset=utf-8", std::move(body), version);
}

Response error_response(Status status, std::string_view code, std::string_view message,
                        unsigned version) {
  nlohmann::ordered_json body{{"error", code}, {"message", message}};
  // Messages may quote the request, which may not be valid UTF-8: replace
  // such bytes rather than throw.
  return json_response(status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                       version);
}

void omit_body(Response& res) {
  if (!res.has_content_length()) return;  // a probe's (probe_response): no length to tell
  const auto length = res.body().size();
  res.body().clear();
  res.content_length(length);
}

Response probe_response(bool text, unsigned version) {
  Response res{Status::ok, version};
  res.set(beast_http::field::content_type, text ? "text/plain; charset=utf-8" : "application/json");
  res.set(beast_http::field::cache_control, "no-store");
  return res;
}

Response unavailable_response(std::string_view code, std::string_view message,
                              std::chrono::milliseconds retry_after, unsigned version) {
  Response res = error_response(Status::service_unavailable, code, message, version);
  const auto seconds = std::max<std::int64_t>(1, (retry_after.count() + 999) / 1000);
  res.set(beast_http::field::retry_after, std::to_string(seconds));
  return res;
}

}  // namespace snowflake::http
