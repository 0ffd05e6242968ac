#pragma once
// The HTTP API as a pure function: request in, response out. No sockets, so
// every route, format and error is unit-tested (and fuzzed) directly; the
// server only moves bytes.
//
//   GET /id/<tag>[?count=N][&format=text|json][&form=plain|opaque|uuid]
//                                                IDs (JSON, or text if asked)
//   GET /seq/<tag>[?count=N][&format=text|json]  a dense sequence's next numbers
//   GET /decode/<id>[?form=...&tag=<tag>]        an ID's fields, from any form
//   GET /health /ready /status /metrics          liveness, readiness, state, Prometheus
//   GET /openapi.yaml                            this API's contract (docs/openapi.yaml)
//   POST /v1/leases, PUT|DELETE /v1/leases/<worker_id>
//                                                worker-ID leases (lease_routes.hpp)
//   POST|PATCH|DELETE /machines/<namespace>      CosId's proxy API (cosid_routes.hpp)
// With http.leaf_compat, Meituan Leaf's routes too:
//   GET /api/snowflake/get/<key>                 one ID, the bare number (Leaf's text)
//   GET /decodeSnowflakeId?snowflakeId=N         an ID's fields with Leaf's names
//   GET /api/segment/get/<key>                   a sequence's next number, bare
// HEAD works wherever GET does. Which routes a listener serves, and to whom,
// is its route table's business (route_access.hpp).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/lease.hpp"
#include "snowflake/config/config.hpp"
#include "snowflake/config/coordinator_type.hpp"
#include "snowflake/http/answer.hpp"
#include "snowflake/http/responses.hpp"
#include "snowflake/http/route_access.hpp"
#include "snowflake/ids/generator.hpp"
#include "snowflake/runtime/coordination_gauges.hpp"
#include "snowflake/runtime/lease_calls.hpp"
#include "snowflake/runtime/liveness.hpp"
#include "snowflake/runtime/metrics.hpp"
#include "snowflake/runtime/worker_slot.hpp"
#include "snowflake/sequences/registry.hpp"

namespace snowflake::http {

class StrictForwarder;  // strict_forwarder.hpp

struct ServiceInfo {
  std::string service;
  CoordinatorType mode = CoordinatorType::static_id;  // coordinator.type
  BootClock::time_point started;
  unsigned io_threads = 1;
  std::optional<ConfiguredTimings> timings{};  // ZooKeeper modes: for /metrics
  std::uint32_t datacenter_id = 0;             // coordinator.datacenter_id (0 without the field)
};

struct RouterContext {
  const IdLayout& layout;
  const WorkerSlot& worker;  // empty until a worker ID is owned
  const Lease& lease;
  const CoordinationGauges& coordination;
  const Liveness& liveness;  // what /health answers
  Metrics& metrics;
  const HttpSettings& settings;
  ServiceInfo info;
  // The sequences this daemon serves; nullptr: none (sequences.enabled).
  SequenceRegistry* sequences = nullptr;
  std::chrono::milliseconds sequence_wait{1000};  // sequences.max_wait_ms
  // The forms IDs are handed out in; nullptr: plain only.
  const FormSettings* forms = nullptr;
  // What this listener serves, and to whom; nullptr: the main listener's
  // table without an admin listener (every route; opaque decoding by token).
  const RouteTable* routes = nullptr;
  // Set once the daemon is stopping (SIGTERM): /ready answers 503 stopping
  // while requests are still served (http.shutdown_delay_ms); nullptr: never.
  const std::atomic<bool>* stopping = nullptr;
  // Passes a strict sequence's requests on to its owner when another
  // daemon owns it (strict_forwarder.hpp); nullptr: refused 503 not_owner.
  StrictForwarder* forwarder = nullptr;
  // Where worker-ID lease requests go (workers/lease_service.hpp), and the
  // durations granted; nullptr: leases.enabled is off (503 leases_disabled).
  const LeaseDesk* leases = nullptr;
  LeaseLimits lease_limits{};
};

// The answer to a request: a reply, or (a dense sequence with nothing
// buffered, sequence_wait > 0) a wait the server keeps on its event loop;
// either way counted in the metrics once answered.
Answer handle_request(const Request& req, RouterContext& ctx);

// For a caller that cannot wait (the fuzz target): the reply, or a wait's
// last try at once.
Response answer_at_once(Answer answer);

// What GET /ready answers, as a boolean: may an ID be issued right now (and
// the daemon is not stopping)?
bool ready_to_issue(const RouterContext& ctx);

// The daemon's state in one line, for systemd's STATUS=, e.g.
// "worker ID 17 (recycle), lease valid, ZooKeeper connected".
std::string state_line(const RouterContext& ctx);

// For requests the server could not parse or refused before routing (too
// large, malformed, timed out): the error response, counted in the metrics.
Response reject_request(Status status, std::string_view code, std::string_view message,
                        RouterContext& ctx);

}  // namespace snowflake::http
