#pragma once
// CosId's proxy API for its ProxyMachineIdDistributor (docs/api.md, "CosId's
// proxy API"): POST, PATCH and DELETE /machines/<namespace>, a namespace
// being a named lease pool. Internal to the router.

#include <string_view>

#include "snowflake/http/router.hpp"

namespace snowflake::http {

// `path` starts with /machines/.
Answer cosid_machine_route(const Request& req, std::string_view path, std::string_view query,
                           RouterContext& ctx);

}  // namespace snowflake::http
