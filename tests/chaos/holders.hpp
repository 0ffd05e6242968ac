#pragma once
// The chaos run's lease holders: generators in other processes (the lease
// tests' client, tests/holders/lease_holder.cpp, which follows docs/api.md's
// holder contract) that lease worker IDs of the cluster's pool and make IDs
// in-process under the same faults as the daemons. Each reaches every daemon
// through fault proxies of its own, so it can be cut off from all of them
// while it runs; it can also be killed (no give-back: its worker ID comes
// back by reclaim) or frozen past its lease. Every ID a holder makes is in
// its run's file, which answers() reads back for the checker: one ID space
// with the daemons', nothing twice.
//
// Everything it starts is stopped, by pid, when it goes.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "../support/child_process.hpp"
#include "../support/fault_proxy.hpp"
#include "cluster.hpp"
#include "history.hpp"

namespace snowflake::chaos {

// In the history, holder `h`'s answers come as daemon kHolderDaemons + h.
inline constexpr int kHolderDaemons = 1000;

class ChaosHolders {
 public:
  // `count` holders, started now against every daemon of `cluster`; holder
  // h runs programs[h % programs.size()] (none: tests/holders/lease_holder),
  // with lease_holder's arguments.
  ChaosHolders(const ChaosCluster& cluster, int count,
               std::vector<std::vector<std::string>> programs, std::filesystem::path out);
  ~ChaosHolders();
  ChaosHolders(const ChaosHolders&) = delete;
  ChaosHolders& operator=(const ChaosHolders&) = delete;

  int size() const { return static_cast<int>(holders_.size()); }
  // kill -9, and started again (a new run, a new lease) by start().
  void kill(int h);
  void start(int h);
  void freeze(int h, bool frozen);  // SIGSTOP / SIGCONT
  void cut_off(int h, bool cut);    // every daemon's proxy stalled, or healed
  // SIGTERM to each (it gives its lease back), each must exit 0; what did
  // not, as crash lines.
  std::vector<std::string> shut_down();
  // Every ID each holder run made, as one 200 answer a run (daemon
  // kHolderDaemons + h, its run; no times: holders stamp by their own clock,
  // checked against their lease by the contract, not by the load's rules).
  std::vector<Answer> answers() const;

 private:
  struct Holder {
    std::vector<std::unique_ptr<test::FaultProxy>> proxies;  // one per daemon
    std::unique_ptr<test::ChildProcess> process;
    int runs = 0;
    bool frozen = false;
  };
  std::filesystem::path ids_file(int h, int run) const;

  const ChaosCluster& cluster_;
  std::vector<std::vector<std::string>> programs_;
  std::filesystem::path out_;
  std::vector<Holder> holders_;
};

}  // namespace snowflake::chaos
