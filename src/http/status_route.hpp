#pragma once
// GET /status: the daemon's state in one JSON document (docs/api.md).
// Internal to the router.

#include "snowflake/http/router.hpp"

namespace snowflake::http {

Response status(RouterContext& ctx);

}  // namespace snowflake::http
