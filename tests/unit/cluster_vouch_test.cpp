// cluster create's vouch and its reach (cluster/cluster_vouch.hpp): pure, no
// ZooKeeper. The session IDs are ZooKeeper 3.8's: two from one server run
// (0x10003ef6e05 the run, then a count) and one from the run after a restart.
#include <catch2/catch.hpp>

#include "snowflake/cluster/cluster_vouch.hpp"

#include <vector>

using namespace snowflake::coord;

namespace {
constexpr std::int64_t kRunA0 = 0x10003ef6e050000;
constexpr std::int64_t kRunA1 = 0x10003ef6e050001;
constexpr std::int64_t kRunB0 = 0x10003ef8c160000;  // the same server, restarted
}  // namespace

TEST_CASE("cluster vouch: sessions are of one ZooKeeper run by their tracker's start, not order",
          "[lost_data]") {
  CHECK(same_zookeeper_run(kRunA0, kRunA1));
  CHECK(same_zookeeper_run(kRunA1, kRunA0));  // a daemon's session may be the older
  CHECK_FALSE(same_zookeeper_run(kRunA0, kRunB0));
  CHECK_FALSE(same_zookeeper_run(0, 0));
  CHECK_FALSE(same_zookeeper_run(kRunA0, 0));
  // Another server's ID (bits 56-63) with the same start: another tracker.
  CHECK_FALSE(same_zookeeper_run(kRunA0, kRunA0 + (std::int64_t{1} << 56)));
  // 65,536 sessions carry into the start's bits: taken for another run (the
  // grace again, never the other way).
  CHECK_FALSE(same_zookeeper_run(kRunA0, kRunA0 + 0x10000));
  // No tracker start at all: not a session ZooKeeper numbered.
  CHECK_FALSE(same_zookeeper_run(0x100000000000001, 0x100000000000002));
}

TEST_CASE("cluster vouch: recorded beside the root's other fields, and only its own shape read",
          "[lost_data]") {
  const std::string root = R"({"time_bits":41,"cluster_id":"0123456789abcdef0123456789abcdef"})";
  CHECK_FALSE(recorded_vouch(root));
  const std::string vouched = with_vouch(root, {{kRunA0, kRunB0}, 1'800'000'000'000});
  const auto v = recorded_vouch(vouched);
  REQUIRE(v);
  CHECK(v->sessions == std::vector<std::int64_t>{kRunA0, kRunB0});
  CHECK(v->at_ms == 1'800'000'000'000);
  CHECK(vouched.find(R"("sessions":["0x010003ef6e050000","0x010003ef8c160000"])") !=
        std::string::npos);
  CHECK(vouched.find(R"("time_bits":41)") != std::string::npos);
  const auto one = [](const std::string& session, const std::string& at = "1") {
    return R"({"vouched":{"sessions":[")" + session + R"("],"at_ms":)" + at + "}}";
  };
  CHECK(recorded_vouch(one("0x010003ef6e050000")));
  CHECK_FALSE(recorded_vouch(one("0x10003ef6e050000")));  // 15 digits
  CHECK_FALSE(recorded_vouch(one("0x0000000000000000")));
  CHECK_FALSE(recorded_vouch(one("0x010003ef6e05000g")));
  CHECK_FALSE(recorded_vouch(one("0x010003ef6e050000", "1.5")));
  CHECK_FALSE(recorded_vouch(R"({"vouched":{"sessions":["0x010003ef6e050000"]}})"));
  CHECK_FALSE(recorded_vouch(R"({"vouched":{"sessions":[],"at_ms":1}})"));
  CHECK_FALSE(recorded_vouch(R"({"vouched":{"sessions":["0x010003ef6e050000",7],"at_ms":1}})"));
  CHECK_FALSE(recorded_vouch(R"({"vouched":"yes"})"));
  CHECK_FALSE(recorded_vouch("not json"));

  CHECK_FALSE(recorded_maker_session(root));
  CHECK(recorded_maker_session(with_maker_session(root, kRunA1)) == kRunA1);
  CHECK_FALSE(recorded_maker_session(R"({"made_in_session":12})"));
}

TEST_CASE("cluster vouch: reaches a session of its run for kVouchLasts from when it was given",
          "[lost_data]") {
  const std::int64_t at = 1'800'000'000'000;
  const std::optional<ClusterVouch> vouch = ClusterVouch{{kRunA0}, at};
  CHECK(vouch_reaches(vouch, kRunA1, at));
  CHECK(vouch_reaches(vouch, kRunA1, at + kVouchLasts.count() - 1));
  CHECK_FALSE(vouch_reaches(vouch, kRunA1, at + kVouchLasts.count()));
  CHECK_FALSE(vouch_reaches(vouch, kRunA1, at - 1));  // a clock behind the vouch's: no
  CHECK_FALSE(vouch_reaches(vouch, kRunB0, at + 1));  // ZooKeeper restarted since
  CHECK_FALSE(vouch_reaches(std::nullopt, kRunA1, at));
  // One session per server: a daemon of any of their runs.
  constexpr std::int64_t kOtherServer = 0x20003f0000a0003;
  const std::optional<ClusterVouch> ensemble = ClusterVouch{{kRunA0, kOtherServer}, at};
  CHECK(vouch_reaches(ensemble, kOtherServer + 5, at + 1));
  CHECK(vouch_reaches(ensemble, kRunA1, at + 1));
  CHECK_FALSE(vouch_reaches(ensemble, kRunB0, at + 1));
}
