#include "load.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <random>

#include "../support/http_client.hpp"
#include "../support/wall_clock.hpp"

namespace snowflake::chaos {

namespace {

using namespace std::chrono_literals;
using test::wall_us_now;

constexpr auto kSinglePace = 10ms;
constexpr auto kBatchPace = 20ms;
constexpr auto kDownPace = 50ms;  // while a daemon does not answer at all
constexpr auto kTimeout = 5s;     // longer than any fault that freezes a daemon

bool is_text(const test::HttpReply& reply) {
  return reply.headers.count("content-type") &&
         reply.headers.at("content-type").starts_with("text/plain");
}

// A daily number's answer: its period and numbers. Text is the printed
// form, "<period>/<number>" a line (kChaosDaily's template); JSON carries
// both ("number" or "numbers", and "period"). Empty if it reads otherwise.
std::pair<std::string, std::vector<std::uint64_t>> parse_daily(const test::HttpReply& reply) {
  std::pair<std::string, std::vector<std::uint64_t>> out;
  auto& [period, numbers] = out;
  if (is_text(reply)) {
    const std::string& b = reply.body;
    for (std::size_t at = 0; at < b.size();) {
      const std::size_t nl = std::min(b.find('\n', at), b.size());
      const std::string line = b.substr(at, nl - at);
      const std::size_t slash = line.find('/');
      if (slash == std::string::npos) return {};
      if (!period.empty() && line.substr(0, slash) != period) return {};  // one period a batch
      period = line.substr(0, slash);
      numbers.push_back(std::stoull(line.substr(slash + 1)));
      at = nl + 1;
    }
    return out;
  }
  const auto j = nlohmann::json::parse(reply.body);
  period = j.value("period", "");
  if (j.contains("number")) numbers.push_back(std::stoull(j["number"].get<std::string>()));
  if (j.contains("numbers")) {
    for (const auto& v : j["numbers"]) numbers.push_back(std::stoull(v.get<std::string>()));
  }
  return out;
}

std::vector<std::uint64_t> parse_ids(const test::HttpReply& reply) {
  std::vector<std::uint64_t> ids;
  if (is_text(reply)) {
    const std::string& b = reply.body;
    for (std::size_t at = 0; at < b.size();) {
      const auto nl = b.find('\n', at);
      std::uint64_t v = 0;
      std::from_chars(b.data() + at, b.data() + (nl == std::string::npos ? b.size() : nl), v);
      ids.push_back(v);
      at = nl == std::string::npos ? b.size() : nl + 1;
    }
    return ids;
  }
  const auto j = nlohmann::json::parse(reply.body);
  if (j.contains("id")) ids.push_back(std::stoull(j["id"].get<std::string>()));
  if (j.contains("ids")) {
    for (const auto& v : j["ids"]) ids.push_back(std::stoull(v.get<std::string>()));
  }
  return ids;
}

}  // namespace

HistoryWriter::HistoryWriter(const std::filesystem::path& path, const LayoutSettings& layout)
    : out_(path) {
  out_ << layout_line(layout) << '\n';
  std::map<std::string, std::uint64_t> starts;
  std::set<std::string> strict;
  for (const auto& q : kChaosSequences) {
    starts[q.tag] = q.start;
    if (q.strict) strict.insert(q.tag);
  }
  starts[kChaosDaily.tag] = kChaosDaily.start;  // each period's
  out_ << sequences_line(starts, strict) << '\n';
}

void HistoryWriter::write(const Answer& a) {
  const std::string line = to_json_line(a);
  std::lock_guard lock(mutex_);
  out_ << line << '\n';
  ++answers_;
}

void HistoryWriter::flush() {
  std::lock_guard lock(mutex_);
  out_.flush();
}

ChaosLoad::ChaosLoad(ChaosCluster& cluster, HistoryWriter& history, std::uint64_t seed)
    : cluster_(cluster), history_(history) {
  for (int d = 0; d < cluster.daemons(); ++d) {
    for (int which = 0; which < 3; ++which) {
      threads_.emplace_back(
          [this, d, which, seed] { client(d, which, seed * 1000 + d * 10 + which); });
    }
  }
}

ChaosLoad::~ChaosLoad() { stop(); }

void ChaosLoad::stop() {
  stopping_ = true;
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  history_.flush();
}

std::string ChaosLoad::next_target(int which, std::uint64_t n, std::mt19937_64& random,
                                   std::size_t& sequence) const {
  const auto uniform = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(random);
  };
  if (which == 0) return n % 2 ? "/id/orders" : "/id/users?format=text";
  if (which == 1) return "/id/batch?count=" + std::to_string(uniform(2, 300));
  // The sequences by turns, the daily one last (index: one past them).
  sequence = n % (std::size(kChaosSequences) + 1);
  std::string target =
      std::string("/seq/") +
      (sequence < std::size(kChaosSequences) ? kChaosSequences[sequence].tag : kChaosDaily.tag);
  switch (uniform(0, 3)) {
    case 0:
      return target;
    case 1:
      return target + "?format=text";
    default:
      return target + "?count=" + std::to_string(uniform(2, 20)) + (n % 3 ? "" : "&format=text");
  }
}

void ChaosLoad::record_daily(Answer& a, const test::HttpReply& reply) {
  std::pair<std::string, std::vector<std::uint64_t>> parsed;
  try {
    parsed = parse_daily(reply);
  } catch (const std::exception&) {  // not JSON, or a number that is none
    parsed = {};
  }
  auto& [period, numbers] = parsed;
  if (period.empty() || numbers.empty()) {
    a.error = "unreadable: " + reply.body.substr(0, 200);  // the checker flags it
    return;
  }
  // Recorded as a tag of its own per period: the checker's rules for a
  // sequence (no number twice, none below the start, rising per run, a
  // raise's floor) hold per period.
  a.seq = std::string(kChaosDaily.tag) + "@" + period;
  a.ids = to_runs(numbers);
  const std::uint64_t top = *std::max_element(numbers.begin(), numbers.end());
  std::lock_guard lock(daily_mutex_);
  auto& highest = daily_highest_[period];
  highest = std::max(highest, top);
}

std::map<std::string, std::uint64_t> ChaosLoad::daily_highest() const {
  std::lock_guard lock(daily_mutex_);
  return daily_highest_;
}

void ChaosLoad::client(int daemon, int which, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::unique_ptr<test::HttpConnection> connection;
  int connected_run = -1;
  for (std::uint64_t n = 0; !stopping_; ++n) {
    std::size_t sequence = 0;
    const std::string target = next_target(which, n, random, sequence);
    Answer a;
    a.daemon = daemon;
    a.client = which;
    const bool daily = which == 2 && sequence == std::size(kChaosSequences);
    if (which == 2) a.seq = daily ? kChaosDaily.tag : kChaosSequences[sequence].tag;
    a.sent_us = wall_us_now();
    std::optional<test::HttpReply> reply;
    try {
      if (!connection || connected_run != cluster_.run(daemon)) {
        connected_run = cluster_.run(daemon);
        connection =
            std::make_unique<test::HttpConnection>(cluster_.port(daemon), "127.0.0.1", kTimeout);
      }
      reply = connection->request(target);
    } catch (const std::exception&) {
      reply.reset();
    }
    a.received_us = wall_us_now();
    a.run = connected_run;
    a.clock_offset_ms = cluster_.max_clock_offset_ms(daemon, a.sent_us, a.received_us);
    if (!reply) {
      a.status = 0;
      connection.reset();
      history_.write(a);
      std::this_thread::sleep_for(kDownPace);
      continue;
    }
    a.status = static_cast<int>(reply->status);
    if (reply->status == 200 && daily) {
      record_daily(a, *reply);
    } else if (reply->status == 200) {
      const auto ids = parse_ids(*reply);
      a.ids = to_runs(ids);
      if (which == 2 && !ids.empty()) {
        const std::uint64_t top = *std::max_element(ids.begin(), ids.end());
        auto& highest = highest_[sequence];
        for (std::uint64_t seen = highest.load();
             top > seen && !highest.compare_exchange_weak(seen, top);) {
        }
      }
    } else {
      const auto body = nlohmann::json::parse(reply->body, nullptr, false);
      a.error = body.is_object() ? body.value("error", "") : "";
      a.retry_after = reply->headers.count("retry-after") > 0;
      // The router's words for a daemon that waits because the pool is full.
      a.standby = a.error == "not_ready" &&
                  body.value("message", "").find("every worker ID of the pool is in use") !=
                      std::string::npos;
    }
    history_.write(a);
    if (!reply->keep_alive) connection.reset();
    std::this_thread::sleep_for(which == 1 ? kBatchPace : kSinglePace);
  }
}

}  // namespace snowflake::chaos
