#include "snowflake/cluster/cluster_vouch.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

#include "snowflake/base/json_integer.hpp"

namespace snowflake::coord {

namespace {

using nlohmann::json;

// More than any ensemble has servers: a root rewritten by hand to list
// thousands is not read as a vouch.
constexpr std::size_t kMaxVouchSessions = 255;

json vouch_root_object(std::string_view root_data) {
  json j = json::parse(root_data, nullptr, false);
  return j.is_object() ? j : json::object();
}

std::string vouch_session_text(std::int64_t session) {
  return fmt::format("0x{:016x}", static_cast<std::uint64_t>(session));
}

std::optional<std::int64_t> parse_vouch_session(const json& value) {
  if (!value.is_string()) return std::nullopt;
  const auto& text = value.get_ref<const std::string&>();
  if (text.size() != 18 || !text.starts_with("0x")) return std::nullopt;
  std::uint64_t session = 0;
  const auto [end, ec] = std::from_chars(text.data() + 2, text.data() + text.size(), session, 16);
  if (ec != std::errc() || end != text.data() + text.size() || session == 0) return std::nullopt;
  return static_cast<std::int64_t>(session);
}

}  // namespace

bool same_zookeeper_run(std::int64_t a, std::int64_t b) noexcept {
  const auto run = [](std::int64_t session) { return static_cast<std::uint64_t>(session) >> 16; };
  // The tracker's start (bits 16-55) is never 0 in a session ZooKeeper
  // made; 0 there is no session.
  constexpr std::uint64_t kStartBits = (std::uint64_t{1} << 40) - 1;
  return a != 0 && b != 0 && (run(a) & kStartBits) != 0 && run(a) == run(b);
}

std::optional<ClusterVouch> recorded_vouch(std::string_view root_data) {
  const json j = vouch_root_object(root_data);
  const auto it = j.find("vouched");
  if (it == j.end() || !it->is_object()) return std::nullopt;
  const auto listed = it->find("sessions");
  const auto at = it->find("at_ms");
  if (listed == it->end() || !listed->is_array() || listed->empty() ||
      listed->size() > kMaxVouchSessions || at == it->end()) {
    return std::nullopt;
  }
  ClusterVouch vouch;
  for (const auto& entry : *listed) {
    const auto session = parse_vouch_session(entry);
    if (!session) return std::nullopt;
    vouch.sessions.push_back(*session);
  }
  const auto at_ms = json_integer<std::int64_t>(*at);
  if (!at_ms) return std::nullopt;
  vouch.at_ms = *at_ms;
  return vouch;
}

std::string with_vouch(std::string_view root_data, const ClusterVouch& vouch) {
  json j = vouch_root_object(root_data);
  json sessions = json::array();
  for (const std::int64_t session : vouch.sessions) sessions.push_back(vouch_session_text(session));
  j["vouched"] = {{"sessions", std::move(sessions)}, {"at_ms", vouch.at_ms}};
  return j.dump();
}

std::optional<std::int64_t> recorded_maker_session(std::string_view root_data) {
  const json j = vouch_root_object(root_data);
  const auto it = j.find("made_in_session");
  return it == j.end() ? std::nullopt : parse_vouch_session(*it);
}

std::string with_maker_session(std::string_view root_data, std::int64_t session) {
  json j = vouch_root_object(root_data);
  j["made_in_session"] = vouch_session_text(session);
  return j.dump();
}

bool vouch_covers_run(const ClusterVouch& vouch, std::int64_t session) noexcept {
  return std::any_of(vouch.sessions.begin(), vouch.sessions.end(),
                     [session](std::int64_t s) { return same_zookeeper_run(s, session); });
}

bool vouch_reaches(const std::optional<ClusterVouch>& vouch, std::int64_t session,
                   std::int64_t now_ms) noexcept {
  return vouch && vouch_covers_run(*vouch, session) && now_ms >= vouch->at_ms &&
         now_ms - vouch->at_ms < kVouchLasts.count();
}

}  // namespace snowflake::coord
