// Lease holders as users run them: real processes (tests/holders/
// lease_holder.cpp, a generator that follows docs/api.md's contract) that
// take a worker ID, make IDs in-process and renew, under the faults a
// container meets: frozen (SIGSTOP) past the lease and thawed, the daemon
// that granted the lease killed, killed without giving back. Every ID of
// every holder and of the daemons is checked together: none twice, and a
// worker ID's next holder stamps only past its last holder's stamps.

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <fstream>
#include <map>
#include <set>

#include "../support/child_process.hpp"
#include "../support/daemon.hpp"
#include "../support/http_client.hpp"
#include "../support/polling.hpp"
#include "../support/wall_clock.hpp"
#include "../support/zookeeper_server.hpp"
#include "cluster.hpp"
#include "snowflake/ids/layout.hpp"
#include "snowflake/zk/node_data.hpp"
#include "snowflake/zk/zk_session.hpp"

using namespace snowflake;
using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// 2^worker_bits worker IDs, leases of 1.5 s (the daemons' own), reclaimed
// 2.5 s after their last write.
json holders_config(const ZooKeeperServer& zk, const TempDir& state, int worker_bits) {
  return cluster_config(
      zk.hosts(), "recycle", state.path(),
      {{"layout", {{"worker_bits", worker_bits}, {"sequence_bits", 22 - worker_bits}}},
       {"coordinator", {{"max_skew_ms", 200}}},
       {"leases", {{"enabled", true}, {"reserved_worker_ids", 0}}}});
}

const IdLayout& layout_of_bits(int worker_bits) {
  static std::map<int, IdLayout> layouts;
  auto it = layouts.find(worker_bits);
  if (it == layouts.end()) {
    LayoutSettings s;
    s.worker_bits = worker_bits;
    s.sequence_bits = 22 - worker_bits;
    it = layouts.emplace(worker_bits, IdLayout::create(s, wall_ms_now()).value()).first;
  }
  return it->second;
}

// A lease holder process writing its IDs to `out`.
class Holder {
 public:
  Holder(const std::vector<const Daemon*>& daemons, const std::filesystem::path& out,
         const std::string& name) {
    std::string servers;
    for (const auto* d : daemons)
      servers += (servers.empty() ? "" : ",") + std::to_string(d->port());
    process_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{LEASE_HOLDER_PATH, "--servers", servers, "--out", out.string(),
                                 "--holder", name, "--duration-ms", "1500"});
    out_ = out;
  }
  ~Holder() {
    if (process_->running()) {
      process_->send_signal(SIGCONT);
      process_->send_signal(SIGTERM);
      (void)process_->wait_for_exit(10s);
    }
  }
  ChildProcess& process() { return *process_; }
  std::vector<std::uint64_t> ids() const {
    std::vector<std::uint64_t> out;
    std::ifstream in(out_);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty()) out.push_back(std::stoull(line));
    }
    return out;
  }
  std::string log() const { return process_->stderr_text(); }

 private:
  std::unique_ptr<ChildProcess> process_;
  std::filesystem::path out_;
};

// IDs asked of a daemon now: its own, for the check.
std::vector<std::uint64_t> daemon_ids(const Daemon& d, int n) {
  std::vector<std::uint64_t> out;
  const auto r = http_get(d.port(), fmt::format("/id/check?count={}", n));
  if (!r || r->status != 200) return out;
  const json body = json::parse(r->body);
  for (const auto& id : body["ids"]) out.push_back(std::stoull(id.get<std::string>()));
  return out;
}

// By worker ID, each source's lowest and highest timestamp: a worker ID held
// by two sources in turn must have them apart.
struct Span {
  std::int64_t low = INT64_MAX;
  std::int64_t high = INT64_MIN;
};
std::map<std::uint32_t, Span> spans(const std::vector<std::uint64_t>& ids, int worker_bits) {
  std::map<std::uint32_t, Span> out;
  for (const std::uint64_t id : ids) {
    const auto d = layout_of_bits(worker_bits).decompose(id).value();
    auto& s = out[d.worker_id];
    s.low = std::min(s.low, d.timestamp_ms);
    s.high = std::max(s.high, d.timestamp_ms);
  }
  return out;
}

void check_unique(const std::vector<std::vector<std::uint64_t>>& sources) {
  std::set<std::uint64_t> seen;
  std::size_t total = 0;
  for (const auto& ids : sources) {
    for (const std::uint64_t id : ids) {
      ++total;
      CHECK(seen.insert(id).second);
    }
  }
  INFO(total << " IDs in all");
  CHECK(total == seen.size());
}

}  // namespace

TEST_CASE(
    "lease holders: one frozen (SIGSTOP) past its lease stamps nothing with its worker ID once "
    "thawed, the next holder of it stamps past it, nothing twice",
    "[coord][leases][safety]") {
  ZooKeeperServer zk;
  TempDir sa, files;
  Daemon a(holders_config(zk, sa, 1).dump());  // 2 worker IDs: the daemon's and one to lease
  wait_ready(a);
  Holder first({&a}, files.path() / "first", "first");
  REQUIRE(eventually([&] { return first.ids().size() > 100; }, 20s));
  const auto id = layout_of_bits(1).decompose(first.ids().front()).value().worker_id;
  // Frozen until its worker ID is back in the pool (its lease, the margin
  // and reclaim_after by ZooKeeper's clock), then taken by another.
  first.process().send_signal(SIGSTOP);
  {
    auto s = connect(zk);
    REQUIRE(eventually(
        [&] {
          return s->exists(fmt::format("{}/pool/notuse/{}", kE2eRoot, id)).value().has_value();
        },
        30s));
  }
  Holder second({&a}, files.path() / "second", "second");
  REQUIRE(eventually([&] { return second.ids().size() > 100; }, 20s));
  first.process().send_signal(SIGCONT);
  // Thawed: past its deadline, it stops at once; its renewal is lost; the
  // pool is full: it makes nothing.
  INFO(first.log());
  CHECK(eventually(
      [&] {
        const std::string log = first.log();
        return log.find("deadline passed") != std::string::npos ||
               log.find("lease lost") != std::string::npos;
      },
      10s));
  const std::size_t second_before = second.ids().size();
  REQUIRE(eventually([&] { return second.ids().size() > second_before + 100; }, 10s));
  const auto own = daemon_ids(a, 50);
  CHECK(own.size() == 50);

  const auto first_ids = first.ids();
  const auto second_ids = second.ids();
  check_unique({first_ids, second_ids, own});
  const auto before = spans(first_ids, 1);
  const auto after = spans(second_ids, 1);
  REQUIRE(before.count(id));
  REQUIRE(after.count(id));
  CHECK(before.at(id).high < after.at(id).low);
  // Nothing of the first's stamped with another worker ID (none was free).
  CHECK(before.size() == 1);
}

TEST_CASE(
    "lease holders: renewed through another daemon when the one that granted it is killed, and "
    "a holder killed without giving back: its worker ID comes back, its next holder stamps past "
    "it, nothing twice",
    "[coord][leases][safety]") {
  ZooKeeperServer zk;
  TempDir sa, sb, files;
  auto a = std::make_unique<Daemon>(holders_config(zk, sa, 2).dump());
  Daemon b(holders_config(zk, sb, 2).dump());
  wait_ready(*a);
  wait_ready(b);
  Holder first({a.get(), &b}, files.path() / "first", "first");
  REQUIRE(eventually([&] { return first.ids().size() > 100; }, 20s));
  a->process().send_signal(SIGKILL);
  a.reset();
  // Three leases long: renewed through b all along.
  const std::size_t at_kill = first.ids().size();
  const auto until = std::chrono::steady_clock::now() + 4500ms;
  REQUIRE(eventually([&] { return std::chrono::steady_clock::now() > until; }, 10s));
  CHECK(first.ids().size() > at_kill + 100);
  CHECK(first.log().find("lease lost") == std::string::npos);
  CHECK(first.log().find("deadline passed") == std::string::npos);

  // Killed without a word: every worker ID but b's comes back in time, the
  // first holder's above its last stamp.
  const auto first_ids_before_kill = first.ids();
  const auto held = layout_of_bits(2).decompose(first_ids_before_kill.back()).value().worker_id;
  first.process().send_signal(SIGKILL);
  (void)first.process().wait_for_exit(10s);
  const auto first_ids = first.ids();
  const auto highest_first = spans(first_ids, 2).at(held).high;
  {
    auto s = connect(zk);
    REQUIRE(eventually(
        [&] {
          return s->exists(fmt::format("{}/pool/notuse/{}", kE2eRoot, held)).value().has_value();
        },
        30s));
    const auto freed = s->get(fmt::format("{}/pool/notuse/{}", kE2eRoot, held)).value();
    CHECK(coord::decode_notuse(freed.data)->floor >= highest_first);
  }
  // Three holders now: every free worker ID taken, the first one's among them.
  Holder h1({&b}, files.path() / "h1", "h1");
  Holder h2({&b}, files.path() / "h2", "h2");
  Holder h3({&b}, files.path() / "h3", "h3");
  REQUIRE(eventually(
      [&] { return h1.ids().size() > 50 && h2.ids().size() > 50 && h3.ids().size() > 50; }, 20s));
  const auto own = daemon_ids(b, 50);
  check_unique({first_ids, h1.ids(), h2.ids(), h3.ids(), own});
  std::vector<std::uint64_t> later;
  for (const auto* h : {&h1, &h2, &h3}) {
    const auto ids = h->ids();
    later.insert(later.end(), ids.begin(), ids.end());
  }
  const auto after = spans(later, 2);
  REQUIRE(after.count(held));
  CHECK(highest_first < after.at(held).low);
}
