#include "snowflake/coord/node_data.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <random>
#include <stdexcept>

#include "../json_integer.hpp"

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
  } catch (const std::out_of_range&) {  // from json_integer_at()
    return std::nullopt;
  }
}

// json_integer_at(), or `fallback` when the key is absent (nodes written before 0.2).
template <class T>
T integer_or(const json& j, const char* key, T fallback) {
  return j.contains(key) ? json_integer_at<T>(j, key) : fallback;
}

json to_json(const OwnerToken& o) {
  return {{"host", o.host}, {"port", o.port}, {"pid", o.pid}, {"instance", o.instance}};
}

OwnerToken owner_of(const json& o) {
  return {o.at("host").get<std::string>(), json_integer_at<std::uint32_t>(o, "port"),
          json_integer_at<std::int64_t>(o, "pid"), o.at("instance").get<std::string>()};
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
  return json{{"owner", to_json(d.owner)},
              {"floor", d.floor},
              {"ts", d.ts},
              {"hwm", d.hwm},
              {"lease_ms", d.lease_ms}}
      .dump();
}

std::string encode(const NotuseData& d) { return json{{"floor", d.floor}}.dump(); }

std::string encode(const SequentialData& d) {
  json j{{"host", d.host},
         {"port", d.port},
         {"owner", d.owner ? to_json(*d.owner) : json(nullptr)},
         {"floor", d.floor},
         {"ts", d.ts},
         {"hwm", d.hwm},
         {"lease_ms", d.lease_ms}};
  if (d.superseded_until != 0) j["superseded_until"] = d.superseded_until;
  return j.dump();
}

std::string encode(const LayoutSettings& l) {
  json j{{"time_bits", l.time_bits},
         {"worker_bits", l.worker_bits},
         {"sequence_bits", l.sequence_bits},
         {"time_unit_ms", l.time_unit_ms},
         {"epoch_ms", l.epoch_ms}};
  // Written only when used, so a default layout reads the same to daemons
  // from before these settings. A 0.2 daemon cannot match a datacenter
  // layout (its bits would not sum to 63), but it could match a sonyflake
  // order by the widths alone: there the sequence is an object it cannot
  // read, so it refuses the root instead of issuing in another order.
  if (l.datacenter_bits != 0) j["datacenter_bits"] = l.datacenter_bits;
  if (l.order == FieldOrder::sequence_high) {
    j["sequence_bits"] = json{{"bits", l.sequence_bits}, {"position", "high"}};
  }
  return j.dump();
}

std::optional<OwnerToken> decode_owner(std::string_view text) {
  return decode_with<OwnerToken>(text, [](const json& j) { return owner_of(j); });
}

std::optional<InuseData> decode_inuse(std::string_view text) {
  return decode_with<InuseData>(text, [](const json& j) {
    return InuseData{owner_of(j.at("owner")), json_integer_at<std::int64_t>(j, "floor"),
                     json_integer_at<std::int64_t>(j, "ts"),
                     json_integer_at<std::int64_t>(j, "hwm"),
                     json_integer_at<std::int64_t>(j, "lease_ms")};
  });
}

std::optional<NotuseData> decode_notuse(std::string_view text) {
  return decode_with<NotuseData>(
      text, [](const json& j) { return NotuseData{json_integer_at<std::int64_t>(j, "floor")}; });
}

std::optional<SequentialData> decode_sequential(std::string_view text) {
  return decode_with<SequentialData>(text, [](const json& j) {
    SequentialData d;
    d.host = j.at("host").get<std::string>();
    d.port = json_integer_at<std::uint32_t>(j, "port");
    d.ts = json_integer_at<std::int64_t>(j, "ts");
    d.hwm = json_integer_at<std::int64_t>(j, "hwm");
    if (const auto o = j.find("owner"); o != j.end() && !o->is_null()) d.owner = owner_of(*o);
    d.floor = integer_or<std::int64_t>(j, "floor", 0);
    d.lease_ms = integer_or<std::int64_t>(j, "lease_ms", 0);
    d.superseded_until = integer_or<std::int64_t>(j, "superseded_until", 0);
    return d;
  });
}

std::optional<LayoutSettings> decode_layout(std::string_view text) {
  return decode_with<LayoutSettings>(text, [](const json& j) {
    LayoutSettings l;
    l.time_bits = json_integer_at<int>(j, "time_bits");
    l.datacenter_bits = integer_or<int>(j, "datacenter_bits", 0);
    l.worker_bits = json_integer_at<int>(j, "worker_bits");
    if (const json& seq = j.at("sequence_bits"); seq.is_object()) {
      if (seq.at("position") != "high") throw std::out_of_range("sequence_bits.position");
      l.sequence_bits = json_integer_at<int>(seq, "bits");
      l.order = FieldOrder::sequence_high;
    } else {
      l.sequence_bits = json_integer_at<int>(j, "sequence_bits");
    }
    l.time_unit_ms = json_integer_at<std::int64_t>(j, "time_unit_ms");
    l.epoch_ms = json_integer_at<std::int64_t>(j, "epoch_ms");
    return l;
  });
}

}  // namespace snowflake::coord
