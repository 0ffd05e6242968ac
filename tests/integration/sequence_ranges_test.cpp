// A sequence's ranges against a real ZooKeeper server (sequence_ranges.hpp):
// takes by racing sessions never overlap, a take whose reply is lost is
// decided by its nonce, a clean stop gives back only what nobody took past,
// a raise moves every later take above it.

#include <catch2/catch.hpp>

#include <algorithm>
#include <thread>
#include <vector>

#include "../support/fault_proxy.hpp"
#include "../support/sequence_nodes.hpp"
#include "../support/zookeeper_server.hpp"
#include "snowflake/cluster/cluster_fence.hpp"
#include "snowflake/sequence_store/sequence_ranges.hpp"

using namespace snowflake;
using namespace snowflake::coord;
using namespace snowflake::test;
using namespace std::chrono_literals;

namespace {

const std::string kSeqRoot = "/snowflake/seq";

bool disjoint(std::vector<SequenceTake> takes) {
  std::sort(takes.begin(), takes.end(),
            [](const SequenceTake& a, const SequenceTake& b) { return a.start < b.start; });
  for (std::size_t i = 1; i < takes.size(); ++i) {
    if (takes[i].start < takes[i - 1].end) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("sequence ranges: created once, taken in order, unknown tags named", "[sequence]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  REQUIRE(create_sequence(*s, kSeqRoot, "order", 1000, 100));
  const auto again = create_sequence(*s, kSeqRoot, "order", 5, 1);
  REQUIRE_FALSE(again);
  CHECK(again.error().code == CoordErrc::sequence_exists);
  REQUIRE(create_sequence(*s, kSeqRoot, "invoice", 1, 10));
  CHECK(sequence_tags(*s, kSeqRoot).value() == std::vector<std::string>{"invoice", "order"});
  SequenceTaker taker{"run1"};
  CHECK(take_range(*s, kSeqRoot, "order", taker, 100).value() ==
        SequenceTake{"run1-1", 1000, 1100});
  CHECK(take_range(*s, kSeqRoot, "order", taker, 300).value() ==
        SequenceTake{"run1-2", 1100, 1400});
  const auto read = read_sequence(*s, kSeqRoot, "order").value();
  CHECK(read.node.next == 1400);
  CHECK(read.node.step == 100);
  const auto unknown = take_range(*s, kSeqRoot, "nope", taker, 1);
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().code == CoordErrc::no_sequence);
  // Not a sequence's data: refused, never guessed at.
  REQUIRE(s->create(kSeqRoot + "/sequences/junk", "{\"next\": \"x\"}"));
  CHECK(take_range(*s, kSeqRoot, "junk", taker, 1).error().code == CoordErrc::unusable);
}

TEST_CASE("sequence ranges: sessions racing for ranges never share a number", "[sequence]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  REQUIRE(create_sequence(*admin, kSeqRoot, "order", 1, 10));
  constexpr int kDaemons = 3;
  constexpr int kTakes = 40;
  std::vector<std::vector<SequenceTake>> got(kDaemons);
  std::vector<int> failures(kDaemons, 0);
  std::vector<std::thread> daemons;
  for (int d = 0; d < kDaemons; ++d) {
    daemons.emplace_back([&, d] {
      auto s = connect(zk);
      SequenceTaker taker{"d" + std::to_string(d)};
      for (int i = 0; i < kTakes; ++i) {
        // A take gives up after kMaxTakeAttempts lost races in a row, and the
        // supplier tries again later; on a loaded machine one thread can lose
        // that many. Asked again, as the supplier would, every take lands.
        auto r = take_range(*s, kSeqRoot, "order", taker, 10 + d);
        for (int again = 0; !r && again < 20; ++again)
          r = take_range(*s, kSeqRoot, "order", taker, 10 + d);
        if (r) {
          got[static_cast<std::size_t>(d)].push_back(r.value());
        } else {
          ++failures[static_cast<std::size_t>(d)];
        }
      }
    });
  }
  for (auto& t : daemons) t.join();
  std::vector<SequenceTake> all;
  for (const auto& g : got) all.insert(all.end(), g.begin(), g.end());
  CHECK(failures == std::vector<int>(kDaemons, 0));
  CHECK(all.size() == static_cast<std::size_t>(kDaemons * kTakes));
  CHECK(disjoint(all));
  // Nothing was lost between them: the ranges tile [1, next).
  std::int64_t numbers = 0;
  for (const auto& t : all) numbers += t.end - t.start;
  CHECK(read_sequence(*admin, kSeqRoot, "order").value().node.next == 1 + numbers);
}

TEST_CASE("sequence ranges: a take whose reply is lost is ours only if the node holds its nonce",
          "[sequence]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  REQUIRE(create_sequence(*admin, kSeqRoot, "order", 1, 10));
  FaultProxy proxy(zk.port());
  auto cut = connect_session(proxy.hosts());
  SequenceTaker taker{"cut"};
  // The write reaches the server, its reply is dropped with the connection,
  // and for a while no connection is let through: the take reads back once
  // the client has reconnected.
  proxy.lose_next_reply(FaultProxy::kSetData, 300ms);
  // Takes fail while the client is cut off; it goes on until five succeed.
  std::vector<SequenceTake> all;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (all.size() < 5 && std::chrono::steady_clock::now() < deadline) {
    auto r = take_range(*cut, kSeqRoot, "order", taker, 10);
    if (r) {
      all.push_back(r.value());
    } else {
      std::this_thread::sleep_for(20ms);  // a retry's pause, as the daemon's backoff
    }
  }
  CHECK(proxy.replies_lost() == 1);
  REQUIRE(all.size() == 5);
  const auto node = read_sequence(*admin, kSeqRoot, "order").value().node;
  for (const auto& t : all) {
    // Each range it uses is recorded as its own attempt's.
    INFO(t.owner << " [" << t.start << ", " << t.end << ")");
    CHECK(find_take(node, t.owner) == t);
  }
  // The lost take was decided one way or the other: at most its one range is
  // a gap between the ranges used.
  std::int64_t used = 0;
  for (const auto& t : all) used += t.end - t.start;
  CHECK(node.next - 1 - used <= 10);
  // And another daemon's takes never meet them.
  SequenceTaker other{"other"};
  for (int i = 0; i < 3; ++i)
    all.push_back(take_range(*admin, kSeqRoot, "order", other, 10).value());
  CHECK(disjoint(all));
}

TEST_CASE("sequence ranges: a clean stop gives back its rest only while nobody took past it",
          "[sequence]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  REQUIRE(create_sequence(*s, kSeqRoot, "order", 1, 10));
  SequenceTaker a{"a"};
  SequenceTaker b{"b"};
  REQUIRE(take_range(*s, kSeqRoot, "order", a, 10));  // [1, 11)
  REQUIRE(take_range(*s, kSeqRoot, "order", a, 20));  // [11, 31)
  CHECK(give_back(*s, kSeqRoot, "order", "a", 5).value());
  CHECK(read_sequence(*s, kSeqRoot, "order").value().node.next == 5);
  // The next take starts there: no gap after a restart.
  CHECK(take_range(*s, kSeqRoot, "order", b, 10).value() == SequenceTake{"b-1", 5, 15});
  // a's rest is behind b's take now: nothing more goes back.
  CHECK_FALSE(give_back(*s, kSeqRoot, "order", "a", 3).value());
  CHECK(read_sequence(*s, kSeqRoot, "order").value().node.next == 15);
}

TEST_CASE("sequence ranges: a raise moves every later take above it, and never falls",
          "[sequence]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  REQUIRE(create_sequence(*s, kSeqRoot, "order", 1, 10));
  SequenceTaker a{"a"};
  REQUIRE(take_range(*s, kSeqRoot, "order", a, 10));
  CHECK(raise_sequence(*s, kSeqRoot, "order", 5000).value().next == 5001);
  CHECK(raise_sequence(*s, kSeqRoot, "order", 100).value().floor == 5000);
  CHECK(take_range(*s, kSeqRoot, "order", a, 10).value().start == 5001);
}

TEST_CASE(
    "sequence ranges: a raise that a freeze overtakes between its read and its write does not "
    "thaw it (it says so), and a raise of a tag it found frozen thaws it, whatever froze it again",
    "[sequence]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  auto daemon = connect(zk);  // a daemon that finds ZooKeeper's data lost
  REQUIRE(create_sequence(*s, kSeqRoot, "order", 1, 10));
  SequenceTaker a{"a"};
  REQUIRE(take_range(*s, kSeqRoot, "order", a, 10));
  // The operator raises above 100 (the application's data), reading the tag
  // thawed; meanwhile a daemon freezes it above 500 (what it held past the
  // restored node): the numbers the freeze is about may be above 100.
  int reads = 0;
  auto raised_over = raise_sequence(*s, kSeqRoot, "order", 100, [&] {
    if (++reads == 1) {
      REQUIRE(freeze_sequence_above(*daemon, kSeqRoot, "order", 500, SequenceNode{1, 10, 0, {}}));
    }
  });
  REQUIRE(!raised_over);
  CHECK(raised_over.error().code == CoordErrc::frozen);
  CHECK(raised_over.error().message.find("was frozen while the raise ran") != std::string::npos);
  CHECK(reads == 1);  // the second read found the freeze and wrote nothing
  auto after = read_sequence(*s, kSeqRoot, "order").value().node;
  CHECK(after.frozen);
  CHECK(after.floor == 500);
  // Run again, knowing the tag frozen: the raise thaws it, even if another
  // freeze lands meanwhile (the operator chose `above` after the loss, and
  // a frozen tag hands nothing out).
  reads = 0;
  auto thawed = raise_sequence(*s, kSeqRoot, "order", 700, [&] {
    if (++reads == 1) {
      REQUIRE(freeze_sequence_above(*daemon, kSeqRoot, "order", 600, SequenceNode{1, 10, 0, {}}));
    }
  });
  REQUIRE(thawed);
  CHECK(reads == 2);
  after = read_sequence(*s, kSeqRoot, "order").value().node;
  CHECK_FALSE(after.frozen);
  CHECK(after.floor == 700);
  CHECK(take_range(*s, kSeqRoot, "order", a, 10).value().start == 701);
}

TEST_CASE(
    "sequence ranges: the floor child is written with the node by create, raise and freeze, "
    "never by a take or a give-back",
    "[sequence]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  const std::string child = sequence_path(kSeqRoot, "order") + "/floor";
  const auto floor_of = [&] { return s->try_get(child).value(); };
  REQUIRE(create_sequence(*s, kSeqRoot, "order", 1, 10));
  REQUIRE(floor_of());
  CHECK(floor_of()->data == R"({"floor":0,"frozen":false})");
  const std::int32_t made = floor_of()->stat.version;
  SequenceTaker a{"a"};
  REQUIRE(take_range(*s, kSeqRoot, "order", a, 10));
  REQUIRE(take_range(*s, kSeqRoot, "order", a, 10));
  REQUIRE(give_back(*s, kSeqRoot, "order", "a", 15).value());
  CHECK(floor_of()->stat.version == made);
  // The directory's children are still the tags alone.
  CHECK(sequence_tags(*s, kSeqRoot).value() == std::vector<std::string>{"order"});

  REQUIRE(raise_sequence(*s, kSeqRoot, "order", 40));
  CHECK(floor_of()->data == R"({"floor":40,"frozen":false})");
  REQUIRE(freeze_sequence_above(*s, kSeqRoot, "order", 50, SequenceNode{1, 10, 0, {}}));
  CHECK(floor_of()->data == R"({"floor":50,"frozen":true})");
  REQUIRE(raise_sequence(*s, kSeqRoot, "order", 60));
  CHECK(floor_of()->data == R"({"floor":60,"frozen":false})");
  REQUIRE(freeze_sequences(*s, kSeqRoot));
  CHECK(floor_of()->data == R"({"floor":60,"frozen":true})");

  // Made again by a freeze (ZooKeeper lost it): with its child.
  REQUIRE(freeze_sequence_above(*s, kSeqRoot, "gone", 70, SequenceNode{1, 10, 0, {}}));
  CHECK(s->try_get(sequence_path(kSeqRoot, "gone") + "/floor").value()->data ==
        R"({"floor":70,"frozen":true})");
  // ... and like the daemon knew it: its template and --max kept.
  SequenceNode printed{1, 10, 0, {}};
  printed.number_template = "ORD-{n:04}";
  printed.end = 1000;
  REQUIRE(freeze_sequence_above(*s, kSeqRoot, "printed", 70, printed));
  const auto remade = read_sequence(*s, kSeqRoot, "printed").value().node;
  CHECK(remade.number_template == "ORD-{n:04}");
  CHECK(remade.end == 1000);
  CHECK(remade.frozen);
  CHECK(remade.floor == 70);

  // A node an older version froze alone: the fence's freeze writes the child too.
  const auto read = read_sequence(*s, kSeqRoot, "order").value();
  REQUIRE(s->set(sequence_path(kSeqRoot, "order"), encode(raised(read.node, 80)), read.version));
  REQUIRE(s->set(sequence_path(kSeqRoot, "order"),
                 encode(freeze(read_sequence(*s, kSeqRoot, "order").value().node)), -1));
  REQUIRE(freeze_sequences(*s, kSeqRoot));
  CHECK(floor_of()->data == R"({"floor":80,"frozen":true})");
}

TEST_CASE(
    "sequence ranges: a period's node is made once, from the definition's start, and "
    "never again once removed, however stale the maker's read",
    "[sequence][period]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  SequenceNode definition = daily_definition("Europe/Berlin", "INV-{yyyy}{MM}{dd}-{n:04}");
  definition.end = 10000;
  REQUIRE(create_sequence(*s, kSeqRoot, "invoice", definition));
  // The definition itself hands nothing out.
  SequenceTaker taker{"run", 0};
  const auto refused = take_range(*s, kSeqRoot, "invoice", taker, 5);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == CoordErrc::periodic);

  const auto read = read_sequence(*s, kSeqRoot, "invoice").value();
  CHECK(make_period(*s, kSeqRoot, "invoice", read, "2026-11-26").value() == PeriodMade::made);
  // The race's loser finds it there, from the same read or a later one.
  CHECK(make_period(*s, kSeqRoot, "invoice", read, "2026-11-26").value() == PeriodMade::there);
  const auto day = read_sequence(*s, kSeqRoot, "invoice@2026-11-26").value().node;
  CHECK(day == first_of_period(read.node));
  CHECK(s->try_get(sequence_path(kSeqRoot, "invoice@2026-11-26") + "/floor").value());
  const auto taken = take_range(*s, kSeqRoot, "invoice@2026-11-26", taker, 5).value();
  CHECK(taken.start == 1);
  CHECK(taken.end == 11);                                              // the definition's step
  CHECK_FALSE(make_period(*s, kSeqRoot, "invoice", read, "2026-11"));  // not a day
  // A period is raised like a tag; the definition only to thaw it (--above
  // 0): its next is every later period's start.
  CHECK(raise_sequence(*s, kSeqRoot, "invoice@2026-11-26", 100).value().floor == 100);
  CHECK(raise_sequence(*s, kSeqRoot, "invoice", 100).error().code == CoordErrc::periodic);
  CHECK(raise_sequence(*s, kSeqRoot, "invoice", 0));
  CHECK(read_sequence(*s, kSeqRoot, "invoice").value().node.next == read.node.next);
  // Listed beside the tags, but not a tag: period_tag's '@'.
  CHECK(sequence_tags(*s, kSeqRoot).value() ==
        std::vector<std::string>{"invoice", "invoice@2026-11-26"});

  // Removed: node, floor child and the definition's removed_through in one
  // multi. A daemon that read the definition before (held up since) cannot
  // make the day again: its check fails; read again, the day is over.
  CHECK(remove_period(*s, kSeqRoot, "invoice", read, "2026-11-26").value());
  CHECK_FALSE(s->try_get(sequence_path(kSeqRoot, "invoice@2026-11-26")).value());
  CHECK_FALSE(s->try_get(sequence_path(kSeqRoot, "invoice@2026-11-26") + "/floor").value());
  CHECK(make_period(*s, kSeqRoot, "invoice", read, "2026-11-26").value() ==
        PeriodMade::definition_moved);
  const auto again = read_sequence(*s, kSeqRoot, "invoice").value();
  CHECK(again.node.removed_through == "2026-11-26");
  CHECK(make_period(*s, kSeqRoot, "invoice", again, "2026-11-26").value() == PeriodMade::removed);
  CHECK(make_period(*s, kSeqRoot, "invoice", again, "2026-11-01").value() == PeriodMade::removed);
  // A removal from a stale read changes nothing; a later day is made.
  CHECK_FALSE(remove_period(*s, kSeqRoot, "invoice", read, "2026-11-25").value());
  CHECK(make_period(*s, kSeqRoot, "invoice", again, "2026-11-27").value() == PeriodMade::made);
  CHECK(read_sequence(*s, kSeqRoot, "invoice@2026-11-27").value().node.next == 1);

  // Frozen (the cluster fenced after a restore): no period made from its start.
  REQUIRE(freeze_sequences(*s, kSeqRoot));
  const auto frozen = read_sequence(*s, kSeqRoot, "invoice").value();
  CHECK(make_period(*s, kSeqRoot, "invoice", frozen, "2026-11-28").value() == PeriodMade::frozen);
  CHECK_FALSE(s->try_get(sequence_path(kSeqRoot, "invoice@2026-11-28")).value());
}

TEST_CASE(
    "sequence ranges: after ZooKeeper lost a period, seq raise makes it again above the floor "
    "(never from its start), and a definition made again frozen makes no period until thawed",
    "[sequence][period]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  // Made again after a wipe, as the runbook says: frozen (seq create --frozen).
  SequenceNode definition = daily_definition("UTC", "{yyyy}-{MM}-{dd}/{n}");
  definition.frozen = true;
  REQUIRE(create_sequence(*s, kSeqRoot, "daily", definition));
  const auto read = read_sequence(*s, kSeqRoot, "daily").value();
  CHECK(make_period(*s, kSeqRoot, "daily", read, "2026-11-26").value() == PeriodMade::frozen);
  CHECK_FALSE(s->try_get(sequence_path(kSeqRoot, "daily@2026-11-26")).value());

  // The period its numbers went out in: made above them, not frozen, its
  // floor child with it; a daemon's make finds it there.
  const auto raised = raise_sequence(*s, kSeqRoot, "daily@2026-11-26", 500).value();
  CHECK(raised.floor == 500);
  CHECK(raised.next == 501);
  CHECK_FALSE(raised.frozen);
  CHECK(raised.number_template.empty());  // a period's node: the definition holds the template
  CHECK(s->try_get(sequence_path(kSeqRoot, "daily@2026-11-26") + "/floor").value());
  SequenceTaker taker{"run", 0};
  CHECK(take_range(*s, kSeqRoot, "daily@2026-11-26", taker, 5).value().start == 501);
  // Raised again: like any node.
  CHECK(raise_sequence(*s, kSeqRoot, "daily@2026-11-26", 400).value().floor == 500);

  // Thawed: a later period is made from its start.
  REQUIRE(raise_sequence(*s, kSeqRoot, "daily", 0));
  const auto thawed = read_sequence(*s, kSeqRoot, "daily").value();
  CHECK_FALSE(thawed.node.frozen);
  CHECK(make_period(*s, kSeqRoot, "daily", thawed, "2026-11-27").value() == PeriodMade::made);
  CHECK(read_sequence(*s, kSeqRoot, "daily@2026-11-27").value().node.next == 1);

  // Nothing is made for what is not a period of it, from its start, for a
  // removed period, or a tag with no definition.
  const auto from_start = raise_sequence(*s, kSeqRoot, "daily@2026-11-28", 0);
  REQUIRE_FALSE(from_start);
  CHECK(from_start.error().message.find("only above its start") != std::string::npos);
  CHECK_FALSE(s->try_get(sequence_path(kSeqRoot, "daily@2026-11-28")).value());
  CHECK(raise_sequence(*s, kSeqRoot, "daily@2026-11", 5).error().code == CoordErrc::no_sequence);
  REQUIRE(remove_period(*s, kSeqRoot, "daily", thawed, "2026-11-26").value());
  const auto removed = raise_sequence(*s, kSeqRoot, "daily@2026-11-26", 900);
  REQUIRE_FALSE(removed);
  CHECK(removed.error().message.find("removed after its retention") != std::string::npos);
  CHECK_FALSE(s->try_get(sequence_path(kSeqRoot, "daily@2026-11-26")).value());
  CHECK(raise_sequence(*s, kSeqRoot, "gone@2026-11-26", 5).error().code == CoordErrc::no_sequence);
  CHECK(raise_sequence(*s, kSeqRoot, "gone", 5).error().code == CoordErrc::no_sequence);
}
