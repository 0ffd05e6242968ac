// The data of our ZooKeeper nodes, which any client with write access can
// change: each decoder either refuses the text or returns data that encodes
// to a text it decodes again to the same data. The first byte picks the node
// (or, 7, Leaf's leaf_alloc rows for `seq import`; 8, the root's cluster ID,
// fence, vouch and form policy; 9, a strict sequence's owner record).
#include <set>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/cluster/cluster_identity.hpp"
#include "snowflake/cluster/cluster_vouch.hpp"
#include "snowflake/cluster/form_policy.hpp"
#include "snowflake/ids/layout_json.hpp"
#include "snowflake/migration/leaf_alloc.hpp"
#include "snowflake/sequence_store/sequence_holders.hpp"
#include "snowflake/sequence_store/sequence_node.hpp"
#include "snowflake/sequence_store/strict_owner.hpp"
#include "snowflake/zk/node_data.hpp"

namespace {

template <typename Decode, typename Encode>
void round_trip(std::string_view text, Decode decode, Encode encode) {
  const auto data = decode(text);
  if (!data) return;
  const std::string encoded = encode(*data);
  FUZZ_CHECK(decode(encoded) == data, text);
}

template <typename Decode>
void round_trip(std::string_view text, Decode decode) {
  round_trip(text, decode, [](const auto& d) { return snowflake::coord::encode(d); });
}

// A sequence node that decodes: a take planned on it never hands out a
// number at or below its floor, before its next or past its end, and writes data that
// decodes; a give back never moves next up.
void sequence_decisions(std::string_view text) {
  namespace c = snowflake::coord;
  const auto node = c::decode_sequence(text);
  if (!node) return;
  // A nonce of a run the node has not seen (each attempt's is new).
  const auto taken = c::plan_take(*node, 7, "fresh-1", node->step);
  // A strict sequence's ranges are its owner's alone.
  if (node->strict) FUZZ_CHECK(!taken.plan && taken.refusal == c::TakeRefusal::strict, text);
  if (taken.plan) {
    const auto& r = taken.plan->range;
    FUZZ_CHECK(r.start >= node->next && r.start > node->floor && r.start < r.end, text);
    FUZZ_CHECK(r.end <= node->end, text);  // never past its --max
    FUZZ_CHECK(c::decode_sequence(c::encode(taken.plan->after)) == taken.plan->after, text);
    FUZZ_CHECK(c::find_take(taken.plan->after, "fresh-1") == r, text);
  }
  if (const auto back = c::plan_give_back(*node, "run", node->next - 1)) {
    FUZZ_CHECK(back->next <= node->next && back->next > back->floor, text);
    FUZZ_CHECK(c::decode_sequence(c::encode(*back)).has_value(), text);
  }
}

// A holder node that decodes: a raise at or below what it dropped through,
// or below all it holds, never waits for it.
void holder_decisions(std::string_view text) {
  namespace c = snowflake::coord;
  const auto record = c::decode_holder(text);
  if (!record) return;
  for (const auto& [tag, held] : record->tags) {
    FUZZ_CHECK(!c::holds_unconfirmed(*record, tag, held.dropped_through), text);
    if (held.from > 0) FUZZ_CHECK(!c::holds_unconfirmed(*record, tag, held.from - 1), text);
  }
}

// Leaf's leaf_alloc as `mysql --batch` prints it (seq import): rows that
// parse are names, numbers in range, each tag once.
void leaf_alloc_rows(std::string_view text) {
  const auto rows = snowflake::migration::parse_leaf_alloc(text);
  if (!rows) return;
  std::set<std::string> tags;
  for (const auto& r : rows.value()) {
    FUZZ_CHECK(snowflake::is_valid_name(r.tag) && r.max_id >= 1 && r.step >= 1 &&
                   r.step <= (std::int64_t{1} << 31) && tags.insert(r.tag).second,
               text);
  }
}

// The root's cluster ID and fence (cluster_identity.hpp): what decodes is
// written back as it was, a fence written or dropped leaves the ID alone,
// and a fence combined with another never ends sooner than either.
void root_identity(std::string_view text) {
  namespace c = snowflake::coord;
  const auto id = c::recorded_cluster_id(text);
  if (id) {
    FUZZ_CHECK(c::is_cluster_id(*id), text);
    FUZZ_CHECK(c::recorded_cluster_id(c::with_cluster_id(text, *id)) == id, text);
  }
  // cluster create's vouch: round trips, kept by a fence's writes, and
  // never reaches a session of another ZooKeeper run.
  if (const auto vouch = c::recorded_vouch(text)) {
    const auto again = c::recorded_vouch(c::with_vouch(text, *vouch));
    FUZZ_CHECK(again && again->sessions == vouch->sessions && again->at_ms == vouch->at_ms, text);
    FUZZ_CHECK(c::recorded_vouch(c::without_fence(text)).has_value(), text);
    // A session of another run of the first server: reached only if another
    // listed session is of that run.
    const std::int64_t other = vouch->sessions.front() ^ (std::int64_t{1} << 20);
    FUZZ_CHECK(!c::vouch_reaches(c::ClusterVouch{{vouch->sessions.front()}, vouch->at_ms}, other,
                                 vouch->at_ms),
               text);
  }
  // The form policy: what reads as one is written back as it was, beside
  // the rest, and is only ever a policy of valid tags.
  if (const auto forms = c::recorded_form_policy(text); forms && forms.value()) {
    const auto& policy = *forms.value();
    for (const auto& [tag, form] : policy.tags) FUZZ_CHECK(snowflake::is_valid_name(tag), text);
    const std::string written = c::with_form_policy(text, policy);
    FUZZ_CHECK(c::recorded_form_policy(written).value() == forms.value(), text);
    FUZZ_CHECK(c::recorded_cluster_id(written) == id, text);
  }
  if (const auto maker = c::recorded_maker_session(text)) {
    FUZZ_CHECK(c::recorded_maker_session(c::with_maker_session(text, *maker)) == maker, text);
  }
  const auto fence = c::recorded_fence(text);
  FUZZ_CHECK(!c::recorded_fence(c::without_fence(text)), text);
  FUZZ_CHECK(c::recorded_cluster_id(c::without_fence(text)) == id, text);
  if (!fence) return;
  const std::string fenced = c::with_fence(text, *fence);
  FUZZ_CHECK(c::recorded_fence(fenced) == fence && c::recorded_cluster_id(fenced) == id, text);
  const c::ClusterFence other{fence->until_ms / 2, c::FenceKind::new_cluster, 0, "other"};
  const auto both = c::combined(*fence, other);
  FUZZ_CHECK(both.until_ms >= fence->until_ms && both.until_ms >= other.until_ms, text);
  FUZZ_CHECK(fence->kind != c::FenceKind::history_lost || both.kind == c::FenceKind::history_lost,
             text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  if (size == 0) return 0;
  const auto text = as_text(data + 1, size - 1);
  namespace c = snowflake::coord;
  switch (data[0] % 10) {
    case 0:
      round_trip(text, [](std::string_view t) { return c::decode_inuse(t); });
      break;
    case 1:
      round_trip(text, [](std::string_view t) { return c::decode_notuse(t); });
      break;
    case 2:
      round_trip(text, [](std::string_view t) { return c::decode_sequential(t); });
      break;
    case 3:
      round_trip(
          text, [](std::string_view t) { return snowflake::decode_layout(t); },
          [](const snowflake::LayoutSettings& l) { return snowflake::encode_layout(l); });
      break;
    case 4:
      round_trip(text, [](std::string_view t) { return c::decode_owner(t); });
      break;
    case 5:
      round_trip(text, [](std::string_view t) { return c::decode_sequence(t); });
      sequence_decisions(text);
      break;
    case 6:
      round_trip(text, [](std::string_view t) { return c::decode_holder(t); });
      holder_decisions(text);
      break;
    case 7:
      leaf_alloc_rows(text);
      break;
    case 8:
      root_identity(text);
      break;
    case 9:
      round_trip(text, [](std::string_view t) { return c::decode_strict_owner(t); });
      break;
  }
  (void)c::worker_id_of_node(text);
  return 0;
}
