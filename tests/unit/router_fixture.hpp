#pragma once
// A daemon's router without a socket, for the router's unit tests: a
// generator of worker 9 on a manual clock, a lease held, and what a test
// asks of the answers.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "../support/manual_clock.hpp"
#include "snowflake/http/router.hpp"

namespace snowflake::test {

inline constexpr std::int64_t kRouterStart = kDefaultEpochMs + 5'000'000;

struct RouterFixture {
  // `table`: which listener it is (none: the main one's, by `s`).
  explicit RouterFixture(HttpSettings s = {}, std::optional<http::RouteTable> table = std::nullopt)
      : settings(std::move(s)), routes(table.value_or(http::main_route_table(settings))) {
    lease.grant_indefinitely();
    context.routes = &routes;
  }

  http::Response get(std::string target,
                     std::vector<std::pair<boost::beast::http::field, std::string>> headers = {},
                     boost::beast::http::verb method = boost::beast::http::verb::get,
                     unsigned version = 11) {
    http::Request req{method, target, version};
    for (auto& [f, v] : headers) req.set(f, v);
    return resolve(http::handle_request(req, context));
  }

  // As the server resolves a wait, but blocking this thread: retried when
  // woken (subscribed first), answered at its deadline.
  static http::Response resolve(http::Answer answer) {
    if (auto* reply = std::get_if<http::Reply>(&answer)) return std::move(reply->response);
    auto& wait = std::get<http::Wait>(answer);
    struct Woken {
      std::mutex mutex;
      std::condition_variable cv;
      bool woken = false;
    };
    auto state = std::make_shared<Woken>();
    const auto wake = std::make_shared<const http::Wake>([state] {
      std::lock_guard lock(state->mutex);
      state->woken = true;
      state->cv.notify_all();
    });
    for (;;) {
      wait.subscribe(wake);
      if (auto reply = wait.retry(false)) return std::move(reply->response);
      std::unique_lock lock(state->mutex);
      if (!state->cv.wait_until(lock, wait.deadline, [&] { return state->woken; })) break;
      state->woken = false;
    }
    return std::move(wait.retry(true)->response);
  }

  ManualClock clock{kRouterStart};
  IdLayout layout = IdLayout::create({}, kRouterStart).value();
  WorkerSlot worker;
  IdGenerator* generator = &worker.install(IdGenerator::create(layout, 9, {}, clock).value());
  Lease lease{clock};
  CoordinationGauges gauges;
  Liveness liveness;
  Metrics metrics{3};
  HttpSettings settings;
  http::RouteTable routes;
  http::RouterContext context{
      layout,   worker,  lease,    gauges,
      liveness, metrics, settings, {"svc", CoordinatorType::static_id, clock.monotonic(), 2}};
};

inline nlohmann::json body_json(const http::Response& r) { return nlohmann::json::parse(r.body()); }

inline std::string header(const http::Response& r, boost::beast::http::field f) {
  return std::string(http::to_std(r[f]));
}

inline void check_error(const http::Response& r, unsigned status, const std::string& code) {
  INFO(r.body());
  CHECK(r.result_int() == status);
  CHECK(header(r, boost::beast::http::field::content_type) == "application/json");
  const auto j = body_json(r);
  CHECK(j["error"] == code);
  CHECK(j["message"].is_string());
  CHECK_FALSE(j["message"].get<std::string>().empty());
}

inline std::uint64_t to_id(const nlohmann::json& v) { return std::stoull(v.get<std::string>()); }

}  // namespace snowflake::test
