// The data of our ZooKeeper nodes is anybody's to write: a number that is no
// integer, or does not fit its field, makes the node unreadable, never a cast.
// (The first case was found by tests/fuzz/node_data.cpp: undefined behaviour.)
#include <catch2/catch.hpp>

#include "snowflake/ids/layout_json.hpp"
#include "snowflake/zk/node_data.hpp"

using namespace snowflake::coord;

namespace {

std::string owner_with(const std::string& port, const std::string& pid) {
  return R"({"host":"web-0","port":)" + port + R"(,"pid":)" + pid + R"(,"instance":"2f2a"})";
}

std::string inuse_with(const std::string& floor) {
  return R"({"owner":)" + owner_with("8080", "42") + R"(,"floor":)" + floor +
         R"(,"ts":1735689660000,"hwm":1735689659000,"lease_ms":10000})";
}

}  // namespace

TEST_CASE("node data: numbers out of their field's range or not integers are refused",
          "[node_data]") {
  REQUIRE(decode_owner(owner_with("8080", "42")));
  CHECK(decode_owner(owner_with("8080", "42"))->pid == 42);
  CHECK_FALSE(decode_owner(owner_with("8080", "4.2e90")));
  CHECK_FALSE(decode_owner(owner_with("8080", "1e3")));
  CHECK_FALSE(decode_owner(owner_with("-1", "42")));
  CHECK_FALSE(decode_owner(owner_with("4294967296", "42")));
  CHECK_FALSE(decode_owner(owner_with("8080", "9223372036854775808")));

  REQUIRE(decode_inuse(inuse_with("1735689600000")));
  CHECK_FALSE(decode_inuse(inuse_with("1.5")));
  CHECK_FALSE(decode_inuse(inuse_with("1e300")));
  CHECK_FALSE(decode_notuse(R"({"floor":18446744073709551615})"));
  CHECK(decode_notuse(R"({"floor":-5})")->floor == -5);

  CHECK_FALSE(snowflake::decode_layout(
      R"({"time_bits":1e10,"worker_bits":10,"sequence_bits":12,"time_unit_ms":1,"epoch_ms":0})"));
  CHECK_FALSE(snowflake::decode_layout(
      R"({"time_bits":4294967337,"worker_bits":10,"sequence_bits":12,"time_unit_ms":1,"epoch_ms":0})"));
}

TEST_CASE("node data: a sequential node of 0.1 (no owner, floor, lease) still reads",
          "[node_data]") {
  const auto old = decode_sequential(R"({"host":"web-0","port":8080,"ts":5,"hwm":4})");
  REQUIRE(old);
  CHECK_FALSE(old->owner);
  CHECK(old->floor == 0);
  CHECK(old->lease_ms == 0);
  CHECK_FALSE(decode_sequential(R"({"host":"web-0","port":8080,"ts":5,"hwm":4,"floor":0.5})"));
}

TEST_CASE(
    "node data: a clean stop's released mark round-trips, is absent from other nodes, and only a "
    "boolean reads",
    "[node_data]") {
  const auto plain = decode_inuse(inuse_with("1735689600000"));
  REQUIRE(plain);
  CHECK_FALSE(plain->released);
  CHECK(encode(*plain).find("released") == std::string::npos);  // as older daemons wrote it
  InuseData marked = *plain;
  marked.released = true;
  marked.lease_ms = 0;
  marked.ts = marked.hwm = 1735689661000;
  const auto back = decode_inuse(encode(marked));
  REQUIRE(back);
  CHECK(*back == marked);
  CHECK(back->last_possible_ms() == 1735689661000);  // its last stamp: no lease after it
  std::string text = inuse_with("1735689600000");
  text.insert(text.size() - 1, R"(,"released":1)");
  CHECK_FALSE(decode_inuse(text));
}

TEST_CASE("node data: Leaf's forever/ nodes are told from ours", "[node_data][leaf]") {
  // As Leaf's SnowflakeZookeeperHolder writes them (Jackson: port as a string).
  CHECK(is_leaf_node_data(R"({"ip":"10.0.0.1","port":"8080","timestamp":1764000000000})"));
  // Ours, of every version.
  CHECK_FALSE(is_leaf_node_data(R"({"host":"web-0","port":8080,"ts":5,"hwm":4})"));
  SequentialData ours;
  ours.host = "10.0.0.1";
  ours.port = 8080;
  ours.ts = 5;
  CHECK_FALSE(is_leaf_node_data(encode(ours)));
  CHECK_FALSE(is_leaf_node_data(""));
  CHECK_FALSE(is_leaf_node_data("not json"));
}
