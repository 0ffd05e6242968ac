#include <catch2/catch.hpp>

#include "snowflake/base/names.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/ids/json.hpp"
#include "snowflake/ids/text.hpp"

using namespace snowflake;

TEST_CASE("ISO-8601 formatting with milliseconds, UTC", "[time]") {
  CHECK(format_iso8601_ms(0) == "1970-01-01T00:00:00.000Z");
  CHECK(format_iso8601_ms(kDefaultEpochMs) == "2025-01-01T00:00:00.000Z");
  CHECK(format_iso8601_ms(951'782'400'123) == "2000-02-29T00:00:00.123Z");
  CHECK(format_iso8601_ms(-1) == "1969-12-31T23:59:59.999Z");
}

TEST_CASE("ISO-8601 parsing accepts only full UTC timestamps", "[time]") {
  CHECK(parse_iso8601_ms("2025-01-01T00:00:00Z") == kDefaultEpochMs);
  CHECK(parse_iso8601_ms("2025-01-01T00:00:00.250Z") == kDefaultEpochMs + 250);
  CHECK(parse_iso8601_ms("2000-02-29T00:00:00.123Z") == 951'782'400'123);
  for (const char* bad : {"", "2025-01-01", "2025-01-01T00:00:00", "2025-01-01T00:00:00+01:00",
                          "2025-02-30T00:00:00Z", "2025-13-01T00:00:00Z", "2025-01-01T24:00:00Z",
                          "2025-01-01T00:00:00.5Z", "2025-01-01 00:00:00Z", "x025-01-01T00:00:00Z",
                          "2025-01-01T00:00:00ZZ"}) {
    INFO(bad);
    CHECK_FALSE(parse_iso8601_ms(bad).has_value());
  }
  const std::int64_t t = 1'763'700'000'042;
  CHECK(parse_iso8601_ms(format_iso8601_ms(t)) == t);
}

TEST_CASE("parse_id accepts plain decimal IDs up to 2^63-1", "[id_text]") {
  CHECK(parse_id("0") == 0u);
  CHECK(parse_id("7264871209263386624") == 7264871209263386624u);
  CHECK(parse_id("9223372036854775807") == 9223372036854775807u);
  for (const char* bad : {"", "9223372036854775808", "18446744073709551615", "-1", "+1", " 1", "1 ",
                          "12a", "0x10", "1e5", "00000000000000000001"}) {
    INFO(bad);
    CHECK_FALSE(parse_id(bad).has_value());
  }
}

TEST_CASE("a decoded ID as JSON: the ID as a string, time in ISO-8601", "[id_text]") {
  const auto decoded = decoded_id_to_json({.id = 4194304005,
                                           .timestamp_ms = kDefaultEpochMs + 1000,
                                           .datacenter_id = 3,
                                           .worker_id = 1,
                                           .sequence = 5});
  CHECK(decoded.dump() ==
        R"({"id":"4194304005","timestamp_ms":1735689601000,"time":"2025-01-01T00:00:01.000Z",)"
        R"("datacenter_id":3,"worker_id":1,"sequence":5})");
}

TEST_CASE("names (service, tags): [A-Za-z0-9._-]{1,64}, not . or ..", "[id_text]") {
  CHECK(is_valid_name("order"));
  CHECK(is_valid_name("Order_v2.eu-1"));
  CHECK(is_valid_name("..."));
  CHECK(is_valid_name(".a"));
  CHECK(is_valid_name(std::string(64, 'a')));
  for (const std::string& bad :
       {std::string(), std::string(65, 'a'), std::string("a/b"), std::string("a b"),
        std::string("ä"), std::string("a%2F"), std::string("a\0b", 3),
        // ZooKeeper refuses these as node names: a path's relative steps.
        std::string("."), std::string("..")}) {
    CHECK_FALSE(is_valid_name(bad));
  }
}
