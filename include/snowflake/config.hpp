#pragma once
// The daemon's settings: a JSON file in which every key has a default and is
// validated, with errors that name the key ("layout.time_bits: must be ...").
// Unknown keys are errors: a typo must not silently fall back to a default.

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>

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

struct Config {
  std::string service = "default";
  std::string log_level = "info";
  LayoutSettings layout;
  GeneratorOptions generator;
  CoordinatorSettings coordinator;
};

// `now_ms` (Unix ms) is what "the epoch must not be in the future" is judged
// against.
Result<Config, ConfigError> parse_config(const nlohmann::json& document, std::int64_t now_ms);
Result<Config, ConfigError> load_config_file(const std::string& path, std::int64_t now_ms);

}  // namespace snowflake
