#pragma once
// What the e2e tests of coordinated daemons share: a config with timings
// fast enough to see leases expire in seconds, and short questions to ask a
// running daemon.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "../support/daemon.hpp"
#include "../support/http_client.hpp"

namespace snowflake::test {

inline const std::string kE2eRoot = "/snowflake/e2e";

// heartbeat 300 ms, lease 1.5 s, reclaim after 2.5 s, session 2 s; the
// daemon reaches ZooKeeper at `hosts` (a server or a FaultProxy).
nlohmann::json cluster_config(const std::string& hosts, const std::string& type,
                              const std::filesystem::path& state,
                              const nlohmann::json& patch = nlohmann::json::object());

std::optional<nlohmann::json> ready(const Daemon& d);
// Waits until the daemon owns a worker ID; returns it (fails the test if never).
std::uint32_t wait_ready(Daemon& d, std::chrono::milliseconds within = std::chrono::seconds(20));
std::vector<std::uint64_t> fetch_ids(const Daemon& d, int count);
// The error code of a refusal; "" for a 200 or no reply.
std::string error_of(const std::optional<HttpReply>& r);
// A metric without labels; -1 if absent.
std::int64_t metric(const Daemon& d, const std::string& name);
// SIGTERM, and a clean exit within 20 s.
void stop(Daemon& d);
// `snowflaked seq ARGS --config <the daemon's config>`, within 30 s.
RunResult run_seq(const Daemon& any, const std::vector<std::string>& args);

}  // namespace snowflake::test
