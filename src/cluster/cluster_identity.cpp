#include "snowflake/cluster/cluster_identity.hpp"

#include <openssl/rand.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <random>
#include <stdexcept>

#include "snowflake/base/json_integer.hpp"

namespace snowflake::coord {

namespace {

using nlohmann::json;

constexpr std::size_t kIdBytes = 16;

json object_of(std::string_view root_data) {
  json j = json::parse(root_data, nullptr, false);
  return j.is_object() ? j : json::object();
}

}  // namespace

std::string_view to_string(FenceKind kind) noexcept {
  switch (kind) {
    case FenceKind::new_cluster:
      return "new_cluster";
    case FenceKind::history_lost:
      return "history_lost";
  }
  return "history_lost";
}

std::optional<FenceKind> parse_fence_kind(std::string_view text) noexcept {
  if (text == "new_cluster") return FenceKind::new_cluster;
  if (text == "history_lost") return FenceKind::history_lost;
  return std::nullopt;
}

std::chrono::milliseconds fence_length(const CoordinatorSettings& s) noexcept {
  return s.lease_timeout + s.safety_margin + s.max_skew;
}

std::optional<std::string> recorded_cluster_id(std::string_view root_data) {
  const json j = object_of(root_data);
  const auto it = j.find("cluster_id");
  if (it == j.end() || !it->is_string()) return std::nullopt;
  std::string id = it->get<std::string>();
  if (!is_cluster_id(id)) return std::nullopt;
  return id;
}

std::optional<ClusterFence> recorded_fence(std::string_view root_data) {
  const json j = object_of(root_data);
  const auto it = j.find("fence");
  if (it == j.end() || !it->is_object()) return std::nullopt;
  return decode_json_object<ClusterFence>(it->dump(), [](const json& f) {
    const auto kind = parse_fence_kind(f.at("kind").get<std::string>());
    if (!kind) throw std::out_of_range("kind");
    return ClusterFence{json_integer_at<std::int64_t>(f, "until_ms"), *kind,
                        json_integer_at<std::int64_t>(f, "at_ms"),
                        f.value("reason", std::string())};
  });
}

std::string with_cluster_id(std::string_view root_data, std::string_view id) {
  json j = object_of(root_data);
  j["cluster_id"] = std::string(id);
  return j.dump();
}

std::string with_fence(std::string_view root_data, const ClusterFence& fence) {
  json j = object_of(root_data);
  j["fence"] = {{"until_ms", fence.until_ms},
                {"kind", std::string(to_string(fence.kind))},
                {"at_ms", fence.at_ms},
                {"reason", fence.reason}};
  return j.dump();
}

std::string without_fence(std::string_view root_data) {
  json j = object_of(root_data);
  j.erase("fence");
  return j.dump();
}

std::string new_cluster_id() {
  std::array<unsigned char, kIdBytes> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    // OpenSSL's generator failed (it does not, once seeded): the kernel's.
    std::random_device device;
    for (auto& b : bytes) b = static_cast<unsigned char>(device());
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  id.reserve(2 * kIdBytes);
  for (const unsigned char b : bytes) {
    id.push_back(kHex[b >> 4]);
    id.push_back(kHex[b & 0xf]);
  }
  return id;
}

bool is_cluster_id(std::string_view text) noexcept {
  return text.size() == 2 * kIdBytes &&
         text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

ClusterFence combined(const ClusterFence& a, const ClusterFence& b) {
  // The one whose words stand: a loss over a new cluster, then the later end.
  const bool a_first =
      a.kind != b.kind ? a.kind == FenceKind::history_lost : a.until_ms >= b.until_ms;
  ClusterFence out = a_first ? a : b;
  out.until_ms = std::max(a.until_ms, b.until_ms);
  return out;
}

}  // namespace snowflake::coord
