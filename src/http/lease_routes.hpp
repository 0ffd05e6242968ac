#pragma once
// The worker-ID lease routes, for generators in other processes (docs/api.md,
// "Worker-ID leases for your own generators"). Internal to the router.
//
//   POST   /v1/leases?holder=<name>[&duration_ms=N]          take one
//   PUT    /v1/leases/<worker_id>?token=T[&duration_ms=N][&last_timestamp_ms=L]   renew
//   DELETE /v1/leases/<worker_id>?token=T[&last_timestamp_ms=L]                    give back
//
// The answer comes from the daemon's lease thread (workers/lease_service.hpp):
// the connection waits on its event loop meanwhile.

#include <optional>
#include <string_view>

#include "snowflake/http/router.hpp"

namespace snowflake::http {

// The cluster's fence while it is up, the 503 /id answers (router.cpp):
// nothing is vouched for under it.
std::optional<Response> fence_refusal(const RouterContext& ctx);

// `path` starts with /v1/leases.
Answer lease_route(const Request& req, std::string_view path, std::string_view query,
                   RouterContext& ctx);

}  // namespace snowflake::http
