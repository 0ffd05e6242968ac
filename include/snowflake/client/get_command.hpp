#pragma once
// `snowflaked get`: IDs for shell scripts from whichever replica can issue.
// A 503 means "ask another replica", which curl alone cannot do. The
// replicas are tried in a random order (so clients spread over them), each
// moved on from at once on a 503, a connection error or its share of the
// time left; when every replica answered 503, the shortest Retry-After is
// waited out and they are tried again, all within one overall deadline.
// https:// replicas are asked over TLS, their certificates verified.

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snowflake/client/replica_url.hpp"
#include "snowflake/ids/form.hpp"

namespace snowflake::client {

inline constexpr std::string_view kDefaultServers = "http://127.0.0.1:8080";
inline constexpr const char* kServersVariable = "SNOWFLAKED_SERVERS";
inline constexpr const char* kCaCertVariable = "SNOWFLAKED_CACERT";

struct GetOptions {
  std::string tag = "default";
  std::uint32_t count = 1;
  std::vector<ReplicaUrl> servers;
  std::chrono::milliseconds timeout{5'000};
  bool json = false;             // print the replica's JSON answer instead of one ID a line
  std::optional<IdForm> form{};  // ?form=; none: the tag's form on the replica
  // A dense sequence's numbers (GET /seq/TAG) instead of IDs. A strict
  // one's refusal names its owner ("not_owner"): asked next, over the
  // refusing replica's scheme, whether or not it is in `servers`.
  bool sequence = false;
  // https:// replicas' certificates are verified against this PEM file's
  // CAs; empty: the system's.
  std::string ca_file{};
};

// The exit code: 0 with the IDs on `out`; 1 when no replica could issue in
// time (`err` names each replica's last error code); 2 when a replica
// refused the request itself (4xx: a count over its max_batch, a tag not in
// its allowlist), since every replica would, or the CA file cannot be used.
int run_get(const GetOptions& options, std::ostream& out, std::ostream& err);

}  // namespace snowflake::client
