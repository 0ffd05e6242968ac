#include "snowflake/workers/lease_service.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <utility>

#include "snowflake/base/sha256.hpp"
#include "snowflake/base/thread_name.hpp"
#include "snowflake/zk/cluster_tree.hpp"

namespace snowflake::coord {

namespace {

// A named pool's record: {"worker_bits": N}. 0: unreadable.
int recorded_bits(const std::string& data) {
  const auto j = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("worker_bits") || !j["worker_bits"].is_number_integer())
    return 0;
  const auto bits = j["worker_bits"].get<std::int64_t>();
  return bits >= 1 && bits <= kMaxLeasePoolWorkerBits ? static_cast<int>(bits) : 0;
}

std::string hex(const std::array<std::uint8_t, 32>& digest, std::size_t bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

// A CosId machine's token: made from its pool and instance, since CosId's
// guard and revert name the instance alone (its protocol has no secret).
std::string machine_token(const std::string& pool, const std::string& instance) {
  return hex(sha256("cosid\n" + pool + "\n" + instance), 16);
}

// Where a machine's worker ID is kept, by its token's digest (the owner
// instance its node carries, without "lease:").
std::string machine_index(const std::string& pool_root, const std::string& token) {
  return pool_root + "/instances/" + hex(sha256(token), 32);
}

CoordError no_pool(const std::string& name, std::string_view why) {
  return {CoordErrc::no_pool, fmt::format("no lease pool \"{}\": {}", name, why)};
}

// What a holder is told: the refusal's kind decides its status code.
LeaseCall::Outcome outcome_of(Result<LeaseTerms, CoordError> result) {
  if (result) {
    LeaseTerms& t = result.value();
    return LeaseGrant{t.worker_id,        t.duration,         t.first_timestamp_ms,
                      t.max_timestamp_ms, std::move(t.token), t.worker_bits};
  }
  const CoordError& e = result.error();
  switch (e.code) {
    case CoordErrc::lost:
      return LeaseRefusal{LeaseRefusal::Why::lost, e.message};
    case CoordErrc::pool_exhausted:
      return LeaseRefusal{LeaseRefusal::Why::pool_exhausted, e.message};
    case CoordErrc::no_pool:
      return LeaseRefusal{LeaseRefusal::Why::no_pool, e.message};
    case CoordErrc::layout_mismatch:
      return LeaseRefusal{LeaseRefusal::Why::pool_conflict, e.message};
    case CoordErrc::no_lease:
      return LeaseRefusal{LeaseRefusal::Why::no_lease, e.message};
    default:
      return LeaseRefusal{LeaseRefusal::Why::unavailable, e.message};
  }
}

}  // namespace

LeaseService::LeaseService(LeaseServiceOptions options)
    : options_(std::move(options)),
      leases_(options_.pool),
      grace_(options_.restore_grace, options_.pool.root),
      thread_([this] { run(); }) {}

LeaseService::~LeaseService() { stop(); }

std::shared_ptr<LeaseCall> LeaseService::submit(LeaseRequest request) {
  auto call = std::make_shared<LeaseCall>(std::move(request));
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      queue_.push_back(call);
      wake_.notify_one();
      return call;
    }
  }
  call->finish(LeaseRefusal{LeaseRefusal::Why::unavailable, "the daemon is stopping"});
  return call;
}

void LeaseService::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void LeaseService::run() {
  name_this_thread("leases");
  auto next_reap = BootClock::now() + options_.named.reap_every;
  for (;;) {
    std::shared_ptr<LeaseCall> call;
    {
      std::unique_lock lock(mutex_);
      const auto until_reap = std::max(BootClock::duration::zero(), next_reap - BootClock::now());
      wake_.wait_for(lock, until_reap, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty() && stopping_) return;  // all answered
      if (!queue_.empty()) {
        call = std::move(queue_.front());
        queue_.pop_front();
      }
    }
    if (call) answer(*call);
    if (BootClock::now() >= next_reap) {
      next_reap = BootClock::now() + options_.named.reap_every;
      // Nothing judged while we may not issue (cut off, fenced): ZooKeeper's
      // records are read again on the next pass.
      if (!may_go_on()) continue;
      if (auto session = current_session()) reap_named(*session.value());
    }
  }
}

void LeaseService::answer(LeaseCall& call) {
  if (call.request().kind == LeaseRequest::Kind::take && call.abandoned()) {
    // Its asker was told 503 already: a worker ID taken now would be
    // nobody's until the reaper takes it back.
    call.finish(LeaseRefusal{LeaseRefusal::Why::unavailable, "asked too long ago"});
    return;
  }
  call.finish(outcome_of(serve(call.request())));
}

bool LeaseService::may_go_on() {
  // Nothing judged while we may not issue (cut off, fenced), as at a pass's start.
  if (options_.own_lease && !options_.own_lease->may_issue()) return false;
  std::lock_guard lock(mutex_);
  return !stopping_;
}

bool LeaseService::answer_queued(const ZkSession& reaping) {
  // Only over the session the pass reads with: a new one would drop the
  // pools the pass holds (current_session forgets them).
  if (!may_go_on()) return false;  // the pass ends here; run() answers the rest
  const auto session = options_.session ? options_.session() : nullptr;
  const bool same_session = session.get() == &reaping && !session->gone();
  std::deque<std::shared_ptr<LeaseCall>> queued;
  if (same_session) {
    std::lock_guard lock(mutex_);
    queued.swap(queue_);
  }
  for (const auto& call : queued) answer(*call);
  return true;
}

Result<std::shared_ptr<ZkSession>, CoordError> LeaseService::current_session() {
  auto session = options_.session ? options_.session() : nullptr;
  if (!session || session->gone()) {
    return CoordError{CoordErrc::zookeeper, "no ZooKeeper session"};
  }
  if (session_.lock() != session) {
    // A call answered inside a reaping pass (answer_queued) must not drop
    // the pool the pass is reading: asked again, after the pass.
    if (reaping_) {
      return CoordError{CoordErrc::zookeeper, "a new ZooKeeper session: ask again"};
    }
    // What was learnt in another session (nodes written, pools made) is
    // read again: a wipe or a restore may have undone it.
    leases_.forget_writes();
    named_.clear();
    session_ = session;
  }
  return session;
}

Result<int, CoordError> LeaseService::recorded_or_made(ZkSession& zk,
                                                       const LeaseRequest& request) const {
  const NamedPoolRules& rules = options_.named;
  const std::string& name = request.pool;
  const auto configured = rules.configured.find(name);
  const std::string path = tree::lease_pool(options_.pool.root, name);
  for (int attempt = 0; attempt < 3; ++attempt) {
    BOOST_OUTCOME_TRY(node, zk.try_get(path));
    // Only the config's pools while new_pools is off, whoever made others.
    if (request.kind == LeaseRequest::Kind::take && !rules.new_pools &&
        configured == rules.configured.end()) {
      return no_pool(name, "not in leases.pools, and leases.new_pools is false");
    }
    if (node) {
      const int bits = recorded_bits(node.value().data);
      if (bits == 0) {
        return CoordError{CoordErrc::unusable,
                          fmt::format("lease pool \"{}\": its record is unreadable", name)};
      }
      return bits;
    }
    // Only a take makes a pool; a lease in one that is gone is lost.
    if (request.kind != LeaseRequest::Kind::take) {
      return CoordError{CoordErrc::lost, fmt::format("{}pool \"{}\" has no record (ZooKeeper "
                                                     "lost it, or it was never made)",
                                                     kLeaseLostPrefix, name)};
    }
    int want = 0;
    if (configured != rules.configured.end()) {
      want = configured->second;
    } else if (!request.worker_bits) {
      return no_pool(name, "a take makes one with worker_bits (CosId's machineBit)");
    } else if (*request.worker_bits > rules.new_pool_max_worker_bits) {
      return no_pool(name, fmt::format("{} worker ID bits asked, leases.new_pool_max_worker_bits "
                                       "is {}",
                                       *request.worker_bits, rules.new_pool_max_worker_bits));
    } else {
      want = *request.worker_bits;
    }
    // Never the cluster's root made here: after a wipe it is the
    // coordinator's to make again, fenced (a root made bare would let a
    // take start below what a holder from before the wipe still stamps).
    const std::string dir = tree::lease_pools_dir(options_.pool.root);
    if (auto made_dir = zk.create(dir, "");
        !made_dir && made_dir.error().code != ZkErrc::node_exists) {
      if (made_dir.error().code == ZkErrc::no_node) {
        return CoordError{CoordErrc::zookeeper,
                          fmt::format("the cluster's root {} is missing (ZooKeeper lost it?): no "
                                      "pool is made until it is there again",
                                      options_.pool.root)};
      }
      return CoordError::from(made_dir.error());
    }
    BOOST_OUTCOME_TRY(names, zk.children(dir));
    // The config's pools always have their place; those made on first use
    // share the rest. Two daemons making pools at once may both pass: a
    // bound on the metrics' cardinality and ZooKeeper's nodes, not a rule
    // of safety.
    const auto made_on_use = static_cast<std::size_t>(
        std::count_if(names.begin(), names.end(),
                      [&](const std::string& n) { return !rules.configured.contains(n); }));
    const std::size_t room =
        rules.max_pools - std::min<std::size_t>(rules.max_pools, rules.configured.size());
    if (configured == rules.configured.end() && made_on_use >= room) {
      return no_pool(name, fmt::format("the cluster has {} lease pools made on first use, "
                                       "leases.max_pools leaves room for {}",
                                       made_on_use, room));
    }
    auto made = zk.create(path, nlohmann::json{{"worker_bits", want}}.dump());
    if (made) {
      spdlog::info("leases: pool \"{}\" made with {}-bit worker IDs", name, want);
      return want;
    }
    if (made.error().code != ZkErrc::node_exists && !made.error().outcome_unknown()) {
      return CoordError::from(made.error());
    }  // else made meanwhile (or by our own lost create): read it
  }
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("lease pool \"{}\" kept changing while it was read", name)};
}

Result<LeasePool*, CoordError> LeaseService::pool_for(ZkSession& zk, const LeaseRequest& request) {
  if (request.pool.empty()) return &leases_;
  const NamedPoolRules& rules = options_.named;
  const std::string& name = request.pool;
  const auto configured = rules.configured.find(name);
  auto known = named_.find(name);
  if (known == named_.end()) {
    BOOST_OUTCOME_TRY(bits, recorded_or_made(zk, request));
    known = named_
                .emplace(name, NamedPool{bits,
                                         LeasePool(LeasePoolSettings::named(
                                             options_.pool.root, name, bits, options_.pool.margin)),
                                         false})
                .first;
  }
  NamedPool& pool = known->second;
  // Only the config's pools while new_pools is off, whoever made others
  // (and however this daemon came to know them: its reaping pass reads all).
  if (request.kind == LeaseRequest::Kind::take && !rules.new_pools &&
      configured == rules.configured.end()) {
    return no_pool(name, "not in leases.pools, and leases.new_pools is false");
  }
  // Takes only: a lease already held in it renews and goes back as it was.
  if (request.kind == LeaseRequest::Kind::take && configured != rules.configured.end() &&
      configured->second != pool.worker_bits) {
    return CoordError{CoordErrc::layout_mismatch,
                      fmt::format("lease pool \"{}\" has {}-bit worker IDs in ZooKeeper, "
                                  "leases.pools says {}",
                                  name, pool.worker_bits, configured->second)};
  }
  if (request.worker_bits && *request.worker_bits != pool.worker_bits) {
    return CoordError{CoordErrc::layout_mismatch,
                      fmt::format("lease pool \"{}\" has {}-bit worker IDs, {} asked", name,
                                  pool.worker_bits, *request.worker_bits)};
  }
  if (!pool.ensured) {
    // Its nodes made once (a 16-bit pool: 65,536 in batches); another
    // daemon filling it makes this take ask again later.
    BOOST_OUTCOME_TRYV(pool.leases.pool().ensure(zk, std::chrono::seconds(2)));
    pool.ensured = true;
  }
  return &pool.leases;
}

void LeaseService::reap_named(ZkSession& zk) {
  reaping_ = true;
  const struct Done {
    bool& flag;
    ~Done() { flag = false; }
  } done{reaping_};
  // The config's pools made and filled here, off any request's path (a
  // 16-bit pool is 65,536 nodes): their first take finds them ready.
  for (const auto& [name, bits] : options_.named.configured) {
    if (const auto it = named_.find(name); it != named_.end() && it->second.ensured) continue;
    LeaseRequest make;
    make.kind = LeaseRequest::Kind::take;  // makes a configured pool; takes nothing
    make.pool = name;
    if (auto made = pool_for(zk, make); !made) {
      spdlog::warn("leases: pool \"{}\" not made yet: {}", name, made.error().message);
    }
  }
  auto names = zk.children(tree::lease_pools_dir(options_.pool.root));
  if (!names) return;  // none yet (no_node), or asked again next pass
  for (const auto& name : names.value()) {
    if (!may_go_on()) return;
    LeaseRequest look;
    look.kind = LeaseRequest::Kind::renew;  // reads the record, never makes a pool
    look.pool = name;
    auto leases = pool_for(zk, look);
    if (!leases) continue;
    RecyclePool& pool = leases.value()->pool();
    const auto zk_now = [&]() -> Result<std::int64_t, CoordError> {
      auto now = zk.time_of_write(pool.clock_path());
      if (!now) return CoordError::from(now.error());
      return now.value();
    };
    // Takes and renewals are answered between its batches: a pass over a
    // 16-bit pool's leases reads up to 65,536 nodes (seconds), and a
    // renewal that waited it out would come too late.
    auto reaped = pool.reclaim_stale(zk, zk_now, options_.named.reclaim_after, std::nullopt,
                                     [&] { return answer_queued(zk); });
    if (!reaped) {
      spdlog::warn("leases: pool \"{}\" not reaped this pass: {}", name, reaped.error().message);
      continue;
    }
    if (!may_go_on()) return;  // cut short: its figures are a part's
    if (reaped.value().moved > 0) {
      spdlog::info("leases: {} worker ID(s) of pool \"{}\" reclaimed after their lease",
                   reaped.value().moved, name);
    }
    if (options_.pool_seen) options_.pool_seen(name, pool.size(), reaped.value().in_use);
    // A CosId machine whose lease was reclaimed leaves its instance's entry.
    sweep_machines(zk, tree::lease_pool(options_.pool.root, name), pool);
  }
}

Result<void, CoordError> LeaseService::write_machine_index(ZkSession& zk, const std::string& index,
                                                           std::uint32_t worker_id,
                                                           std::optional<std::int32_t> read_at) {
  // Conditional on what this request read: two daemons serving one
  // instance at once (a retry after a slow answer) cannot both record a
  // worker ID for it; the one that loses gives its take back.
  const std::string id = std::to_string(worker_id);
  const auto raced = [&] {
    return CoordError{CoordErrc::zookeeper,
                      "another request for this instance was served meanwhile: ask again"};
  };
  if (read_at) {
    auto set = zk.set(index, id, *read_at);
    if (set) return outcome::success();
    if (set.error().code == ZkErrc::bad_version || set.error().code == ZkErrc::no_node) {
      return raced();
    }
    return CoordError::from(set.error());
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto made = zk.create(index, id);
    if (made) return outcome::success();
    if (made.error().code == ZkErrc::node_exists) return raced();
    if (made.error().code != ZkErrc::no_node) return CoordError::from(made.error());
    // The pool's instances/ (pools made before it was): made under the
    // pool's node only, never the tree above it (gone after a wipe).
    auto dir = zk.create(index.substr(0, index.rfind('/')), "");
    if (!dir && dir.error().code != ZkErrc::node_exists) return CoordError::from(dir.error());
  }
  return raced();
}

Result<LeaseTerms, CoordError> LeaseService::serve_machine(ZkSession& zk, LeasePool& leases,
                                                           const LeaseRequest& request,
                                                           BootClock::time_point read_at) {
  const std::string token = machine_token(request.pool, request.instance);
  const std::string index =
      machine_index(tree::lease_pool(options_.pool.root, request.pool), token);
  BOOST_OUTCOME_TRY(held, zk.try_get(index));
  std::optional<std::uint32_t> worker_id;
  if (held) {
    std::uint32_t id = 0;
    const std::string& text = held.value().data;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (ec == std::errc() && end == text.data() + text.size()) worker_id = id;
  }
  const auto none = [&] {
    return CoordError{CoordErrc::no_lease,
                      fmt::format("instance \"{}\" holds no machine ID of \"{}\"", request.instance,
                                  request.pool)};
  };
  switch (request.kind) {
    case LeaseRequest::Kind::take: {
      if (worker_id) {
        // The same instance again (restarted): its old lease ends here, at
        // its fence, so the new one starts past anything it stamped.
        auto back = leases.give_back(zk, *worker_id, token, std::nullopt);
        if (!back && back.error().code != CoordErrc::lost) return back.error();
      }
      // Only a worker ID whose first timestamp is already past: CosId does
      // not wait a clock out (beyond its brokenThreshold, 500 ms by
      // default, it fails), so none whose floor is within the last second.
      BOOST_OUTCOME_TRY(terms,
                        leases.take(zk, request.holder, request.duration, options_.clock->wall_ms(),
                                    -std::chrono::milliseconds(1000), token));
      if (auto young = read_in_grace(zk, read_at); !young) {
        (void)leases.give_back(zk, terms.worker_id, token, terms.first_timestamp_ms - 1);
        return young.error();
      }
      const auto index_version =
          held ? std::optional<std::int32_t>(held.value().stat.version) : std::nullopt;
      if (auto written = write_machine_index(zk, index, terms.worker_id, index_version); !written) {
        // Unrecorded, the instance could not guard it: given back as it came.
        (void)leases.give_back(zk, terms.worker_id, token, terms.first_timestamp_ms - 1);
        return written.error();
      }
      spdlog::info("leases: worker ID {} of pool \"{}\" leased to CosId instance {} for {} ms",
                   terms.worker_id, request.pool, request.instance, request.duration.count());
      return terms;
    }
    case LeaseRequest::Kind::renew: {
      if (!worker_id) return none();
      auto renewed = leases.renew(zk, *worker_id, token, request.duration,
                                  options_.clock->wall_ms(), std::nullopt);
      if (!renewed && renewed.error().code == CoordErrc::lost) {
        (void)zk.remove(index, held.value().stat.version);  // lost for good
      }
      return renewed;
    }
    case LeaseRequest::Kind::give_back: {
      if (!worker_id) return none();
      auto back = leases.give_back(zk, *worker_id, token, std::nullopt);
      if (back || back.error().code == CoordErrc::lost) {
        (void)zk.remove(index, held.value().stat.version);
      }
      BOOST_OUTCOME_TRYV(back);
      return LeaseTerms{*worker_id, {}, 0, 0, {}};
    }
  }
  return CoordError{CoordErrc::zookeeper, "unknown lease request"};
}

void LeaseService::sweep_machines(ZkSession& zk, const std::string& pool_root, RecyclePool& pool) {
  const std::string dir = pool_root + "/instances";
  auto names = zk.children(dir);
  if (!names || names.value().empty()) return;  // none (no_node), or next pass
  // A bounded share a pass: a pool of many machines costs each pass the
  // same few reads.
  constexpr std::size_t kPerPass = 32;
  const std::size_t n = names.value().size();
  std::size_t& cursor = sweep_cursors_[pool_root];
  for (std::size_t i = 0; i < std::min(kPerPass, n); ++i) {
    const std::string& name = names.value()[(cursor + i) % n];
    const std::string path = tree::child(dir, name);
    auto entry = zk.try_get(path);
    if (!entry || !entry.value()) continue;
    std::uint32_t id = 0;
    const std::string& text = entry.value()->data;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    bool stale = ec != std::errc() || end != text.data() + text.size() || id >= pool.size();
    if (!stale) {
      // Free (reclaimed, not yet leased again): kept, so that the
      // instance's next guard is told M-03, its machine ID lost. Held by
      // another: gone (an entry outlives its lease only until its worker
      // ID is leased again).
      auto node = zk.try_get(pool.inuse_path(id));
      if (!node || !node.value()) continue;
      const auto data = decode_inuse(node.value()->data);
      stale = !data || data->owner.instance != std::string(kLeaseInstancePrefix) + name;
    }
    // At the version read: a take that wrote it again since keeps it.
    if (stale) (void)zk.remove(path, entry.value()->stat.version);
  }
  cursor = (cursor + kPerPass) % n;
}

Result<void, CoordError> LeaseService::refuse_in_grace(ZkSession& zk) {
  // Refused, not waited out: renewals and give-backs queue behind a take,
  // and a holder with a short lease would miss its deadline meanwhile.
  const auto left = grace_.left_known(zk);
  if (left <= BootClock::duration::zero()) return outcome::success();
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("the ZooKeeper connection is younger than "
                                "coordinator.restore_grace_ms ({} ms), over in {} ms: ask again",
                                options_.restore_grace.count(),
                                std::chrono::ceil<std::chrono::milliseconds>(left).count())};
}

Result<void, CoordError> LeaseService::read_in_grace(ZkSession& zk, BootClock::time_point read_at) {
  if (!grace_.holds(zk, read_at)) return outcome::success();
  return CoordError{CoordErrc::zookeeper,
                    fmt::format("the take's reads came over a ZooKeeper connection younger than "
                                "coordinator.restore_grace_ms ({} ms): given back, ask again",
                                options_.restore_grace.count())};
}

Result<LeaseTerms, CoordError> LeaseService::serve(const LeaseRequest& request) {
  // Re-judged here, after the wait in the queue: the route judged it when
  // the request came. A give-back vouches for nothing: always taken.
  if (request.kind != LeaseRequest::Kind::give_back && options_.own_lease &&
      !options_.own_lease->may_issue()) {
    return CoordError{CoordErrc::zookeeper, fmt::format("this daemon may not issue IDs now ({})",
                                                        to_string(options_.own_lease->state()))};
  }
  BOOST_OUTCOME_TRY(session, current_session());
  ZkSession& zk = *session;
  // Over a connection younger than the grace, a restored ZooKeeper's
  // records may show free a worker ID that a holder of the lost history
  // stamps with, and no fence yet (docs/design.md, "A restore, and the
  // grace"): a take is refused until the fence has had its time.
  if (request.kind == LeaseRequest::Kind::take) {
    BOOST_OUTCOME_TRYV(refuse_in_grace(zk));
  }
  const auto read_at = BootClock::now();  // the take's reads, from here
  BOOST_OUTCOME_TRY(leases, pool_for(zk, request));
  if (!request.instance.empty()) return serve_machine(zk, *leases, request, read_at);
  const std::string pool_name =
      request.pool.empty() ? std::string(kClusterLeasePool) : request.pool;
  const std::int64_t now_ms = options_.clock->wall_ms();
  switch (request.kind) {
    case LeaseRequest::Kind::take: {
      auto taken = leases->take(zk, request.holder, request.duration, now_ms, options_.max_wait);
      if (taken) {
        if (auto young = read_in_grace(zk, read_at); !young) {
          // Nobody was told of it: given back as it came.
          const LeaseTerms& t = taken.value();
          (void)leases->give_back(zk, t.worker_id, t.token, t.first_timestamp_ms - 1);
          return young.error();
        }
        spdlog::info("leases: worker ID {} of pool \"{}\" leased to {} for {} ms",
                     taken.value().worker_id, pool_name, request.holder, request.duration.count());
      }
      return taken;
    }
    case LeaseRequest::Kind::renew:
      return leases->renew(zk, request.worker_id, request.token, request.duration, now_ms,
                           request.last_used_ms);
    case LeaseRequest::Kind::give_back: {
      BOOST_OUTCOME_TRYV(
          leases->give_back(zk, request.worker_id, request.token, request.last_used_ms));
      spdlog::info("leases: worker ID {} of pool \"{}\" given back", request.worker_id, pool_name);
      return LeaseTerms{request.worker_id, {}, 0, 0, {}};
    }
  }
  return CoordError{CoordErrc::zookeeper, "unknown lease request"};
}

}  // namespace snowflake::coord
