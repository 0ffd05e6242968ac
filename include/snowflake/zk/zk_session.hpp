#pragma once
// One ZooKeeper session over the C client (zookeeper_mt), as RAII.
//
// Errors are values. They split into answers ("no such node", "bad
// version": the session is fine, the caller decides) and the session being
// gone (expired, auth failed): then this object is dead for good and the
// owner replaces it with a new one — it is never repaired. Connection loss
// is neither: the client reconnects by itself within the session timeout,
// but a write that met it may or may not have happened, so callers resolve
// it by reading (never by blindly retrying a write).
//
// The C client calls back on its own thread; the callback only records the
// session state for our threads to read.
//
// A session that cannot reconnect for longer than its timeout counts as
// gone, as Curator counts it: by then ZooKeeper has ended it if it was up,
// and a server whose history is behind what the session saw (restored from
// an older copy, or wiped) refuses it forever ("client must try another
// server"), which the C client answers by trying again, forever, in
// CONNECTING. Every answer's zxid is kept: the highest one this session saw.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/result.hpp"

// The C client's own names (<zookeeper/zookeeper.h>), declared without its header.
typedef struct _zhandle zhandle_t;  // NOLINT(bugprone-reserved-identifier)

namespace snowflake::coord {

enum class ZkErrc {
  no_node,            // ZNONODE
  node_exists,        // ZNODEEXISTS
  bad_version,        // ZBADVERSION
  not_empty,          // ZNOTEMPTY
  no_auth,            // ZNOAUTH: our identity may not do that
  connection_loss,    // ZCONNECTIONLOSS: outcome of a write unknown
  operation_timeout,  // ZOPERATIONTIMEOUT
  session_expired,    // ZSESSIONEXPIRED (or any call on an expired handle)
  auth_failed,        // ZAUTHFAILED
  connect_timeout,    // no session established within the deadline
  other,
};

std::string_view to_string(ZkErrc code) noexcept;

struct ZkError {
  ZkErrc code;
  int raw = 0;       // the C client's code
  std::string path;  // the node involved, if any

  // The session is unusable; make a new one.
  bool session_gone() const noexcept {
    return code == ZkErrc::session_expired || code == ZkErrc::auth_failed;
  }
  // A write may or may not have been applied: the reply was lost.
  bool outcome_unknown() const noexcept {
    return code == ZkErrc::connection_loss || code == ZkErrc::operation_timeout;
  }
  std::string message() const;
};

struct ZkSettings {
  std::string hosts{};  // "host:port,host:port"
  std::chrono::milliseconds session_timeout{10'000};
  std::chrono::milliseconds connect_timeout{10'000};
  // "user:password" for digest auth: nodes we create are then readable by
  // anyone and writable only by this identity.
  std::optional<std::string> digest_auth{};
};

struct NodeStat {
  std::int32_t version = 0;
  std::int64_t mtime_ms = 0;  // ZooKeeper's clock, at the last write
  std::int64_t ctime_ms = 0;
  std::int64_t mzxid = 0;
  std::int64_t czxid = 0;            // the create: tells apart two nodes that had the same path
  std::int64_t ephemeral_owner = 0;  // the session holding an ephemeral node; 0 for others
  std::int32_t data_length = 0;
  std::int32_t num_children = 0;
  // Changes to the children: the number a sequential child created now gets.
  std::int32_t cversion = 0;
};

struct NodeData {
  std::string data;
  NodeStat stat;
};

// ephemeral_sequential: bound to the session, named with a sequence number
// ZooKeeper gives (an election's candidate: candidate_line.hpp).
enum class CreateMode { persistent, persistent_sequential, ephemeral, ephemeral_sequential };

// One operation of an all-or-nothing multi().
struct ZkOp {
  enum class Kind { create, remove, set, check };
  Kind kind;
  std::string path;
  std::string data{};      // create, set
  int version = -1;        // remove, set, check; -1: any version
  bool ephemeral = false;  // create

  static ZkOp create(std::string path, std::string data) {
    return {Kind::create, std::move(path), std::move(data), -1};
  }
  // Bound to this session: ZooKeeper deletes it when the session ends.
  static ZkOp create_ephemeral(std::string path, std::string data) {
    return {Kind::create, std::move(path), std::move(data), -1, true};
  }
  static ZkOp remove(std::string path, int version) {
    return {Kind::remove, std::move(path), {}, version};
  }
  static ZkOp set(std::string path, std::string data, int version) {
    return {Kind::set, std::move(path), std::move(data), version};
  }
  static ZkOp check(std::string path, int version) {
    return {Kind::check, std::move(path), {}, version};
  }
};

class ZkSession {
 public:
  // Connects, waiting up to connect_timeout for the session; authenticates.
  static Result<std::unique_ptr<ZkSession>, ZkError> connect(const ZkSettings& settings);
  // Starts connecting and returns at once; `on_connected` is called (on the
  // client's thread: it may only hand the event on) when the session is up.
  // complete() then waits for it and authenticates.
  static Result<std::unique_ptr<ZkSession>, ZkError> start(const ZkSettings& settings,
                                                           std::function<void()> on_connected = {});
  Result<void, ZkError> complete(const ZkSettings& settings);
  ~ZkSession();
  ZkSession(const ZkSession&) = delete;
  ZkSession& operator=(const ZkSession&) = delete;

  // Expired or auth failed, or disconnected for longer than the session's
  // timeout: replace the session.
  bool gone() const noexcept;
  // Connected right now (the client reconnects by itself after a loss).
  bool connected() const noexcept;
  // How long the session has been trying to reconnect; 0 while connected.
  std::chrono::milliseconds disconnected_for() const noexcept;
  // When the connection now up (or the last one) was made, on the steady
  // clock, as far as the session's events have been delivered. A restore or
  // a wipe restarts every ZooKeeper server, so whatever a daemon is granted
  // from restored records comes over a connection made after it
  // (coordinator.restore_grace_ms).
  BootClock::time_point connected_since() const noexcept;
  // connected_since() of the connection that answered every call made
  // before this one: a round trip through the client's event queue first
  // (the answer of a synchronous call is delivered on the client's I/O
  // thread, and may come over a new connection whose event the completion
  // thread has not delivered yet). nullopt: no answer.
  std::optional<BootClock::time_point> connection_answering_since();
  // Whether the connection up is the session's first (as far as its events
  // have been delivered: after connection_answering_since()). A session
  // that has reconnected may be in a ZooKeeper restarted since it was made.
  bool on_first_connection() const noexcept;

  // Returns the path created (with the sequence suffix, if any).
  Result<std::string, ZkError> create(const std::string& path, std::string_view data,
                                      CreateMode mode = CreateMode::persistent);
  // watch: also leave a one-shot watch on the node: its next change, or its
  // deletion, calls the node watcher (set_node_watcher).
  Result<NodeData, ZkError> get(const std::string& path, bool watch = false);
  // Called, on the C client's event thread, with the path of a watched node
  // that changed: it must only hand the event on (set a flag, notify). Set it
  // before the first watching get. Replaces every watcher added before.
  void set_node_watcher(std::function<void(const std::string& path)> watcher);
  // One more watcher beside the others (a session shared by the coordinator
  // and the sequences: each is told of every event and picks its own
  // paths). Its id, for remove_node_watcher, after which it is never called.
  int add_node_watcher(std::function<void(const std::string& path)> watcher);
  void remove_node_watcher(int id);
  // Watch events delivered so far, on any path; wait_for_node_event waits
  // until there are more than `seen`, or `timeout` has passed (a thread
  // that has no watcher of its own waits for the watch it left).
  std::uint64_t node_events() const;
  void wait_for_node_event(std::uint64_t seen, std::chrono::milliseconds timeout);
  // get() where a missing node is an answer (nullopt), not an error. A
  // watch is left only on a node that exists.
  Result<std::optional<NodeData>, ZkError> try_get(const std::string& path, bool watch = false);
  // watch: also leave a one-shot watch, whether the node exists or not: its
  // creation, change or deletion calls the node watcher with this path.
  Result<std::optional<NodeStat>, ZkError> exists(const std::string& path, bool watch = false);
  // version -1: any version.
  Result<NodeStat, ZkError> set(const std::string& path, std::string_view data, int version);
  Result<void, ZkError> remove(const std::string& path, int version);
  // watch: also leave a one-shot watch on the children: the next child
  // created or deleted (or the node's deletion) calls the node watcher with
  // this path.
  Result<std::vector<std::string>, ZkError> children(const std::string& path, bool watch = false);
  // children() where a missing node is an answer (nullopt); no watch is left then.
  Result<std::optional<std::vector<std::string>>, ZkError> try_children(const std::string& path,
                                                                        bool watch = false);
  // All operations or none (persistent creates). The error names the path of
  // the operation that failed. On success, one stat per operation (set
  // operations' new stats, whose mzxid is the transaction's; zeros for the
  // others).
  Result<std::vector<NodeStat>, ZkError> multi(const std::vector<ZkOp>& ops);
  // Creates `path` and any missing parents (persistent, empty); an existing
  // node is fine.
  Result<void, ZkError> ensure_path(const std::string& path);
  // Brings the server this session reads from up to date with the leader
  // (zoo_async): a new session may be served by a follower that lags, and
  // its reads may then show what this daemon's earlier session already saw
  // overwritten.
  Result<void, ZkError> sync(const std::string& path);
  // The highest zxid of every answer this session had: the newest of
  // ZooKeeper's history it has seen. 0: none yet.
  std::int64_t highest_zxid() const noexcept {
    return highest_zxid_.load(std::memory_order_relaxed);
  }
  // The requests this session has sent: one per create, get (two for data
  // over 64 KiB), exists, set, remove, children, multi and sync, answered or
  // not; the client's own pings and its authentication are not counted. Any thread may read it
  // (tests count what a daemon asks of ZooKeeper with it).
  std::uint64_t requests_sent() const noexcept {
    return requests_sent_.load(std::memory_order_relaxed);
  }

  // ZooKeeper's clock now (staleness is judged in ZooKeeper's time, never by
  // comparing two machines' wall clocks): the mtime the server stamps on an
  // empty write of `path`, an existing node that only serves as a clock.
  Result<std::int64_t, ZkError> time_of_write(const std::string& path);
  // The same for a reader that may write nothing of the cluster's: the ctime
  // of an ephemeral node made at `prefix` + a unique suffix and deleted at
  // once. nullopt if this client may not create one (no_auth).
  Result<std::optional<std::int64_t>, ZkError> time_of_probe(const std::string& prefix);

  // The session's id and password, which let a test open a second handle on
  // the same session (and so expire it).
  std::pair<std::int64_t, std::string> client_id() const;
  // The session's id: the ephemeral_owner of the nodes it creates.
  std::int64_t session_id() const;
  std::chrono::milliseconds negotiated_timeout() const;

 private:
  ZkSession() = default;
  static void on_event(zhandle_t* zh, int type, int state, const char* path, void* context);
  ZkError error(int rc, const std::string& path) const;
  // Counted, and logged at level trace: what a daemon asks of ZooKeeper, one
  // line per request (how a start's cost was broken down).
  void count_request(const char* op, const std::string& path);
  // A stat of an answer, its zxids kept.
  template <class CStat>
  NodeStat seen(const CStat& s) noexcept;

  zhandle_t* handle_ = nullptr;
  bool with_auth_ = false;
  std::atomic<int> state_{0};  // the C client's last session state
  // Since when it has been trying to reconnect; the clock's epoch: connected.
  std::atomic<BootClock::time_point> disconnected_since_{};
  std::atomic<BootClock::time_point> connected_since_{};
  std::atomic<int> connections_{0};          // connections made, the first included
  std::atomic<std::int64_t> timeout_ms_{0};  // negotiated, once connected
  std::atomic<std::int64_t> highest_zxid_{0};
  std::atomic<std::uint64_t> requests_sent_{0};
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  // Under mutex_: the watchers by id, and the events delivered.
  std::vector<std::pair<int, std::function<void(const std::string&)>>> node_watchers_;
  int next_watcher_id_ = 1;
  std::uint64_t node_events_ = 0;
  std::function<void()> on_connected_;  // under mutex_
};

// A session that has tried to reconnect for longer than this (a quarter of
// its timeout, 200 ms to 2 s: long enough for a server restart or a leader
// election) may be refused for good: fresh_if_refused looks.
std::chrono::milliseconds refusal_probe_after(std::chrono::milliseconds session_timeout);

// While a session has tried to reconnect for longer than
// refusal_probe_after, a fresh one is started beside it. If the fresh one
// comes up first, ZooKeeper ended ours, or refuses it because its history is
// behind what ours saw (a restore, a wipe), which the C client would retry
// forever: the fresh one takes over. `wake` (called on the client's thread)
// is told when it is up, so that a daemon cut off by a restore notices
// within round trips of ZooKeeper's return, not at its next retry.
class RefusedSessionWatch {
 public:
  RefusedSessionWatch(ZkSettings settings, std::function<void()> wake);
  // The fresh session, once up and authenticated; nullptr while `current`
  // is connected or has not tried for long, or no fresh one is up yet.
  std::unique_ptr<ZkSession> replacement(const ZkSession& current);

 private:
  ZkSettings settings_;
  std::function<void()> wake_;
  std::unique_ptr<ZkSession> standby_;
};

}  // namespace snowflake::coord
