// One job: a request for numbers of a tag (GET and HEAD /seq, Leaf's
// segment route): taken from the buffer, waited for, passed on to a strict
// tag's owner, or refused with the code docs/api.md names; each refusal's
// answer is here beside the path that gives it.

#include "sequence_routes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "id_answer.hpp"
#include "snowflake/base/clock.hpp"
#include "snowflake/base/lease.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/http/strict_forwarder.hpp"
#include "snowflake/sequences/periodic.hpp"
#include "snowflake/sequences/registry.hpp"
#include "snowflake/sequences/sizing.hpp"

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

// A strict sequence (`seq create --order strict`) this daemon may not hand
// out now: another daemon owns it ("owner": where it answers; null while
// it has none, during a handover), or ours with the worker-ID lease not
// running (its order rests on that lease: sequence_store/strict_owner.hpp).
// The owner's address or URL in a body: null when none is known.
nlohmann::ordered_json null_if_empty(const std::string& s) {
  return s.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s);
}

Response strict_refusal(const SequenceEntry& entry, const RouterContext& ctx,
                        std::string_view unreachable = {}) {
  if (entry.strict.owned_generation() != 0) {
    return unavailable_response(
        to_string(ctx.lease.state() == LeaseState::valid ? LeaseState::expired : ctx.lease.state()),
        fmt::format("sequence \"{}\" is strict and owned here, but this daemon's worker-ID lease "
                    "is not running: its numbers go out again once a heartbeat renews it",
                    entry.tag),
        kRetrySoon);
  }
  const OwnerPlace place = entry.strict.owner();
  const std::string& owner = place.address;
  const std::string url = place.url();
  entry.strict.refused.fetch_add(1, std::memory_order_relaxed);
  nlohmann::ordered_json body{
      {"error", "not_owner"},
      {"message",
       owner.empty()
           ? fmt::format("sequence \"{}\" is strict and has no owner right now (one is taking "
                         "it over): ask again shortly",
                         entry.tag)
       : !unreachable.empty()
           ? fmt::format("sequence \"{}\" is strict: only its owner, {}, hands out its numbers, "
                         "and the request passed on to it got no answer ({})",
                         entry.tag, owner, unreachable)
       : ctx.forwarder && !ctx.forwarder->passes_to(place)
           ? fmt::format("sequence \"{}\" is strict: only its owner, {}, hands out its numbers, "
                         "and this daemon {}: ask it",
                         entry.tag, url,
                         place.tls ? "passes requests on over TLS only with http.forward_ca_file "
                                     "(the CAs to verify the owner by)"
                                   : "serves TLS and passes nothing on over plain HTTP")
           : fmt::format("sequence \"{}\" is strict: only its owner, {}, hands out its numbers",
                         entry.tag, owner)},
      {"owner", null_if_empty(owner)},
      {"owner_url", null_if_empty(url)}};
  Response res = json_response(Status::service_unavailable, body.dump());
  res.set(beast_http::field::retry_after, "1");
  return res;
}

// `got`: what was left of the batch asked for, dropped (a gap at the very
// end, where a smaller batch still gets them).
Response exhausted_sequence(std::string_view tag, std::size_t got) {
  return error_response(
      Status::gone, "sequence_exhausted",
      fmt::format("sequence \"{}\" has {} left: its numbers end at its --max (by default the "
                  "largest its template prints, or 2^63 - 2), or it was retired (seq raise {} "
                  "--above 9223372036854775807)",
                  tag, got == 0 ? "no number" : "fewer numbers than asked for", tag));
}

std::int64_t wall_ms_now() { return SystemClock::read_wall_ns() / 1'000'000; }

// A periodic tag whose period has no number left below its --max: until the
// next period begins (Retry-After), never a number wider than the template.
Response exhausted_period(std::string_view tag, const Period& p) {
  const std::int64_t wait = std::max<std::int64_t>(1, p.next_begins_ms - wall_ms_now());
  return unavailable_response(
      "period_exhausted",
      fmt::format("sequence \"{}\" has no number left in period {}: its numbers end at its --max; "
                  "the next period starts from the start value again",
                  tag, p.key),
      std::chrono::milliseconds(wait));
}

Response closed_period(std::string_view tag, const Period& p) {
  return unavailable_response(
      "period_closed",
      fmt::format("sequence \"{}\": period {} is closed here (over on this daemon, or its node "
                  "removed after its retention): this daemon's clock is behind its period",
                  tag, p.key),
      kRetrySoon);
}

Response clock_skewed(std::string_view tag, const RouterContext& ctx) {
  return unavailable_response(
      to_string(LeaseState::clock_skew),
      fmt::format("sequence \"{}\" restarts each period, which this daemon's clock decides, and "
                  "the clock is {} ms apart from ZooKeeper's, more than coordinator.max_skew_ms",
                  tag, ctx.coordination.clock_skew_ms.load(std::memory_order_relaxed)),
      kRetrySoon);
}

// The same, found on the request: the clock stepped since the last heartbeat.
Response clock_off(std::string_view tag, std::int64_t off_ms, const RouterContext& ctx) {
  return unavailable_response(
      to_string(LeaseState::clock_skew),
      fmt::format("sequence \"{}\" restarts each period, which this daemon's clock decides, and "
                  "the clock is {} ms off ZooKeeper's as last seen, more than "
                  "coordinator.max_skew_ms ({})",
                  tag, off_ms, ctx.sequences->zookeeper_clock.max_skew_ms()),
      kRetrySoon);
}

// How the numbers go out: /seq's shapes, or Leaf's bare number.
struct Shape {
  Format format = Format::json;
  bool batch = false;
  bool leaf = false;
  // HEAD: answered as a GET would be now, nothing taken (probe_response).
  bool probe = false;
};

// One request for `count` numbers of a tag. What it took is kept across
// waits (a batch the buffer fills in two goes loses nothing); while it holds
// numbers or takes them, it is counted among the tag's replies in flight,
// until its reply is written (seq raise waits for those; a wait holding
// none holds up nobody).
struct SequenceAsk {
  SequenceAsk(SequenceEntry& e, std::string_view t, std::uint32_t n, Shape s)
      : parent(&e), entry(&e), tag(t), count(n), shape(s) {
    numbers.reserve(n);
  }
  SequenceAsk(SequenceAsk&&) noexcept = default;
  SequenceAsk& operator=(SequenceAsk&&) = delete;
  SequenceAsk(const SequenceAsk&) = delete;
  SequenceAsk& operator=(const SequenceAsk&) = delete;
  // A wait ended without an answer (its connection cut): what it took is a gap.
  ~SequenceAsk() {
    if (!numbers.empty())
      entry->gauges.dropped.fetch_add(numbers.size(), std::memory_order_relaxed);
  }
  SequenceEntry* parent;  // the tag's
  // A periodic tag's slots held (freed by nobody) until the ask is gone:
  // destroyed last, after the token of replies in flight that may point
  // into its slot's entry.
  PeriodicSequence::Hold period_hold{};
  // Where its numbers come from: the tag's, or (a tag that restarts each
  // period) the period's the clock was in when it was first tried.
  SequenceEntry* entry;
  const PeriodSlot* slot = nullptr;
  std::string tag;
  std::uint32_t count;
  Shape shape;
  std::vector<std::int64_t> numbers{};  // moved from: empty (vector's move)
  InFlightToken in_flight{};
};

// A sequence with a template: each number as printed ("id", "ids", or a
// line of text) and as it is ("number", "numbers"). The template's
// characters need no JSON escaping (number_template.hpp), nor does the tag.
std::string printed_body(const SequenceAsk& ask, const FilledTemplate& printed,
                         std::string_view period) {
  std::string out;
  const std::size_t each = printed.before.size() + printed.after.size() + std::size_t{46};
  out.reserve(ask.numbers.size() * each + ask.tag.size() + 40);
  if (ask.shape.format == Format::text) {
    for (const std::int64_t n : ask.numbers) {
      printed.append(out, n);
      out.push_back('\n');
    }
    return out;
  }
  if (!ask.shape.batch) {
    out.append("{\"id\":\"");
    printed.append(out, ask.numbers.front());
    out.append("\",\"number\":\"");
    append_id(out, static_cast<std::uint64_t>(ask.numbers.front()));
    if (!period.empty()) out.append("\",\"period\":\"").append(period);
    out.append("\",\"tag\":\"").append(ask.tag).append("\"}");
    return out;
  }
  out.append("{\"tag\":\"").append(ask.tag);
  if (!period.empty()) out.append("\",\"period\":\"").append(period);
  out.append("\",\"ids\":[");
  for (std::size_t i = 0; i < ask.numbers.size(); ++i) {
    out.append(i ? ",\"" : "\"");
    printed.append(out, ask.numbers[i]);
    out.push_back('"');
  }
  out.append("],\"numbers\":[");
  for (std::size_t i = 0; i < ask.numbers.size(); ++i) {
    out.append(i ? ",\"" : "\"");
    append_id(out, static_cast<std::uint64_t>(ask.numbers[i]));
    out.push_back('"');
  }
  out.append("]}");
  return out;
}

Response numbers_response(const SequenceAsk& ask) {
  if (ask.shape.leaf) {  // Leaf's get: the bare number, as Leaf's clients parse it
    std::string body;
    append_id(body, static_cast<std::uint64_t>(ask.numbers.front()));
    return text_response(Status::ok, std::move(body));
  }
  if (ask.slot) {
    return ids_response(printed_body(ask, ask.slot->printed, ask.slot->period.key),
                        ask.shape.format);
  }
  if (const FilledTemplate* printed = ask.entry->printed.load(std::memory_order_acquire)) {
    return ids_response(printed_body(ask, *printed, {}), ask.shape.format);
  }
  return ids_response(ids_body(ask.tag, ask.numbers, ask.shape.format, ask.shape.batch),
                      ask.shape.format);
}

// A refusal instead of the numbers: those taken are never handed out (a gap,
// counted as dropped, not in the rate that sizes ranges).
Reply refuse(SequenceAsk& ask, Response refusal) {
  ask.entry->gauges.dropped.fetch_add(ask.numbers.size(), std::memory_order_relaxed);
  ask.numbers.clear();
  ask.in_flight.reset();
  return {std::move(refusal)};
}

// A tag that restarts each period: the slot of the period the clock is in,
// from here on where the ask's numbers come from (a batch is all of one
// period); or the refusal; or (nullopt, no slot) a wait for the supplier,
// who makes the period when a request first asks for the tag.
std::optional<Reply> find_period(SequenceAsk& ask, const PeriodicSequence& periodic,
                                 RouterContext& ctx, bool last) {
  if (ask.parent->frozen.load(std::memory_order_acquire)) {
    return refuse(ask, frozen_sequence(ask.tag));
  }
  // The clock decides the period only while it agrees with ZooKeeper's: as
  // the coordinator's last heartbeat found it, and as it stands now against
  // ZooKeeper's clock last seen plus the time since (a clock stepped since
  // that heartbeat dates no number in the wrong period).
  if (ctx.lease.state() == LeaseState::clock_skew) return refuse(ask, clock_skewed(ask.tag, ctx));
  const std::int64_t now = wall_ms_now();
  std::int64_t off_ms = 0;
  switch (ctx.sequences->zookeeper_clock.judge(now, BootClock::now(), &off_ms)) {
    case ZooKeeperClock::Judged::off:
      // The supplier reads ZooKeeper's clock again (it may be the one that
      // was stepped).
      ctx.sequences->request_refill();
      return refuse(ask, clock_off(ask.tag, off_ms, ctx));
    case ZooKeeperClock::Judged::unknown:
      // Not seen yet: the supplier reads it (a request asked for the tag).
      ask.parent->wanted.store(true, std::memory_order_release);
      ctx.sequences->request_refill();
      if (last || !ctx.sequences->connected.load(std::memory_order_acquire)) {
        return refuse(ask,
                      unavailable_response(
                          "sequence_unavailable",
                          fmt::format("sequence \"{}\" restarts each period, which this "
                                      "daemon's clock decides once checked against "
                                      "ZooKeeper's: not done yet{}",
                                      ask.tag,
                                      last ? fmt::format(" within {} ms", ctx.sequence_wait.count())
                                           : std::string(" and ZooKeeper is away")),
                          kRetrySoon));
      }
      return std::nullopt;
    case ZooKeeperClock::Judged::within:
      break;
  }
  ask.period_hold = periodic.hold();
  if (PeriodSlot* slot = periodic.slot_at(now, ask.period_hold)) {
    if (slot->closed.load(std::memory_order_acquire)) {
      return refuse(ask, closed_period(ask.tag, slot->period));
    }
    ask.slot = slot;
    ask.entry = &slot->entry;
    return std::nullopt;
  }
  const Period p = periodic.rule().period_at(now);
  // A clock stepped back past every period held: never made here again.
  if (periodic.before_held(p, ask.period_hold)) return refuse(ask, closed_period(ask.tag, p));
  ask.parent->wanted.store(true, std::memory_order_release);
  ctx.sequences->request_refill();
  if (!ctx.sequences->connected.load(std::memory_order_acquire) || last) {
    return refuse(ask,
                  unavailable_response(
                      "sequence_unavailable",
                      fmt::format("sequence \"{}\": period {} is not ready here{}", ask.tag, p.key,
                                  last ? fmt::format(" within {} ms", ctx.sequence_wait.count())
                                       : std::string(" and ZooKeeper is away")),
                      kRetrySoon));
  }
  return std::nullopt;
}

// A tag with nothing buffered here while ZooKeeper is away.
Response dry_without_zookeeper(std::string_view tag) {
  return unavailable_response("sequence_unavailable",
                              fmt::format("sequence \"{}\" has no number buffered here, and "
                                          "ZooKeeper is away: no new range can be taken",
                                          tag),
                              kRetrySoon);
}

// HEAD, past the refusals a GET meets first (frozen, a period's, not
// ours), and the waits it would wait (a period being made, a claim under
// way): 200 while a number is buffered or a range can be had, else the
// refusal a GET of one number would get. Nothing taken.
Reply probe(SequenceAsk& ask, RouterContext& ctx) {
  const SequenceEntry& entry = *ask.entry;
  const SequenceBufferState buffered = entry.buffer.state();
  if (buffered.current_left + buffered.queued > 0) {
    return {probe_response(ask.shape.format == Format::text || ask.shape.leaf)};
  }
  if (entry.exhausted.load(std::memory_order_acquire)) {
    if (ask.slot) return refuse(ask, exhausted_period(ask.tag, ask.slot->period));
    return refuse(ask, exhausted_sequence(ask.tag, 0));
  }
  if (!ctx.sequences->connected.load(std::memory_order_acquire)) {
    return refuse(ask, dry_without_zookeeper(ask.tag));
  }
  return {probe_response(ask.shape.format == Format::text || ask.shape.leaf)};
}

// Takes what the buffer has. The reply: the numbers, whole; or a refusal
// when none can come (frozen, exhausted, ZooKeeper away) or at the
// deadline (`last`). nullopt: wait for the supplier, who has been asked.
std::optional<Reply> attempt(SequenceAsk& ask, RouterContext& ctx, bool last) {
  if (const PeriodicSequence* periodic = ask.parent->periodic.load(std::memory_order_acquire);
      periodic && !ask.slot) [[unlikely]] {
    auto found = find_period(ask, *periodic, ctx, last);
    if (!ask.slot) return found;
  }
  SequenceEntry& entry = *ask.entry;
  if (entry.frozen.load(std::memory_order_acquire)) [[unlikely]]
    return refuse(ask, frozen_sequence(entry.tag));
  if (entry.strict.strict() && !entry.strict.open(ctx.lease)) [[unlikely]] {
    // Ours as soon as the supplier confirms the claim: waited for, not
    // refused (a daemon that read the claim first passes requests on here).
    if (!entry.strict.coming() || last || ctx.lease.state() != LeaseState::valid) {
      return refuse(ask, strict_refusal(entry, ctx));
    }
    entry.wanted.store(true, std::memory_order_release);
    ctx.sequences->request_refill();
    if (ask.numbers.empty()) ask.in_flight.reset();
    return std::nullopt;
  }
  if (ask.shape.probe) [[unlikely]]
    return probe(ask, ctx);
  // Counted before it reserves (sequences/replies.hpp says why).
  if (!ask.in_flight) ask.in_flight = entry.replies.enter();
  const auto complete = [&ask, &entry]() -> std::optional<Reply> {
    entry.buffer.take(ask.count - ask.numbers.size(), ask.numbers);
    if (ask.numbers.size() < ask.count) return std::nullopt;
    entry.gauges.handed_out.fetch_add(ask.count, std::memory_order_relaxed);
    return Reply{numbers_response(ask), std::move(ask.in_flight)};
  };
  if (auto whole = complete()) [[likely]]
    return whole;
  // A frozen tag's buffer is emptied after the flag is set: read it again.
  if (entry.frozen.load(std::memory_order_acquire)) return refuse(ask, frozen_sequence(entry.tag));
  if (entry.exhausted.load(std::memory_order_acquire)) {
    // Set once the last range is in the buffer: what it added, first.
    if (auto whole = complete()) return whole;
    if (ask.slot) return refuse(ask, exhausted_period(ask.tag, ask.slot->period));
    return refuse(ask, exhausted_sequence(ask.tag, ask.numbers.size()));  // nothing will come
  }
  // Dry: the supplier takes a range (the first one, or the next after a
  // burst; once ZooKeeper is back, if it is away). Asked again at each
  // retry: a wake may have been for another change.
  entry.wanted.store(true, std::memory_order_release);
  ctx.sequences->request_refill();
  if (!ctx.sequences->connected.load(std::memory_order_acquire)) {
    return refuse(ask, dry_without_zookeeper(ask.tag));
  }
  if (last) {
    return refuse(ask, unavailable_response(
                           "sequence_unavailable",
                           fmt::format("sequence \"{}\" has no number buffered here and no range "
                                       "came within {} ms",
                                       ask.tag, ctx.sequence_wait.count()),
                           kRetrySoon));
  }
  if (ask.numbers.empty()) ask.in_flight.reset();  // holds nothing while it waits
  return std::nullopt;
}

// How long a forwarded request may take beyond the owner's own wait for
// its supplier (sequences.max_wait_ms, the same setting across a fleet).
constexpr std::chrono::milliseconds kForwardingSlack{1000};

Response owner_answer(OwnerAnswer answer, unsigned version) {
  Response res{Status::ok, version};
  res.result(answer.status);
  if (!answer.content_type.empty()) res.set(beast_http::field::content_type, answer.content_type);
  if (!answer.retry_after.empty()) res.set(beast_http::field::retry_after, answer.retry_after);
  res.set(beast_http::field::cache_control, "no-store");
  res.body() = std::move(answer.body);
  res.prepare_payload();
  return res;
}

// A strict tag another daemon owns: the request passed on to it and its
// answer passed back (strict_forwarder.hpp). Until its deadline it follows
// the tag: an owner that does not answer (stopped, killed) is given up on
// and the request waits for the next, passed on to it once it is named, or
// served here once this daemon owns the tag; so a clean handover refuses
// nothing.
struct Forwarding {
  SequenceAsk ask;  // for the numbers, should the tag come here
  // Of the request (its parser may be gone by a retry).
  std::string target;
  std::string accept;
  unsigned version;
  BootClock::time_point deadline;
  std::shared_ptr<ForwardCall> call{};  // under way
  std::weak_ptr<const Wake> wake{};     // the connection's, for a call started in a retry
  std::string failed_owner{};           // the last that gave no answer, and why
  std::string why{};
};

// An owner's refusal of a request passed on to it because it no longer
// owns the tag (a handover under way): not the client's answer.
bool owner_disowned(const OwnerAnswer& answer) {
  return answer.status == 503 && answer.body.find("\"error\":\"not_owner\"") != std::string::npos;
}

std::optional<Reply> follow_owner(Forwarding& f, RouterContext& ctx, bool last) {
  SequenceEntry& entry = *f.ask.entry;
  for (;;) {
    if (f.call) {
      if (!f.call->done() && !last) return std::nullopt;
      auto outcome = f.call->take_outcome();
      if (outcome && outcome->has_value() && !owner_disowned(outcome->value())) {
        entry.strict.forwarded.fetch_add(1, std::memory_order_relaxed);
        return Reply{owner_answer(std::move(*outcome).value(), f.version)};
      }
      f.why = !outcome               ? std::string("timed out")
              : outcome->has_value() ? std::string("it did not own the tag yet or any more")
                                     : outcome->error();
      f.call.reset();
    }
    // Ours now, or per-daemon again (seq order): served here.
    if (!entry.strict.strict() || entry.strict.open(ctx.lease)) return attempt(f.ask, ctx, last);
    const OwnerPlace place = entry.strict.owner();
    const std::string& owner = place.address;
    if (!owner.empty() && !ctx.forwarder->passes_to(place)) {
      // Moved to an owner serving plain HTTP, which a TLS daemon passes
      // nothing on to: refused at once naming it, not held to the deadline.
      Response res = strict_refusal(entry, ctx);
      res.version(f.version);
      return refuse(f.ask, std::move(res));
    }
    const bool elsewhere = !owner.empty() && owner != ctx.forwarder->self();
    if (!elsewhere || place.url() == f.failed_owner || last) break;
    f.call = ctx.forwarder->forward(place, f.target, f.accept, f.deadline);
    f.failed_owner = place.url();  // given up on if this call fails too
    // Subscribed here: the server subscribed before this retry, to the
    // calls there were then. Done meanwhile: taken at once (the loop).
    f.call->subscribe(f.wake);
  }
  if (!last) return std::nullopt;  // for the next owner, or the tag here
  entry.strict.forward_failures.fetch_add(1, std::memory_order_relaxed);
  Response res = strict_refusal(entry, ctx, f.why.empty() ? "timed out" : f.why);
  res.version(f.version);
  return refuse(f.ask, std::move(res));
}

// Where a strict tag's request is passed on to: its owner, when another
// daemon owns it; nullopt where it is not passed on: no forwarder, no
// owner known, ours, an owner over a scheme this daemon does not pass on
// to (plain HTTP from a TLS daemon: a mixed fleet, as in a rollout of TLS,
// is refused at once naming it, not held to the deadline), or passed on to
// us already. An address "": no owner known (released in a handover, or
// the record not read yet since this daemon started): the request follows
// the tag until one is.
std::optional<OwnerPlace> owner_to_ask(const SequenceEntry& entry, const Request* req,
                                       const RouterContext& ctx) {
  if (!ctx.forwarder || !req || entry.strict.owned_generation() != 0) return std::nullopt;
  if (req->find(to_beast(kForwardedHeader)) != req->end()) return std::nullopt;
  OwnerPlace owner = entry.strict.owner();
  if (owner.address == ctx.forwarder->self() || entry.strict.coming()) return std::nullopt;
  if (!owner.address.empty() && !ctx.forwarder->passes_to(owner)) return std::nullopt;
  return owner;
}

Answer forward_to_owner(SequenceAsk ask, const OwnerPlace& owner, const Request& req,
                        RouterContext& ctx) {
  const auto deadline = BootClock::now() +
                        std::max(ctx.sequence_wait, std::chrono::milliseconds(0)) +
                        kForwardingSlack;
  const auto accept = req.find(beast_http::field::accept);
  auto f = std::make_shared<Forwarding>(
      Forwarding{std::move(ask), std::string(to_std(req.target())),
                 accept == req.end() ? std::string() : std::string(to_std(accept->value())),
                 req.version(), deadline});
  if (!owner.address.empty()) {
    f->call = ctx.forwarder->forward(owner, f->target, f->accept, deadline);
    f->failed_owner = owner.url();
  }
  return Wait{[f, &ctx](bool last) { return follow_owner(*f, ctx, last); },
              [f](std::weak_ptr<const Wake> wake) {
                f->wake = wake;
                if (f->call) f->call->subscribe(wake);
                // The tag's own changes: its owner named, or its numbers here.
                f->ask.entry->waiting.add(std::move(wake));
              },
              deadline};
}

// The numbers now, or a wait on the event loop (never a blocked thread)
// for the supplier's next range, up to sequences.max_wait_ms; for a strict
// tag owned elsewhere, the owner's answer.
Answer serve(std::string_view tag, std::uint32_t count, Shape shape, RouterContext& ctx,
             const Request* req) {
  SequenceEntry* entry = ctx.sequences ? ctx.sequences->find(tag) : nullptr;
  if (!entry) return unknown_sequence(tag, ctx);
  if (entry->strict.strict() && !entry->strict.open(ctx.lease)) [[unlikely]] {
    if (auto owner = owner_to_ask(*entry, req, ctx)) {
      // A HEAD is not passed on (the owner would take a number for it):
      // a GET would be, once an owner is named.
      if (shape.probe) {
        if (entry->frozen.load(std::memory_order_acquire)) return frozen_sequence(tag);
        if (owner->address.empty()) return strict_refusal(*entry, ctx);
        return probe_response(shape.format == Format::text || shape.leaf);
      }
      return forward_to_owner(SequenceAsk(*entry, tag, count, shape), *owner, *req, ctx);
    }
  }
  SequenceAsk ask(*entry, tag, shape.probe ? 0 : count, shape);
  if (auto now = attempt(ask, ctx, ctx.sequence_wait.count() <= 0)) [[likely]]
    return std::move(*now);
  auto waiting = std::make_shared<SequenceAsk>(std::move(ask));
  // A periodic tag's wait hears its period's entry, and the tag's (where
  // the supplier says a period was made).
  return Wait{
      [waiting, &ctx](bool last) { return attempt(*waiting, ctx, last); },
      [waiting](std::weak_ptr<const Wake> wake) {
        // A periodic tag's: each period held (the one the ask takes
        // from may be installed by the retry that follows).
        if (const PeriodicSequence* p = waiting->parent->periodic.load(std::memory_order_acquire)) {
          const auto held = p->hold();
          for (PeriodSlot* slot : p->live(held)) slot->entry.waiting.add(wake);
        }
        waiting->parent->waiting.add(std::move(wake));
      },
      BootClock::now() + ctx.sequence_wait};
}

}  // namespace

Answer issue_sequence(const Request& req, std::string_view tag, std::string_view query,
                      RouterContext& ctx) {
  if (!is_valid_name(tag)) return bad_tag();
  const auto q = parse_id_query(query, ctx.settings.max_batch);
  if (!q) return error_response(q.error().status, q.error().code, q.error().message);
  if (q.value().form && *q.value().form != IdForm::plain) {
    return error_response(Status::bad_request, "bad_form",
                          "a sequence's numbers are handed out plain (form=plain or none)");
  }
  const bool head = req.method() == beast_http::verb::head;
  return serve(tag, q.value().count, {negotiate(req, q.value()), q.value().batch, false, head}, ctx,
               &req);
}

Answer leaf_segment_get(const Request& req, std::string_view key, RouterContext& ctx) {
  if (!is_valid_name(key)) return bad_tag();
  const bool head = req.method() == beast_http::verb::head;
  return serve(key, 1, {Format::text, false, true, head}, ctx, &req);
}

namespace {

// Numbers in the buffer now, or a range to be had. Read from the buffer
// itself: the gauge `left` is refreshed by the supplier only while it has a
// session, so late in an outage it still shows what has since been used up.
// `clock`: ZooKeeper's as last seen, for a tag that restarts each period
// (a wall clock off it serves none: 503 clock_skew); nullptr: not judged.
bool can_hand_out(const SequenceEntry& e, bool connected, const ZooKeeperClock* clock = nullptr) {
  if (e.frozen.load(std::memory_order_relaxed)) return false;
  // A tag that restarts each period: the period the clock is in, if held
  // (else a range to be had, as for a tag not asked for yet).
  if (const PeriodicSequence* periodic = e.periodic.load(std::memory_order_acquire)) {
    const std::int64_t now = wall_ms_now();
    if (clock && clock->judge(now) == ZooKeeperClock::Judged::off) return false;
    const auto held = periodic->hold();
    if (const PeriodSlot* slot = periodic->slot_at(now, held)) {
      if (slot->closed.load(std::memory_order_relaxed)) return false;
      return can_hand_out(slot->entry, connected);
    }
  }
  const SequenceBufferState s = e.buffer.state();
  return s.current_left + s.queued > 0 ||
         (connected && !e.exhausted.load(std::memory_order_relaxed));
}

}  // namespace

namespace {

nlohmann::ordered_json entry_json(const SequenceEntry& e, bool connected) {
  const auto relaxed = std::memory_order_relaxed;
  const std::int64_t left = e.gauges.left.load(relaxed);
  const double rate = e.gauges.rate.load(relaxed);
  const double seconds = seconds_left(left, rate);
  nlohmann::ordered_json j{
      {"ready", can_hand_out(e, connected)},
      {"frozen", e.frozen.load(relaxed)},
      {"exhausted", e.exhausted.load(relaxed)},
      {"left", left},
      {"seconds_left", seconds < 0 ? nlohmann::ordered_json(nullptr)
                                   : nlohmann::ordered_json(static_cast<std::int64_t>(seconds))},
      {"rate", rate},
      {"step", e.gauges.step.load(relaxed)},
      {"fetches", e.gauges.fetches.load(relaxed)},
      {"handed_out", e.gauges.handed_out.load(relaxed)}};
  if (e.strict.strict()) {
    // Who hands it out: "owner" is where it answers (null: nobody now).
    const OwnerPlace place = e.strict.owner();
    j["order"] = "strict";
    j["owned_here"] = e.strict.owned_generation() != 0;
    j["owner"] = null_if_empty(place.address);
    j["owner_url"] = null_if_empty(place.url());
  }
  return j;
}

// A tag that restarts each period: its rule, the period the clock is in,
// and each period held here now (the clock's, the next one ahead of its
// boundary, or the one before just after it).
nlohmann::ordered_json periodic_json(const SequenceEntry& e, const PeriodicSequence& periodic,
                                     bool connected) {
  nlohmann::ordered_json periods = nlohmann::ordered_json::object();
  const auto held = periodic.hold();
  for (const PeriodSlot* slot : periodic.live(held)) {
    auto one = entry_json(slot->entry, connected);
    const bool closed = slot->closed.load(std::memory_order_relaxed);
    if (closed) one["ready"] = false;
    one["closed"] = closed;
    one["begins"] = format_iso8601_ms(slot->period.begins_ms);
    one["next_begins"] = format_iso8601_ms(slot->period.next_begins_ms);
    periods[slot->period.key] = std::move(one);
  }
  return {{"reset", to_string(periodic.rule().reset())},
          {"time_zone", periodic.rule().zone()},
          {"period", periodic.rule().period_at(wall_ms_now()).key},
          {"frozen", e.frozen.load(std::memory_order_relaxed)},
          {"periods", std::move(periods)}};
}

}  // namespace

nlohmann::ordered_json sequences_json(const RouterContext& ctx) {
  if (!ctx.sequences) return nullptr;
  const bool connected = ctx.sequences->connected.load(std::memory_order_relaxed);
  nlohmann::ordered_json tags = nlohmann::ordered_json::object();
  for (const SequenceEntry* e : ctx.sequences->entries()) {
    const PeriodicSequence* periodic = e->periodic.load(std::memory_order_acquire);
    tags[e->tag] = periodic ? periodic_json(*e, *periodic, connected) : entry_json(*e, connected);
  }
  return {{"zookeeper", connected ? "connected" : "connecting"}, {"tags", std::move(tags)}};
}

Response ready_for_sequences(const RouterContext& ctx) {
  if (!ctx.sequences) {
    return unavailable_response("sequences_disabled",
                                "this daemon serves no sequences (sequences.enabled, in a "
                                "ZooKeeper mode): it is never ready for them",
                                std::chrono::seconds(60));
  }
  const SequenceRegistry& registry = *ctx.sequences;
  const bool listed = registry.listed.load(std::memory_order_acquire);
  const bool connected = registry.connected.load(std::memory_order_acquire);
  const auto entries = registry.entries();
  // Some tag can be served (a pod has one readiness for all its tags), or,
  // with none yet, ZooKeeper is there to serve the first one created.
  const bool servable =
      entries.empty() ? connected : std::any_of(entries.begin(), entries.end(), [&](const auto* e) {
        return can_hand_out(*e, connected, &registry.zookeeper_clock);
      });
  if (!listed || !servable) {
    return unavailable_response(
        "sequence_unavailable",
        !listed     ? "the sequences are not read from ZooKeeper yet"
        : connected ? "no sequence here can hand out a number (each frozen or exhausted)"
                    : "ZooKeeper is away and no sequence has a number buffered here",
        kRetrySoon);
  }
  nlohmann::ordered_json body{{"ready", true}, {"for", "seq"}};
  auto sequences = sequences_json(ctx);
  body["zookeeper"] = std::move(sequences["zookeeper"]);
  body["sequences"] = std::move(sequences["tags"]);
  return json_response(Status::ok, body.dump());
}

}  // namespace snowflake::http
