// The replica URLs `snowflaked get` takes.

#include <catch2/catch.hpp>

#include "snowflake/client/replica_url.hpp"

using namespace snowflake::client;

TEST_CASE("replica URLs: host and port, IPv6 in brackets, port 80 by default", "[get]") {
  const auto a = parse_replica_url("http://10.0.0.1:8080").value();
  CHECK(a.host == "10.0.0.1");
  CHECK(a.port == "8080");
  CHECK(a.text == "http://10.0.0.1:8080");
  const auto b = parse_replica_url("http://[::1]:9000/").value();
  CHECK(b.host == "::1");
  CHECK(b.port == "9000");
  const auto c = parse_replica_url("http://ids.internal").value();
  CHECK(c.host == "ids.internal");
  CHECK(c.port == "80");
  CHECK_FALSE(c.tls);
}

TEST_CASE("replica URLs: https:// speaks TLS, port 443 by default", "[get]") {
  const auto a = parse_replica_url("https://ids.internal").value();
  CHECK(a.tls);
  CHECK(a.host == "ids.internal");
  CHECK(a.port == "443");
  const auto b = parse_replica_url("https://[::1]:8443/").value();
  CHECK(b.tls);
  CHECK(b.host == "::1");
  CHECK(b.port == "8443");
}

TEST_CASE("replica URLs: what the client cannot use is refused with the reason", "[get]") {
  for (const char* bad :
       {"ftp://a:1", "HTTPS://a:1", "a:1", "http://", "https://", "https://a:1/id", "http://:80",
        "http://a:", "http://a:0", "http://a:65536", "http://a:8x", "http://a:1/id", "http://a:1?x",
        "http://u@a:1", "http://[::1", "http://[::1]x", "http://[::1]:"}) {
    INFO(bad);
    const auto r = parse_replica_url(bad);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error(), Catch::Contains(bad));
  }
}

TEST_CASE("replica lists: comma-separated, spaces allowed, every item checked", "[get]") {
  const auto list = parse_replica_list("http://a:1, http://b:2,http://[::1]:3").value();
  REQUIRE(list.size() == 3);
  CHECK(list[1].host == "b");
  CHECK(list[2].port == "3");
  CHECK_FALSE(parse_replica_list("http://a:1,").has_value());
  CHECK_FALSE(parse_replica_list("http://a:1,ftp://b").has_value());
}
