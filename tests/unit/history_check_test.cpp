// The chaos checker must catch what it is there to catch: every rule is fed
// a history that breaks it, and one that only looks like it does.

#include <catch2/catch.hpp>

#include <sstream>

#include "../chaos/check.hpp"

using namespace snowflake;
using namespace snowflake::chaos;

namespace {

constexpr std::int64_t kT0 = kDefaultEpochMs + 3'600'000'000;  // real time of the run, ms

const IdLayout& layout() {
  static const IdLayout l = IdLayout::create({}, kT0).value();
  return l;
}

std::uint64_t id(std::int64_t ms, std::uint32_t worker, std::uint32_t seq) {
  return layout().compose(ms, 0, worker, seq).value();
}

// A 200 from daemon `d` run `run`, sent at `sent_ms`, received 1 ms later.
Answer served(int d, int run, std::int64_t sent_ms, std::vector<std::uint64_t> ids) {
  return Answer{.daemon = d,
                .run = run,
                .sent_us = sent_ms * 1000,
                .received_us = (sent_ms + 1) * 1000,
                .status = 200,
                .ids = to_runs(ids)};
}

Answer refused(int d, std::int64_t sent_ms, int status, std::string code, bool retry_after = true) {
  return Answer{.daemon = d,
                .run = 0,
                .sent_us = sent_ms * 1000,
                .received_us = (sent_ms + 1) * 1000,
                .status = status,
                .error = std::move(code),
                .retry_after = retry_after};
}

CheckReport run(std::vector<Answer> answers, std::vector<Fault> schedule = {}) {
  History h;
  h.answers = std::move(answers);
  return check(h, schedule, layout());
}

}  // namespace

TEST_CASE("checker: a clean history passes and is counted", "[checker]") {
  const auto r =
      run({served(0, 0, kT0, {id(kT0, 1, 0), id(kT0, 1, 1), id(kT0, 1, 2)}),
           served(1, 0, kT0, {id(kT0, 2, 0)}), served(0, 0, kT0 + 5, {id(kT0 + 5, 1, 0)}),
           refused(1, kT0 + 6, 503, "lease_expired"),
           Answer{.daemon = 1,
                  .run = 0,
                  .sent_us = (kT0 + 7) * 1000,
                  .received_us = (kT0 + 8) * 1000,
                  .status = 0}});
  INFO(to_text(r));
  CHECK(r.ok());
  CHECK(r.ids == 5);
  CHECK(r.duplicates == 0);
  CHECK(r.refusals.at("lease_expired") == 1);
  CHECK(r.refusals.at("no_answer") == 1);
  CHECK_THAT(to_text(r), Catch::Contains("OK: no duplicate"));
}

TEST_CASE("checker: a duplicate is found, counted and both answers named", "[checker]") {
  const auto r = run({served(0, 0, kT0, {id(kT0, 1, 0), id(kT0, 1, 1), id(kT0, 1, 2)}),
                      served(3, 1, kT0 + 2, {id(kT0, 1, 1), id(kT0, 1, 2), id(kT0, 1, 3)})});
  CHECK_FALSE(r.ok());
  CHECK(r.duplicates == 2);
  CHECK(r.violations_by_rule.at("duplicate") == 1);
  CHECK_THAT(r.examples.front().detail, Catch::Contains("d0 run 0") && Catch::Contains("d3 run 1"));
  CHECK_THAT(to_text(r), Catch::Contains("duplicates 2") && Catch::Contains("FAILED"));
}

TEST_CASE("checker: three answers over one ID: two duplicates", "[checker]") {
  const auto x = id(kT0, 0, 7);
  CHECK(run({served(0, 0, kT0, {x}), served(1, 0, kT0, {x}), served(2, 0, kT0, {x})}).duplicates ==
        2);
}

TEST_CASE("checker: an ID stamped after the daemon's clock is borrowed time", "[checker]") {
  // Received at kT0 + 1, stamped kT0 + 50.
  const auto borrowed = run({served(0, 0, kT0, {id(kT0 + 50, 1, 0)})});
  CHECK(borrowed.violations_by_rule.at("borrowed_time") == 1);
  // The same answer from a daemon whose clock was 60 s ahead then: fine.
  Answer ahead = served(0, 0, kT0, {id(kT0 + 50, 1, 0)});
  ahead.clock_offset_ms = 60'000;
  CHECK(run({ahead}).ok());
}

TEST_CASE("checker: one ownership's IDs must rise in real-time order", "[checker]") {
  SECTION("an answer sent after another arrived, with a lower ID: broken") {
    const auto r = run({served(0, 0, kT0 + 10, {id(kT0 + 10, 1, 0)}),
                        served(0, 0, kT0 + 20, {id(kT0 + 9, 1, 0)})});
    CHECK(r.violations_by_rule.at("not_increasing") == 1);
  }
  SECTION("two answers in flight together may come back in either order") {
    Answer a = served(0, 0, kT0, {id(kT0 + 1, 1, 5)});
    Answer b = served(0, 0, kT0, {id(kT0 + 1, 1, 4)});
    a.received_us = (kT0 + 3) * 1000;
    CHECK(run({a, b}).ok());
  }
  SECTION("another run or another worker ID is another ownership") {
    CHECK(run({served(0, 0, kT0 + 10, {id(kT0 + 10, 1, 0)}),
               served(0, 1, kT0 + 20, {id(kT0 + 9, 1, 1)})})
              .ok());
    CHECK(run({served(0, 0, kT0 + 10, {id(kT0 + 10, 1, 0)}),
               served(0, 0, kT0 + 20, {id(kT0 + 9, 2, 0)})})
              .ok());
  }
}

TEST_CASE("checker: only 200, no answer, or a documented 503 with Retry-After", "[checker]") {
  CHECK(run({refused(0, kT0, 503, "not_ready")}).ok());
  CHECK(run({refused(0, kT0, 500, "internal")}).violations_by_rule.at("bad_answer") == 1);
  CHECK(run({refused(0, kT0, 503, "mystery")}).violations_by_rule.at("bad_answer") == 1);
  CHECK(run({refused(0, kT0, 503, "not_ready", false)}).violations_by_rule.at("bad_answer") == 1);
  for (const char* code : {"not_ready", "lease_expired", "clock_skew", "clock_moved_backwards",
                           "clock_before_epoch", "time_exhausted", "time_not_reserved"}) {
    CHECK(is_documented_refusal(code));
  }
}

TEST_CASE("checker: period_closed only from a daemon whose clock a fault moved, while it lasts",
          "[checker]") {
  // A clock stepped back into a period the daemon let go of.
  const std::vector<Fault> schedule{
      {"clock_step", "d1", (kT0 + 100) * 1000, (kT0 + 2000) * 1000, "-60000 ms"},
      {"net_stall", "d0", (kT0 + 100) * 1000, (kT0 + 2000) * 1000, "2 s"}};
  CHECK(run({refused(1, kT0 + 500, 503, "period_closed")}, schedule).ok());
  CHECK(run({refused(1, kT0 + 6000, 503, "period_closed")}, schedule).ok());  // skew checked since
  for (const Answer& a : {refused(0, kT0 + 500, 503, "period_closed"),
                          refused(1, kT0 + 8000, 503, "period_closed")}) {
    CHECK(run({a}, schedule).violations_by_rule.at("bad_answer") == 1);
  }
}

TEST_CASE("checker: with the schedule, availability outside faults and time to recover",
          "[checker]") {
  const std::vector<Fault> schedule{
      {"net_stall", "d0", (kT0 + 100) * 1000, (kT0 + 200) * 1000, "2 s"}};
  const auto r =
      run({served(0, 0, kT0, {id(kT0, 1, 0)}),
           refused(0, kT0 + 150, 503, "lease_expired"),  // during its fault: not counted
           refused(0, kT0 + 300, 503, "not_ready"), served(0, 0, kT0 + 700, {id(kT0 + 700, 1, 0)}),
           served(1, 0, kT0 + 150, {id(kT0 + 150, 2, 0)})},
          schedule);
  INFO(to_text(r));
  CHECK(r.availability.at(0).asked == 3);
  CHECK(r.availability.at(0).served == 2);
  CHECK(r.availability.at(1).asked == 1);
  REQUIRE(r.recovery_s.size() == 1);
  CHECK(r.recovery_s.front() == Approx(0.501));  // the first 200 sent after the end
  CHECK_THAT(r.slowest_recovery, Catch::Contains("net_stall on d0"));

  // Another fault on d0 before it served again: that wait is not this fault's.
  auto two = schedule;
  two.push_back({"kill", "d0", (kT0 + 400) * 1000, (kT0 + 600) * 1000, "kill"});
  const auto r2 = run(
      {served(0, 0, kT0, {id(kT0, 1, 0)}), served(0, 1, kT0 + 700, {id(kT0 + 700, 1, 0)})}, two);
  REQUIRE(r2.recovery_s.size() == 1);
  CHECK(r2.recovery_s.front() == Approx(0.101));
  CHECK_THAT(r2.slowest_recovery, Catch::Contains("kill on d0"));
}

TEST_CASE("checker: a standby's not_ready (the pool full) is expected, not unavailability",
          "[checker]") {
  Answer standby = refused(2, kT0 + 10, 503, "not_ready");
  standby.standby = true;
  const auto r =
      run({served(0, 0, kT0, {id(kT0, 1, 0)}), standby, refused(2, kT0 + 20, 503, "not_ready"),
           served(2, 0, kT0 + 30, {id(kT0 + 30, 2, 0)})},
          {{"net_stall", "d0", (kT0 + 500) * 1000, (kT0 + 600) * 1000, "1 s"}});
  INFO(to_text(r));
  CHECK(r.ok());
  CHECK(r.availability.at(2).standby == 1);
  CHECK(r.availability.at(2).asked == 2);  // a not_ready that is no standby still counts
  CHECK(r.availability.at(2).served == 1);
  CHECK_THAT(to_text(r), Catch::Contains("(+1 as a standby)"));
  // It is written and read back with the history.
  std::stringstream text(to_json_line(standby) + "\n");
  CHECK(read_history(text).answers.at(0).standby);
}

TEST_CASE("checker: once `pool floor` exited 0, an ID at or below its floor asked for later fails",
          "[checker]") {
  const std::uint64_t floor_id = id(kT0 + 100, 3, 4095);
  Fault floor{"floor_raise", "cluster", (kT0 + 50) * 1000, (kT0 + 120) * 1000, "above"};
  floor.above_id = floor_id;
  floor.confirmed_us = (kT0 + 60) * 1000;
  // Asked for before the command exited: below the floor is allowed.
  const auto before = run({served(0, 0, kT0 + 55, {id(kT0 + 55, 1, 0)}),
                           served(0, 0, kT0 + 101, {id(kT0 + 101, 1, 0)})},
                          {floor});
  INFO(to_text(before));
  CHECK(before.ok());
  // Asked for after it: a violation, naming the floor.
  const auto after = run({served(1, 0, kT0 + 61, {id(kT0 + 61, 2, 0)})}, {floor});
  CHECK(after.violations_by_rule.at("below_floor") == 1);
  CHECK(after.floors_confirmed == 1);
  CHECK_THAT(to_text(after), Catch::Contains(std::to_string(floor_id)));
  // A command that did not exit 0 promised nothing.
  floor.confirmed_us = 0;
  CHECK(run({served(1, 0, kT0 + 61, {id(kT0 + 61, 2, 0)})}, {floor}).ok());
  // The schedule line keeps both.
  floor.confirmed_us = (kT0 + 60) * 1000;
  std::stringstream line(to_json_line(floor) + "\n");
  const auto read = read_schedule(line);
  REQUIRE(read.size() == 1);
  CHECK(read[0].above_id == floor_id);
  CHECK(read[0].confirmed_us == floor.confirmed_us);
  CHECK(read[0].daemon() == -1);
}

TEST_CASE("checker: a worker ID passing between owners, with the gap between them", "[checker]") {
  const auto r =
      run({served(0, 0, kT0, {id(kT0, 3, 0)}), served(1, 0, kT0 + 400, {id(kT0 + 400, 3, 0)}),
           served(1, 0, kT0 + 401, {id(kT0 + 401, 3, 0)})});
  CHECK(r.reuse.at(3).handovers == 1);
  CHECK(r.reuse.at(3).min_gap_ms == 400);
}

TEST_CASE(
    "checker: a killed daemon's worker ID serves again within the bound, where nothing "
    "else came between",
    "[checker]") {
  // d0 serves worker 3 and is killed for 0.5 s; the bound is that and 9.5 s.
  const Fault kill{"kill", "d0", (kT0 + 100) * 1000, (kT0 + 600) * 1000, "kill -9"};
  const ReclaimBound bound{9'500, 2'000};
  const auto check_with = [&](std::vector<Answer> answers, std::vector<Fault> schedule) {
    History h;
    h.answers = std::move(answers);
    return check(h, schedule, layout(), bound);
  };
  // A standby (d1) serves it 4 s after the kill: measured, within the bound.
  const auto soon = check_with(
      {served(0, 0, kT0, {id(kT0, 3, 0)}), served(1, 0, kT0 + 4'100, {id(kT0 + 4'100, 3, 0)})},
      {kill});
  INFO(to_text(soon));
  CHECK(soon.ok());
  REQUIRE(soon.reclaim_s.size() == 1);
  CHECK(soon.reclaim_s.front() == Approx(4.001));
  CHECK(soon.reclaims_quiet == 1);
  // 12 s: past 0.5 + 9.5 s, with no other fault: slow.
  const auto slow = check_with(
      {served(0, 0, kT0, {id(kT0, 3, 0)}), served(2, 0, kT0 + 5'000, {id(kT0 + 5'000, 1, 0)}),
       served(1, 0, kT0 + 12'100, {id(kT0 + 12'100, 3, 0)})},
      {kill});
  CHECK(slow.violations_by_rule.count("slow_reclaim") == 1);
  // Never again, while the run went on past the bound: slow too.
  const auto never = check_with(
      {served(0, 0, kT0, {id(kT0, 3, 0)}), served(2, 0, kT0 + 15'000, {id(kT0 + 15'000, 1, 0)})},
      {kill});
  CHECK(never.violations_by_rule.count("slow_reclaim") == 1);
  // The same 12 s with ZooKeeper paused meanwhile: measured, not held.
  const auto paused = check_with(
      {served(0, 0, kT0, {id(kT0, 3, 0)}), served(1, 0, kT0 + 12'100, {id(kT0 + 12'100, 3, 0)})},
      {kill, {"zk_pause", "zk", (kT0 + 2'000) * 1000, (kT0 + 6'000) * 1000, "4 s"}});
  CHECK(paused.ok());
  CHECK(paused.reclaims_quiet == 0);
  // The killed run itself answering late (a reply in flight) is not a reclaim;
  // a daemon that was not serving at the kill has nothing to reclaim.
  const auto idle = check_with({served(0, 0, kT0 - 5'000, {id(kT0 - 5'000, 3, 0)}),
                                served(2, 0, kT0 + 15'000, {id(kT0 + 15'000, 1, 0)})},
                               {kill});
  CHECK(idle.reclaim_s.empty());
}

TEST_CASE("history: written and read back, a plain list of IDs is read too", "[checker]") {
  std::stringstream file;
  file << layout_line(LayoutSettings{.worker_bits = 2, .sequence_bits = 20}) << '\n';
  Answer a = served(2, 1, kT0, {id(kT0, 1, 0), id(kT0, 1, 1), id(kT0 + 1, 1, 0)});
  a.clock_offset_ms = -3000;
  file << to_json_line(a) << '\n' << to_json_line(refused(2, kT0, 503, "clock_skew")) << '\n';
  const History h = read_history(file);
  REQUIRE(h.layout);
  CHECK(h.layout->worker_bits == 2);
  REQUIRE(h.answers.size() == 2);
  CHECK(h.answers[0].ids.size() == 2);  // two runs
  CHECK(h.answers[0].ids[0].count == 2);
  CHECK(h.answers[0].clock_offset_ms == -3000);
  CHECK(h.answers[1].error == "clock_skew");
  CHECK(h.answers[1].retry_after);

  std::stringstream plain("17\n18\n17\n");
  const History list = read_history(plain);
  CHECK(check(list, {}, layout()).duplicates == 1);

  std::stringstream broken("{\"status\":200}\nxyz\n");
  CHECK_THROWS_WITH(read_history(broken), Catch::Contains("line 2"));
}

namespace {

// A 200 of GET /seq/<tag> from daemon `d` run `run`, sent at `sent_ms`.
Answer numbers(int d, int run, std::int64_t sent_ms, const std::string& tag,
               std::vector<std::uint64_t> given) {
  Answer a = served(d, run, sent_ms, std::move(given));
  a.seq = tag;
  return a;
}

CheckReport run_sequences(std::vector<Answer> answers, std::vector<Fault> schedule = {}) {
  History h;
  h.sequence_starts = {{"inv", 100}};
  h.answers = std::move(answers);
  return check(h, schedule, layout());
}

}  // namespace

TEST_CASE("checker: sequences are checked per tag, apart from IDs", "[checker][sequence]") {
  // The same numbers in two tags, and a number equal to an ID: no duplicate.
  const std::uint64_t x = id(kT0, 1, 0);
  const auto r = run_sequences({numbers(0, 0, kT0, "inv", {100, 101, 102}),
                                numbers(1, 0, kT0, "other", {100, 101}), served(0, 0, kT0, {x}),
                                numbers(1, 0, kT0 + 5, "other", {x})});
  INFO(to_text(r));
  CHECK(r.ok());
  CHECK(r.ids == 1);  // numbers are not IDs: not decoded, not counted as IDs
  CHECK(r.sequences.at("inv").numbers == 3);
  CHECK(r.sequences.at("inv").start == 100);
  CHECK(r.sequences.at("other").numbers == 3);
  CHECK_THAT(to_text(r), Catch::Contains("sequence \"inv\": 3 numbers, duplicates 0"));
}

TEST_CASE("checker: a sequence's number twice, in one tag, is found and both answers named",
          "[checker][sequence]") {
  const auto r = run_sequences(
      {numbers(0, 0, kT0, "inv", {100, 101, 102}), numbers(2, 1, kT0 + 9, "inv", {102, 103})});
  CHECK(r.violations_by_rule.at("seq_duplicate") == 1);
  CHECK(r.sequences.at("inv").duplicates == 1);
  CHECK_THAT(r.examples.front().detail, Catch::Contains("\"inv\" 102..102") &&
                                            Catch::Contains("d0 run 0") &&
                                            Catch::Contains("d2 run 1"));
  CHECK(r.duplicates == 0);  // the IDs' count is another
}

TEST_CASE(
    "checker: a sequence that restarts each period is checked per period (\"inv@2026-11-30\"), "
    "from the sequence's start",
    "[checker][sequence]") {
  // Each day from 100 again: the same numbers in two periods are no duplicate.
  auto r = run_sequences({numbers(0, 0, kT0, "inv@2026-11-29", {100, 101, 102}),
                          numbers(1, 0, kT0 + 5, "inv@2026-11-30", {100, 101})});
  INFO(to_text(r));
  CHECK(r.ok());
  CHECK(r.sequences.at("inv@2026-11-30").start == 100);
  CHECK_THAT(to_text(r), Catch::Contains("sequence \"inv@2026-11-30\": 2 numbers, duplicates 0"));
  // Twice in one period; below the start in another.
  r = run_sequences({numbers(0, 0, kT0, "inv@2026-11-30", {100, 101}),
                     numbers(1, 0, kT0 + 5, "inv@2026-11-30", {101}),
                     numbers(1, 0, kT0 + 9, "inv@2026-12-01", {99})});
  CHECK(r.violations_by_rule.at("seq_duplicate") == 1);
  CHECK(r.violations_by_rule.at("seq_below_start") == 1);
  // A 200 the load could not read (no period) is a bad answer.
  Answer unreadable = numbers(0, 0, kT0, "inv", {});
  unreadable.error = "unreadable: {}";
  CHECK(run_sequences({unreadable}).violations_by_rule.at("bad_answer") == 1);
}

TEST_CASE(
    "checker: real-time order of a strict tag: a number not above one received before its "
    "request was sent, on any daemon, is out of order, and overlapping requests may come in any "
    "order",
    "[checker][sequence]") {
  // Answers take 1 ms each (numbers(): received a millisecond after sent).
  History h;
  h.answers = {numbers(0, 0, kT0, "chat", {5}), numbers(1, 0, kT0 + 10, "chat", {6, 7}),
               numbers(2, 0, kT0 + 20, "chat", {8})};
  CheckReport ok;
  check_real_time_order(h, "chat", ok);
  CHECK(ok.ok());
  CHECK(ok.sequences.at("chat").order_pairs == 3);  // (5,6-7), (5,8), (6-7,8)
  // Concurrent (neither received before the other was sent): any order.
  Answer early = numbers(1, 0, kT0 + 30, "chat", {10});
  early.received_us = (kT0 + 40) * 1000;
  Answer overlapping = numbers(0, 0, kT0 + 35, "chat", {9});
  h.answers.push_back(early);
  h.answers.push_back(overlapping);
  CheckReport concurrent;
  check_real_time_order(h, "chat", concurrent);
  CHECK(concurrent.ok());
  // After 10 was received, on another daemon: 9 is out of order.
  h.answers.push_back(numbers(2, 0, kT0 + 50, "chat", {9}));
  CheckReport late;
  check_real_time_order(h, "chat", late);
  CHECK(late.violations_by_rule.at("seq_out_of_order") == 1);
  CHECK_THAT(late.examples.front().detail,
             Catch::Contains("d2 run 0") && Catch::Contains("not above 10"));
  // Other tags, and refusals, are not its business.
  h.answers.push_back(numbers(0, 0, kT0 + 60, "other", {1}));
  CheckReport other;
  check_real_time_order(h, "other", other);
  CHECK(other.ok());
}

TEST_CASE("checker: a number below the sequence's start", "[checker][sequence]") {
  CHECK(run_sequences({numbers(0, 0, kT0, "inv", {99, 100})})
            .violations_by_rule.at("seq_below_start") == 1);
}

TEST_CASE("checker: one daemon run's numbers of a tag must rise in real-time order",
          "[checker][sequence]") {
  CHECK(run_sequences({numbers(0, 0, kT0, "inv", {150}), numbers(0, 0, kT0 + 5, "inv", {120})})
            .violations_by_rule.at("seq_not_increasing") == 1);
  // Another daemon, another run, or another tag: ranges interleave.
  CHECK(
      run_sequences({numbers(0, 0, kT0, "inv", {150}), numbers(1, 0, kT0 + 5, "inv", {120})}).ok());
  CHECK(
      run_sequences({numbers(0, 0, kT0, "inv", {150}), numbers(0, 1, kT0 + 5, "inv", {120})}).ok());
  CHECK(run_sequences({numbers(0, 0, kT0, "inv", {150}), numbers(0, 0, kT0 + 5, "x", {120})}).ok());
}

TEST_CASE("checker: once `seq raise` exited 0, a number at or below it asked for later fails",
          "[checker][sequence]") {
  Fault raise{"seq_raise", "cluster", (kT0 + 50) * 1000, (kT0 + 80) * 1000, "raise"};
  raise.tag = "inv";
  raise.above_id = 500;
  raise.confirmed_us = (kT0 + 60) * 1000;
  // Before the command exited: allowed.
  CHECK(run_sequences({numbers(0, 0, kT0 + 55, "inv", {400})}, {raise}).ok());
  // After: a violation, naming the floor; another tag's numbers are not its.
  const auto after = run_sequences(
      {numbers(1, 0, kT0 + 61, "inv", {499, 500}), numbers(1, 0, kT0 + 61, "x", {3})}, {raise});
  CHECK(after.violations_by_rule.at("seq_below_raise") == 1);
  CHECK(after.sequences.at("inv").raises_confirmed == 1);
  CHECK(after.floors_raised == 0);  // not a migration floor
  CHECK_THAT(to_text(after), Catch::Contains("at or below the floor 500"));
  // Not confirmed: nothing promised.
  raise.confirmed_us = 0;
  CHECK(run_sequences({numbers(1, 0, kT0 + 61, "inv", {499})}, {raise}).ok());
  // Written and read back with the tag.
  raise.confirmed_us = (kT0 + 60) * 1000;
  std::stringstream line(to_json_line(raise) + "\n");
  CHECK(read_schedule(line).at(0).tag == "inv");
}

TEST_CASE("checker: a sequence's availability, and through ZooKeeper's outages",
          "[checker][sequence]") {
  const std::vector<Fault> schedule{
      {"zk_kill", "zk0", (kT0 + 100) * 1000, (kT0 + 200) * 1000, "zk down"},
      {"kill", "d1", (kT0 + 100) * 1000, (kT0 + 200) * 1000, "kill"}};
  Answer dry = refused(0, kT0 + 160, 503, "sequence_unavailable");
  dry.seq = "inv";
  Answer not_found = refused(0, kT0 + 300, 404, "unknown_sequence");
  not_found.seq = "inv";
  const auto r =
      run_sequences({numbers(0, 0, kT0, "inv", {100}), numbers(0, 0, kT0 + 150, "inv", {101}), dry,
                     numbers(1, 0, kT0 + 150, "inv", {300}),  // its own fault: not counted
                     not_found},
                    schedule);
  const auto& s = r.sequences.at("inv");
  CHECK(s.asked == 4);
  CHECK(s.served == 2);
  CHECK(s.asked_zk_down == 2);
  CHECK(s.served_zk_down == 1);
  CHECK(r.violations_by_rule.at("bad_answer") == 1);  // the 404: every tag asked for exists
  CHECK_FALSE(r.availability.contains(0));            // the IDs' figures are the IDs' alone
  CHECK_THAT(to_text(r), Catch::Contains("50.0% of 2 while a ZooKeeper server was down"));
  // Written and read back: the answer's tag and the history's starts.
  std::stringstream file(sequences_line({{"inv", 100}}) + "\n" + to_json_line(dry) + "\n");
  const History h = read_history(file);
  CHECK(h.sequence_starts.at("inv") == 100);
  CHECK(h.answers.at(0).seq == "inv");
}
