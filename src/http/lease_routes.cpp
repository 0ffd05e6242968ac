#include "lease_routes.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <memory>
#include <optional>

#include "id_answer.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/ids/layout_json.hpp"

namespace snowflake::http {

namespace {

using beast_http::field;
using beast_http::verb;

constexpr std::string_view kCollection = "/v1/leases";
// A holder renews at a third of its lease, as a daemon heartbeats at a third
// of its own: two renewals may fail before the lease runs out.
constexpr int kRenewalsPerLease = 3;
// How long a connection waits for ZooKeeper's answer. A take answered after
// it is never told to anyone: its worker ID comes back by the reaper.
constexpr auto kAnswerWait = std::chrono::seconds(5);

Response bad(std::string_view code, const std::string& message) {
  return error_response(Status::bad_request, code, message);
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
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
};

Result<LeaseQuery, Response> parse_lease_query(std::string_view query,
                                               std::initializer_list<std::string_view> allowed) {
  LeaseQuery q;
  auto refused = visit_parameters(
      query, [&](std::string_view key, std::string_view value) -> std::optional<Response> {
        if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
          return bad("unknown_parameter", fmt::format("this lease request takes {}; not \"{}\"",
                                                      fmt::join(allowed, ", "), key));
        }
        if (key == "holder") {
          if (!is_valid_name(value)) {
            return bad("bad_holder",
                       fmt::format("holder must match [A-Za-z0-9._-]{{1,64}} (not . or ..), "
                                   "got \"{}\"",
                                   value));
          }
          q.holder = value;
        } else if (key == "token") {
          if (!is_token(value)) {
            return bad("bad_token", "token must be the 32 hex digits the lease was taken with");
          }
          q.token = value;
        } else {
          const auto n = parse_integer(value);
          if (!n || *n < 0) {
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

// The duration granted: as asked within the limits, the longest if not asked.
Result<std::chrono::milliseconds, Response> duration_of(const LeaseQuery& q,
                                                        const RouterContext& ctx) {
  const auto longest = ctx.lease_limits.max_duration;
  if (!q.duration_ms) return longest;
  if (*q.duration_ms < ctx.lease_limits.min_duration.count()) {
    return bad("bad_duration", fmt::format("duration_ms must be at least {}, got {}",
                                           ctx.lease_limits.min_duration.count(), *q.duration_ms));
  }
  return std::min(longest, std::chrono::milliseconds(*q.duration_ms));
}

Response grant_body(const LeaseGrant& grant, const RouterContext& ctx, bool with_token) {
  nlohmann::json body{{"worker_id", grant.worker_id},
                      {"datacenter_id", ctx.info.datacenter_id},
                      {"lease_ms", grant.duration.count()},
                      {"renew_after_ms", grant.duration.count() / kRenewalsPerLease},
                      {"first_timestamp_ms", grant.first_timestamp_ms},
                      {"max_timestamp_ms", grant.max_timestamp_ms},
                      {"layout", nlohmann::json::parse(encode_layout(ctx.layout.settings()))}};
  if (with_token) body["token"] = grant.token;
  return json_response(Status::ok, body.dump());
}

Response refusal_body(const LeaseRefusal& refusal) {
  switch (refusal.why) {
    case LeaseRefusal::Why::lost:
      return error_response(Status::gone, "lease_lost", refusal.message);
    case LeaseRefusal::Why::pool_exhausted:
      return unavailable_response("pool_exhausted", refusal.message, std::chrono::seconds(5));
    case LeaseRefusal::Why::unavailable:
      break;
  }
  return unavailable_response("lease_unavailable", refusal.message, std::chrono::seconds(1));
}

// Hands the request to the lease thread; the connection waits for its answer.
Answer ask(LeaseRequest request, RouterContext& ctx) {
  auto call = (*ctx.leases)(std::move(request));
  const bool take = call->request().kind == LeaseRequest::Kind::take;
  const bool give_back = call->request().kind == LeaseRequest::Kind::give_back;
  return Wait{[call, take, give_back, &ctx](bool last) -> std::optional<Reply> {
                auto outcome = call->take_outcome();
                if (!outcome) {
                  if (!last) return std::nullopt;
                  return Reply{unavailable_response(
                      "lease_unavailable",
                      fmt::format("ZooKeeper did not answer within {} s", kAnswerWait.count()),
                      std::chrono::seconds(1))};
                }
                ctx.metrics.count_lease(call->request().kind, *outcome);
                if (const auto* refusal = std::get_if<LeaseRefusal>(&*outcome)) {
                  return Reply{refusal_body(*refusal)};
                }
                const auto& grant = std::get<LeaseGrant>(*outcome);
                if (give_back) {
                  return Reply{json_response(
                      Status::ok,
                      nlohmann::json{{"worker_id", grant.worker_id}, {"given_back", true}}.dump())};
                }
                return Reply{grant_body(grant, ctx, take)};
              },
              [call](std::weak_ptr<const Wake> wake) { call->subscribe(std::move(wake)); },
              BootClock::now() + kAnswerWait};
}

Response not_allowed(std::string_view path, std::string_view allow) {
  Response res = error_response(Status::method_not_allowed, "method_not_allowed",
                                fmt::format("{} only answers {}", path, allow));
  res.set(field::allow, to_beast(allow));
  return res;
}

}  // namespace

Answer lease_route(const Request& req, std::string_view path, std::string_view query,
                   RouterContext& ctx) {
  const bool collection = path == kCollection;
  std::optional<std::uint32_t> worker_id;
  if (!collection) {
    const auto id = parse_integer(path.substr(kCollection.size() + 1));
    if (!id || *id < 0 || *id > ctx.layout.max_worker_id()) {
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
  if (!ctx.leases) {
    return unavailable_response("leases_disabled",
                                "this daemon grants no worker-ID leases (leases.enabled)",
                                std::chrono::seconds(60));
  }
  // A daemon that may not issue IDs itself vouches for nobody's worker ID.
  if (!ctx.lease.may_issue()) {
    const auto code = to_string(ctx.lease.state());
    return unavailable_response(code, fmt::format("this daemon may not issue IDs now ({})", code),
                                std::chrono::seconds(1));
  }
  LeaseRequest request;
  if (collection) {
    auto q = parse_lease_query(query, {"holder", "duration_ms"});
    if (!q) return std::move(q.error());
    if (!q.value().holder) return bad("bad_holder", "holder is required: who takes the lease");
    auto duration = duration_of(q.value(), ctx);
    if (!duration) return std::move(duration.error());
    request = {LeaseRequest::Kind::take,
               std::string(*q.value().holder),
               0,
               {},
               duration.value(),
               std::nullopt};
  } else if (method == verb::put) {
    auto q = parse_lease_query(query, {"token", "duration_ms", "last_timestamp_ms"});
    if (!q) return std::move(q.error());
    if (!q.value().token) return bad("bad_token", "token is required: the one the take answered");
    auto duration = duration_of(q.value(), ctx);
    if (!duration) return std::move(duration.error());
    request = {
        LeaseRequest::Kind::renew,  {}, *worker_id, std::string(*q.value().token), duration.value(),
        q.value().last_timestamp_ms};
  } else {
    auto q = parse_lease_query(query, {"token", "last_timestamp_ms"});
    if (!q) return std::move(q.error());
    if (!q.value().token) return bad("bad_token", "token is required: the one the take answered");
    request = {LeaseRequest::Kind::give_back, {}, *worker_id,
               std::string(*q.value().token), {}, q.value().last_timestamp_ms};
  }
  return ask(std::move(request), ctx);
}

}  // namespace snowflake::http
