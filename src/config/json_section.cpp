#include "json_section.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "snowflake/base/json_integer.hpp"

namespace snowflake {

namespace {

const nlohmann::json kEmptyObject = nlohmann::json::object();
const nlohmann::json kNull;

}  // namespace

JsonSection::JsonSection(const nlohmann::json& value, std::string path)
    : value_(value), path_(std::move(path)) {
  if (!value_.is_object()) {
    throw ConfigFault({path_, fmt::format("must be a JSON object, got {}", value_.type_name())});
  }
}

std::string JsonSection::key_text(std::string_view key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
  return plain ? std::string(key)
               : nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string JsonSection::key_path(std::string_view key) const {
  return path_.empty() ? key_text(key) : fmt::format("{}.{}", path_, key_text(key));
}

void JsonSection::fail(std::string_view key, std::string message) const {
  throw ConfigFault({key_path(key), std::move(message)});
}

const nlohmann::json* JsonSection::find(std::string_view key) {
  read_.emplace(key);
  const auto it = value_.find(key);
  return it == value_.end() ? nullptr : &*it;
}

const nlohmann::json& JsonSection::raw(std::string_view key) {
  const auto* v = find(key);
  return v ? *v : kNull;
}

std::int64_t JsonSection::integer(std::string_view key, std::int64_t fallback, std::int64_t min,
                                  std::int64_t max) {
  const auto* v = find(key);
  if (!v) return fallback;
  if (!v->is_number_integer()) fail(key, fmt::format("must be an integer, got {}", v->dump()));
  // Above INT64_MAX (nullopt) is out of every range we accept.
  const auto n = json_integer<std::int64_t>(*v);
  if (!n || *n < min || *n > max) {
    fail(key, fmt::format("must be from {} to {}, got {}", min, max, v->dump()));
  }
  return *n;
}

bool JsonSection::boolean(std::string_view key, bool fallback) {
  const auto* v = find(key);
  if (!v) return fallback;
  if (!v->is_boolean()) fail(key, fmt::format("must be true or false, got {}", v->dump()));
  return v->get<bool>();
}

std::string JsonSection::string(std::string_view key, std::string fallback) {
  const auto* v = find(key);
  if (!v) return fallback;
  if (!v->is_string()) fail(key, fmt::format("must be a string, got {}", v->dump()));
  return v->get<std::string>();
}

std::string JsonSection::choice(std::string_view key, std::string fallback,
                                std::initializer_list<std::string_view> allowed) {
  std::string s = string(key, std::move(fallback));
  for (auto a : allowed) {
    if (s == a) return s;
  }
  fail(key, fmt::format("must be one of \"{}\", got \"{}\"", fmt::join(allowed, "\", \""), s));
}

std::vector<std::string> JsonSection::string_list(std::string_view key,
                                                  bool (*valid)(std::string_view),
                                                  std::string_view what) {
  std::vector<std::string> out;
  const auto* v = find(key);
  if (!v) return out;
  if (!v->is_array()) fail(key, fmt::format("must be an array of strings, got {}", v->dump()));
  for (const auto& item : *v) {
    if (!item.is_string() || !valid(item.get<std::string>())) {
      fail(key, fmt::format("every entry must be {}, got {}", what, item.dump()));
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

JsonSection JsonSection::section(std::string_view key) {
  const auto* v = find(key);
  return JsonSection(v ? *v : kEmptyObject, key_path(key));
}

void JsonSection::finish() const {
  for (const auto& [key, _] : value_.items()) {
    if (!read_.contains(key)) fail(key, "unknown key");
  }
}

}  // namespace snowflake
