#pragma once
// The daemon's settings: a JSON file in which every key has a default and is
// validated, with errors that name the key ("layout.time_bits: must be ...").
// Unknown keys are errors: a typo must not silently fall back to a default.

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "snowflake/id_generator.hpp"
#include "snowflake/id_layout.hpp"
#include "snowflake/result.hpp"

namespace snowflake {

struct ConfigError {
  std::string key;  // "layout.time_bits"; empty for the file as a whole
  std::string message;

  // "<source>: <key>: <message>", the form printed before exit code 2.
  std::string describe(const std::string& source) const;
};

struct CoordinatorSettings {
  std::string type = "static";  // only static until the ZooKeeper coordinator lands
  std::uint32_t static_worker_id = 0;
};

struct HttpSettings {
  std::string listen = "127.0.0.1:8080";
  unsigned io_threads = 0;  // 0: one per core
  std::uint32_t max_batch = 10'000;  // largest ?count=
  std::uint32_t max_connections = 10'000;
  // A keep-alive connection with no request in flight is closed after this.
  std::chrono::milliseconds idle_timeout{60'000};
  // A request must arrive whole within this once its first byte has (so a
  // slow client cannot hold a connection), and a response be taken up in it.
  std::chrono::milliseconds request_timeout{10'000};
  // On SIGTERM, connections still busy after this are closed.
  std::chrono::milliseconds drain_timeout{10'000};
  // Empty: every valid tag. Otherwise other tags get 404 unknown_tag.
  std::vector<std::string> tag_allowlist;
  std::uint32_t max_metric_tags = 1000;  // per-tag series before they are lumped together
};

struct Config {
  std::string service = "default";
  std::string log_level = "info";
  LayoutSettings layout;
  GeneratorOptions generator;
  CoordinatorSettings coordinator;
  HttpSettings http;
};

// `now_ms` (Unix ms) is what "the epoch must not be in the future" is judged
// against.
Result<Config, ConfigError> parse_config(const nlohmann::json& document, std::int64_t now_ms);
Result<Config, ConfigError> load_config_file(const std::string& path, std::int64_t now_ms);

}  // namespace snowflake
