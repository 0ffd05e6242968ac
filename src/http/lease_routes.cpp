#include "lease_routes.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <functional>
#include <memory>
#include <optional>

#include "id_answer.hpp"
#include "snowflake/base/clock.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/ids/layout.hpp"

namespace snowflake::http {

namespace {

using beast_http::field;
using beast_http::verb;

constexpr std::string_view kCollection = "/v1/leases";
// A holder renews at a third of its lease, as a daemon heartbeats at a third
// of its own: two renewals may fail before the lease runs out.
constexpr int kRenewalsPerLease = 3;
// How long a connection waits for ZooKeeper's answer. A take answered after
// it is never told to anyone: its worker ID comes back by the reaper (one
// still queued then is not served: LeaseCall::abandoned).
constexpr auto kAnswerWait = kLeaseAnswerWait;

Response bad(std::string_view code, const std::string& message) {
  return error_response(Status::bad_request, code, message);
}

// Decimal digits, no sign, no leading zero: one spelling for each number
// (a worker ID in a path names one lease).
std::optional<std::int64_t> parse_integer(std::string_view text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos ||
      (text.size() > 1 && text[0] == '0')) {
    return std::nullopt;
  }
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return n;
}

// A token is ours when it is 32 lowercase hex digits (lease_pool.cpp).
bool is_token(std::string_view token) {
  return token.size() == 32 &&
         token.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// The parameters each method takes, read and checked.
struct LeaseQuery {
  std::optional<std::string_view> holder;
  std::optional<std::int64_t> duration_ms;
  std::optional<std::string_view> token;
  std::optional<std::int64_t> last_timestamp_ms;
  std::optional<std::string_view> pool;  // "cluster" read as none
  std::optional<std::int64_t> worker_bits;
};

// The named pool a request is for; empty: the cluster's own.
std::string named_pool(const LeaseQuery& q) {
  if (!q.pool || *q.pool == kClusterLeasePool) return {};
  return std::string(*q.pool);
}

Result<LeaseQuery, Response> parse_lease_query(std::string_view query,
                                               std::initializer_list<std::string_view> allowed) {
  LeaseQuery q;
  auto refused = visit_parameters(
      query, [&](std::string_view key, std::string_view value) -> std::optional<Response> {
        if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
          return bad("unknown_parameter", fmt::format("this lease request takes {}; not \"{}\"",
                                                      fmt::join(allowed, ", "), key));
        }
        const bool again = (key == "holder" && q.holder) || (key == "token" && q.token) ||
                           (key == "duration_ms" && q.duration_ms) ||
                           (key == "last_timestamp_ms" && q.last_timestamp_ms) ||
                           (key == "pool" && q.pool) || (key == "worker_bits" && q.worker_bits);
        if (again) return bad("bad_request", fmt::format("{} is given more than once", key));
        if (key == "holder") {
          if (!is_valid_name(value)) {
            return bad("bad_holder",
                       fmt::format("holder must match [A-Za-z0-9._-]{{1,64}} (not . or ..), "
                                   "got \"{}\"",
                                   value));
          }
          q.holder = value;
        } else if (key == "pool") {
          if (!is_valid_name(value)) {
            return bad("bad_pool", fmt::format("pool must match [A-Za-z0-9._-]{{1,64}} (not . or "
                                               ".., \"{}\": the cluster's own), got \"{}\"",
                                               kClusterLeasePool, value));
          }
          q.pool = value;
        } else if (key == "worker_bits") {
          const auto n = parse_integer(value);
          if (!n || *n < 1 || *n > kMaxLeasePoolWorkerBits) {
            return bad("bad_pool", fmt::format("worker_bits must be 1 to {}, got \"{}\"",
                                               kMaxLeasePoolWorkerBits, value));
          }
          q.worker_bits = *n;
        } else if (key == "token") {
          if (!is_token(value)) {
            return bad("bad_token", "token must be the 32 hex digits the lease was taken with");
          }
          q.token = value;
        } else {
          const auto n = parse_integer(value);
          if (!n) {
            return bad(key == "duration_ms" ? "bad_duration" : "bad_timestamp",
                       fmt::format("{} must be a non-negative integer, got \"{}\"", key, value));
          }
          (key == "duration_ms" ? q.duration_ms : q.last_timestamp_ms) = *n;
        }
        return std::nullopt;
      });
  if (refused) return std::move(*refused);
  return q;
}

// The duration granted: as asked within the limits; not asked, `otherwise`
// (a take: the longest; a renewal: 0, the lease's own).
Result<std::chrono::milliseconds, Response> duration_of(const LeaseQuery& q,
                                                        const RouterContext& ctx,
                                                        std::chrono::milliseconds otherwise) {
  const auto longest = ctx.lease_limits.max_duration;
  if (!q.duration_ms) return otherwise;
  if (*q.duration_ms < ctx.lease_limits.min_duration.count()) {
    return bad("bad_duration", fmt::format("duration_ms must be at least {}, got {}",
                                           ctx.lease_limits.min_duration.count(), *q.duration_ms));
  }
  return std::min(longest, std::chrono::milliseconds(*q.duration_ms));
}

// The layout a holder composes its IDs in, every field spelled out: the
// fields from the most significant down in `order`, the epoch as Unix ms.
nlohmann::ordered_json layout_body(const IdLayout& layout) {
  const LayoutSettings& s = layout.settings();
  return {{"time_bits", s.time_bits},     {"datacenter_bits", s.datacenter_bits},
          {"worker_bits", s.worker_bits}, {"sequence_bits", s.sequence_bits},
          {"order", to_string(s.order)},  {"time_unit_ms", s.time_unit_ms},
          {"epoch_ms", s.epoch_ms}};
}

Response grant_body(const LeaseGrant& grant, const std::string& pool, const RouterContext& ctx,
                    bool with_token) {
  nlohmann::ordered_json body{{"worker_id", grant.worker_id},
                              {"pool", pool.empty() ? kClusterLeasePool : pool}};
  // The cluster's own pool: its layout, every field; a named pool's holders
  // compose their IDs in their own, of which only the worker ID bits are ours.
  if (pool.empty()) {
    body["datacenter_id"] = ctx.info.datacenter_id;
  } else {
    body["worker_bits"] = grant.worker_bits;
  }
  body["lease_ms"] = grant.duration.count();
  body["renew_after_ms"] = grant.duration.count() / kRenewalsPerLease;
  body["first_timestamp_ms"] = grant.first_timestamp_ms;
  body["max_timestamp_ms"] = grant.max_timestamp_ms;
  if (pool.empty()) body["layout"] = layout_body(ctx.layout);
  if (with_token) body["token"] = grant.token;
  return json_response(Status::ok, body.dump());
}

Response refusal_body(const LeaseRefusal& refusal) {
  switch (refusal.why) {
    case LeaseRefusal::Why::lost:
    case LeaseRefusal::Why::no_lease:  // a CosId machine's: not asked here
      return error_response(Status::gone, "lease_lost", refusal.message);
    case LeaseRefusal::Why::pool_exhausted:
      return unavailable_response("pool_exhausted", refusal.message, std::chrono::seconds(5));
    case LeaseRefusal::Why::no_pool:
      return error_response(Status::not_found, "no_such_pool", refusal.message);
    case LeaseRefusal::Why::pool_conflict:
      return error_response(Status::conflict, "pool_conflict", refusal.message);
    case LeaseRefusal::Why::unavailable:
      break;
  }
  return unavailable_response("lease_unavailable", refusal.message, std::chrono::seconds(1));
}

Response not_allowed(std::string_view path, std::string_view allow) {
  Response res = error_response(Status::method_not_allowed, "method_not_allowed",
                                fmt::format("{} only answers {}", path, allow));
  res.set(field::allow, to_beast(allow));
  return res;
}

// POST /v1/leases's request, read and checked.
Result<LeaseRequest, Response> read_take(std::string_view query, const RouterContext& ctx) {
  auto q = parse_lease_query(query, {"holder", "duration_ms", "pool", "worker_bits"});
  if (!q) return Response{std::move(q.error())};
  if (!q.value().holder) return bad("bad_holder", "holder is required: who takes the lease");
  if (q.value().worker_bits && named_pool(q.value()).empty()) {
    return bad("bad_pool", "worker_bits is a named pool's: the cluster's own has the layout's");
  }
  auto duration = duration_of(q.value(), ctx, ctx.lease_limits.max_duration);
  if (!duration) return Response{std::move(duration.error())};
  return LeaseRequest{LeaseRequest::Kind::take,
                      std::string(*q.value().holder),
                      0,
                      {},
                      duration.value(),
                      std::nullopt,
                      named_pool(q.value()),
                      q.value().worker_bits
                          ? std::optional<int>(static_cast<int>(*q.value().worker_bits))
                          : std::nullopt,
                      {}};
}

// PUT (renew) or DELETE (give back) /v1/leases/<worker_id>'s request.
Result<LeaseRequest, Response> read_renewal(bool renew, std::uint32_t worker_id,
                                            std::string_view path, std::string_view query,
                                            const RouterContext& ctx) {
  auto q = renew ? parse_lease_query(query, {"token", "duration_ms", "last_timestamp_ms", "pool"})
                 : parse_lease_query(query, {"token", "last_timestamp_ms", "pool"});
  if (!q) return Response{std::move(q.error())};
  if (!q.value().token) return bad("bad_token", "token is required: the one the take answered");
  // No holder can have stamped past its lease's end, at most the longest
  // lease from now: a larger stamp is a mistake (microseconds?) that would
  // hold the worker ID's floor up for ever.
  const std::int64_t latest =
      SystemClock::instance().wall_ms() + ctx.lease_limits.max_duration.count();
  if (q.value().last_timestamp_ms && *q.value().last_timestamp_ms > latest) {
    return bad("bad_timestamp",
               fmt::format("last_timestamp_ms {} is past any lease's end (now + the longest "
                           "lease is {}): a Unix time in ms",
                           *q.value().last_timestamp_ms, latest));
  }
  std::chrono::milliseconds duration{0};
  if (renew) {
    auto asked = duration_of(q.value(), ctx, std::chrono::milliseconds(0));
    if (!asked) return Response{std::move(asked.error())};
    duration = asked.value();
  }
  LeaseRequest request{renew ? LeaseRequest::Kind::renew : LeaseRequest::Kind::give_back,
                       {},
                       worker_id,
                       std::string(*q.value().token),
                       duration,
                       q.value().last_timestamp_ms,
                       named_pool(q.value()),
                       std::nullopt,
                       {}};
  if (request.pool.empty() && worker_id > ctx.layout.max_worker_id()) {
    return error_response(Status::not_found, "not_found",
                          fmt::format("no lease route for {}: the cluster's worker IDs end at {}",
                                      path, ctx.layout.max_worker_id()));
  }
  return request;
}

}  // namespace

Answer ask_lease(LeaseRequest request, RouterContext& ctx,
                 std::function<Response(const LeaseCall::Outcome&)> render) {
  auto call = (*ctx.leases)(std::move(request));
  return Wait{[call, render = std::move(render), &ctx](bool last) -> std::optional<Reply> {
                auto outcome = call->take_outcome();
                if (!outcome) {
                  if (!last) return std::nullopt;
                  return Reply{render(LeaseRefusal{
                      LeaseRefusal::Why::unavailable,
                      fmt::format("ZooKeeper did not answer within {} s", kAnswerWait.count())})};
                }
                ctx.metrics.count_lease(call->request(), *outcome);
                return Reply{render(*outcome)};
              },
              [call](std::weak_ptr<const Wake> wake) { call->subscribe(std::move(wake)); },
              BootClock::now() + kAnswerWait};
}

std::optional<Response> lease_refusal(const LeaseRequest& request, const RouterContext& ctx) {
  if (!ctx.leases) {
    return unavailable_response("leases_disabled",
                                "this daemon grants no worker-ID leases (leases.enabled)",
                                std::chrono::seconds(60));
  }
  // A daemon that may not issue IDs itself vouches for nobody's worker ID,
  // nor does one under the cluster's fence; a give-back is always taken.
  if (request.kind != LeaseRequest::Kind::give_back) {
    if (!ctx.lease.may_issue()) {
      const auto code = to_string(ctx.lease.state());
      return unavailable_response(code, fmt::format("this daemon may not issue IDs now ({})", code),
                                  std::chrono::seconds(1));
    }
    if (auto fenced = fence_refusal(ctx)) return fenced;
  }
  return std::nullopt;
}

Answer lease_route(const Request& req, std::string_view path, std::string_view query,
                   RouterContext& ctx) {
  const bool collection = path == kCollection;
  std::optional<std::uint32_t> worker_id;
  if (!collection) {
    // Within the widest pool's: which pool it is in, the query says.
    const auto id = parse_integer(path.substr(kCollection.size() + 1));
    const std::int64_t widest =
        std::max<std::int64_t>(ctx.layout.max_worker_id(), (1 << kMaxLeasePoolWorkerBits) - 1);
    if (!id || *id > widest) {
      return error_response(Status::not_found, "not_found",
                            fmt::format("no lease route for {}: /v1/leases/<worker ID>", path));
    }
    worker_id = static_cast<std::uint32_t>(*id);
  }
  const auto allow = collection ? std::string_view("POST") : std::string_view("PUT, DELETE");
  const verb method = req.method();
  if (collection ? method != verb::post : (method != verb::put && method != verb::delete_)) {
    return not_allowed(path, allow);
  }
  // The request read first: bad input gets its 4xx wherever it is sent.
  auto read = collection ? read_take(query, ctx)
                         : read_renewal(method == verb::put, *worker_id, path, query, ctx);
  if (!read) return Reply{std::move(read.error())};
  LeaseRequest request = std::move(read).value();
  if (auto refused = lease_refusal(request, ctx)) return std::move(*refused);
  const bool take = request.kind == LeaseRequest::Kind::take;
  const bool give_back = request.kind == LeaseRequest::Kind::give_back;
  std::string pool = request.pool;
  return ask_lease(std::move(request), ctx,
                   [take, give_back, pool = std::move(pool),
                    &ctx](const LeaseCall::Outcome& outcome) -> Response {
                     if (const auto* refusal = std::get_if<LeaseRefusal>(&outcome)) {
                       return refusal_body(*refusal);
                     }
                     const auto& grant = std::get<LeaseGrant>(outcome);
                     if (give_back) {
                       return json_response(
                           Status::ok,
                           nlohmann::ordered_json{{"worker_id", grant.worker_id},
                                                  {"pool", pool.empty() ? kClusterLeasePool : pool},
                                                  {"given_back", true}}
                               .dump());
                     }
                     return grant_body(grant, pool, ctx, take);
                   });
}

}  // namespace snowflake::http
