#include "snowflake/state/owner_token.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <random>

#include "snowflake/base/json_integer.hpp"

namespace snowflake::state {

OwnerToken OwnerToken::fresh(std::string host, std::uint32_t port) {
  std::random_device random;
  const std::uint64_t hi = (std::uint64_t{random()} << 32) | random();
  const std::uint64_t lo = (std::uint64_t{random()} << 32) | random();
  return {std::move(host), port, static_cast<std::int64_t>(::getpid()),
          fmt::format("{:016x}{:016x}", hi, lo)};
}

std::string OwnerToken::describe() const { return fmt::format("{}:{} pid {}", host, port, pid); }

void to_json(nlohmann::json& j, const OwnerToken& owner) {
  j = {
      {"host", owner.host}, {"port", owner.port}, {"pid", owner.pid}, {"instance", owner.instance}};
}

void from_json(const nlohmann::json& j, OwnerToken& owner) {
  owner = {j.at("host").get<std::string>(), json_integer_at<std::uint32_t>(j, "port"),
           json_integer_at<std::int64_t>(j, "pid"), j.at("instance").get<std::string>()};
}

}  // namespace snowflake::state
