// ZkSession against a real ZooKeeper server (no mock of its semantics).

#include <catch2/catch.hpp>

#include <thread>

#include "../support/polling.hpp"
#include "../support/session_expiry.hpp"
#include "../support/zookeeper_server.hpp"
#include "snowflake/zk/zk_session.hpp"

using namespace snowflake::coord;
using namespace snowflake::test;
using namespace std::chrono_literals;

namespace {

void expire(const ZooKeeperServer& zk, const ZkSession& s) {
  REQUIRE(expire_session(zk.hosts(), s));
}

}  // namespace

TEST_CASE("create, get, set with versions, children, remove", "[zk]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  CHECK(s->create("/a", "one").value() == "/a");
  const auto got = s->get("/a").value();
  CHECK(got.data == "one");
  CHECK(got.stat.version == 0);
  CHECK(got.stat.mtime_ms > 0);

  const auto stat = s->set("/a", "two", 0).value();
  CHECK(stat.version == 1);
  const auto stale = s->set("/a", "three", 0);  // someone else's version
  REQUIRE(stale.has_error());
  CHECK(stale.error().code == ZkErrc::bad_version);
  CHECK_FALSE(stale.error().session_gone());
  CHECK(s->get("/a").value().data == "two");

  CHECK(s->create("/a", "again").error().code == ZkErrc::node_exists);
  CHECK(s->get("/missing").error().code == ZkErrc::no_node);
  CHECK(s->get("/missing").error().message() == "ZooKeeper no_node at /missing (no node)");
  CHECK_FALSE(s->exists("/missing").value().has_value());
  CHECK(s->exists("/a").value()->version == 1);

  s->create("/a/x", "").value();
  s->create("/a/y", "").value();
  auto kids = s->children("/a").value();
  std::sort(kids.begin(), kids.end());
  CHECK(kids == std::vector<std::string>{"x", "y"});
  CHECK(s->remove("/a", -1).error().code == ZkErrc::not_empty);
  CHECK(s->remove("/a/x", 5).error().code == ZkErrc::bad_version);
  CHECK(s->remove("/a/x", 0).has_value());
  CHECK(s->remove("/a/y", -1).has_value());
  CHECK(s->remove("/a", -1).has_value());
}

TEST_CASE("try_get and try_children: a missing node is an answer, other errors stay errors",
          "[zk]") {
  ZooKeeperServer zk;
  auto s = connect(zk, std::nullopt, 1000ms);
  CHECK_FALSE(s->try_get("/missing").value().has_value());
  CHECK_FALSE(s->try_children("/missing").value().has_value());
  s->create("/t", "data").value();
  s->create("/t/c", "").value();
  const auto got = s->try_get("/t").value();
  REQUIRE(got.has_value());
  CHECK(got->data == "data");
  CHECK(got->stat.num_children == 1);
  CHECK(s->try_children("/t").value() == std::vector<std::string>{"c"});
  // Ended by the server: not "missing" but the session's own error.
  expire(zk, *s);
  CHECK(s->try_get("/t").error().code == ZkErrc::session_expired);
  CHECK(s->try_children("/t").error().code == ZkErrc::session_expired);
}

TEST_CASE("sequential nodes get increasing 10-digit suffixes", "[zk]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  s->create("/seq", "").value();
  const auto a = s->create("/seq/host:1-", "", CreateMode::persistent_sequential).value();
  const auto b = s->create("/seq/host:1-", "", CreateMode::persistent_sequential).value();
  CHECK(a == "/seq/host:1-0000000000");
  CHECK(b == "/seq/host:1-0000000001");
}

TEST_CASE("large node data is read whole", "[zk]") {
  ZooKeeperServer zk;
  auto s = connect(zk);
  const std::string big(200'000, 'z');
  s->create("/big", big).value();
  CHECK(s->get("/big").value().data == big);
}

TEST_CASE("no server: connect fails within its deadline", "[zk]") {
  const auto port = free_port();
  const auto started = std::chrono::steady_clock::now();
  auto s = ZkSession::connect({.hosts = "127.0.0.1:" + std::to_string(port),
                               .session_timeout = 2000ms,
                               .connect_timeout = 1500ms});
  REQUIRE(s.has_error());
  CHECK(s.error().code == ZkErrc::connect_timeout);
  CHECK(std::chrono::steady_clock::now() - started < 5s);
}

TEST_CASE("an expired session is gone: calls say session_expired", "[zk]") {
  ZooKeeperServer zk;
  auto s = connect(zk, std::nullopt, 1000ms);
  s->create("/e", "", CreateMode::ephemeral).value();
  expire(zk, *s);
  const auto r = s->get("/e");
  REQUIRE(r.has_error());
  CHECK(r.error().code == ZkErrc::session_expired);
  CHECK(r.error().session_gone());
  // A multi too, and it frees none of our strings: libzookeeper_mt's
  // zoo_amulti does on a dead handle, once per op after the first (an ASan
  // report, or a double free, without the guard in ZkSession::multi).
  const auto m = s->multi({ZkOp::check("/a-path-longer-than-sso/0", 0),
                           ZkOp::set("/a-path-longer-than-sso/1", "x", 0),
                           ZkOp::create("/a-path-longer-than-sso/2", "y")});
  REQUIRE(m.has_error());
  CHECK(m.error().code == ZkErrc::session_expired);
  // A new session sees the ephemeral node gone with the old one.
  auto fresh = connect(zk);
  CHECK_FALSE(fresh->exists("/e").value().has_value());
}

TEST_CASE("a server restart does not end the session", "[zk]") {
  ZooKeeperServer zk;
  auto s = connect(zk, std::nullopt, 10'000ms);
  s->create("/r", "kept").value();
  zk.restart();
  REQUIRE(eventually([&] {
    auto r = s->get("/r");
    return r.has_value() && r.value().data == "kept";
  }));
  CHECK_FALSE(s->gone());
}

TEST_CASE("with digest auth, others can read our nodes but not change them", "[zk]") {
  ZooKeeperServer zk;
  auto owner = connect(zk, "snowflake:secret");
  owner->create("/owned", "mine").value();
  CHECK(owner->set("/owned", "still mine", -1).has_value());

  auto stranger = connect(zk);
  CHECK(stranger->get("/owned").value().data == "still mine");
  CHECK(stranger->set("/owned", "theirs", -1).error().code == ZkErrc::no_auth);
  auto impostor = connect(zk, "snowflake:wrong");
  CHECK(impostor->set("/owned", "theirs", -1).error().code == ZkErrc::no_auth);
  // Delete permission sits on the parent: the root is open, so protect a child.
  owner->create("/owned/child", "").value();
  CHECK(stranger->remove("/owned/child", -1).error().code == ZkErrc::no_auth);
  CHECK(owner->remove("/owned/child", -1).has_value());
}
