#include "holders.hpp"

#include <fmt/format.h>

#include <csignal>
#include <fstream>
#include <iterator>
#include <string>

namespace snowflake::chaos {

ChaosHolders::ChaosHolders(const ChaosCluster& cluster, int count,
                           std::vector<std::vector<std::string>> programs,
                           std::filesystem::path out)
    : cluster_(cluster),
      programs_(std::move(programs)),
      out_(std::move(out)),
      holders_(static_cast<std::size_t>(count)) {
  if (programs_.empty()) programs_.push_back({LEASE_HOLDER_PATH});
  // A holder appends to its run's file: one left by an earlier run in this
  // --out (CTest's seeds reuse theirs) would count its IDs again, and the
  // same seed makes the same cluster times, so the same IDs.
  std::filesystem::remove_all(out_ / "holders");
  std::filesystem::create_directories(out_ / "holders");
  for (auto& holder : holders_) {
    for (int d = 0; d < cluster_.daemons(); ++d) {
      holder.proxies.push_back(std::make_unique<test::FaultProxy>(cluster_.port(d)));
    }
  }
  for (int h = 0; h < count; ++h) start(h);
}

ChaosHolders::~ChaosHolders() {
  for (auto& holder : holders_) {
    if (holder.process && holder.frozen) holder.process->send_signal(SIGCONT);
  }
}

std::filesystem::path ChaosHolders::ids_file(int h, int run) const {
  return out_ / "holders" / fmt::format("h{}-run{}.ids", h, run);
}

void ChaosHolders::start(int h) {
  Holder& holder = holders_[static_cast<std::size_t>(h)];
  std::string servers;
  for (const auto& proxy : holder.proxies) {
    servers += fmt::format("{}{}", servers.empty() ? "" : ",", proxy->port());
  }
  const int run = holder.runs++;
  // Its lease 1.5 s, the longest these daemons grant; a request waits 250
  // ms for a daemon, so that a holder cut off from all of them goes on
  // making IDs between its attempts, up to its deadline.
  std::vector<std::string> command = programs_[static_cast<std::size_t>(h) % programs_.size()];
  for (const std::string& arg :
       {std::string("--servers"), servers, std::string("--out"), ids_file(h, run).string(),
        std::string("--holder"), fmt::format("chaos-h{}", h), std::string("--duration-ms"),
        std::string("1500"), std::string("--timeout-ms"), std::string("250")}) {
    command.push_back(arg);
  }
  holder.process =
      std::make_unique<test::ChildProcess>(std::move(command), cluster_.holder_env(),
                                           out_ / "logs" / fmt::format("holder-h{}-run{}", h, run));
  holder.frozen = false;
}

void ChaosHolders::kill(int h) {
  Holder& holder = holders_[static_cast<std::size_t>(h)];
  if (!holder.process) return;
  if (holder.frozen) holder.process->send_signal(SIGCONT);
  holder.process->send_signal(SIGKILL);
  (void)holder.process->wait_for_exit(std::chrono::seconds(10));
  holder.process.reset();
  holder.frozen = false;
}

void ChaosHolders::freeze(int h, bool frozen) {
  Holder& holder = holders_[static_cast<std::size_t>(h)];
  if (!holder.process || holder.frozen == frozen) return;
  holder.process->send_signal(frozen ? SIGSTOP : SIGCONT);
  holder.frozen = frozen;
}

void ChaosHolders::cut_off(int h, bool cut) {
  for (auto& proxy : holders_[static_cast<std::size_t>(h)].proxies) {
    cut ? proxy->stall() : proxy->heal();
  }
}

std::vector<std::string> ChaosHolders::shut_down() {
  std::vector<std::string> unclean;
  for (std::size_t h = 0; h < holders_.size(); ++h) {
    Holder& holder = holders_[h];
    for (auto& proxy : holder.proxies) proxy->heal();
    if (!holder.process) continue;
    if (holder.frozen) holder.process->send_signal(SIGCONT);
    holder.frozen = false;
    holder.process->send_signal(SIGTERM);
    const auto status = holder.process->wait_for_exit(std::chrono::seconds(20));
    if (!status || status->code != 0 || status->signal != 0) {
      if (!status) holder.process->send_signal(SIGKILL);
      unclean.push_back(
          fmt::format("holder h{} did not exit 0 at SIGTERM ({})", h,
                      status ? fmt::format("code {}, signal {}", status->code, status->signal)
                             : std::string("still running after 20 s")));
    }
    holder.process.reset();
  }
  return unclean;
}

std::vector<Answer> ChaosHolders::answers() const {
  std::vector<Answer> out;
  for (int h = 0; h < size(); ++h) {
    for (int run = 0; run < holders_[static_cast<std::size_t>(h)].runs; ++run) {
      std::ifstream in(ids_file(h, run));
      const std::string text((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      std::vector<std::uint64_t> ids;
      // Whole lines only: a run killed as it wrote may have cut its last.
      for (std::size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) {
        if (nl > at) ids.push_back(std::stoull(text.substr(at, nl - at)));
      }
      Answer a;
      a.daemon = kHolderDaemons + h;
      a.run = run;
      a.status = 200;
      a.ids = to_runs(ids);
      out.push_back(std::move(a));
    }
  }
  return out;
}

}  // namespace snowflake::chaos
