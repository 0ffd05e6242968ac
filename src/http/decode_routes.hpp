#pragma once
// The decoding routes: GET /decode/<id> in any form, and Leaf's GET
// /decodeSnowflakeId. Internal to the router.
//
//   /decode/<id>                         a plain ID's fields
//   /decode/<uuid>                       a UUID's ID (form=uuid is implied)
//   /decode/<n>?form=opaque&tag=<tag>    the ID an opaque ID of that tag
//                                        stands for: only where the route
//                                        table serves opaque decoding

#include <string_view>

#include "snowflake/http/router.hpp"

namespace snowflake::http {

Response decode(const Request& req, std::string_view id_text, std::string_view query,
                RouterContext& ctx);

// Leaf's LeafMonitorController fields, all strings.
Response leaf_decode(std::string_view query, RouterContext& ctx);

}  // namespace snowflake::http
