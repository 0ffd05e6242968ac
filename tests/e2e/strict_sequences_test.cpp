// Strict sequences through the real snowflaked (`seq create --order
// strict`): one daemon hands them out, the other passes requests on to it
// over kept-alive connections (or, asked not to, refuses naming it), and
// clients asking either get numbers in real-time order; a clean stop hands
// the tag over without a gap; an owner frozen past its lease loses the tag
// and never hands out again after the new owner started; a killed owner's
// tag is taken over above its numbers, and until then requests passed on
// to it are refused naming it.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "../support/child_process.hpp"
#include "../support/daemon.hpp"
#include "../support/http_client.hpp"
#include "../support/polling.hpp"
#include "../support/real_time_order.hpp"
#include "../support/test_certificates.hpp"
#include "../support/tls_client.hpp"
#include "../support/zookeeper_server.hpp"
#include "cluster.hpp"
#include "snowflake/sequence_store/strict_owner.hpp"
#include "snowflake/zk/cluster_tree.hpp"

using namespace snowflake;
using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

using TestClock = std::chrono::steady_clock;

// TCP sockets of this machine with `port` at either end, but the listening
// one (/proc/net/tcp: "local rem state", addresses as HEX_IP:HEX_PORT).
int sockets_on_port(unsigned short port) {
  char hex[8];
  std::snprintf(hex, sizeof hex, ":%04X", port);
  int found = 0;
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (state == "0A") continue;  // LISTEN
    if (local.ends_with(hex) || remote.ends_with(hex)) ++found;
  }
  return found;
}

// A request marked as passed on already: the daemon answers it itself
// (strict_forwarder.hpp), never passing it on again.
const std::string kAnswerYourself = "X-Snowflake-Forwarded-By: the test\r\n";

// One number of `tag` handed out by daemon `d` itself; nullopt for any
// refusal (not_owner where another daemon owns the tag).
std::optional<std::int64_t> number_from(const Daemon& d, const std::string& tag) {
  const auto r = http_get(d.port(), "/seq/" + tag, kAnswerYourself);
  if (!r || r->status != 200) return std::nullopt;
  return std::stoll(json::parse(r->body)["id"].get<std::string>());
}

// The highest of `count` numbers of `tag` asked of `d` one by one (each must come).
std::int64_t highest_of(const Daemon& d, const std::string& tag, int count) {
  std::int64_t highest = 0;
  for (int i = 0; i < count; ++i) highest = std::max(highest, number_from(d, tag).value());
  return highest;
}

// The port a not_owner refusal names ("host:port"), if any.
std::optional<unsigned short> owner_port(const std::optional<HttpReply>& r) {
  if (!r || r->status != 503) return std::nullopt;
  const auto body = json::parse(r->body, nullptr, false);
  if (!body.is_object() || body.value("error", "") != "not_owner" || !body["owner"].is_string()) {
    return std::nullopt;
  }
  const std::string address = body["owner"].get<std::string>();
  return static_cast<unsigned short>(std::stoi(address.substr(address.rfind(':') + 1)));
}

// As a client that follows a refusal does (a request the daemon could not
// pass on): asks `first`, then the owner it names. The answer with its send
// and receive times, or nullopt.
std::optional<TimedAnswer> strict_get(unsigned short first, const std::string& tag) {
  unsigned short port = first;
  for (int hop = 0; hop < 2; ++hop) {
    const auto sent = TestClock::now();
    const auto r = http_get(port, "/seq/" + tag);
    const auto received = TestClock::now();
    if (r && r->status == 200) {
      const auto n = std::stoll(json::parse(r->body)["id"].get<std::string>());
      return TimedAnswer{sent, received, n, n};
    }
    const auto next = owner_port(r);
    if (!next) return std::nullopt;
    port = *next;
  }
  return std::nullopt;
}

// A lease longer than the ZooKeeper session: an owner whose session has
// ended may still hand out, and its tag must wait for its lease.
std::string strict_config(const std::string& hosts, const std::filesystem::path& state,
                          const json& patch = json::object()) {
  json timings = {
      {"coordinator",
       {{"lease_timeout_ms", 4000}, {"reclaim_after_ms", 6000}, {"safety_margin_ms", 1000}}}};
  timings.merge_patch(patch);
  return cluster_config(hosts, "recycle", state, timings).dump();
}

// Two clients, each asking both daemons in turn `rounds` times (and
// following a refusal, which should not come): every answer, timed.
std::vector<TimedAnswer> ask_both(const Daemon& a, const Daemon& b, const std::string& tag,
                                  int rounds, int& failures) {
  std::mutex m;
  std::vector<TimedAnswer> answers;
  auto client = [&](int offset) {
    for (int i = 0; i < rounds; ++i) {
      const Daemon& d = (i + offset) % 2 ? a : b;
      const auto got = strict_get(d.port(), tag);
      std::lock_guard lock(m);
      if (got) {
        answers.push_back(*got);
      } else {
        ++failures;
      }
    }
  };
  std::thread t1(client, 0), t2(client, 1);
  t1.join();
  t2.join();
  return answers;
}

struct Pair {
  ZooKeeperServer zk;
  TempDir sa, sb;
  std::unique_ptr<Daemon> a, b;
  Pair() {
    a = std::make_unique<Daemon>(strict_config(zk.hosts(), sa.path()));
    b = std::make_unique<Daemon>(strict_config(zk.hosts(), sb.path()));
    wait_ready(*a);
    wait_ready(*b);
  }
  // The daemon that hands out `tag` itself once one does.
  Daemon* owner_of(const std::string& tag) {
    Daemon* found = nullptr;
    eventually(
        [&] {
          for (Daemon* d : {a.get(), b.get()}) {
            if (number_from(*d, tag)) found = d;
          }
          return found != nullptr;
        },
        15s);
    return found;
  }
  Daemon* other_than(const Daemon* d) { return d == a.get() ? b.get() : a.get(); }
};

}  // namespace

TEST_CASE(
    "strict sequences: one owner hands out, the other passes requests on to it over kept-alive "
    "connections, clients' numbers are in real-time order, and a clean stop hands over without "
    "a gap",
    "[sequence][strict]") {
  Pair p;
  const auto created = run_seq(*p.a, {"create", "chat", "--order", "strict", "--step", "10"});
  REQUIRE(created.status.code == 0);
  CHECK(created.out.find("strict order") != std::string::npos);
  CHECK(run_seq(*p.a, {"create", "x", "--order", "sideways"}).status.code == 2);

  Daemon* owner = p.owner_of("chat");
  REQUIRE(owner);
  Daemon* other = p.other_than(owner);
  const auto refused = http_get(other->port(), "/seq/chat", kAnswerYourself);
  REQUIRE(refused);
  CHECK(refused->status == 503);
  CHECK(error_of(refused) == "not_owner");
  CHECK(owner_port(refused) == owner->port());
  // Bound to one address: that is the one it names.
  CHECK(json::parse(refused->body)["owner"] == "127.0.0.1:" + std::to_string(owner->port()));
  // Passed on: the owner's number, the owner's answer as it gave it.
  const auto forwarded = http_get(other->port(), "/seq/chat?format=text");
  REQUIRE(forwarded);
  CHECK(forwarded->status == 200);
  CHECK(forwarded->headers.at("content-type").find("text/plain") == 0);
  HttpConnection to_other(other->port());
  to_other.send("HEAD /seq/chat HTTP/1.1\r\nHost: x\r\n\r\n");
  const auto head = to_other.read_reply(/*to_head=*/true);
  REQUIRE(head);
  CHECK(head->status == 200);
  CHECK(head->body.empty());
  // `snowflaked get --seq`, given only the daemon that does not own it.
  const auto followed =
      run_process({snowflaked_binary(), "get", "chat", "--seq", "--count", "3", "--servers",
                   "http://127.0.0.1:" + std::to_string(other->port())});
  CHECK(followed.status.code == 0);
  std::int64_t highest = 0;  // of every number handed out so far
  std::istringstream lines(followed.out);
  int got_numbers = 0;
  for (std::string line; std::getline(lines, line); ++got_numbers) {
    highest = std::max<std::int64_t>(highest, std::stoll(line));
  }
  CHECK(got_numbers == 3);
  const auto listed = run_seq(*p.a, {"list"});
  CHECK(listed.out.find("strict order; owned by") != std::string::npos);
  const auto status = json::parse(http_get(owner->port(), "/status")->body);
  CHECK(status["sequences"]["tags"]["chat"]["owned_here"] == true);

  int failures = 0;
  const auto answers = ask_both(*p.a, *p.b, "chat", 100, failures);
  CHECK(failures == 0);
  const auto verdict = check_real_time_order(answers);
  CHECK(verdict.violations.empty());
  CHECK(verdict.pairs > 1000);
  CHECK(metric(*other, "snowflake_seq_strict_forwarded_total{tag=\"chat\"}") >= 100);
  CHECK(metric(*other, "snowflake_seq_strict_forward_failures_total{tag=\"chat\"}") == 0);
  // Over connections kept alive: a hundred requests passed on, a socket or
  // two more to the owner (each on a new one: a hundred in TIME_WAIT).
  const int sockets_before = sockets_on_port(owner->port());
  for (int i = 0; i < 100; ++i) {
    const auto r = http_get(other->port(), "/seq/chat");
    REQUIRE(r->status == 200);
    highest =
        std::max<std::int64_t>(highest, std::stoll(json::parse(r->body)["id"].get<std::string>()));
  }
  CHECK(sockets_on_port(owner->port()) - sockets_before <= 2);

  // A clean stop: the rest given back and the tag released in one write;
  // the other takes it up where it stopped.
  for (const auto& a : answers) highest = std::max(highest, a.highest);
  const auto last = number_from(*owner, "chat");
  REQUIRE(last);
  CHECK(*last == highest + 1);  // dense: nothing skipped so far
  // A client of the other daemon all along: nothing refused, every number
  // above the last (the requests in the handover wait for the new owner).
  std::atomic<bool> stopped{false};
  std::vector<std::optional<HttpReply>> through;
  std::thread asking([&] {
    while (!stopped.load()) through.push_back(http_get(other->port(), "/seq/chat"));
    through.push_back(http_get(other->port(), "/seq/chat"));  // one after the stop
  });
  owner->process().send_signal(SIGTERM);
  const auto exited = owner->process().wait_for_exit(20s);
  stopped.store(true);
  asking.join();
  REQUIRE(exited);
  std::int64_t previous = *last;
  int refused_in_handover = 0;
  for (const auto& r : through) {
    if (!r || r->status != 200) {
      ++refused_in_handover;
      continue;
    }
    const auto n = std::stoll(json::parse(r->body)["id"].get<std::string>());
    CHECK(n > previous);
    previous = n;
  }
  INFO(through.size() << " requests through the other daemon during the handover");
  CHECK(refused_in_handover == 0);
  CHECK(previous > *last);
  // Dense across the handover: the rest given back is where the next starts.
  const auto next = number_from(*other, "chat");
  REQUIRE(next);
  CHECK(*next == previous + 1);
}

TEST_CASE(
    "strict sequences: an owner frozen past its lease loses the tag, and once thawed never hands "
    "out a number again",
    "[sequence][strict]") {
  Pair p;
  REQUIRE(run_seq(*p.a, {"create", "chat", "--order", "strict"}).status.code == 0);
  Daemon* owner = p.owner_of("chat");
  REQUIRE(owner);
  Daemon* other = p.other_than(owner);
  const std::int64_t highest = highest_of(*owner, "chat", 20);

  owner->process().send_signal(SIGSTOP);
  std::optional<std::int64_t> taken_over;
  const bool moved =
      eventually([&] { return (taken_over = number_from(*other, "chat")).has_value(); }, 30s);
  owner->process().send_signal(SIGCONT);
  REQUIRE(moved);
  CHECK(*taken_over > highest);

  // Thawed: its lease ran out while it was stopped, and the record is not
  // its own any more. Never a number from it again; it names the new owner.
  std::optional<unsigned short> named;
  const auto until = TestClock::now() + 10s;
  int handed_out = 0;
  while (TestClock::now() < until && !named) {
    const auto r = http_get(owner->port(), "/seq/chat", kAnswerYourself);
    if (r && r->status == 200) ++handed_out;
    named = owner_port(r);
  }
  CHECK(handed_out == 0);
  CHECK(named == other->port());
  CHECK(number_from(*other, "chat").value() > *taken_over);
}

TEST_CASE("strict sequences: a killed owner's tag is taken over above every number it handed out",
          "[sequence][strict]") {
  Pair p;
  REQUIRE(run_seq(*p.a, {"create", "chat", "--order", "strict", "--step", "50"}).status.code == 0);
  Daemon* owner = p.owner_of("chat");
  REQUIRE(owner);
  Daemon* other = p.other_than(owner);
  const std::int64_t highest = highest_of(*owner, "chat", 10);
  const std::string owner_address = "127.0.0.1:" + std::to_string(owner->port());
  owner->process().send_signal(SIGKILL);
  REQUIRE(owner->process().wait_for_exit(10s));
  // Not taken over yet (that waits reclaim_after from its last heartbeat):
  // a request passed on gets no answer, and is refused naming the owner.
  const auto unanswered = http_get(other->port(), "/seq/chat");
  CHECK(error_of(unanswered) == "not_owner");
  CHECK(json::parse(unanswered->body)["owner"] == owner_address);
  CHECK_THAT(json::parse(unanswered->body)["message"].get<std::string>(),
             Catch::Contains("connection refused"));
  CHECK(metric(*other, "snowflake_seq_strict_forward_failures_total{tag=\"chat\"}") == 1);
  std::optional<std::int64_t> next;
  REQUIRE(eventually([&] { return (next = number_from(*other, "chat")).has_value(); }, 30s));
  CHECK(*next > highest);
  // The killed owner's unused rest is a gap: the new owner starts above its range.
  CHECK(*next >= 51);
}

TEST_CASE(
    "seq order: a per-daemon tag made strict drops what the daemons took before (confirmed), "
    "then one owner hands it out above all of it, in real-time order, and made per-daemon again "
    "both hand it out",
    "[sequence][strict]") {
  Pair p;
  REQUIRE(run_seq(*p.a, {"create", "chat", "--start", "1", "--step", "10"}).status.code == 0);
  // Each daemon holds a range of it, some of it handed out (once it has
  // read the new tag: 503 sequence_unavailable before).
  for (const Daemon* d : {p.a.get(), p.b.get()}) {
    REQUIRE(eventually([&] { return number_from(*d, "chat").has_value(); }, 15s));
  }
  std::int64_t highest = std::max(highest_of(*p.a, "chat", 3), highest_of(*p.b, "chat", 3));

  CHECK(run_seq(*p.a, {"order", "chat", "sideways"}).status.code == 2);
  CHECK(run_seq(*p.a, {"order", "nothing", "strict"}).status.code == 2);
  const auto ordered = run_seq(*p.a, {"order", "chat", "strict"});
  INFO(ordered.out << ordered.err);
  REQUIRE(ordered.status.code == 0);
  CHECK_THAT(ordered.out, Catch::Contains("strict order from now on"));
  // Again: the same order, the same raise, confirmed.
  CHECK(run_seq(*p.a, {"order", "chat", "strict"}).status.code == 0);

  Daemon* owner = p.owner_of("chat");
  REQUIRE(owner);
  Daemon* other = p.other_than(owner);
  CHECK(error_of(http_get(other->port(), "/seq/chat", kAnswerYourself)) == "not_owner");
  // Above every number either daemon took before, the owner's own buffer
  // of then included.
  const auto first = number_from(*owner, "chat");
  REQUIRE(first);
  CHECK(*first > highest);
  std::vector<TimedAnswer> answers;
  for (int i = 0; i < 40; ++i) {
    const auto got = strict_get(i % 2 ? p.a->port() : p.b->port(), "chat");
    REQUIRE(got);
    answers.push_back(*got);
  }
  CHECK(check_real_time_order(answers).violations.empty());
  for (const auto& a : answers) highest = std::max(highest, a.highest);

  const auto back = run_seq(*p.a, {"order", "chat", "per-daemon"});
  INFO(back.out << back.err);
  REQUIRE(back.status.code == 0);
  // Both hand it out themselves again, never a number twice.
  std::set<std::int64_t> seen;
  const bool both = eventually(
      [&] {
        const auto from_a = number_from(*p.a, "chat");
        const auto from_b = number_from(*p.b, "chat");
        if (from_a) CHECK(seen.insert(*from_a).second);
        if (from_b) CHECK(seen.insert(*from_b).second);
        return from_a && from_b;
      },
      10s);
  if (!both) {
    FAIL("a:\n" << p.a->process().stderr_text() << "\nb:\n" << p.b->process().stderr_text());
  }
  CHECK(*seen.begin() > *first);
}

TEST_CASE(
    "strict sequences at the top of the number space: the last numbers through either daemon in "
    "order, then 410 sequence_exhausted from both",
    "[sequence][strict]") {
  Pair p;
  // 2^63 - 2 is the largest number: seven left.
  REQUIRE(run_seq(*p.a, {"create", "top", "--order", "strict", "--start", "9223372036854775800"})
              .status.code == 0);
  REQUIRE(p.owner_of("top"));
  std::vector<std::int64_t> got;
  int exhausted = 0;
  for (int i = 0; i < 12; ++i) {
    const auto r = http_get((i % 2 ? p.a : p.b)->port(), "/seq/top");
    REQUIRE(r);
    if (r->status == 200) {
      got.push_back(std::stoll(json::parse(r->body)["id"].get<std::string>()));
    } else {
      CHECK(r->status == 410);
      CHECK(error_of(r) == "sequence_exhausted");
      ++exhausted;
    }
  }
  // owner_of took one; the rest in order, the last 2^63 - 2.
  REQUIRE(got.size() == 6);
  CHECK(std::is_sorted(got.begin(), got.end()));
  CHECK(got.back() == 9223372036854775806);
  CHECK(exhausted == 6);
  // A batch larger than what is left: refused whole, nothing handed out twice.
  CHECK(error_of(http_get(p.a->port(), "/seq/top?count=3")) == "sequence_exhausted");
}

TEST_CASE(
    "strict sequences: a daemon started from a copy of the owner's state directory is another "
    "owner candidate, never the owner's twin: numbers through both in real-time order, none "
    "twice, and the owner killed, the copy takes over above them",
    "[sequence][strict]") {
  ZooKeeperServer zk;
  TempDir sa, parent;
  auto a = std::make_unique<Daemon>(strict_config(zk.hosts(), sa.path()));
  const auto worker_a = wait_ready(*a);
  REQUIRE(run_seq(*a, {"create", "cs", "--order", "strict", "--step", "20"}).status.code == 0);
  std::int64_t highest = 0;
  REQUIRE(eventually([&] { return number_from(*a, "cs").has_value(); }, 15s));
  highest = highest_of(*a, "cs", 10);

  // A cloned volume, `cp -a` of the running owner's state: its worker ID,
  // its run, its sequence holder. The owner record names the owner's run
  // token, which is random per process: the copy is not it.
  const auto copy = parent.path() / "copied-state";
  copy_directory(sa.path(), copy);
  auto b = std::make_unique<Daemon>(strict_config(zk.hosts(), copy));
  const auto worker_b = wait_ready(*b);
  CHECK(worker_b != worker_a);
  // A tag stays where it was claimed (whatever the copy's worker ID ranks):
  // the copy, once it has read the tag's owner, names the original, which
  // alone hands it out.
  std::optional<HttpReply> from_b;
  REQUIRE(eventually([&] {
    from_b = http_get(b->port(), "/seq/cs", kAnswerYourself);
    return owner_port(from_b).has_value();
  }));
  CHECK(owner_port(from_b) == a->port());
  Daemon* owner = a.get();
  Daemon* other = b.get();

  int failures = 0;
  auto answers = ask_both(*a, *b, "cs", 60, failures);
  CHECK(failures == 0);
  std::set<std::int64_t> seen;
  for (const auto& answer : answers) {
    CHECK(answer.lowest > highest);  // above what the original handed out before the copy
    CHECK(seen.insert(answer.lowest).second);
  }
  const auto verdict = check_real_time_order(answers);
  CHECK(verdict.violations.empty());
  CHECK(verdict.pairs > 1000);
  for (const auto& answer : answers) highest = std::max(highest, answer.highest);

  // The owner killed: the other takes the tag over once its lease is over
  // for good, above every number handed out.
  owner->process().send_signal(SIGKILL);
  REQUIRE(owner->process().wait_for_exit(10s));
  std::optional<std::int64_t> next;
  REQUIRE(eventually([&] { return (next = number_from(*other, "cs")).has_value(); }, 30s));
  CHECK(*next > highest);
}

// Over TLS, the daemon's answer to `target` of the test's CA's certificate.
std::optional<HttpReply> over_tls(const Daemon& d, const CertificateFiles& ca,
                                  const std::string& target,
                                  const std::string& extra_headers = "") {
  TlsConnection c(d.port(), {.ca_file = ca.cert});
  return c.request(target, extra_headers);
}

// A metric's value as a daemon serving TLS prints it; -1 when it does not.
std::int64_t metric_tls(const Daemon& d, const CertificateFiles& ca, const std::string& name) {
  const auto r = over_tls(d, ca, "/metrics");
  if (!r) return -1;
  const auto at = r->body.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stoll(r->body.substr(at + name.size() + 2));
}

// The worker ID of a daemon serving TLS, once it is ready.
std::uint32_t wait_ready_tls(const Daemon& d, const CertificateFiles& ca) {
  std::uint32_t worker = 0;
  REQUIRE(eventually(
      [&] {
        const auto r = over_tls(d, ca, "/ready");
        if (!r || r->status != 200) return false;
        worker = json::parse(r->body)["worker_id"].get<std::uint32_t>();
        return true;
      },
      20s));
  return worker;
}

TEST_CASE(
    "strict sequences over TLS: the daemon that does not own a tag passes its requests on over "
    "TLS, the owner verified against http.forward_ca_file and the name it carries, and clients "
    "asking either get numbers in real-time order, and an owner it cannot verify is refused naming "
    "why",
    "[sequence][strict][tls]") {
  ZooKeeperServer zk;
  TempDir sa, sb, sc, certs;
  const TestCertificates made(certs.path());
  const auto ca = made.make_ca("ca");
  const auto other_ca = made.make_ca("other-ca");
  const auto cert = made.make_server("server", ca, 0x52);  // 127.0.0.1, ::1, localhost
  // A forward's deadline is sequences.max_wait_ms and a second: first TLS
  // handshakes and refills of an ASan owner on a busy machine (a CI run met
  // it) get five.
  const auto tls_config = [&](const json& forwarding) {
    json http = {{"tls_cert_file", cert.cert.string()}, {"tls_key_file", cert.key.string()}};
    http.merge_patch(forwarding);
    return json{{"http", http}, {"sequences", {{"max_wait_ms", 5000}}}};
  };
  // One verifies owners by their address (127.0.0.1 is in the certificate),
  // the other by the name the fleet's certificates carry.
  Daemon a(
      strict_config(zk.hosts(), sa.path(), tls_config({{"forward_ca_file", ca.cert.string()}})));
  Daemon b(strict_config(
      zk.hosts(), sb.path(),
      tls_config({{"forward_ca_file", ca.cert.string()}, {"forward_tls_name", "localhost"}})));
  wait_ready_tls(a, ca);
  wait_ready_tls(b, ca);
  REQUIRE(run_seq(a, {"create", "tlschat", "--order", "strict"}).status.code == 0);
  Daemon* owner = nullptr;
  REQUIRE(eventually([&] {
    for (Daemon* d : {&a, &b}) {
      const auto r = over_tls(*d, ca, "/seq/tlschat", kAnswerYourself);
      if (r && r->status == 200) owner = d;
    }
    return owner != nullptr;
  }));
  Daemon& other = owner == &a ? b : a;
  // The owner's ranges grow from one number as it is asked (sizing.hpp):
  // asked first, it holds more than one before the clients come.
  for (int i = 0; i < 50; ++i) {
    const auto r = over_tls(*owner, ca, "/seq/tlschat", kAnswerYourself);
    REQUIRE((r && r->status == 200));
  }

  // Two clients, each asking both daemons in turn over TLS: every request
  // answered (the one that does not own the tag passes it on), in order.
  std::mutex m;
  std::vector<TimedAnswer> answers;
  int failures = 0;
  auto client = [&](int offset) {
    TlsConnection ca_conn(a.port(), {.ca_file = ca.cert});
    TlsConnection cb_conn(b.port(), {.ca_file = ca.cert});
    for (int i = 0; i < 100; ++i) {
      TlsConnection& c = (i + offset) % 2 ? ca_conn : cb_conn;
      const auto sent = TestClock::now();
      const auto r = c.request("/seq/tlschat");
      const auto received = TestClock::now();
      std::lock_guard lock(m);
      if (r && r->status == 200) {
        const auto n = std::stoll(json::parse(r->body)["id"].get<std::string>());
        answers.push_back(TimedAnswer{sent, received, n, n});
      } else {
        ++failures;
      }
    }
  };
  std::thread t1(client, 0), t2(client, 1);
  t1.join();
  t2.join();
  CHECK(failures == 0);
  const auto verdict = check_real_time_order(answers);
  CHECK(verdict.violations.empty());
  CHECK(verdict.pairs > 1000);
  CHECK(metric_tls(other, ca, "snowflake_seq_strict_forwarded_total{tag=\"tlschat\"}") >= 100);
  CHECK(metric_tls(other, ca, "snowflake_seq_strict_forward_failures_total{tag=\"tlschat\"}") == 0);

  // A third daemon that trusts another CA, and one that wants another name:
  // neither passes a request on to an owner it cannot verify; each refuses
  // at the deadline naming the owner and why.
  TempDir sd;
  Daemon wrong_ca(strict_config(zk.hosts(), sc.path(),
                                tls_config({{"forward_ca_file", other_ca.cert.string()}})));
  Daemon wrong_name(strict_config(
      zk.hosts(), sd.path(),
      tls_config({{"forward_ca_file", ca.cert.string()}, {"forward_tls_name", "elsewhere.test"}})));
  wait_ready_tls(wrong_ca, ca);
  wait_ready_tls(wrong_name, ca);
  for (auto [d, why] : {std::pair{&wrong_ca, std::string("not trusted")},
                        std::pair{&wrong_name, std::string("mismatch")}}) {
    std::optional<HttpReply> r;
    // The owner as it was: a tag stays with the daemon that claimed it. A
    // daemon that has not read the sequences yet says so first
    // (sequence_unavailable): asked until it names the owner.
    REQUIRE(eventually(
        [&] {
          r = over_tls(*d, ca, "/seq/tlschat");
          return r && error_of(r) == "not_owner";
        },
        60s));
    INFO(r->body);
    REQUIRE(r->status == 503);
    CHECK(error_of(r) == "not_owner");
    CHECK_THAT(json::parse(r->body)["message"].get<std::string>(), Catch::Contains(why));
  }
}

TEST_CASE(
    "strict sequences in a fleet half on TLS (a rollout): a plain daemon passes a TLS owner's "
    "requests on over TLS, the TLS one refuses a plain owner's at once naming its http URL "
    "(nothing sent on in the clear), and snowflaked get follows it there",
    "[sequence][strict][tls]") {
  ZooKeeperServer zk;
  TempDir sa, sb, certs;
  const TestCertificates made(certs.path());
  const auto ca = made.make_ca("ca");
  const auto cert = made.make_server("server", ca, 0x51);
  const json over_tls_config = {
      {"http", {{"tls_cert_file", cert.cert.string()}, {"tls_key_file", cert.key.string()}}}};
  Daemon secure(strict_config(zk.hosts(), sa.path(), over_tls_config));
  Daemon plain(
      strict_config(zk.hosts(), sb.path(), {{"http", {{"forward_ca_file", ca.cert.string()}}}}));
  const auto plain_worker = wait_ready(plain);
  const auto over = [&](const std::string& target) { return over_tls(secure, ca, target); };
  const std::uint32_t secure_worker = wait_ready_tls(secure, ca);
  // A tag each owns. The one a tag ranks first for (rendezvous hashing)
  // claims it first, but a loaded machine may let the other come first,
  // and a tag stays where it was claimed: tags are made, a missing side's
  // first, until each daemon owns one, by the owner the plain one names.
  const std::string secure_url = "https://127.0.0.1:" + std::to_string(secure.port());
  const std::string plain_url = "http://127.0.0.1:" + std::to_string(plain.port());
  std::string on_secure, on_plain;
  for (int i = 0; i < 40 && (on_secure.empty() || on_plain.empty()); ++i) {
    const std::string tag = "mix" + std::to_string(i);
    const auto first = coord::rank_owners(tag, {secure_worker, plain_worker}).front();
    if (!(first == secure_worker ? on_secure : on_plain).empty()) continue;
    REQUIRE(run_seq(plain, {"create", tag, "--order", "strict"}).status.code == 0);
    json owner_url;
    REQUIRE(eventually([&] {
      const auto r = http_get(plain.port(), "/status");
      if (!r || r->status != 200) return false;
      owner_url = json::parse(r->body)["sequences"]["tags"][tag].value("owner_url", json());
      return owner_url.is_string();
    }));
    (owner_url == secure_url ? on_secure : on_plain) = tag;
  }
  REQUIRE_FALSE(on_secure.empty());
  REQUIRE_FALSE(on_plain.empty());

  // The plain daemon passes a request on over TLS, verifying the owner.
  std::optional<HttpReply> passed;
  REQUIRE(eventually([&] {
    passed = http_get(plain.port(), "/seq/" + on_secure);
    return passed && passed->status == 200;
  }));
  CHECK(metric(plain, "snowflake_seq_strict_forwarded_total{tag=\"" + on_secure + "\"}") >= 1);
  const auto status = json::parse(http_get(plain.port(), "/status")->body);
  CHECK(status["sequences"]["tags"][on_secure]["owner_url"] == secure_url);
  // The TLS daemon sends nothing on in the clear: it names the plain
  // owner's http URL at once (not held to the deadline: no forward fails).
  std::optional<HttpReply> named;
  REQUIRE(eventually([&] {
    named = over("/seq/" + on_plain);
    return named && named->status == 503 &&
           json::parse(named->body).value("owner_url", json()) == plain_url;
  }));
  CHECK(error_of(named) == "not_owner");
  CHECK_THAT(json::parse(named->body)["message"].get<std::string>(), Catch::Contains("plain HTTP"));
  CHECK(metric_tls(secure, ca,
                   "snowflake_seq_strict_forward_failures_total{tag=\"" + on_plain + "\"}") == 0);
  // A plain daemon without http.forward_ca_file (a config from before the
  // key) names a TLS owner at once, as it did before: nothing to verify it by.
  TempDir sc;
  Daemon unverifying(strict_config(zk.hosts(), sc.path()));
  wait_ready(unverifying);
  std::optional<HttpReply> named_tls;
  REQUIRE(eventually([&] {
    named_tls = http_get(unverifying.port(), "/seq/" + on_secure);
    return named_tls && named_tls->status == 503 &&
           json::parse(named_tls->body).value("owner_url", json()) == secure_url;
  }));
  CHECK_THAT(json::parse(named_tls->body)["message"].get<std::string>(),
             Catch::Contains("http.forward_ca_file"));
  CHECK(metric(unverifying,
               "snowflake_seq_strict_forward_failures_total{tag=\"" + on_secure + "\"}") == 0);

  // The client follows the URL named, whatever the scheme of the daemon it asked.
  const auto follow = [&](const std::string& tag, const std::string& server) {
    return run_process({snowflaked_binary(), "get", tag, "--seq", "--count", "2", "--servers",
                        server, "--cacert", ca.cert.string()});
  };
  const auto through_secure = follow(on_plain, secure_url);
  INFO(through_secure.err);
  CHECK(through_secure.status.code == 0);
  CHECK(through_secure.out == "1\n2\n");
  const auto through_plain = follow(on_secure, plain_url);
  INFO(through_plain.err);
  CHECK(through_plain.status.code == 0);
  CHECK(through_plain.out == "2\n3\n");  // 1 went out above
}

TEST_CASE(
    "strict sequences: a daemon that knows no owner (released, the next one not claimed yet) "
    "holds a request until one claims the tag, instead of refusing it",
    "[sequence][strict]") {
  ZooKeeperServer zk;
  TempDir sa, sb, sc;
  const json patient = {{"sequences", {{"max_wait_ms", 5000}}}};
  std::vector<std::unique_ptr<Daemon>> all;
  std::vector<std::uint32_t> workers;
  for (const TempDir* dir : {&sa, &sb, &sc}) {
    all.push_back(std::make_unique<Daemon>(strict_config(zk.hosts(), dir->path(), patient)));
  }
  for (auto& d : all) workers.push_back(wait_ready(*d));
  REQUIRE(run_seq(*all[0], {"create", "chat", "--order", "strict"}).status.code == 0);
  std::size_t owner = all.size();
  REQUIRE(eventually([&] {
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (number_from(*all[i], "chat")) owner = i;
    }
    return owner < all.size();
  }));
  // Of the other two, the one the tag ranks higher claims at once when the
  // owner lets it go; stopped, it cannot, and the last one claims a
  // second later (its place in the ranking): meanwhile it knows no owner.
  std::size_t next = all.size(), last = all.size();
  for (const auto id : coord::rank_owners("chat", workers)) {
    const auto i =
        static_cast<std::size_t>(std::find(workers.begin(), workers.end(), id) - workers.begin());
    if (i == owner) continue;
    (next == all.size() ? next : last) = i;
  }
  REQUIRE(last < all.size());
  REQUIRE(eventually([&] { return http_get(all[last]->port(), "/seq/chat")->status == 200; }));
  all[next]->process().send_signal(SIGSTOP);
  all[owner]->process().send_signal(SIGTERM);
  REQUIRE(all[owner]->process().wait_for_exit(20s));
  // Released: asked now, it waits for its own claim.
  const auto r = http_get(all[last]->port(), "/seq/chat");
  all[next]->process().send_signal(SIGCONT);
  REQUIRE(r);
  INFO(r->body);
  CHECK(r->status == 200);
  CHECK(number_from(*all[last], "chat").has_value());  // its own now
}

TEST_CASE(
    "strict sequences: an owner record lost while the node stays strict is said once and left "
    "alone (no ZooKeeper request a pass), refused not_owner, and served again once seq order "
    "makes it",
    "[sequence][strict]") {
  ZooKeeperServer zk;
  TempDir state;
  Daemon d(strict_config(zk.hosts(), state.path()));
  wait_ready(d);
  REQUIRE(run_seq(d, {"create", "chat", "--order", "strict"}).status.code == 0);
  REQUIRE(eventually([&] { return number_from(d, "chat").has_value(); }, 15s));
  // ZooKeeper requests over a window of 10 heartbeats (every 300 ms): the
  // heartbeat's own and the supplier's background work.
  const auto requests_over_ten_heartbeats = [&] {
    const auto beats = metric(d, "snowflake_heartbeats_total");
    const auto from = metric(d, "snowflake_zookeeper_requests_total");
    REQUIRE(eventually([&] { return metric(d, "snowflake_heartbeats_total") >= beats + 10; }, 30s));
    return metric(d, "snowflake_zookeeper_requests_total") - from;
  };
  const auto before = requests_over_ten_heartbeats();
  // A loss (or a hand) deletes the record; the node still says strict.
  REQUIRE(connect(zk)->remove(coord::tree::sequence_owner(kE2eRoot, "chat"), -1));
  const std::string said = "is strict but has no owner record any more";
  REQUIRE(d.process().wait_for_stderr(said, 10s));
  const auto after = requests_over_ten_heartbeats();
  INFO("requests over 10 heartbeats: " << before << " before, " << after << " after");
  // Before: a read, a relist and a failed claim every 100 ms (245 requests
  // in 5 s) and an error line each.
  CHECK(after <= before + 10);
  const std::string log = d.process().stderr_text();
  std::size_t lines = 0;
  for (auto at = log.find(said); at != std::string::npos; at = log.find(said, at + 1)) ++lines;
  CHECK(lines == 1);
  CHECK(error_of(http_get(d.port(), "/seq/chat", kAnswerYourself)) == "not_owner");
  // The documented repair: the record made again, and the tag served.
  const auto repaired = run_seq(d, {"order", "chat", "strict"});
  INFO(repaired.out << repaired.err);
  CHECK(repaired.status.code == 0);
  CHECK(eventually([&] { return number_from(d, "chat").has_value(); }, 30s));
}
