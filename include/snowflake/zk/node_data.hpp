#pragma once
// The JSON held by our ZooKeeper nodes. Times are Unix milliseconds by the
// writer's wall clock; ZooKeeper's own clock is in the node's stat (mtime).
//
//   <root>                      the cluster's ID layout and strategy
//   <root>/alive/<id>           ephemeral: the owner token of worker ID <id>'s holder
//   <root>/forever/<host>:<port>-<seq>   {host, port, owner, floor, ts, hwm, lease_ms}
//   <root>/pool/notuse/<id>     {floor}
//   <root>/pool/inuse/<id>      {owner, floor, ts, hwm, lease_ms[, released]}

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "snowflake/ids/layout.hpp"
#include "snowflake/state/owner_token.hpp"

namespace snowflake::coord {

// Who holds a node: one run of one daemon (state/owner_token.hpp).
using state::OwnerToken;

struct InuseData {
  OwnerToken owner;
  std::int64_t floor = 0;     // the floor this owner started above
  std::int64_t ts = 0;        // its wall clock at its last heartbeat
  std::int64_t hwm = 0;       // its high-water mark then
  std::int64_t lease_ms = 0;  // its lease_timeout: it may issue until ts + lease_ms
  // Written by its owner's clean stop, when the move back to notuse did
  // not go through at once (another move came first): it has stopped
  // issuing, ts is its last stamp and lease_ms 0, and the reaper may return
  // it at its next pass without waiting for reclaim_after (RecyclePool::
  // release). Older daemons ignore the key and reclaim it when stale.
  bool released = false;
  // The last instant this owner can have used: the floor for whoever next
  // takes its worker ID.
  std::int64_t last_possible_ms() const;
  bool operator==(const InuseData&) const = default;
};

struct NotuseData {
  std::int64_t floor = 0;  // the last instant an earlier owner may have used
  bool operator==(const NotuseData&) const = default;
};

struct SequentialData {
  std::string host;
  std::uint32_t port = 0;
  // Nodes written before 0.2 lack the last three (owner nullopt, 0, 0).
  std::optional<OwnerToken> owner{};  // the run that wrote it last
  std::int64_t floor = 0;             // the floor that run started above
  std::int64_t ts = 0;
  std::int64_t hwm = 0;
  std::int64_t lease_ms = 0;
  // ZooKeeper's time until which an earlier owner, superseded while its
  // lease ran, may still issue (its last write's mtime + its lease); 0 none.
  // Carried on by every later write; `pool floor` waits for it to pass.
  std::int64_t superseded_until = 0;
  // The last instant the writer can have used; `assumed_lease_ms` stands in
  // for the lease of a node written before 0.2 (no owner). A release writes
  // lease_ms 0: its writer issues nothing after ts.
  std::int64_t last_possible_ms(std::int64_t assumed_lease_ms) const;
  bool operator==(const SequentialData&) const = default;
};

// The worker ID a pool node's name spells ("17"); nullopt for any other name.
std::optional<std::uint32_t> worker_id_of_node(std::string_view name);

std::string encode(const OwnerToken& o);
std::string encode(const InuseData& d);
std::string encode(const NotuseData& d);
std::string encode(const SequentialData& d);
// nullopt: not the expected JSON.
std::optional<OwnerToken> decode_owner(std::string_view text);
std::optional<InuseData> decode_inuse(std::string_view text);
std::optional<NotuseData> decode_notuse(std::string_view text);
std::optional<SequentialData> decode_sequential(std::string_view text);

// Does a forever/ node hold what Meituan Leaf's SnowflakeZookeeperHolder
// writes ({"ip", "port", "timestamp"}), rather than ours ({"host", "ts", ...})?
bool is_leaf_node_data(std::string_view text);

}  // namespace snowflake::coord
