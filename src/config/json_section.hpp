#pragma once
// Reads one JSON object of a config file. It remembers which keys were read
// so that finish() can reject the others, and every error it raises names the
// full key path. Internal to config parsing, which turns the exception into a
// ConfigError value at its boundary.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "snowflake/config/config.hpp"

namespace snowflake {

struct ConfigFault : std::runtime_error {
  explicit ConfigFault(ConfigError e) : std::runtime_error(e.message), error(std::move(e)) {}
  ConfigError error;
};

class JsonSection {
 public:
  // `path` is the section's key path ("" for the document, "layout", ...).
  JsonSection(const nlohmann::json& value, std::string path);

  std::int64_t integer(std::string_view key, std::int64_t fallback, std::int64_t min,
                       std::int64_t max);
  std::string string(std::string_view key, std::string fallback);
  bool boolean(std::string_view key, bool fallback);
  std::string choice(std::string_view key, std::string fallback,
                     std::initializer_list<std::string_view> allowed);
  // An array of strings, each accepted by `valid` (else `what` says why).
  std::vector<std::string> string_list(std::string_view key, bool (*valid)(std::string_view),
                                       std::string_view what);
  // A missing key reads as an empty object, so all its keys take defaults.
  JsonSection section(std::string_view key);
  // The raw value, for keys with more than one accepted form; null if absent.
  const nlohmann::json& raw(std::string_view key);

  // Throws for the first key that was never read.
  void finish() const;

  std::string key_path(std::string_view key) const;
  // A key as it appears in a key path: our keys are plain words; any other
  // key (unknown: empty, dotted, with control characters) is written as a
  // JSON string, as jq does, so the path stays unambiguous: layout."a.b".
  static std::string key_text(std::string_view key);
  [[noreturn]] void fail(std::string_view key, std::string message) const;

 private:
  const nlohmann::json* find(std::string_view key);

  const nlohmann::json& value_;
  std::string path_;
  std::set<std::string, std::less<>> read_;
};

}  // namespace snowflake
