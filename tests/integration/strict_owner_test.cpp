// A strict sequence's owner record (sequence_store/strict_owner.hpp) against a real
// ZooKeeper: a claim or a clean stop's release whose answer is lost on the
// way back is read back, so the record's writer knows what it did.

#include <catch2/catch.hpp>

#include <chrono>

#include "../support/fault_proxy.hpp"
#include "../support/zookeeper_server.hpp"
#include "snowflake/sequence_store/sequence_ranges.hpp"
#include "snowflake/sequence_store/strict_owner.hpp"

using namespace snowflake;
using namespace snowflake::coord;
using namespace snowflake::test;
using namespace std::chrono_literals;

namespace {

const std::string kStrictRoot = "/snowflake/strict";

// A strict tag as `seq create --order strict` makes it: the node and its
// record, released (nobody owns it yet).
void create_strict(ZkSession& zk, const std::string& tag) {
  SequenceNode first{1, 10, 0, {}};
  first.strict = true;
  REQUIRE(create_sequence(zk, kStrictRoot, tag, first));
}

OwnerRead read_owner(ZkSession& zk, const std::string& tag) {
  auto read = read_strict_owner(zk, kStrictRoot, tag, /*watch=*/false);
  REQUIRE(read);
  return read.value();
}

// Two daemons' identities: kMe the one under test.
const StrictOwner kMe{3, "/snowflake/e2e/workers/w-3", "run-of-this-test", "127.0.0.1:1", false};
const StrictOwner kNext{4, "/snowflake/e2e/workers/w-4", "another-run", "127.0.0.1:2", false};

// A server with strict tag "t", an admin's session, and one through a
// proxy that can lose an answer.
struct OwnerRig {
  ZooKeeperServer zk;
  std::unique_ptr<ZkSession> admin = connect(zk);
  FaultProxy proxy{zk.port()};
  std::unique_ptr<ZkSession> cut;
  OwnerRig() {
    create_strict(*admin, "t");
    cut = connect_session(proxy.hosts());
  }
};

}  // namespace

TEST_CASE(
    "strict owner: a claim and a release whose answers are lost are read back, each counted as "
    "done, the release not waiting out a takeover",
    "[sequence][strict]") {
  OwnerRig rig;
  auto& [zk, admin, proxy, cut] = rig;

  // The multi reaches the server and its answer goes with the connection.
  // The read back comes once the client has connected again (at once it
  // fails, and the claim is an error: the supplier reads the record again).
  proxy.lose_next_reply(FaultProxy::kMulti);
  const auto claimed = claim_strict_owner(*cut, kStrictRoot, "t", read_owner(*cut, "t"), kMe, {});
  CHECK(proxy.replies_lost() == 1);
  INFO((claimed ? std::string() : claimed.error().message));
  REQUIRE(claimed);
  CHECK(claimed.value());
  const auto owned = read_owner(*admin, "t");
  REQUIRE(owned.owner);
  CHECK(*owned.owner == kMe);

  proxy.lose_next_reply(FaultProxy::kMulti);
  const auto released = release_strict_owner(*cut, kStrictRoot, "t", owned, std::nullopt);
  CHECK(proxy.replies_lost() == 2);
  INFO((released ? std::string() : released.error().message));
  REQUIRE(released);
  CHECK(released.value());
  const auto after = read_owner(*admin, "t");
  REQUIRE(after.owner);
  CHECK(after.owner->released);
  CHECK(after.owner->token == kMe.token);
  CHECK(after.version == owned.version + 1);  // written once, not twice

  // Released already, then taken by another: a late release of ours is
  // not, and writes nothing over the new owner's claim.
  REQUIRE(claim_strict_owner(*admin, kStrictRoot, "t", after, kNext, {}).value());
  CHECK_FALSE(release_strict_owner(*cut, kStrictRoot, "t", owned, std::nullopt).value());
  CHECK(*read_owner(*admin, "t").owner == kNext);
}

TEST_CASE(
    "strict owner: a release refused by ZooKeeper whose answer is lost is read back as not "
    "written, sent once more, and refused again: false, the record as it was",
    "[sequence][strict]") {
  OwnerRig rig;
  auto& [zk, admin, proxy, cut] = rig;
  REQUIRE(claim_strict_owner(*cut, kStrictRoot, "t", read_owner(*cut, "t"), kMe, {}).value());
  const auto owned = read_owner(*cut, "t");
  // The node checked at a version it is past: the multi fails on the server.
  const auto node = read_sequence(*admin, kStrictRoot, "t").value();
  const auto stale = ZkOp::check(sequence_path(kStrictRoot, "t"), node.version + 1);
  proxy.lose_next_reply(FaultProxy::kMulti);
  const auto released = release_strict_owner(*cut, kStrictRoot, "t", owned, stale);
  CHECK(proxy.replies_lost() == 1);
  INFO((released ? std::string() : released.error().message));
  REQUIRE(released);
  CHECK_FALSE(released.value());
  const auto after = read_owner(*admin, "t");
  CHECK(after.version == owned.version);
  CHECK(*after.owner == kMe);
}

TEST_CASE(
    "strict owner: a record deleted and made again (seq order there and back) may come round to "
    "the version a late release read: the node, written by each change of order, fails it",
    "[sequence][strict]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  create_strict(*admin, "t");
  REQUIRE(claim_strict_owner(*admin, kStrictRoot, "t", read_owner(*admin, "t"), kMe, {}).value());
  // What a stopping owner reads, the node first.
  const auto node = read_sequence(*admin, kStrictRoot, "t").value();
  const auto owned = read_owner(*admin, "t");
  // Meanwhile: per-daemon and strict again, and another daemon claims.
  REQUIRE(set_sequence_order(*admin, kStrictRoot, "t", false));
  REQUIRE(set_sequence_order(*admin, kStrictRoot, "t", true));
  REQUIRE(claim_strict_owner(*admin, kStrictRoot, "t", read_owner(*admin, "t"), kNext, {}).value());
  const auto now = read_owner(*admin, "t");
  CHECK(now.version == owned.version);  // the record's version alone cannot tell
  const auto late = release_strict_owner(
      *admin, kStrictRoot, "t", owned, ZkOp::check(sequence_path(kStrictRoot, "t"), node.version));
  REQUIRE(late);
  CHECK_FALSE(late.value());
  CHECK(*read_owner(*admin, "t").owner == kNext);
}
