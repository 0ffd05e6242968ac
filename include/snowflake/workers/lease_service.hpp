#pragma once
// The daemon's side of worker-ID leases for other processes (lease_pool.hpp):
// a thread of its own that takes, renews and gives back over the
// coordinator's ZooKeeper session, so that no event loop waits on
// ZooKeeper. A request is a LeaseCall: the HTTP connection that asked waits
// on its event loop (http/answer.hpp's Wait) and is woken once the outcome
// is in.
//
// Nothing is granted or renewed while this daemon may not issue IDs itself
// (its own lease over, its clock held, the cluster's history in doubt: the
// same refusal /id gives): a daemon cut off from ZooKeeper, or one that a
// wipe or a restore has fenced, must not vouch for anyone's worker ID.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/lease.hpp"
#include "snowflake/cluster/restore_grace.hpp"
#include "snowflake/runtime/lease_calls.hpp"
#include "snowflake/workers/lease_pool.hpp"

namespace snowflake::coord {

// Which named pools a request may lease from (leases.pools and the rest of
// the config's leases section).
struct NamedPoolRules {
  std::map<std::string, int, std::less<>> configured;  // name: worker ID bits
  bool new_pools = true;  // others made on first use, with the bits a take asks
  int new_pool_max_worker_bits = 12;
  std::uint32_t max_pools = 16;  // configured and made, in all
  // The reaper's threshold for a named pool's nodes (coordinator.reclaim_after:
  // at least a lease + margin, as for the cluster's), and how often this
  // daemon reaps them (every daemon that leases does: a reclaim is a
  // conditional move, so two reapers cost a failed write, never a double).
  std::chrono::milliseconds reclaim_after{30'000};
  std::chrono::milliseconds reap_every{10'000};
};

struct LeaseServiceOptions {
  // The cluster's pool: its root, the cluster's layout, the margin, the reserve.
  LeasePoolSettings pool;
  NamedPoolRules named;
  // A named pool's size and worker IDs held, after each reaping pass of it.
  std::function<void(const std::string& pool, std::uint32_t size, std::uint32_t in_use)> pool_seen;
  // The coordinator's session (nullptr while it has none).
  std::function<std::shared_ptr<ZkSession>()> session;
  const Lease* own_lease = nullptr;  // ours: nothing is vouched for while it is not valid
  const Clock* clock = &SystemClock::instance();
  // How far ahead of our clock a free worker ID's floor may be and still be
  // handed out (coordinator.max_boot_wait): the holder waits it out.
  std::chrono::milliseconds max_wait{5'000};
  // coordinator.restore_grace_ms: a take over a connection younger than it
  // waits until it is that old (restore_grace.hpp), so that a restored
  // ZooKeeper's fence is in before the first timestamp is read.
  std::chrono::milliseconds restore_grace{0};
};

class LeaseService {
 public:
  explicit LeaseService(LeaseServiceOptions options);
  ~LeaseService();
  LeaseService(const LeaseService&) = delete;
  LeaseService& operator=(const LeaseService&) = delete;

  // Any thread (a LeaseDesk). The call finishes on the service's thread (or
  // at once, unavailable, once stopped).
  std::shared_ptr<LeaseCall> submit(LeaseRequest request);
  // Finishes what is queued, then the thread ends. Idempotent.
  void stop();

 private:
  void run();
  // One call answered (a take whose asker gave up, refused unserved).
  void answer(LeaseCall& call);
  // Every call queued now answered, if the session is still `reaping`'s:
  // the reaping pass's pause between two batches of reads. False: stopping
  // (the pass ends).
  bool answer_queued(const ZkSession& reaping);
  // Neither stopping nor barred from issuing: a reaping pass goes on.
  bool may_go_on();
  Result<LeaseTerms, CoordError> serve(const LeaseRequest& request);
  // A take is not served over a ZooKeeper connection younger than the
  // restore grace (restore_grace.hpp): refused before any write as far as
  // the connection events delivered so far tell, and, its reads sent at
  // `read_at`, given back after them if they came over such a connection
  // after all (a reconnect while they were out). Both refusals: "ask again".
  Result<void, CoordError> refuse_in_grace(ZkSession& zk);
  Result<void, CoordError> read_in_grace(ZkSession& zk, BootClock::time_point read_at);
  // The pool a request names: the cluster's; a named one known, recorded in
  // ZooKeeper, or made now (no_pool when it may not be; layout_mismatch when
  // it exists with other bits than asked or configured).
  Result<LeasePool*, CoordError> pool_for(ZkSession& zk, const LeaseRequest& request);
  // A named pool's worker ID bits as ZooKeeper records them, the record
  // made first by a take where the rules allow.
  Result<int, CoordError> recorded_or_made(ZkSession& zk, const LeaseRequest& request) const;
  // A CosId machine's request (LeaseRequest::instance): its lease found by
  // its instance's entry, <pool>/instances/<digest> (its worker ID), kept
  // with each take and give-back.
  Result<LeaseTerms, CoordError> serve_machine(ZkSession& zk, LeasePool& leases,
                                               const LeaseRequest& request,
                                               BootClock::time_point read_at);
  // The instance's entry written: made, or set at the version it was read
  // at (`read_at`); zookeeper (ask again) if another request wrote it since.
  static Result<void, CoordError> write_machine_index(ZkSession& zk, const std::string& index,
                                                      std::uint32_t worker_id,
                                                      std::optional<std::int32_t> read_at);
  // Instances' entries whose lease is over (reclaimed, or held by another
  // now) removed, a few each pass.
  void sweep_machines(ZkSession& zk, const std::string& pool_root, RecyclePool& pool);
  // Every named pool in ZooKeeper reaped once: a holder gone silent gives
  // its worker ID back, as a dead daemon's does.
  void reap_named(ZkSession& zk);
  // The session to work in, or an error; a new one forgets what the last
  // one's writes taught.
  Result<std::shared_ptr<ZkSession>, CoordError> current_session();

  LeaseServiceOptions options_;
  LeasePool leases_;
  RestoreGrace grace_;  // the lease thread's
  struct NamedPool {
    int worker_bits = 0;
    LeasePool leases;
    bool ensured = false;  // its nodes made (in this session)
  };
  std::map<std::string, NamedPool, std::less<>> named_;
  // By pool, where sweep_machines goes on (bounded: one per named pool).
  std::map<std::string, std::size_t, std::less<>> sweep_cursors_;
  // The session leases_'s memory was written in; weak, so that an expired
  // one is not kept open.
  std::weak_ptr<ZkSession> session_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<LeaseCall>> queue_;
  // The lease thread's own: a reaping pass is under way (a call answered
  // between its batches may not drop the pools it reads).
  bool reaping_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace snowflake::coord
