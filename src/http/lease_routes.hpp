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

#include <functional>
#include <optional>
#include <string_view>

#include "snowflake/http/router.hpp"

namespace snowflake::http {

// The cluster's fence while it is up, the 503 /id answers (router.cpp):
// nothing is vouched for under it.
std::optional<Response> fence_refusal(const RouterContext& ctx);

// Why a lease request may not be served here now (leases off, this daemon
// unable to issue IDs itself, the cluster's fence): the 503 to answer.
std::optional<Response> lease_refusal(const LeaseRequest& request, const RouterContext& ctx);

// Hands the request to the lease thread; the connection waits for its
// answer (at most 5 s: then `render` gets an unavailable refusal), counts
// it, and answers what `render` makes of it.
Answer ask_lease(LeaseRequest request, RouterContext& ctx,
                 std::function<Response(const LeaseCall::Outcome&)> render);

// `path` starts with /v1/leases.
Answer lease_route(const Request& req, std::string_view path, std::string_view query,
                   RouterContext& ctx);

}  // namespace snowflake::http
