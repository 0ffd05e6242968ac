#include "snowflake/zk/node_data.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "snowflake/base/json_integer.hpp"

namespace snowflake::coord {

namespace {

using nlohmann::json;

// json_integer_at(), or `fallback` when the key is absent (nodes written before 0.2).
template <class T>
T integer_or(const json& j, const char* key, T fallback) {
  return j.contains(key) ? json_integer_at<T>(j, key) : fallback;
}

}  // namespace

std::int64_t InuseData::last_possible_ms() const { return std::max({floor, hwm, ts + lease_ms}); }

std::int64_t SequentialData::last_possible_ms(std::int64_t assumed_lease_ms) const {
  return std::max({floor, hwm, ts + (owner ? lease_ms : assumed_lease_ms)});
}

std::optional<std::uint32_t> worker_id_of_node(std::string_view name) {
  std::uint32_t id = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
  if (ec != std::errc() || end != name.data() + name.size()) return std::nullopt;
  return id;
}

std::string encode(const OwnerToken& o) { return json(o).dump(); }

std::string encode(const InuseData& d) {
  json j{{"owner", d.owner},
         {"floor", d.floor},
         {"ts", d.ts},
         {"hwm", d.hwm},
         {"lease_ms", d.lease_ms}};
  if (d.released) j["released"] = true;
  return j.dump();
}

std::string encode(const NotuseData& d) { return json{{"floor", d.floor}}.dump(); }

std::string encode(const SequentialData& d) {
  json j{{"host", d.host},
         {"port", d.port},
         {"owner", d.owner ? json(*d.owner) : json(nullptr)},
         {"floor", d.floor},
         {"ts", d.ts},
         {"hwm", d.hwm},
         {"lease_ms", d.lease_ms}};
  if (d.superseded_until != 0) j["superseded_until"] = d.superseded_until;
  return j.dump();
}

std::optional<OwnerToken> decode_owner(std::string_view text) {
  return decode_json_object<OwnerToken>(text, [](const json& j) { return j.get<OwnerToken>(); });
}

std::optional<InuseData> decode_inuse(std::string_view text) {
  return decode_json_object<InuseData>(text, [](const json& j) {
    return InuseData{j.at("owner").get<OwnerToken>(),
                     json_integer_at<std::int64_t>(j, "floor"),
                     json_integer_at<std::int64_t>(j, "ts"),
                     json_integer_at<std::int64_t>(j, "hwm"),
                     json_integer_at<std::int64_t>(j, "lease_ms"),
                     j.value("released", false)};  // a non-boolean: unreadable
  });
}

std::optional<NotuseData> decode_notuse(std::string_view text) {
  return decode_json_object<NotuseData>(
      text, [](const json& j) { return NotuseData{json_integer_at<std::int64_t>(j, "floor")}; });
}

std::optional<SequentialData> decode_sequential(std::string_view text) {
  return decode_json_object<SequentialData>(text, [](const json& j) {
    SequentialData d;
    d.host = j.at("host").get<std::string>();
    d.port = json_integer_at<std::uint32_t>(j, "port");
    d.ts = json_integer_at<std::int64_t>(j, "ts");
    d.hwm = json_integer_at<std::int64_t>(j, "hwm");
    if (const auto o = j.find("owner"); o != j.end() && !o->is_null())
      d.owner = o->get<OwnerToken>();
    d.floor = integer_or<std::int64_t>(j, "floor", 0);
    d.lease_ms = integer_or<std::int64_t>(j, "lease_ms", 0);
    d.superseded_until = integer_or<std::int64_t>(j, "superseded_until", 0);
    return d;
  });
}

bool is_leaf_node_data(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  return j.is_object() && j.contains("ip") && j.contains("timestamp") && !j.contains("host");
}

}  // namespace snowflake::coord
