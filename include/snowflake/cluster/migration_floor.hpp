#pragma once
// The cluster's migration floor: no daemon of the cluster issues an ID at or
// below `above_id` (the largest ID in the tables of the system it replaces).
// The cluster root records it beside the layout, strategy and datacenter:
//
//   <root>  {..., "floor": {"above_id": "<N>", "ms": <Unix ms>}}
//
// `ms` is the start of N's time unit in the cluster's layout: IDs are issued
// only in later units, so every one is above N. It only ever rises.
//
// A daemon reads it with a watch, so a raised floor reaches daemons that
// serve at that moment at once, not at their next heartbeat; each confirms
// it once its generator can no longer go below it, with an ephemeral node of
// its session:
//
//   <root>/floor_acks/<session id, hex>  {"floor_ms": F, "worker_id": W}
//
// `snowflaked pool floor` raises the floor and then waits for the
// confirmation of every owner that may still issue
// (migration/raise_floor.hpp).
// Every write that grants a lease (a claim, a takeover, a heartbeat) is
// followed by a read of the root on the same session before the lease is
// used: ZooKeeper orders a client's reads after its own writes, so either
// that read sees the floor, or the write came first and the command, which
// looks at owners after its own write, sees the owner and waits for it. A
// heartbeat needs it too: one that re-creates an alive node after the
// command found none (and counted that owner's lease as run out) renews a
// lease the command no longer waits for.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "snowflake/config/coordinator_type.hpp"
#include "snowflake/ids/layout.hpp"
#include "snowflake/zk/coord_error.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::coord {

struct MigrationFloor {
  std::uint64_t above_id = 0;
  std::int64_t ms = 0;  // no ID in this time unit or an earlier one
  bool operator==(const MigrationFloor&) const = default;
};

// The floor for IDs above `id` in `layout`.
MigrationFloor floor_above(const IdLayout& layout, std::uint64_t id);
// The floor a root's data records, if any (unreadable: none).
std::optional<MigrationFloor> recorded_floor(std::string_view root_data);
// The root's data with `floor` recorded, every other field kept.
std::string with_floor(std::string_view root_data, const MigrationFloor& floor);

// This session's confirmation that its generator honours `floor_ms`.
Result<void, CoordError> confirm_floor(ZkSession& zk, const std::string& root,
                                       std::int64_t floor_ms, std::uint32_t worker_id);

}  // namespace snowflake::coord
