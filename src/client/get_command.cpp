#include "snowflake/client/get_command.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>
#include <optional>
#include <ostream>
#include <random>
#include <thread>

#include "snowflake/client/replica_connection.hpp"

#include "snowflake/base/clock.hpp"

namespace snowflake::client {

namespace {

using Clock = BootClock;

struct Refusal {
  std::string code;  // the API's error code, or "HTTP <status>" without one
  std::string message;
};

Refusal refusal_of(const Answer& answer) {
  const auto body = nlohmann::json::parse(answer.body, nullptr, false);
  if (body.is_object() && body.contains("error") && body["error"].is_string()) {
    return {body["error"].get<std::string>(), body.value("message", std::string())};
  }
  return {fmt::format("HTTP {}", answer.status), {}};
}

// Prints the IDs of a 200; false if the answer holds none.
bool print_ids(const Answer& answer, bool json, std::ostream& out) {
  const auto body = nlohmann::json::parse(answer.body, nullptr, false);
  if (!body.is_object() || !body.contains("ids") || !body["ids"].is_array()) return false;
  const auto& ids = body["ids"];
  if (!std::all_of(ids.begin(), ids.end(), [](const auto& id) { return id.is_string(); }))
    return false;
  if (json) {
    out << answer.body << '\n';
  } else {
    std::string lines;
    for (const auto& id : ids) lines.append(id.get_ref<const std::string&>()).push_back('\n');
    out << lines;
  }
  return out.flush().good();
}

// The owner a strict sequence's refusal names, as a URL: its "owner_url"
// (the scheme it serves), or from a daemon before it, "owner" ("host:port")
// with the refusing replica's scheme; nullopt for any other answer.
std::optional<ReplicaUrl> named_owner(const Answer& answer, const ReplicaUrl& refused_by) {
  const auto body = nlohmann::json::parse(answer.body, nullptr, false);
  if (answer.status != 503 || !body.is_object() || body.value("error", "") != "not_owner" ||
      !body.contains("owner") || !body["owner"].is_string()) {
    return std::nullopt;
  }
  const auto given = body.find("owner_url");
  auto url = parse_replica_url(given != body.end() && given->is_string()
                                   ? given->get<std::string>()
                                   : fmt::format("{}://{}", refused_by.tls ? "https" : "http",
                                                 body["owner"].get<std::string>()));
  if (!url) return std::nullopt;
  return url.value();
}

// A strict sequence's refusal named its owner: asked once, by `deadline`;
// its answer, else the refusal as it came (its Retry-After kept) with why
// in `why_not`. Over TLS even when every replica given is plain (a fleet
// half on TLS): the context is made then, with --cacert if given.
Answer ask_owner(boost::asio::io_context& io, const ReplicaUrl& owner,
                 std::shared_ptr<boost::asio::ssl::context>& tls, const std::string& ca_file,
                 std::string_view target, ReplicaConnection::Deadline deadline, Answer refusal,
                 std::string& why_not) {
  if (owner.tls && !tls) {
    auto made = make_client_tls(ca_file);
    if (!made) {
      why_not = made.error();
      return refusal;
    }
    tls = std::move(made).value();
  }
  ReplicaConnection to_owner(io, owner, owner.tls ? tls : nullptr);
  auto owned = to_owner.get(target, deadline);
  if (owned) return std::move(owned).value();
  why_not = owned.error();
  return refusal;
}

// What the replica's refusal says of the request itself: every replica
// would refuse it the same way (a count over max_batch, a bad tag, a tag not
// in the allowlist), so trying others cannot help.
bool refuses_the_request(unsigned status) { return status == 400 || status == 404; }

}  // namespace

int run_get(const GetOptions& options, std::ostream& out, std::ostream& err) {
  const auto deadline = Clock::now() + options.timeout;
  boost::asio::io_context io;
  // One TLS context for every https:// replica: the CAs are read once.
  std::shared_ptr<boost::asio::ssl::context> tls;
  if (std::any_of(options.servers.begin(), options.servers.end(),
                  [](const ReplicaUrl& url) { return url.tls; })) {
    auto made = make_client_tls(options.ca_file);
    if (!made) {
      err << fmt::format("snowflaked get: {}\n", made.error());
      return 2;
    }
    tls = std::move(made).value();
  }
  std::vector<ReplicaConnection> replicas;
  replicas.reserve(options.servers.size());
  for (const auto& url : options.servers) replicas.emplace_back(io, url, url.tls ? tls : nullptr);
  std::vector<std::string> last_error(replicas.size(), "not tried");
  // A random order per call: scripts on many machines spread their load.
  std::vector<std::size_t> order(replicas.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(std::random_device{}()));
  std::string target =
      fmt::format("/{}/{}?count={}", options.sequence ? "seq" : "id", options.tag, options.count);
  if (options.form) target += fmt::format("&form={}", to_string(*options.form));

  for (;;) {
    std::optional<std::chrono::seconds> wait;  // the shortest Retry-After of this round
    for (std::size_t k = 0; k < order.size(); ++k) {
      const std::size_t i = order[k];
      const auto now = Clock::now();
      if (now >= deadline) break;
      // An even share of the time left for each replica not yet asked, so
      // one that hangs cannot use up the others' time.
      const auto share = (deadline - now) / static_cast<Clock::rep>(order.size() - k);
      auto answer = replicas[i].get(target, now + share);
      std::string owner_error;  // why the owner a refusal named gave no answer
      if (answer) {
        if (auto owner = named_owner(answer.value(), replicas[i].url())) {
          std::string why_not;
          answer = ask_owner(io, *owner, tls, options.ca_file, target, now + share,
                             std::move(answer).value(), why_not);
          if (!why_not.empty())
            owner_error = fmt::format(" (its owner {}: {})", owner->text, why_not);
        }
      }
      if (!answer) {
        last_error[i] = answer.error();
        continue;
      }
      const Answer& a = answer.value();
      if (a.status == 200) {
        if (print_ids(a, options.json, out)) return 0;
        last_error[i] = "an answer without IDs";
        continue;
      }
      const Refusal refusal = refusal_of(a);
      last_error[i] = refusal.code + owner_error;
      if (a.status == 503) {
        const auto after = a.retry_after.value_or(std::chrono::seconds(1));
        wait = wait ? std::min(*wait, after) : after;
      } else if (refuses_the_request(a.status)) {
        err << fmt::format("snowflaked get: {} refused the request: {}: {}\n",
                           replicas[i].url().text, refusal.code, refusal.message);
        return 2;
      }
    }
    // Nobody issued. A replica that said 503 said when to ask again; without
    // one (all down or silent) there is nothing to wait for.
    if (!wait || Clock::now() + *wait >= deadline) break;
    std::this_thread::sleep_for(*wait);
  }

  std::string each;
  for (std::size_t i = 0; i < replicas.size(); ++i) {
    each += fmt::format("{}{} ({})", i ? ", " : "", replicas[i].url().text, last_error[i]);
  }
  err << fmt::format("snowflaked get: no replica issued IDs within {} ms: {}\n",
                     options.timeout.count(), each);
  return 1;
}

}  // namespace snowflake::client
