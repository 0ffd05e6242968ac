#include "snowflake/zk/zk_session.hpp"
#include "snowflake/base/clock.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>

#include "snowflake/runtime/coordination_gauges.hpp"

namespace snowflake::coord {

namespace {

constexpr int kSmallBuffer = 64 * 1024;
constexpr int kMaxNodeSize = 1024 * 1024;  // ZooKeeper's default jute.maxbuffer

ZkErrc classify(int rc) {
  switch (rc) {
    case ZNONODE:
      return ZkErrc::no_node;
    case ZNODEEXISTS:
      return ZkErrc::node_exists;
    case ZBADVERSION:
      return ZkErrc::bad_version;
    case ZNOTEMPTY:
      return ZkErrc::not_empty;
    case ZNOAUTH:
      return ZkErrc::no_auth;
    case ZCONNECTIONLOSS:
      return ZkErrc::connection_loss;
    case ZOPERATIONTIMEOUT:
      return ZkErrc::operation_timeout;
    case ZSESSIONEXPIRED:
      return ZkErrc::session_expired;
    case ZAUTHFAILED:
      return ZkErrc::auth_failed;
    default:
      return ZkErrc::other;
  }
}

NodeStat to_stat(const Stat& s) {
  return {.version = s.version,
          .mtime_ms = s.mtime,
          .ctime_ms = s.ctime,
          .mzxid = s.mzxid,
          .czxid = s.czxid,
          .ephemeral_owner = s.ephemeralOwner,
          .data_length = s.dataLength,
          .num_children = s.numChildren,
          .cversion = s.cversion};
}

// World may read; only the identity that created a node may change it.
ACL kReadAllWriteCreator[] = {{ZOO_PERM_READ, ZOO_ANYONE_ID_UNSAFE}, {ZOO_PERM_ALL, ZOO_AUTH_IDS}};
ACL_vector kReadAllWriteCreatorAcl = {2, kReadAllWriteCreator};

// The C client's own lines ("connection refused", retries) repeat during an
// outage that our warnings already report once per attempt: keep them at
// debug level, in our log format.
void log_client_message(const char* message) {
  std::string_view text(message);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  spdlog::debug("zookeeper client: {}", text);
}

// Also builds spdlog's registry here, before any client thread exists: the
// registry is a function-local static inside the uninstrumented libspdlog, so
// two client threads logging first would build it with no happens-before that
// ThreadSanitizer can see (a report in the "concurrent first boots" tests).
void quiet_client_logging() {
  static std::once_flag once;
  std::call_once(once, [] {
    (void)spdlog::default_logger_raw();
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
  });
}

}  // namespace

std::string_view to_string(ZkErrc code) noexcept {
  switch (code) {
    case ZkErrc::no_node:
      return "no_node";
    case ZkErrc::node_exists:
      return "node_exists";
    case ZkErrc::bad_version:
      return "bad_version";
    case ZkErrc::not_empty:
      return "not_empty";
    case ZkErrc::no_auth:
      return "no_auth";
    case ZkErrc::connection_loss:
      return "connection_loss";
    case ZkErrc::operation_timeout:
      return "operation_timeout";
    case ZkErrc::session_expired:
      return "session_expired";
    case ZkErrc::auth_failed:
      return "auth_failed";
    case ZkErrc::connect_timeout:
      return "connect_timeout";
    case ZkErrc::other:
      return "other";
  }
  return "other";
}

std::string ZkError::message() const {
  return fmt::format("ZooKeeper {}{}{} ({})", to_string(code), path.empty() ? "" : " at ", path,
                     raw ? zerror(raw) : "no session");
}

template <class CStat>
NodeStat ZkSession::seen(const CStat& s) noexcept {
  const NodeStat stat = to_stat(s);
  const std::int64_t newest = std::max(stat.mzxid, stat.czxid);
  std::int64_t known = highest_zxid_.load(std::memory_order_relaxed);
  while (newest > known &&
         !highest_zxid_.compare_exchange_weak(known, newest, std::memory_order_relaxed)) {
  }
  return stat;
}

void ZkSession::on_event(zhandle_t*, int type, int state, const char* path, void* context) {
  auto* self = static_cast<ZkSession*>(context);
  if (type != ZOO_SESSION_EVENT) {  // a watched node changed
    {
      std::lock_guard lock(self->mutex_);
      ++self->node_events_;
      if (path) {
        for (const auto& [id, watcher] : self->node_watchers_) watcher(path);
      }
    }
    self->changed_.notify_all();
    return;
  }
  std::function<void()> up;
  {
    std::lock_guard lock(self->mutex_);
    // The connection's time before its state: whoever sees it connected
    // sees this connection's time.
    if (state == ZOO_CONNECTED_STATE && self->state_.load() != ZOO_CONNECTED_STATE) {
      self->connected_since_.store(BootClock::now(), std::memory_order_release);
      self->connections_.fetch_add(1, std::memory_order_release);
    }
    const int before = self->state_.exchange(state);
    if (state == ZOO_CONNECTED_STATE) {
      self->disconnected_since_.store({}, std::memory_order_relaxed);
      up = self->on_connected_;
    } else if (before == ZOO_CONNECTED_STATE) {
      self->disconnected_since_.store(BootClock::now(), std::memory_order_relaxed);
    }
  }
  self->changed_.notify_all();
  if (up) up();
}

Result<std::unique_ptr<ZkSession>, ZkError> ZkSession::connect(const ZkSettings& settings) {
  BOOST_OUTCOME_TRY(s, start(settings));
  BOOST_OUTCOME_TRYV(s->complete(settings));
  return std::move(s);
}

Result<std::unique_ptr<ZkSession>, ZkError> ZkSession::start(const ZkSettings& settings,
                                                             std::function<void()> on_connected) {
  quiet_client_logging();
  std::unique_ptr<ZkSession> s(new ZkSession());
  s->on_connected_ = std::move(on_connected);  // before the client's thread can call
  s->handle_ = zookeeper_init2(settings.hosts.c_str(), &ZkSession::on_event,
                               static_cast<int>(settings.session_timeout.count()), nullptr, s.get(),
                               0, &log_client_message);
  if (!s->handle_) return ZkError{ZkErrc::other, ZSYSTEMERROR, settings.hosts};
  return s;
}

Result<void, ZkError> ZkSession::complete(const ZkSettings& settings) {
  ZkSession* s = this;
  {
    std::unique_lock lock(s->mutex_);
    const bool up = s->changed_.wait_for(lock, settings.connect_timeout, [&] {
      const int st = s->state_.load();
      return st == ZOO_CONNECTED_STATE || st == ZOO_EXPIRED_SESSION_STATE ||
             st == ZOO_AUTH_FAILED_STATE;
    });
    if (!up || s->state_.load() != ZOO_CONNECTED_STATE) {
      return ZkError{ZkErrc::connect_timeout, 0, settings.hosts};
    }
  }
  s->timeout_ms_.store(zoo_recv_timeout(s->handle_), std::memory_order_relaxed);
  if (settings.digest_auth && !s->with_auth_) {
    s->with_auth_ = true;
    struct AuthWait {
      std::mutex m;
      std::condition_variable cv;
      std::optional<int> rc;
    } wait;
    const auto& cert = *settings.digest_auth;
    const int rc = zoo_add_auth(
        s->handle_, "digest", cert.data(), static_cast<int>(cert.size()),
        [](int result, const void* data) {
          auto* w = static_cast<AuthWait*>(const_cast<void*>(data));
          // Notify under the lock: once the waiter sees rc it
          // returns and destroys `wait`, the cv included.
          std::lock_guard lock(w->m);
          w->rc = result;
          w->cv.notify_all();
        },
        &wait);
    if (rc != ZOK) return s->error(rc, "");
    std::unique_lock lock(wait.m);
    if (!wait.cv.wait_for(lock, settings.connect_timeout, [&] { return wait.rc.has_value(); })) {
      // Close now, while `wait` lives: closing completes the pending call.
      lock.unlock();
      zookeeper_close(s->handle_);
      s->handle_ = nullptr;
      return ZkError{ZkErrc::connect_timeout, 0, "auth"};
    }
    if (*wait.rc != ZOK) return s->error(*wait.rc, "");
  }
  return outcome::success();
}

ZkSession::~ZkSession() {
  if (handle_) zookeeper_close(handle_);
}

bool ZkSession::gone() const noexcept {
  const int st = state_.load();
  if (st == ZOO_EXPIRED_SESSION_STATE || st == ZOO_AUTH_FAILED_STATE) return true;
  const std::int64_t timeout = timeout_ms_.load(std::memory_order_relaxed);
  return timeout > 0 && disconnected_for().count() > timeout;
}

std::chrono::milliseconds ZkSession::disconnected_for() const noexcept {
  const auto since = disconnected_since_.load(std::memory_order_relaxed);
  if (since == BootClock::time_point{}) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(BootClock::now() - since);
}

BootClock::time_point ZkSession::connected_since() const noexcept {
  return connected_since_.load(std::memory_order_acquire);
}

std::optional<BootClock::time_point> ZkSession::connection_answering_since() {
  // A sync's completion is delivered on the completion thread, after every
  // session event queued before it.
  if (!sync("/")) return std::nullopt;
  return connected_since();
}

bool ZkSession::connected() const noexcept { return state_.load() == ZOO_CONNECTED_STATE; }

bool ZkSession::on_first_connection() const noexcept {
  return connections_.load(std::memory_order_acquire) == 1;
}

void ZkSession::count_request(const char* op, const std::string& path) {
  requests_sent_.fetch_add(1, std::memory_order_relaxed);
  zookeeper_requests_sent.fetch_add(1, std::memory_order_relaxed);
  if (spdlog::should_log(spdlog::level::trace)) {
    spdlog::trace("zookeeper request of session {:x}: {} {}", session_id(), op, path);
  }
}

ZkError ZkSession::error(int rc, const std::string& path) const {
  ZkErrc code = classify(rc);
  // A dead handle answers "invalid state"; say what it means.
  if (rc == ZINVALIDSTATE && gone()) {
    code = state_.load() == ZOO_AUTH_FAILED_STATE ? ZkErrc::auth_failed : ZkErrc::session_expired;
  }
  return ZkError{code, rc, path};
}

Result<std::string, ZkError> ZkSession::create(const std::string& path, std::string_view data,
                                               CreateMode mode) {
  const int flags = mode == CreateMode::persistent_sequential  ? ZOO_SEQUENCE
                    : mode == CreateMode::ephemeral            ? ZOO_EPHEMERAL
                    : mode == CreateMode::ephemeral_sequential ? ZOO_EPHEMERAL | ZOO_SEQUENCE
                                                               : 0;
  std::vector<char> created(path.size() + 32);
  Stat stat{};
  count_request("create", path);
  const int rc = zoo_create2(handle_, path.c_str(), data.data(), static_cast<int>(data.size()),
                             with_auth_ ? &kReadAllWriteCreatorAcl : &ZOO_OPEN_ACL_UNSAFE, flags,
                             created.data(), static_cast<int>(created.size()), &stat);
  if (rc != ZOK) return error(rc, path);
  (void)seen(stat);
  return std::string(created.data());
}

void ZkSession::set_node_watcher(std::function<void(const std::string& path)> watcher) {
  std::lock_guard lock(mutex_);
  node_watchers_.clear();
  node_watchers_.emplace_back(next_watcher_id_++, std::move(watcher));
}

int ZkSession::add_node_watcher(std::function<void(const std::string& path)> watcher) {
  std::lock_guard lock(mutex_);
  node_watchers_.emplace_back(next_watcher_id_, std::move(watcher));
  return next_watcher_id_++;
}

void ZkSession::remove_node_watcher(int id) {
  std::lock_guard lock(mutex_);
  std::erase_if(node_watchers_, [id](const auto& w) { return w.first == id; });
}

std::uint64_t ZkSession::node_events() const {
  std::lock_guard lock(mutex_);
  return node_events_;
}

void ZkSession::wait_for_node_event(std::uint64_t seen, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return node_events_ > seen; });
}

Result<NodeData, ZkError> ZkSession::get(const std::string& path, bool watch) {
  for (int size : {kSmallBuffer, kMaxNodeSize}) {
    std::string buffer(static_cast<std::size_t>(size), '\0');
    int length = size;
    Stat stat{};
    count_request("get", path);
    const int rc = zoo_get(handle_, path.c_str(), watch ? 1 : 0, buffer.data(), &length, &stat);
    if (rc != ZOK) return error(rc, path);
    if (stat.dataLength <= size) {
      buffer.resize(static_cast<std::size_t>(std::max(length, 0)));
      return NodeData{std::move(buffer), seen(stat)};
    }
  }
  return ZkError{ZkErrc::other, ZMARSHALLINGERROR, path};
}

Result<std::optional<NodeData>, ZkError> ZkSession::try_get(const std::string& path, bool watch) {
  auto node = get(path, watch);
  if (node) return std::optional<NodeData>(std::move(node).value());
  if (node.error().code == ZkErrc::no_node) return std::optional<NodeData>();
  return node.error();
}

Result<std::optional<NodeStat>, ZkError> ZkSession::exists(const std::string& path, bool watch) {
  Stat stat{};
  count_request("exists", path);
  const int rc = zoo_exists(handle_, path.c_str(), watch ? 1 : 0, &stat);
  if (rc == ZNONODE) return std::optional<NodeStat>();
  if (rc != ZOK) return error(rc, path);
  return std::optional<NodeStat>(seen(stat));
}

Result<NodeStat, ZkError> ZkSession::set(const std::string& path, std::string_view data,
                                         int version) {
  Stat stat{};
  count_request("set", path);
  const int rc =
      zoo_set2(handle_, path.c_str(), data.data(), static_cast<int>(data.size()), version, &stat);
  if (rc != ZOK) return error(rc, path);
  return seen(stat);
}

Result<void, ZkError> ZkSession::remove(const std::string& path, int version) {
  count_request("remove", path);
  const int rc = zoo_delete(handle_, path.c_str(), version);
  if (rc != ZOK) return error(rc, path);
  return outcome::success();
}

Result<std::vector<std::string>, ZkError> ZkSession::children(const std::string& path, bool watch) {
  String_vector names{};
  count_request("children", path);
  const int rc = zoo_get_children(handle_, path.c_str(), watch ? 1 : 0, &names);
  if (rc != ZOK) return error(rc, path);
  std::vector<std::string> out(names.data, names.data + names.count);
  deallocate_String_vector(&names);
  return out;
}

Result<std::optional<std::vector<std::string>>, ZkError> ZkSession::try_children(
    const std::string& path, bool watch) {
  auto names = children(path, watch);
  if (names) return std::optional<std::vector<std::string>>(std::move(names).value());
  if (names.error().code == ZkErrc::no_node) return std::optional<std::vector<std::string>>();
  return names.error();
}

Result<std::vector<NodeStat>, ZkError> ZkSession::multi(const std::vector<ZkOp>& ops) {
  if (ops.empty()) return std::vector<NodeStat>();
  const ACL_vector* acl = with_auth_ ? &kReadAllWriteCreatorAcl : &ZOO_OPEN_ACL_UNSAFE;
  std::vector<zoo_op_t> zops(ops.size());
  std::vector<zoo_op_result_t> results(ops.size());
  // Buffers the C client writes into (created paths, stats) must outlive the call.
  std::vector<std::vector<char>> created(ops.size());
  std::vector<Stat> stats(ops.size(), Stat{});
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const ZkOp& op = ops[i];
    switch (op.kind) {
      case ZkOp::Kind::create:
        created[i].resize(op.path.size() + 32);
        zoo_create_op_init(&zops[i], op.path.c_str(), op.data.data(),
                           static_cast<int>(op.data.size()), acl, op.ephemeral ? ZOO_EPHEMERAL : 0,
                           created[i].data(), static_cast<int>(created[i].size()));
        break;
      case ZkOp::Kind::remove:
        zoo_delete_op_init(&zops[i], op.path.c_str(), op.version);
        break;
      case ZkOp::Kind::set:
        zoo_set_op_init(&zops[i], op.path.c_str(), op.data.data(), static_cast<int>(op.data.size()),
                        op.version, &stats[i]);
        break;
      case ZkOp::Kind::check:
        zoo_check_op_init(&zops[i], op.path.c_str(), op.version);
        break;
    }
  }
  // libzookeeper_mt's zoo_amulti (3.8, and upstream since) on a handle that
  // cannot recover (its session expired, its auth failed) lets the first
  // op's path check fail, skips the check of the others, and then frees each
  // later op's uninitialized request path: in practice the first op's, one
  // of our strings, once per further op (a double free). So a dead handle
  // never gets a multi: its answer is known. What remains is the handle
  // dying between this check and the library's, a window of the time the
  // library takes to reach its first check; the session object is replaced,
  // never used again, once it is gone.
  if (const int state = zoo_state(handle_); state < 0) {
    return ZkError{state == ZOO_AUTH_FAILED_STATE ? ZkErrc::auth_failed : ZkErrc::session_expired,
                   ZINVALIDSTATE, ops.front().path};
  }
  count_request("multi", ops.front().path);
  const int rc = zoo_multi(handle_, static_cast<int>(zops.size()), zops.data(), results.data());
  if (rc == ZOK) {
    std::vector<NodeStat> out;
    out.reserve(stats.size());
    for (const Stat& st : stats) out.push_back(seen(st));
    return out;
  }
  // The operation that failed carries the real error; the rest say "rolled back".
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (results[i].err != ZOK && results[i].err != ZRUNTIMEINCONSISTENCY) {
      return error(results[i].err, ops[i].path);
    }
  }
  return error(rc, ops.front().path);
}

Result<void, ZkError> ZkSession::ensure_path(const std::string& path) {
  // The node itself first: where the tree exists (every start but a
  // cluster's first) that is one request, not one per level.
  auto made = create(path, "");
  if (made || made.error().code == ZkErrc::node_exists) return outcome::success();
  if (made.error().code != ZkErrc::no_node) return made.error();
  if (const auto slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
    if (auto parent = ensure_path(path.substr(0, slash)); !parent) return parent.error();
  }
  made = create(path, "");
  if (made || made.error().code == ZkErrc::node_exists) return outcome::success();
  return made.error();
}

Result<void, ZkError> ZkSession::sync(const std::string& path) {
  struct SyncWait {
    std::mutex m;
    std::condition_variable cv;
    std::optional<int> rc;
  };
  // Shared with the completion, which may run after a timed-out wait returned.
  auto wait = std::make_shared<SyncWait>();
  auto* held = new std::shared_ptr<SyncWait>(wait);
  count_request("sync", path);
  const int rc = zoo_async(
      handle_, path.c_str(),
      [](int result, const char*, const void* data) {
        auto* w = static_cast<std::shared_ptr<SyncWait>*>(const_cast<void*>(data));
        {
          std::lock_guard lock((*w)->m);
          (*w)->rc = result;
          (*w)->cv.notify_all();
        }
        delete w;
      },
      held);
  if (rc != ZOK) {
    delete held;
    return error(rc, path);
  }
  std::unique_lock lock(wait->m);
  const auto limit = std::chrono::milliseconds(
      std::max<std::int64_t>(1000, timeout_ms_.load(std::memory_order_relaxed)));
  if (!wait->cv.wait_for(lock, limit, [&] { return wait->rc.has_value(); })) {
    return ZkError{ZkErrc::operation_timeout, ZOPERATIONTIMEOUT, path};
  }
  if (*wait->rc != ZOK) return error(*wait->rc, path);
  return outcome::success();
}

Result<std::int64_t, ZkError> ZkSession::time_of_write(const std::string& path) {
  auto written = set(path, "", -1);
  if (!written) return written.error();
  return written.value().mtime_ms;
}

Result<std::optional<std::int64_t>, ZkError> ZkSession::time_of_probe(const std::string& prefix) {
  const std::string probe = fmt::format("{}{}-{:x}", prefix, ::getpid(), std::random_device{}());
  auto created = create(probe, "", CreateMode::ephemeral);
  if (!created) {
    if (created.error().code == ZkErrc::no_auth) return std::optional<std::int64_t>();
    return created.error();
  }
  auto stat = exists(probe);
  (void)remove(probe, -1);  // ephemeral: gone with the session anyway
  if (!stat) return stat.error();
  if (!stat.value()) return ZkError{ZkErrc::no_node, 0, probe};
  return std::optional<std::int64_t>(stat.value()->ctime_ms);
}

std::chrono::milliseconds refusal_probe_after(std::chrono::milliseconds session_timeout) {
  return std::clamp(session_timeout / 4, std::chrono::milliseconds(200),
                    std::chrono::milliseconds(2000));
}

RefusedSessionWatch::RefusedSessionWatch(ZkSettings settings, std::function<void()> wake)
    : settings_(std::move(settings)), wake_(std::move(wake)) {}

std::unique_ptr<ZkSession> RefusedSessionWatch::replacement(const ZkSession& current) {
  if (current.connected() ||
      current.disconnected_for() <= refusal_probe_after(settings_.session_timeout)) {
    standby_.reset();
    return nullptr;
  }
  if (!standby_) {
    // ZooKeeper away: it connects when ZooKeeper is back, and wakes us.
    if (auto started = ZkSession::start(settings_, wake_)) standby_ = std::move(started).value();
    return nullptr;
  }
  if (standby_->gone()) {
    standby_.reset();
    return nullptr;
  }
  if (!standby_->connected()) return nullptr;
  if (auto done = standby_->complete(settings_); !done) {
    standby_.reset();
    return nullptr;
  }
  spdlog::warn(
      "ZooKeeper answers a new session but not ours, which has tried to reconnect for {} ms: it "
      "ended ours, or its history is behind what ours saw (a restore, a wipe); going on with the "
      "new one",
      current.disconnected_for().count());
  return std::move(standby_);
}

std::pair<std::int64_t, std::string> ZkSession::client_id() const {
  const clientid_t* id = zoo_client_id(handle_);
  return {id->client_id, std::string(id->passwd, sizeof id->passwd)};
}

std::int64_t ZkSession::session_id() const { return zoo_client_id(handle_)->client_id; }

std::chrono::milliseconds ZkSession::negotiated_timeout() const {
  return std::chrono::milliseconds(zoo_recv_timeout(handle_));
}

}  // namespace snowflake::coord
