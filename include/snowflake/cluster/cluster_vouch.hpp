#pragma once
// `snowflaked cluster create`'s word that a cluster is new, and how far it
// reaches (docs/design.md, "A new cluster's first start"). Two more fields
// of the root's data:
//
//   <root>  {..., "made_in_session": "0x<16 hex digits>",
//                 "vouched": {"sessions": ["0x<16 hex digits>", ...], "at_ms": T}}
//
// The restore grace (coordinator.restore_grace_ms) holds what a new
// ZooKeeper connection grants, so that a restored ZooKeeper's fence lands
// before anything taken from its old records is used. A new cluster has no
// old records, but its root looks like a restored one: the data cannot
// tell, and a backup keeps any mark written in it. What a restore cannot
// keep is a server's run: each server numbers its own clients' sessions
// from the moment its session tracker started (at every start, and every
// new following of a leader, as after a resync): bits 16-55 of a session
// ID are that moment's millisecond clock, bits 56-63 the server's ID, bits
// 0-15 a count (SessionTrackerImpl.initializeNextSessionId, ZooKeeper 3.4
// to 3.9). So `cluster create` opens a session on every server it reaches
// before it makes the root, or lifts the new_cluster fence of a root a
// daemon made (`made_in_session`) in a run it has a session of, and records
// them: each of those servers has shown, in that run, one history in which
// everything under the root is younger than the run. A daemon's session of
// one of those runs, on its first connection, within kVouchLasts of the
// vouch, claims without the grace. Any restart or resync of its server (a
// restore does one) ends the vouch's reach there: the grace again.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace snowflake::coord {

struct ClusterVouch {
  std::vector<std::int64_t> sessions;  // cluster create's, one or more per server
  std::int64_t at_ms = 0;              // its wall clock when it vouched (Unix ms)
};

// How long a vouch spares the grace: a first install's daemons start within
// it; a restore of a copy taken after the vouch would also need a restarted
// ZooKeeper whose tracker started in the same millisecond of its clock (a
// host rebooted: the clock counts from boot), inside it.
inline constexpr std::chrono::milliseconds kVouchLasts{std::chrono::minutes(10)};

// Whether two sessions were numbered by one run of ZooKeeper's session
// tracker (false for 0: none).
bool same_zookeeper_run(std::int64_t a, std::int64_t b) noexcept;

std::optional<ClusterVouch> recorded_vouch(std::string_view root_data);
std::string with_vouch(std::string_view root_data, const ClusterVouch& vouch);
std::optional<std::int64_t> recorded_maker_session(std::string_view root_data);
std::string with_maker_session(std::string_view root_data, std::int64_t session);

// Whether `session` is of the run of one of `vouch`'s sessions.
bool vouch_covers_run(const ClusterVouch& vouch, std::int64_t session) noexcept;
// Whether `vouch` spares a claim over `session` the grace at wall time
// `now_ms`.
bool vouch_reaches(const std::optional<ClusterVouch>& vouch, std::int64_t session,
                   std::int64_t now_ms) noexcept;

}  // namespace snowflake::coord
