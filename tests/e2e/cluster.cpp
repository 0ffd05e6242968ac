#include "cluster.hpp"

#include <catch2/catch.hpp>

#include <csignal>

#include "../support/polling.hpp"

namespace snowflake::test {

using nlohmann::json;

json cluster_config(const std::string& hosts, const std::string& type,
                    const std::filesystem::path& state, const json& patch) {
  json c = {
      {"service", "e2e"},
      {"coordinator",
       {{"type", type},
        {"state_dir", state.string()},
        {"heartbeat_interval_ms", 300},
        {"lease_timeout_ms", 1500},
        {"reclaim_after_ms", 2500},
        {"safety_margin_ms", 500},
        {"max_boot_wait_ms", 5000},
        {"persist_interval_ms", 100}}},
      {"zookeeper", {{"hosts", hosts}, {"session_timeout_ms", 2000}, {"connect_timeout_ms", 2000}}},
      {"http", {{"io_threads", 1}}}};
  c.merge_patch(patch);
  return c;
}

std::optional<json> ready(const Daemon& d) {
  std::optional<HttpReply> r;
  try {
    r = http_get(d.port(), "/ready");
  } catch (const std::exception&) {  // not listening (any more)
    return std::nullopt;
  }
  if (!r || r->status != 200) return std::nullopt;
  return json::parse(r->body);
}

std::uint32_t wait_ready(Daemon& d, std::chrono::milliseconds within) {
  std::optional<json> r;
  if (!eventually([&] { return (r = ready(d)).has_value() || !d.process().running(); }, within) ||
      !r) {
    FAIL((d.process().running() ? "never ready:\n" : "exited:\n") << d.process().stderr_text());
  }
  return (*r)["worker_id"].get<std::uint32_t>();
}

std::vector<std::uint64_t> fetch_ids(const Daemon& d, int count) {
  const auto r = http_get(d.port(), "/id/e2e?count=" + std::to_string(count));
  if (!r || r->status != 200) return {};
  std::vector<std::uint64_t> ids;
  const json body = json::parse(r->body);
  for (const auto& v : body["ids"]) ids.push_back(std::stoull(v.get<std::string>()));
  return ids;
}

std::string error_of(const std::optional<HttpReply>& r) {
  if (!r || r->status == 200) return "";
  return json::parse(r->body).value("error", "");
}

std::int64_t metric(const Daemon& d, const std::string& name) {
  const auto r = http_get(d.port(), "/metrics");
  const auto at = r->body.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stoll(r->body.substr(at + name.size() + 2));
}

void stop(Daemon& d) {
  d.process().send_signal(SIGTERM);
  const auto status = d.process().wait_for_exit(std::chrono::seconds(20));
  REQUIRE(status);
  CHECK(status->code == 0);
}

RunResult run_seq(const Daemon& any, const std::vector<std::string>& args) {
  std::vector<std::string> argv{snowflaked_binary(), "seq"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--config", any.config_path().string()});
  return run_process(argv, std::chrono::seconds(30));
}

}  // namespace snowflake::test
