#pragma once
// A worker-ID lease holder's requests, as the e2e tests send them (the test
// is the holder, speaking HTTP): leases_test.cpp and lease_pools_test.cpp.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "../support/daemon.hpp"
#include "../support/http_client.hpp"

namespace snowflake::test {

inline std::optional<HttpReply> ask_lease(const Daemon& d, const std::string& method,
                                          const std::string& target) {
  HttpConnection c(d.port());
  return c.request(target, method);
}

// POST /v1/leases?<query>, which must answer 200: the lease.
inline nlohmann::json take_lease(const Daemon& d, const std::string& query) {
  const auto r = ask_lease(d, "POST", "/v1/leases?" + query);
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  return nlohmann::json::parse(r->body);
}

}  // namespace snowflake::test
