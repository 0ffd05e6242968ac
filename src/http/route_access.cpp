#include "snowflake/http/route_access.hpp"

#include <fmt/format.h>
#include <boost/beast/http/field.hpp>

#include <algorithm>

#include "snowflake/base/sha256.hpp"

namespace snowflake::http {

namespace {

using beast_http::field;

constexpr std::array kOperators = {Route::decode, Route::leaf_decode, Route::status, Route::metrics,
                                   Route::openapi};
constexpr std::array kIssuing = {Route::id, Route::seq, Route::leaf_id, Route::leaf_segment,
                                 Route::leases};

enum class Bearer { none, matches, other };

// Whether the request bears the admin token. Compared as SHA-256 digests in
// constant time: neither the token's bytes nor its length leak through the
// time a refusal takes.
Bearer bearer_of(const Request& req, const HttpSettings& settings) {
  std::string_view header = to_std(req[field::authorization]);
  if (header.empty()) return Bearer::none;
  // "Bearer <token>"; the scheme's name in any case (RFC 9110, 11.1).
  const auto space = header.find(' ');
  const std::string_view scheme = header.substr(0, space);
  const bool bearer =
      scheme.size() == 6 && std::equal(scheme.begin(), scheme.end(), "bearer",
                                       [](char a, char b) { return (a | 0x20) == b; });
  if (!bearer || space == std::string_view::npos || !settings.admin_token_sha256) {
    return Bearer::other;
  }
  header.remove_prefix(space);
  const std::string_view token =
      header.substr(std::min(header.find_first_not_of(' '), header.size()));
  return same_digest(sha256(token), *settings.admin_token_sha256) ? Bearer::matches : Bearer::other;
}

Response unauthorized(std::string_view path) {
  Response res =
      error_response(Status::unauthorized, "unauthorized",
                     fmt::format("{} needs the admin token: Authorization: Bearer <token>", path));
  res.set(field::www_authenticate, R"(Bearer realm="snowflaked")");
  return res;
}

}  // namespace

RouteTable main_route_table(const HttpSettings& settings) {
  RouteTable t;
  t.routes.fill(Access::served);
  if (!settings.admin_listen.empty()) {
    for (const Route r : kOperators) t.routes[static_cast<std::size_t>(r)] = Access::elsewhere;
  }
  t.opaque_decoding = Access::token;
  return t;
}

RouteTable admin_route_table() {
  RouteTable t;
  t.routes.fill(Access::served);
  for (const Route r : kIssuing) t.routes[static_cast<std::size_t>(r)] = Access::absent;
  t.routes[static_cast<std::size_t>(Route::other)] = Access::absent;
  t.opaque_decoding = Access::served;
  return t;
}

std::optional<Response> check_access(Access access, const Request& req,
                                     const HttpSettings& settings, std::string_view path) {
  const auto not_here = [&] {
    return error_response(Status::not_found, "not_found", fmt::format("no route for {}", path));
  };
  if (access == Access::served) return std::nullopt;
  if (access == Access::absent) return not_here();
  if (access == Access::token && !settings.admin_token_sha256) {
    return error_response(
        Status::forbidden, "forbidden",
        fmt::format("{} is served on the admin listener (http.admin_listen), or here with the "
                    "admin token (http.admin_token_file), and neither opens it here",
                    path));
  }
  switch (bearer_of(req, settings)) {
    case Bearer::matches:
      return std::nullopt;
    case Bearer::other:
      return error_response(Status::forbidden, "forbidden",
                            "the Authorization header does not hold the admin token");
    case Bearer::none:
      break;
  }
  // Without credentials: a route that lives elsewhere is not here; one that
  // takes the token asks for it.
  return access == Access::elsewhere ? not_here() : unauthorized(path);
}

}  // namespace snowflake::http
