// A strict sequence's owner record (coord/strict_owner.hpp) against a real
// ZooKeeper: a claim or a clean stop's release whose answer is lost on the
// way back is read back, so the record's writer knows what it did.

#include <catch2/catch.hpp>

#include <chrono>

#include "../support/fault_proxy.hpp"
#include "../support/zookeeper_server.hpp"
#include "snowflake/coord/sequence_ranges.hpp"
#include "snowflake/coord/strict_owner.hpp"

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

}  // namespace

TEST_CASE(
    "strict owner: a claim and a release whose answers are lost are read back, each counted as "
    "done, the release not waiting out a takeover",
    "[sequence][strict]") {
  ZooKeeperServer zk;
  auto admin = connect(zk);
  create_strict(*admin, "t");
  FaultProxy proxy(zk.port());
  auto cut = connect_session(proxy.hosts());
  const StrictOwner me{3, "/snowflake/e2e/workers/w-3", "run-of-this-test", "127.0.0.1:1", false};

  // The multi reaches the server and its answer goes with the connection.
  // The read back comes once the client has connected again (at once it
  // fails, and the claim is an error: the supplier reads the record again).
  proxy.lose_next_reply(FaultProxy::kMulti);
  const auto claimed = claim_strict_owner(*cut, kStrictRoot, "t", read_owner(*cut, "t"), me, {});
  CHECK(proxy.replies_lost() == 1);
  INFO((claimed ? std::string() : claimed.error().message));
  REQUIRE(claimed);
  CHECK(claimed.value());
  const auto owned = read_owner(*admin, "t");
  REQUIRE(owned.owner);
  CHECK(*owned.owner == me);

  proxy.lose_next_reply(FaultProxy::kMulti);
  const auto released = release_strict_owner(*cut, kStrictRoot, "t", owned, std::nullopt);
  CHECK(proxy.replies_lost() == 2);
  INFO((released ? std::string() : released.error().message));
  REQUIRE(released);
  CHECK(released.value());
  const auto after = read_owner(*admin, "t");
  REQUIRE(after.owner);
  CHECK(after.owner->released);
  CHECK(after.owner->token == me.token);
  CHECK(after.version == owned.version + 1);  // written once, not twice

  // Released already by the time the record is read back, then taken by
  // another: not ours, and nothing written over the new owner's claim.
  const StrictOwner next{4, "/snowflake/e2e/workers/w-4", "another-run", "127.0.0.1:2", false};
  REQUIRE(claim_strict_owner(*admin, kStrictRoot, "t", after, next, {}).value());
  CHECK_FALSE(release_strict_owner(*cut, kStrictRoot, "t", owned, std::nullopt).value());
  CHECK(*read_owner(*admin, "t").owner == next);
}
