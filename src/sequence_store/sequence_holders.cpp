#include "snowflake/sequence_store/sequence_holders.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "snowflake/base/json_integer.hpp"
#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::coord {

namespace {

using nlohmann::json;

bool adds_up(const HeldSequence& h) {
  return h.from >= 0 && h.from <= h.to && h.dropped_through >= 0 && h.left >= 0 && h.rate >= 0;
}

}  // namespace

std::string encode(const HolderRecord& r) {
  json tags = json::object();
  for (const auto& [tag, h] : r.tags) {
    tags[tag] = {{"from", h.from},
                 {"to", h.to},
                 {"dropped_through", h.dropped_through},
                 {"left", h.left},
                 {"rate", h.rate}};
  }
  return json{{"owner", r.owner}, {"tags", std::move(tags)}}.dump();
}

std::optional<HolderRecord> decode_holder(std::string_view text) {
  auto r = decode_json_object<HolderRecord>(text, [](const json& j) {
    HolderRecord d;
    d.owner = j.at("owner").get<std::string>();
    for (const auto& [tag, h] : j.at("tags").items()) {
      const double rate = h.at("rate").get<double>();
      d.tags[tag] = {json_integer_at<std::int64_t>(h, "from"),
                     json_integer_at<std::int64_t>(h, "to"),
                     json_integer_at<std::int64_t>(h, "dropped_through"),
                     json_integer_at<std::int64_t>(h, "left"), rate};
    }
    return d;
  });
  if (r && !std::all_of(r->tags.begin(), r->tags.end(),
                        [](const auto& t) { return adds_up(t.second); })) {
    return std::nullopt;
  }
  return r;
}

bool holds_unconfirmed(const HolderRecord& r, std::string_view tag, std::int64_t above) {
  const auto h = r.tags.find(tag);
  if (h == r.tags.end()) return false;
  const HeldSequence& held = h->second;
  return held.from < held.to && held.from <= above && held.dropped_through < above;
}

Result<void, CoordError> publish_holder(ZkSession& zk, const std::string& root,
                                        const std::string& run, const HolderRecord& r) {
  const std::string path = tree::child(tree::sequence_holders_dir(root), run);
  const std::string data = encode(r);
  auto written = zk.set(path, data, -1);  // ours alone: no other writer to race
  if (written) return outcome::success();
  if (written.error().code != ZkErrc::no_node) return CoordError::from(written.error());
  BOOST_OUTCOME_TRY(zk.ensure_path(tree::sequence_holders_dir(root)));
  auto created = zk.create(path, data);
  if (created) return outcome::success();
  // Made meanwhile by a lost reply of ours: write it again.
  if (created.error().code == ZkErrc::node_exists) {
    auto again = zk.set(path, data, -1);
    if (again) return outcome::success();
    return CoordError::from(again.error());
  }
  return CoordError::from(created.error());
}

Result<bool, CoordError> remove_holder(ZkSession& zk, const std::string& root,
                                       const std::string& run) {
  auto removed = zk.remove(tree::child(tree::sequence_holders_dir(root), run), -1);
  if (removed) return true;
  if (removed.error().code == ZkErrc::no_node) return false;
  return CoordError::from(removed.error());
}

Result<std::vector<Holder>, CoordError> read_holders(ZkSession& zk, const std::string& root) {
  const std::string dir = tree::sequence_holders_dir(root);
  BOOST_OUTCOME_TRY(names, zk.try_children(dir));
  std::vector<Holder> out;
  if (!names) return out;
  for (const auto& run : names.value()) {
    BOOST_OUTCOME_TRY(got, zk.try_get(tree::child(dir, run)));
    if (!got) continue;  // deleted meanwhile: a clean stop
    out.push_back({run, decode_holder(got->data), got->stat.mtime_ms});
  }
  std::sort(out.begin(), out.end(), [](const Holder& a, const Holder& b) { return a.run < b.run; });
  return out;
}

}  // namespace snowflake::coord
