#include "snowflake/sequence_store/sequence_node.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

#include "snowflake/base/json_integer.hpp"
#include "snowflake/sequences/number_template.hpp"

namespace snowflake::coord {

namespace {

using nlohmann::json;

bool adds_up(const SequenceNode& n) {
  if (n.next < 1 || n.step < 1 || n.floor < 0 || n.takes.size() > kSequenceTakesKept) return false;
  if (n.end < 2) return false;  // room for 1 at least
  if (!n.number_template.empty()) {
    const auto t = NumberTemplate::parse(n.number_template, n.reset);
    if (!t || n.end - 1 > t.value().widest()) return false;  // never wider than it prints
  }
  if (n.strict && n.reset != PeriodReset::none) return false;  // not both (yet)
  if (n.reset == PeriodReset::none) {
    if (!n.time_zone.empty() || n.retention_s != 0 || !n.removed_through.empty()) return false;
  } else if (!is_zone_name(n.time_zone) || n.retention_s < 0 ||
             (!n.removed_through.empty() && !is_period_key(n.reset, n.removed_through))) {
    return false;
  }
  return std::all_of(n.takes.begin(), n.takes.end(), [&](const SequenceTake& t) {
    return !t.owner.empty() && t.start >= 1 && t.start < t.end && t.end <= n.next;
  });
}

}  // namespace

std::string period_tag(std::string_view tag, std::string_view key) {
  return fmt::format("{}@{}", tag, key);
}

SequenceNode first_of_period(const SequenceNode& definition) {
  SequenceNode first;
  first.next = definition.next;
  first.step = definition.step;
  first.end = definition.end;
  return first;
}

std::int64_t removable_after_ms(const Period& p, std::int64_t retention_s,
                                std::int64_t max_skew_ms) noexcept {
  const std::int64_t retention_ms =
      retention_s > INT64_MAX / 1000 ? INT64_MAX : std::max<std::int64_t>(retention_s, 0) * 1000;
  const std::int64_t wait =
      std::max(retention_ms,
               std::clamp<std::int64_t>(max_skew_ms, 0, INT64_MAX / 2) + kPeriodRemovalMarginMs);
  return p.ends_ms > INT64_MAX - wait ? INT64_MAX : p.ends_ms + wait;
}

std::string encode(const SequenceNode& n) {
  json takes = json::array();
  for (const auto& t : n.takes)
    takes.push_back({{"owner", t.owner}, {"start", t.start}, {"end", t.end}});
  json j{{"next", n.next}, {"step", n.step}, {"floor", n.floor}, {"takes", takes}};
  if (n.frozen) j["frozen"] = true;  // absent while thawed: what 0.4 wrote, and reads
  // Absent unless set, as older versions wrote them.
  if (!n.number_template.empty()) j["template"] = n.number_template;
  if (n.end != kSequenceMax) j["max"] = n.end - 1;  // the largest number, as --max said
  if (n.reset != PeriodReset::none) {
    j["reset"] = to_string(n.reset);
    j["time_zone"] = n.time_zone;
    j["retention_s"] = n.retention_s;
    if (!n.removed_through.empty()) j["removed_through"] = n.removed_through;
  }
  if (n.strict) j["order"] = "strict";
  return j.dump();
}

std::string encode_floor(const SequenceNode& n) {
  return json{{"floor", n.floor}, {"frozen", n.frozen}}.dump();
}

std::optional<SequenceNode> decode_sequence(std::string_view text) {
  auto n = decode_json_object<SequenceNode>(text, [](const json& j) {
    SequenceNode d;
    d.next = json_integer_at<std::int64_t>(j, "next");
    d.step = json_integer_at<std::int64_t>(j, "step");
    d.floor = json_integer_at<std::int64_t>(j, "floor");
    for (const auto& t : j.at("takes")) {
      d.takes.push_back({t.at("owner").get<std::string>(),
                         json_integer_at<std::int64_t>(t, "start"),
                         json_integer_at<std::int64_t>(t, "end")});
    }
    d.frozen = j.value("frozen", false);
    d.number_template = j.value("template", std::string());
    if (j.contains("reset")) {
      const auto reset = parse_period_reset(j.at("reset").get<std::string>());
      if (!reset || *reset == PeriodReset::none) throw std::out_of_range("reset");
      d.reset = *reset;
      d.time_zone = j.at("time_zone").get<std::string>();
      d.retention_s = json_integer_at<std::int64_t>(j, "retention_s");
      d.removed_through = j.value("removed_through", std::string());
    }
    if (j.contains("order")) {
      const auto order = j.at("order").get<std::string>();
      if (order != "strict" && order != "per-daemon") throw std::out_of_range("order");
      d.strict = order == "strict";
    }
    if (j.contains("max")) {
      const auto max = json_integer_at<std::int64_t>(j, "max");
      d.end = max < kSequenceMax ? max + 1 : 0;  // INT64_MAX itself: refused below
    }
    return d;
  });
  if (n && !adds_up(*n)) return std::nullopt;
  return n;
}

std::string_view to_string(TakeRefusal r) noexcept {
  switch (r) {
    case TakeRefusal::version_wrapped:
      return "version_wrapped";
    case TakeRefusal::exhausted:
      return "exhausted";
    case TakeRefusal::frozen:
      return "frozen";
    case TakeRefusal::periodic:
      return "periodic";
    case TakeRefusal::strict:
      return "strict";
  }
  return "?";
}

std::int64_t first_untaken(const SequenceNode& node) noexcept {
  return std::max(node.next, node.floor < kSequenceMax ? node.floor + 1 : node.floor);
}

bool is_exhausted(const SequenceNode& node) noexcept { return first_untaken(node) >= node.end; }

TakeOutcome plan_take(const SequenceNode& node, std::int32_t version, const std::string& owner,
                      std::int64_t count, bool strict_owner) {
  // ZooKeeper's versions are int32 and wrap: after 2^31 - 1 writes comes
  // INT32_MIN, and after 2^32 writes -1, which a conditional write reads as
  // "any version". Written with it, two daemons that read the same node would
  // both succeed. Versions are only ever compared for equality.
  if (version == -1) return {std::nullopt, TakeRefusal::version_wrapped};
  if (node.frozen) return {std::nullopt, TakeRefusal::frozen};
  if (node.reset != PeriodReset::none) return {std::nullopt, TakeRefusal::periodic};
  if (node.strict && !strict_owner) return {std::nullopt, TakeRefusal::strict};
  const std::int64_t start = first_untaken(node);
  if (start >= node.end || count < 1) return {std::nullopt, TakeRefusal::exhausted};
  count = std::max(count, node.step);  // the tag's smallest range
  const std::int64_t end = start + std::min(count, node.end - start);
  TakePlan plan{node, {owner, start, end}};
  plan.after.next = end;
  plan.after.takes.push_back(plan.range);
  if (plan.after.takes.size() > kSequenceTakesKept) {
    plan.after.takes.erase(
        plan.after.takes.begin(),
        plan.after.takes.end() - static_cast<std::ptrdiff_t>(kSequenceTakesKept));
  }
  return {std::move(plan), std::nullopt};
}

std::optional<SequenceTake> find_take(const SequenceNode& node, std::string_view owner) {
  // Newest first: the write in question, if applied, is among the latest.
  const auto t = std::find_if(node.takes.rbegin(), node.takes.rend(),
                              [&](const SequenceTake& take) { return take.owner == owner; });
  if (t != node.takes.rend()) return *t;
  return std::nullopt;
}

std::string take_nonce(std::string_view run, std::uint64_t n) {
  return fmt::format("{}-{}", run, n);
}

std::optional<SequenceNode> plan_give_back(const SequenceNode& node, std::string_view run,
                                           std::int64_t first_unused) {
  if (node.frozen) return std::nullopt;  // what was handed out is in doubt: keep it a gap
  const std::string prefix = fmt::format("{}-", run);
  // A raise above what we held: the numbers up to the floor stay unused.
  if (node.floor < kSequenceMax) first_unused = std::max(first_unused, node.floor + 1);
  std::int64_t adjoining_from = node.next;
  for (auto t = node.takes.rbegin(); t != node.takes.rend(); ++t) {
    if (!t->owner.starts_with(prefix) || t->end != adjoining_from) break;
    adjoining_from = t->start;
    if (first_unused >= t->start && first_unused < node.next) {
      SequenceNode back = node;
      back.next = first_unused;
      // The takes it gave back no longer hold what they name.
      while (!back.takes.empty() && back.takes.back().start >= first_unused) back.takes.pop_back();
      if (!back.takes.empty() && back.takes.back().end > first_unused)
        back.takes.back().end = first_unused;
      return back;
    }
  }
  return std::nullopt;
}

SequenceNode raised(const SequenceNode& node, std::int64_t above) {
  SequenceNode n = node;
  n.floor = std::max(n.floor, above);
  if (n.floor < kSequenceMax) n.next = std::max(n.next, n.floor + 1);
  n.frozen = false;
  return n;
}

SequenceNode freeze(const SequenceNode& node, std::int64_t above) {
  SequenceNode n = node;
  n.floor = std::max(n.floor, above);
  if (n.floor < kSequenceMax) n.next = std::max(n.next, n.floor + 1);
  n.frozen = true;
  return n;
}

}  // namespace snowflake::coord
