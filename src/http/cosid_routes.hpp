#pragma once
// CosId's proxy API (docs/api.md, "CosId's proxy API"), for its
// ProxyMachineIdDistributor: POST, PATCH and DELETE /machines/<namespace>,
// a namespace being a named lease pool; and for its segment distributor
// (cosid_segments.cpp): PATCH /segments/<namespace>/<name>. Internal to the
// router.

#include <string_view>

#include "snowflake/http/router.hpp"

namespace snowflake::http {

// A refusal in CosId's proxy's shape: {"code": .., "msg": ..}.
Response cosid_error(Status status, std::string_view code, const std::string& message);
// CosId's bad request: code "400" (nothing changed).
Response cosid_bad_request(const std::string& message);
// One of our refusals ({"error","message"}) in that shape, its status and
// Retry-After kept.
Response in_cosid_shape(Response ours);

// `path` starts with /machines/.
Answer cosid_machine_route(const Request& req, std::string_view path, std::string_view query,
                           RouterContext& ctx);

// `path` starts with /segments/.
Answer cosid_segment_route(const Request& req, std::string_view path, std::string_view query,
                           RouterContext& ctx);

}  // namespace snowflake::http
