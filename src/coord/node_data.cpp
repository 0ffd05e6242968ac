#include "snowflake/coord/node_data.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <random>

namespace snowflake::coord {

namespace {

using nlohmann::json;

template <class T, class Read>
std::optional<T> decode_with(std::string_view text, Read read) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  try {
    return read(j);
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

json to_json(const OwnerToken& o) {
  return {{"host", o.host}, {"port", o.port}, {"pid", o.pid}, {"instance", o.instance}};
}

OwnerToken owner_of(const json& o) {
  return {o.at("host").get<std::string>(), o.at("port").get<std::uint32_t>(),
          o.at("pid").get<std::int64_t>(), o.at("instance").get<std::string>()};
}

}  // namespace

OwnerToken OwnerToken::fresh(std::string host, std::uint32_t port) {
  std::random_device random;
  const std::uint64_t hi = (std::uint64_t{random()} << 32) | random();
  const std::uint64_t lo = (std::uint64_t{random()} << 32) | random();
  return {std::move(host), port, static_cast<std::int64_t>(::getpid()),
          fmt::format("{:016x}{:016x}", hi, lo)};
}

std::string OwnerToken::describe() const { return fmt::format("{}:{} pid {}", host, port, pid); }

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

std::string encode(const OwnerToken& o) { return to_json(o).dump(); }

std::string encode(const InuseData& d) {
  return json{{"owner", to_json(d.owner)}, {"floor", d.floor}, {"ts", d.ts}, {"hwm", d.hwm},
              {"lease_ms", d.lease_ms}}
      .dump();
}

std::string encode(const NotuseData& d) { return json{{"floor", d.floor}}.dump(); }

std::string encode(const SequentialData& d) {
  return json{{"host", d.host},
              {"port", d.port},
              {"owner", d.owner ? to_json(*d.owner) : json(nullptr)},
              {"floor", d.floor},
              {"ts", d.ts},
              {"hwm", d.hwm},
              {"lease_ms", d.lease_ms}}
      .dump();
}

std::string encode(const LayoutSettings& l) {
  return json{{"time_bits", l.time_bits},       {"worker_bits", l.worker_bits},
              {"sequence_bits", l.sequence_bits}, {"time_unit_ms", l.time_unit_ms},
              {"epoch_ms", l.epoch_ms}}
      .dump();
}

std::optional<OwnerToken> decode_owner(std::string_view text) {
  return decode_with<OwnerToken>(text, [](const json& j) { return owner_of(j); });
}

std::optional<InuseData> decode_inuse(std::string_view text) {
  return decode_with<InuseData>(text, [](const json& j) {
    return InuseData{owner_of(j.at("owner")),
                     j.at("floor").get<std::int64_t>(),
                     j.at("ts").get<std::int64_t>(),
                     j.at("hwm").get<std::int64_t>(),
                     j.at("lease_ms").get<std::int64_t>()};
  });
}

std::optional<NotuseData> decode_notuse(std::string_view text) {
  return decode_with<NotuseData>(
      text, [](const json& j) { return NotuseData{j.at("floor").get<std::int64_t>()}; });
}

std::optional<SequentialData> decode_sequential(std::string_view text) {
  return decode_with<SequentialData>(text, [](const json& j) {
    SequentialData d;
    d.host = j.at("host").get<std::string>();
    d.port = j.at("port").get<std::uint32_t>();
    d.ts = j.at("ts").get<std::int64_t>();
    d.hwm = j.at("hwm").get<std::int64_t>();
    if (const auto o = j.find("owner"); o != j.end() && !o->is_null()) d.owner = owner_of(*o);
    d.floor = j.value("floor", std::int64_t{0});
    d.lease_ms = j.value("lease_ms", std::int64_t{0});
    return d;
  });
}

std::optional<LayoutSettings> decode_layout(std::string_view text) {
  return decode_with<LayoutSettings>(text, [](const json& j) {
    LayoutSettings l;
    l.time_bits = j.at("time_bits").get<int>();
    l.worker_bits = j.at("worker_bits").get<int>();
    l.sequence_bits = j.at("sequence_bits").get<int>();
    l.time_unit_ms = j.at("time_unit_ms").get<std::int64_t>();
    l.epoch_ms = j.at("epoch_ms").get<std::int64_t>();
    return l;
  });
}

}  // namespace snowflake::coord
