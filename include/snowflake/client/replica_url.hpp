#pragma once
// Where `snowflaked get` finds a replica: "http://host[:port]" or
// "https://host[:port]" (IPv6 hosts in brackets; port 80 or 443 when none
// is given).

#include <string>
#include <string_view>
#include <vector>

#include "snowflake/base/result.hpp"

namespace snowflake::client {

struct ReplicaUrl {
  std::string text;  // as given, for messages
  std::string host;  // "10.0.0.1", "::1", "ids.internal"
  std::string port;  // "8080"
  bool tls = false;  // https://
};

// On error: what is wrong with the text, for a usage message.
Result<ReplicaUrl, std::string> parse_replica_url(std::string_view text);
// A comma-separated list, as --servers and SNOWFLAKED_SERVERS take it.
Result<std::vector<ReplicaUrl>, std::string> parse_replica_list(std::string_view text);

}  // namespace snowflake::client
