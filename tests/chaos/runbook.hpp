#pragma once
// The runbook of docs/operations.md ("ZooKeeper lost or restored its data"),
// done by the nemesis after a zk_wipe or a zk_restore as an operator would,
// on a thread of its own (its commands wait for daemons; the nemesis goes
// on meanwhile, so that a daemon it stopped is started again in time):
//   - for a restore, `snowflaked cluster fence --wait` started while
//     ZooKeeper is down, landing as it answers; the daemons reconnect
//     beside it, and their grace (coordinator.restore_grace_ms) keeps what
//     they take from the restored records until they have read its fence;
//   - at the fault's planned end, once every daemon that ran through the
//     loss has noticed it (its /status counts the loss, or shows the fence
//     written since) or is a run started since (it holds nothing from
//     before), each sequence raised past the numbers the load was given,
//     again until confirmed, or made again above them where ZooKeeper lost
//     it (`seq raise`, `seq create`); the daily sequence period by period
//     (its definition made again frozen where it is gone), then thawed.
// Each raise is a seq_raise record of the schedule, so that the checker
// holds `seq raise`'s contract to it.

#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cluster.hpp"
#include "history.hpp"
#include "load.hpp"

namespace snowflake::chaos {

struct RunbookOutcome {
  std::string note;           // for the fault's detail: what was done, who was not seen
  std::vector<Fault> raises;  // seq_raise records
};

class LostDataRunbook {
 public:
  LostDataRunbook(ChaosCluster& cluster, const ChaosLoad& load) : cluster_(cluster), load_(load) {}

  // Where each daemon's log stands just before ZooKeeper loses its data:
  // the lines docs/operations.md tells the operator to wait for must come
  // after it (noticed()).
  void take_baseline();
  // Starts the runbook for a loss of `kind` (zk_wipe, zk_restore) that
  // has just happened; the sequences wait for `planned_end`.
  std::future<RunbookOutcome> start(const std::string& kind,
                                    std::chrono::steady_clock::time_point planned_end,
                                    std::size_t index);

 private:
  struct LogMark {  // a daemon's run, and how much it had logged, at the loss
    int run = -1;
    std::size_t logged = 0;
    int run_at_start = -1;  // its run when the runbook started
  };
  using Marks = std::map<int, LogMark>;
  RunbookOutcome run(const std::string& kind, const Marks& marks,
                     std::chrono::steady_clock::time_point planned_end, std::size_t index);
  std::string await_noticed(const Marks& marks);
  bool noticed(int d, const LogMark& mark);
  Fault raise(std::size_t q, const std::string& after, std::size_t index);
  void raise_daily(const std::string& after, std::size_t index, RunbookOutcome& out);
  int until_done(const std::vector<std::string>& args, const std::string& log_name,
                 int done_too = 0);

  ChaosCluster& cluster_;
  const ChaosLoad& load_;
  std::mutex mutex_;  // log_marks_: two runbooks may overlap
  Marks log_marks_;
};

}  // namespace snowflake::chaos
