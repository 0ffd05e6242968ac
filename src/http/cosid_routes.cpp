// CosId's proxy API, answered as its ProxyMachineIdDistributor asks it
// (docs/api.md, "CosId's proxy API"): a namespace is a named lease pool
// (workers/lease_service.hpp), its machine ID a worker-ID lease found by the
// instance's ID, since CosId's guard and revert name nothing else.
//
//   POST   /machines/<ns>?instanceId=I&stable=B&machineBit=N&safeGuardDuration=PT..  distribute
//   PATCH  /machines/<ns>?instanceId=I&stable=B&safeGuardDuration=PT..              guard
//   DELETE /machines/<ns>?instanceId=I&stable=B                                     revert
//
// A success answers {"machineId": N, "lastTimeStamp": MS} (CosId waits until
// its clock passes lastTimeStamp: the lease's first timestamp); a refusal
// {"code": .., "msg": ..}: M-01 (no machine ID free), M-02 (the instance
// holds none), M-03 (its lease is lost), "400" for a bad request as CosId's
// own proxy says it, our codes otherwise.

#include "cosid_routes.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <charconv>
#include <optional>
#include <utility>

#include "id_answer.hpp"
#include "lease_routes.hpp"
#include "snowflake/base/names.hpp"

namespace snowflake::http {

namespace {

using beast_http::field;
using beast_http::verb;

constexpr std::string_view kMachines = "/machines/";
constexpr std::size_t kMaxInstance = 128;

// An instance ID as CosId makes them (host:port, a pod's name or IP, a
// number): [A-Za-z0-9._:@~-]{1,128}, taken as it comes (no percent-decoding).
bool is_instance(std::string_view s) {
  return !s.empty() && s.size() <= kMaxInstance &&
         s.find_first_not_of(
             "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:@~-") ==
             std::string_view::npos;
}

// An ISO-8601 duration as java.time.Duration prints it (PT10M, PT0.5S,
// PT1H30M, P1DT2H): days, then T and hours, minutes, seconds (with a
// fraction), each at most once and in that order, no sign; in whole ms.
// nullopt: not one, zero, or longer than a year (no lease is: CosId's
// FOREVER, sent when its guard is off, among them).
std::optional<std::int64_t> iso_duration_ms(std::string_view text) {
  constexpr std::int64_t kYearMs = 366LL * 86'400'000;
  if (!text.starts_with('P')) return std::nullopt;
  text.remove_prefix(1);
  constexpr std::array<std::pair<char, std::int64_t>, 4> kUnits{
      {{'D', 86'400'000}, {'H', 3'600'000}, {'M', 60'000}, {'S', 1000}}};
  std::size_t next_unit = 0;  // units come in kUnits' order, each once
  bool in_time = false;
  std::int64_t ms = 0;
  while (!text.empty()) {
    if (text.front() == 'T') {
      if (in_time) return std::nullopt;
      in_time = true;
      next_unit = 1;
      text.remove_prefix(1);
      if (text.empty()) return std::nullopt;  // "P1DT"
      continue;
    }
    if (text.front() < '0' || text.front() > '9') return std::nullopt;  // a sign
    std::int64_t whole = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), whole);
    if (ec != std::errc() || whole > kYearMs / 1000) return std::nullopt;
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
    std::int64_t fraction_ms = 0;
    const bool fraction = !text.empty() && text.front() == '.';
    if (fraction) {  // seconds only; beyond ms, cut
      text.remove_prefix(1);
      std::int64_t scale = 100;
      std::size_t digits = 0;
      while (!text.empty() && text.front() >= '0' && text.front() <= '9') {
        fraction_ms += (text.front() - '0') * scale;
        scale /= 10;
        text.remove_prefix(1);
        ++digits;
      }
      if (digits == 0) return std::nullopt;
    }
    if (text.empty()) return std::nullopt;
    const char unit = text.front();
    text.remove_prefix(1);
    std::size_t i = next_unit;
    while (i < kUnits.size() && kUnits[i].first != unit) ++i;
    // Days before T only, the rest after it; a fraction on seconds only.
    if (i == kUnits.size() || (i == 0) == in_time || (fraction && unit != 'S')) {
      return std::nullopt;
    }
    next_unit = i + 1;
    ms += whole * kUnits[i].second + fraction_ms;
    if (ms > kYearMs) return std::nullopt;
  }
  if (ms <= 0) return std::nullopt;
  return ms;
}

struct MachineQuery {
  std::optional<std::string_view> instance;
  std::optional<bool> stable;
  std::optional<std::int64_t> machine_bit;
  std::optional<std::int64_t> guard_ms;
};

Result<MachineQuery, Response> parse_machine_query(std::string_view query, bool distribute,
                                                   bool revert) {
  MachineQuery q;
  auto refused = visit_parameters(
      query, [&](std::string_view key, std::string_view value) -> std::optional<Response> {
        if (key == "instanceId" && !q.instance) {
          if (!is_instance(value)) {
            return cosid_bad_request(fmt::format(
                "instanceId must be [A-Za-z0-9._:@~-]{{1,{}}}, got \"{}\"", kMaxInstance, value));
          }
          q.instance = value;
        } else if (key == "stable" && !q.stable) {
          if (value != "true" && value != "false")
            return cosid_bad_request("stable must be true or false");
          q.stable = value == "true";
        } else if (key == "machineBit" && distribute && !q.machine_bit) {
          std::int64_t n = 0;
          const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
          if (ec != std::errc() || end != value.data() + value.size() || n < 1 ||
              n > kMaxLeasePoolWorkerBits) {
            return cosid_bad_request(fmt::format("machineBit must be 1 to {}, got \"{}\"",
                                                 kMaxLeasePoolWorkerBits, value));
          }
          q.machine_bit = n;
        } else if (key == "safeGuardDuration" && !revert && !q.guard_ms) {
          q.guard_ms = iso_duration_ms(value);
          if (!q.guard_ms) {
            return cosid_bad_request(
                fmt::format("safeGuardDuration must be a positive ISO-8601 duration of a "
                            "year at most (PT5M), got \"{}\"",
                            value));
          }
        } else {
          return cosid_bad_request(
              fmt::format("this request does not take \"{}\" (or takes it once)", key));
        }
        return std::nullopt;
      });
  if (refused) return std::move(*refused);
  if (!q.instance) return cosid_bad_request("instanceId is required");
  if (distribute && !q.machine_bit) return cosid_bad_request("machineBit is required");
  if (!revert && !q.guard_ms) return cosid_bad_request("safeGuardDuration is required");
  return q;
}

Response machine_body(const LeaseCall::Outcome& outcome, bool revert) {
  if (const auto* refusal = std::get_if<LeaseRefusal>(&outcome)) {
    switch (refusal->why) {
      case LeaseRefusal::Why::pool_exhausted: {
        Response res = cosid_error(Status::service_unavailable, "M-01", refusal->message);
        res.set(field::retry_after, "5");
        return res;
      }
      case LeaseRefusal::Why::no_lease:
        return cosid_error(Status::not_found, "M-02", refusal->message);
      case LeaseRefusal::Why::lost:
        return cosid_error(Status::gone, "M-03", refusal->message);
      case LeaseRefusal::Why::no_pool:
        return cosid_error(Status::not_found, "no_such_pool", refusal->message);
      case LeaseRefusal::Why::pool_conflict:
        return cosid_error(Status::conflict, "pool_conflict", refusal->message);
      case LeaseRefusal::Why::unavailable:
        break;
    }
    Response res = cosid_error(Status::service_unavailable, "lease_unavailable", refusal->message);
    res.set(field::retry_after, "1");
    return res;
  }
  const auto& grant = std::get<LeaseGrant>(outcome);
  nlohmann::ordered_json body{{"machineId", grant.worker_id}};
  if (!revert) body["lastTimeStamp"] = grant.first_timestamp_ms;
  return json_response(Status::ok, body.dump());
}

}  // namespace

Response cosid_error(Status status, std::string_view code, const std::string& message) {
  // Messages may quote the request, which may not be valid UTF-8: replace
  // such bytes rather than throw (as error_response does).
  return json_response(status, nlohmann::ordered_json{{"code", code}, {"msg", message}}.dump(
                                   -1, ' ', false, nlohmann::json::error_handler_t::replace));
}

Response cosid_bad_request(const std::string& message) {
  return cosid_error(Status::bad_request, "400", message);
}

Response in_cosid_shape(Response ours) {
  const auto body = nlohmann::json::parse(ours.body(), nullptr, /*allow_exceptions=*/false);
  Response res = cosid_error(ours.result(), body.value("error", "unavailable"),
                             body.value("message", std::string()));
  if (const auto retry = ours.find(field::retry_after); retry != ours.end()) {
    res.set(field::retry_after, retry->value());
  }
  return res;
}

Answer cosid_machine_route(const Request& req, std::string_view path, std::string_view query,
                           RouterContext& ctx) {
  const std::string_view ns = path.substr(kMachines.size());
  if (!is_valid_name(ns) || ns == kClusterLeasePool) {
    return cosid_error(Status::not_found, "not_found",
                       fmt::format("no route for {}: /machines/<namespace>, a namespace "
                                   "[A-Za-z0-9._-]{{1,64}} other than \"{}\"",
                                   path, kClusterLeasePool));
  }
  const verb method = req.method();
  if (method != verb::post && method != verb::patch && method != verb::delete_) {
    Response res = cosid_error(Status::method_not_allowed, "method_not_allowed",
                               fmt::format("{} only answers POST, PATCH and DELETE", path));
    res.set(field::allow, "POST, PATCH, DELETE");
    return res;
  }
  const bool distribute = method == verb::post;
  const bool revert = method == verb::delete_;
  auto q = parse_machine_query(query, distribute, revert);
  if (!q) return Reply{std::move(q.error())};
  // CosId's safe-guard duration is its lease: it stamps for that long after
  // each guard, so a lease is never shorter than it asks (longer is safe:
  // it stops first). Longer than ours may be: refused.
  std::chrono::milliseconds duration{0};
  if (q.value().guard_ms) {
    const std::chrono::milliseconds asked(*q.value().guard_ms);
    // (A daemon that leases nothing has no limits: leases_disabled below.)
    if (ctx.leases && asked > ctx.lease_limits.max_duration) {
      return cosid_bad_request(
          fmt::format("safeGuardDuration is {} ms, and this cluster's leases last at most "
                      "{} ms (leases.max_duration_ms): ask for that or less",
                      asked.count(), ctx.lease_limits.max_duration.count()));
    }
    duration = std::max(asked, ctx.lease_limits.min_duration);
  }
  LeaseRequest request{
      distribute ? LeaseRequest::Kind::take
                 : (revert ? LeaseRequest::Kind::give_back : LeaseRequest::Kind::renew),
      std::string(*q.value().instance),
      0,
      {},
      duration,
      std::nullopt,
      std::string(ns),
      q.value().machine_bit ? std::optional<int>(static_cast<int>(*q.value().machine_bit))
                            : std::nullopt,
      std::string(*q.value().instance)};
  if (auto refused = lease_refusal(request, ctx)) return in_cosid_shape(std::move(*refused));
  return ask_lease(std::move(request), ctx, [revert](const LeaseCall::Outcome& outcome) {
    return machine_body(outcome, revert);
  });
}

}  // namespace snowflake::http
