#include "sequence_routes.hpp"

#include <fmt/format.h>

#include <vector>

#include "id_answer.hpp"
#include "snowflake/names.hpp"
#include "snowflake/sequence_registry.hpp"
#include "snowflake/sequence_sizing.hpp"

namespace snowflake::http {

namespace {

Response unknown_sequence(std::string_view tag, const RouterContext& ctx) {
  if (!ctx.sequences) {
    return error_response(Status::not_found, "unknown_sequence",
                          "this daemon serves no sequences (sequences.enabled is false)");
  }
  // Just started, and ZooKeeper not reached yet: the tag may well exist. A
  // 404 would tell the client it never will.
  if (!ctx.sequences->listed.load(std::memory_order_acquire)) {
    return unavailable_response(
        "sequence_unavailable",
        fmt::format("sequence \"{}\": this daemon has not read the sequences from ZooKeeper yet",
                    tag),
        kRetrySoon);
  }
  return error_response(
      Status::not_found, "unknown_sequence",
      fmt::format("no sequence \"{}\": `snowflaked seq create {} --start N` makes one", tag, tag));
}

Response frozen_sequence(std::string_view tag) {
  return unavailable_response(
      "sequence_frozen",
      fmt::format("sequence \"{}\" is frozen: ZooKeeper lost or rolled back some of the "
                  "cluster's history, so what was handed out is in doubt; `snowflaked seq raise "
                  "{} --above N` (N above every number it handed out) thaws it",
                  tag, tag),
      kRetrySoon);
}

// `got`: what was left of the batch asked for, dropped (a gap at the very
// end, where a smaller batch still gets them).
Response exhausted_sequence(std::string_view tag, std::size_t got) {
  return error_response(
      Status::gone, "sequence_exhausted",
      fmt::format("sequence \"{}\" has {} left: its numbers end below 2^63 - 1, or it was "
                  "retired (seq raise {} --above 9223372036854775807)",
                  tag, got == 0 ? "no number" : "fewer numbers than asked for", tag));
}

// `count` numbers of the tag's sequence, or the answer to send instead.
Result<std::vector<std::int64_t>, Response> take_numbers(std::string_view tag, std::uint32_t count,
                                                         RouterContext& ctx) {
  SequenceEntry* entry = ctx.sequences ? ctx.sequences->find(tag) : nullptr;
  if (!entry) return unknown_sequence(tag, ctx);
  if (entry->frozen.load(std::memory_order_acquire)) [[unlikely]]
    return frozen_sequence(tag);
  std::vector<std::int64_t> numbers;
  numbers.reserve(count);
  std::size_t got = entry->buffer.take(count, numbers);
  if (got < count && entry->exhausted.load(std::memory_order_acquire)) [[unlikely]]
    return exhausted_sequence(tag, got);  // nothing will come: no wait
  if (got < count) [[unlikely]] {
    // Dry: the supplier takes a range (the first one, or the next after a
    // burst); wait for it, a bounded time.
    entry->wanted.store(true, std::memory_order_release);
    ctx.sequences->request_refill();
    got += entry->buffer.take_waiting(count - got, numbers, ctx.sequence_wait);
  }
  // Numbers taken before a batch ran dry are never handed out: a gap.
  entry->gauges.handed_out.fetch_add(got, std::memory_order_relaxed);
  if (got < count && entry->frozen.load(std::memory_order_acquire)) return frozen_sequence(tag);
  if (got < count && entry->exhausted.load(std::memory_order_acquire))
    return exhausted_sequence(tag, got);
  if (got < count) {
    return unavailable_response(
        "sequence_unavailable",
        ctx.sequences->connected.load(std::memory_order_relaxed)
            ? fmt::format("sequence \"{}\" has no number buffered here and no range came within "
                          "{} ms",
                          tag, ctx.sequence_wait.count())
            : fmt::format("sequence \"{}\" has no number buffered here, and ZooKeeper is away: "
                          "no new range can be taken",
                          tag),
        kRetrySoon);
  }
  return numbers;
}

}  // namespace

Response issue_sequence(const Request& req, std::string_view tag, std::string_view query,
                        RouterContext& ctx) {
  if (!is_valid_name(tag)) return bad_tag();
  const auto q = parse_id_query(query, ctx.settings.max_batch);
  if (!q) return error_response(q.error().status, q.error().code, q.error().message);
  if (q.value().form && *q.value().form != IdForm::plain) {
    return error_response(Status::bad_request, "bad_form",
                          "a sequence's numbers are handed out plain (form=plain or none)");
  }
  auto taken = take_numbers(tag, q.value().count, ctx);
  if (!taken) return std::move(taken).error();
  const Format format = negotiate(req, q.value());
  return ids_response(ids_body(tag, taken.value(), format, q.value().batch), format);
}

Response leaf_segment_get(std::string_view key, RouterContext& ctx) {
  if (!is_valid_name(key)) return bad_tag();
  auto taken = take_numbers(key, 1, ctx);
  if (!taken) return std::move(taken).error();
  std::string body;
  append_id(body, static_cast<std::uint64_t>(taken.value().front()));
  return text_response(Status::ok, std::move(body));
}

nlohmann::ordered_json sequences_json(const RouterContext& ctx) {
  if (!ctx.sequences) return nullptr;
  const auto relaxed = std::memory_order_relaxed;
  const bool connected = ctx.sequences->connected.load(relaxed);
  nlohmann::ordered_json tags = nlohmann::ordered_json::object();
  for (const SequenceEntry* e : ctx.sequences->entries()) {
    const std::int64_t left = e->gauges.left.load(relaxed);
    const double rate = e->gauges.rate.load(relaxed);
    const double seconds = seconds_left(left, rate);
    const bool frozen = e->frozen.load(relaxed);
    const bool exhausted = e->exhausted.load(relaxed);
    tags[e->tag] = {
        // Numbers here, or a range to be had.
        {"ready", !frozen && (left > 0 || (connected && !exhausted))},
        {"frozen", frozen},
        {"exhausted", exhausted},
        {"left", left},
        {"seconds_left", seconds < 0 ? nlohmann::ordered_json(nullptr)
                                     : nlohmann::ordered_json(static_cast<std::int64_t>(seconds))},
        {"rate", rate},
        {"step", e->gauges.step.load(relaxed)},
        {"fetches", e->gauges.fetches.load(relaxed)},
        {"handed_out", e->gauges.handed_out.load(relaxed)}};
  }
  return {{"zookeeper", connected ? "connected" : "connecting"}, {"tags", std::move(tags)}};
}

}  // namespace snowflake::http
