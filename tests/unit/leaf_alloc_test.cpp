// Leaf's leaf_alloc as `mysql --batch` prints it (migration/leaf_alloc.hpp):
// read for `seq import`, and every line that does not read named.
#include <catch2/catch.hpp>

#include "snowflake/migration/leaf_alloc.hpp"

using snowflake::migration::LeafAllocRow;
using snowflake::migration::parse_leaf_alloc;

TEST_CASE("leaf_alloc: the rows of mysql --batch output, header first", "[sequence][leaf]") {
  const auto rows = parse_leaf_alloc(
      "biz_tag\tmax_id\tstep\norder\t6001\t1000\r\ninvoice\t11\t10\n\nuser.id\t1\t2000\n");
  REQUIRE(rows);
  CHECK(rows.value() == std::vector<LeafAllocRow>{
                            {"order", 6001, 1000}, {"invoice", 11, 10}, {"user.id", 1, 2000}});
  CHECK(parse_leaf_alloc("biz_tag\tmax_id\tstep\n").value().empty());
}

TEST_CASE("leaf_alloc: a line that does not read is named, and nothing is taken",
          "[sequence][leaf]") {
  const auto error_of = [](const char* text) { return parse_leaf_alloc(text).error(); };
  CHECK(error_of("").find("header") != std::string::npos);
  CHECK(error_of("order\t1\t2\n").find("line 1") != std::string::npos);
  CHECK(error_of("biz_tag\tmax_id\tstep\norder\t5\n").find("line 2") != std::string::npos);
  CHECK(error_of("biz_tag\tmax_id\tstep\nbad tag\t5\t1\n").find("biz_tag") != std::string::npos);
  CHECK(error_of("biz_tag\tmax_id\tstep\na\t5\t1\na\t6\t1\n").find("twice") != std::string::npos);
  CHECK(error_of("biz_tag\tmax_id\tstep\na\t0\t1\n").find("max_id") != std::string::npos);
  CHECK(error_of("biz_tag\tmax_id\tstep\na\t5\t0\n").find("step") != std::string::npos);
  CHECK(error_of("biz_tag\tmax_id\tstep\na\t5\t2147483649\n").find("step") != std::string::npos);
  CHECK(error_of("biz_tag\tmax_id\tstep\na\t9223372036854775807\t1\n").find("max_id") !=
        std::string::npos);
}
