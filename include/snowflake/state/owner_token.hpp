#pragma once
// Who holds a worker ID: one run of one daemon. The state file keeps it, and
// the coordinator writes it into the nodes it owns (zk/node_data.hpp).

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>

namespace snowflake::state {

// `instance` is random per run, so a restarted daemon on the same host and
// port is a new owner.
struct OwnerToken {
  std::string host;
  std::uint32_t port = 0;
  std::int64_t pid = 0;
  std::string instance;

  static OwnerToken fresh(std::string host, std::uint32_t port);
  bool operator==(const OwnerToken&) const = default;
  std::string describe() const;  // "host:port pid N"
};

// {"host", "port", "pid", "instance"}, for nlohmann::json. from_json throws
// nlohmann::json::exception, or std::out_of_range for a number out of range.
void to_json(nlohmann::json& j, const OwnerToken& owner);
void from_json(const nlohmann::json& j, OwnerToken& owner);

}  // namespace snowflake::state
