// A generator in another process, as docs/api.md's holder contract has it:
// the small test client of the worker-ID lease routes. It leases a worker ID
// of the cluster's pool from any of the daemons it is given, makes IDs
// in-process in the layout the answer spells out, renews through any daemon
// at renew_after_ms, and stops at its own deadline (CLOCK_BOOTTIME read
// before the request was sent + lease_ms) and at its time fence, whichever
// comes first; told lease_lost it takes a new lease. Every ID it makes is
// written to --out, one a line, before it makes the next batch; SIGTERM
// gives the lease back with its last stamp.
//
//   lease_holder --servers PORT[,PORT...] --out FILE [--holder NAME]
//                [--duration-ms N] [--batch N] [--pause-ms N] [--timeout-ms N]
//
// --timeout-ms: how long one request waits for a daemon before the next is
// tried (2000); a holder cut off from every daemon waits that long for
// each, making no ID meanwhile, so the chaos runner's holders wait little
// and make IDs between their attempts up to their deadline.
//
// Exit 0 after SIGTERM; 2: usage. What it did is on stderr, a line an event.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <charconv>
#include <csignal>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../support/http_client.hpp"
#include "snowflake/base/clock.hpp"
#include "snowflake/ids/layout.hpp"

using namespace snowflake;
using nlohmann::json;

namespace {

std::atomic<bool> stopping{false};

void on_term(int) { stopping = true; }

struct Options {
  std::vector<unsigned short> servers;
  std::string out;
  std::string holder = "lease-holder";
  std::int64_t duration_ms = 1500;
  int batch = 20;
  std::int64_t pause_ms = 5;
  std::int64_t timeout_ms = 2000;
};

std::optional<Options> parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const std::string value = argv[i + 1];
    if (key == "--servers") {
      std::size_t at = 0;
      while (at <= value.size()) {
        const auto comma = value.find(',', at);
        const std::string one = value.substr(at, comma - at);
        o.servers.push_back(static_cast<unsigned short>(std::stoi(one)));
        if (comma == std::string::npos) break;
        at = comma + 1;
      }
    } else if (key == "--out") {
      o.out = value;
    } else if (key == "--holder") {
      o.holder = value;
    } else if (key == "--duration-ms") {
      o.duration_ms = std::stoll(value);
    } else if (key == "--batch") {
      o.batch = std::stoi(value);
    } else if (key == "--pause-ms") {
      o.pause_ms = std::stoll(value);
    } else if (key == "--timeout-ms") {
      o.timeout_ms = std::stoll(value);
    } else {
      return std::nullopt;
    }
  }
  if (o.servers.empty() || o.out.empty() || argc % 2 == 0) return std::nullopt;
  return o;
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What the holder knows of its lease.
struct Lease {
  std::uint32_t worker_id = 0;
  std::uint32_t datacenter_id = 0;
  std::string token;
  std::optional<IdLayout> layout;
  std::int64_t first_ms = 0;  // stamp nothing before
  std::int64_t max_ms = 0;    // nor in a unit after this one's
  std::int64_t lease_ms = 0;
  std::int64_t renew_after_ms = 0;
  BootClock::time_point deadline;  // sent + lease_ms
  BootClock::time_point renew_at;  // sent + renew_after_ms
};

class Holder {
 public:
  explicit Holder(Options o) : o_(std::move(o)), out_(o_.out, std::ios::app) {}

  int run() {
    while (!stopping) {
      if (!lease_ && !take()) {
        pause(200);
        continue;
      }
      if (BootClock::now() >= lease_->renew_at) renew();
      if (!lease_) continue;
      make_batch();
      pause(o_.pause_ms);
    }
    give_back();
    return 0;
  }

 private:
  // Sends to each server in turn from the last that answered; nullopt: none did.
  std::optional<test::HttpReply> ask(const std::string& method, const std::string& target) {
    for (std::size_t i = 0; i < o_.servers.size(); ++i) {
      const unsigned short port = o_.servers[(next_ + i) % o_.servers.size()];
      try {
        test::HttpConnection c(port, "127.0.0.1", std::chrono::milliseconds(o_.timeout_ms));
        auto r = c.request(target, method);
        if (r && r->status != 503) {
          next_ = (next_ + i) % o_.servers.size();
          return r;
        }
      } catch (const std::exception&) {  // that daemon is down: the next
      }
    }
    return std::nullopt;
  }

  bool take() {
    const auto sent = BootClock::now();
    const auto r =
        ask("POST", fmt::format("/v1/leases?holder={}&duration_ms={}", o_.holder, o_.duration_ms));
    if (!r || r->status != 200) return false;
    const json j = json::parse(r->body);
    const json& l = j["layout"];
    LayoutSettings s;
    s.time_bits = l["time_bits"];
    s.datacenter_bits = l["datacenter_bits"];
    s.worker_bits = l["worker_bits"];
    s.sequence_bits = l["sequence_bits"];
    s.time_unit_ms = l["time_unit_ms"];
    s.epoch_ms = l["epoch_ms"];
    s.order = parse_field_order(l["order"].get<std::string>()).value();
    Lease lease;
    lease.layout = IdLayout::create(s, wall_ms()).value();
    lease.worker_id = j["worker_id"];
    lease.datacenter_id = j["datacenter_id"];
    lease.token = j["token"];
    lease.first_ms = j["first_timestamp_ms"];
    lease.max_ms = j["max_timestamp_ms"];
    lease.lease_ms = j["lease_ms"];
    lease.renew_after_ms = j["renew_after_ms"];
    lease.deadline = sent + std::chrono::milliseconds(lease.lease_ms);
    lease.renew_at = sent + std::chrono::milliseconds(lease.renew_after_ms);
    lease_ = std::move(lease);
    last_unit_ = -1;
    std::cerr << fmt::format("took worker ID {} (first {}, fence {})\n", lease_->worker_id,
                             lease_->first_ms, lease_->max_ms);
    return true;
  }

  void renew() {
    const auto sent = BootClock::now();
    const auto r = ask("PUT", fmt::format("/v1/leases/{}?token={}&last_timestamp_ms={}",
                                          lease_->worker_id, lease_->token, last_ms_));
    if (r && r->status == 200) {
      const json j = json::parse(r->body);
      lease_->deadline = sent + std::chrono::milliseconds(j["lease_ms"].get<std::int64_t>());
      lease_->renew_at = sent + std::chrono::milliseconds(j["renew_after_ms"].get<std::int64_t>());
      lease_->max_ms = j["max_timestamp_ms"];
      return;
    }
    if (r && r->status == 410) {
      std::cerr << fmt::format("worker ID {}: lease lost\n", lease_->worker_id);
      lease_.reset();  // a new lease, a new worker ID
      return;
    }
    // Unanswered: the deadline stays where it was; asked again soon.
    lease_->renew_at = BootClock::now() + std::chrono::milliseconds(50);
  }

  // Up to `batch` IDs, each checked against the deadline and the fence as
  // it is stamped; written before the next batch is made.
  void make_batch() {
    const IdLayout& layout = *lease_->layout;
    std::string lines;
    for (int i = 0; i < o_.batch; ++i) {
      // The stamp read first, then the deadline: a holder frozen between
      // the two (or past its deadline) stops here, whatever its wall clock
      // says; read the other way round, a stop between them would stamp a
      // time read after the deadline.
      const std::int64_t now = wall_ms();
      if (BootClock::now() >= lease_->deadline) {
        std::cerr << fmt::format("worker ID {}: deadline passed, not stamping\n",
                                 lease_->worker_id);
        lease_.reset();
        break;
      }
      const std::int64_t unit = layout.unit_of_ms(now);
      if (now < lease_->first_ms || now < last_ms_) break;  // wait for the clock
      if (unit > layout.unit_of_ms(lease_->max_ms)) break;  // past the fence: renew first
      if (unit != last_unit_) {
        last_unit_ = unit;
        sequence_ = 0;
      } else if (sequence_ > layout.max_sequence()) {
        break;  // this unit is used up
      }
      const auto id =
          layout.compose(now, lease_->datacenter_id, lease_->worker_id, sequence_++).value();
      last_ms_ = now;
      lines += std::to_string(id);
      lines += '\n';
    }
    out_ << lines;
    out_.flush();
  }

  void give_back() {
    if (!lease_) return;
    (void)ask("DELETE", fmt::format("/v1/leases/{}?token={}&last_timestamp_ms={}",
                                    lease_->worker_id, lease_->token, last_ms_));
  }

  static void pause(std::int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

  Options o_;
  std::ofstream out_;
  std::optional<Lease> lease_;
  std::size_t next_ = 0;
  std::int64_t last_ms_ = 0;
  std::int64_t last_unit_ = -1;
  std::uint32_t sequence_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const auto options = parse(argc, argv);
  if (!options) {
    std::cerr << "usage: lease_holder --servers PORT[,PORT...] --out FILE [--holder NAME] "
                 "[--duration-ms N] [--batch N] [--pause-ms N] [--timeout-ms N]\n";
    return 2;
  }
  std::signal(SIGTERM, on_term);
  std::signal(SIGINT, on_term);
  return Holder(*options).run();
}
