#pragma once
// Who may ask for what on a listener: each listener of the server has a
// table of its own, and the router answers by the table it is given, never
// by asking which listener it serves.
//
// The operators' routes (/metrics, /status, /decode, Leaf's decode,
// /openapi.yaml) tell how the service runs and decode IDs; decoding an
// opaque ID undoes its permutation, so whoever may do it can read every
// opaque ID's time and count: a decryption oracle. With http.admin_listen
// they move to that listener; with http.admin_token_file, a request bearing
// the token ("Authorization: Bearer <token>") may use them on the main
// listener too. Opaque decoding is served on the admin listener, or to a
// request bearing the token, nowhere else.
//
//   route                     main, no admin    main, admin set    admin
//   /id /seq Leaf's get          served            served          absent
//   /health /ready               served            served          served
//   operators' routes            served            elsewhere       served
//   opaque decoding              token             token           served
//
//   served     anyone
//   token      with the token; 401 without one, 403 with another (or when
//              no token is configured: nothing may open it here)
//   elsewhere  404 (the admin listener has it); with the token, served
//   absent     404

#include <array>
#include <optional>

#include "snowflake/config/config.hpp"
#include "snowflake/http/responses.hpp"
#include "snowflake/runtime/metrics.hpp"

namespace snowflake::http {

enum class Access : std::uint8_t { served, token, elsewhere, absent };

struct RouteTable {
  std::array<Access, kRouteCount> routes{};  // by Route
  Access opaque_decoding = Access::token;
};

// The main listener's table (with or without an admin listener beside it),
// and the admin listener's.
RouteTable main_route_table(const HttpSettings& settings);
RouteTable admin_route_table();

// nullopt: the request may go on; else the refusal (401, 403 or 404 with
// our error body). `path` names the route in a 404.
std::optional<Response> check_access(Access access, const Request& req,
                                     const HttpSettings& settings, std::string_view path);

}  // namespace snowflake::http
