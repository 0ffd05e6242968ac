#pragma once
// <state_dir>/sequence-run: the instance token of the run that last served
// sequences from this state directory, stamped with the boot and the
// directory it was written in. The next run holds the directory's lock; if
// the stamp is this boot's and this very directory's, that run is over, and
// its holder node (sequence_store/sequence_holders.hpp), which would otherwise hold up
// `seq raise`, is deleted. A copy of the directory (a cloned volume, `cp -a`
// of a running daemon's state) or a file from another boot proves nothing:
// the run it names may be a daemon still handing out its ranges, cut off
// from ZooKeeper, and its holder node is what keeps a raise from confirming.
//
//   {"run": "<instance token>", "boot_id": "...", "dir_id": "device:inode"}
//
// (0.4 wrote the token alone, on one line: read, proving nothing.)

#include <optional>
#include <string>
#include <string_view>

#include "snowflake/base/result.hpp"

namespace snowflake::state {

struct PreviousRun {
  std::string run;
  // Written in this boot into this directory: with its lock held, that run is over.
  bool proven_over = false;
  // Why not, for the log ("written in another boot", ...); empty when proven.
  std::string why_not{};
};

// The file's text read (nullopt: it names no run: torn, foreign), judged
// against this boot and the directory's identity now (state_dir.hpp).
std::optional<PreviousRun> decode_sequence_run(std::string_view text, std::string_view boot_now,
                                               std::string_view dir_now);

// The run named there before (nullopt: none), and `run` written in its place.
Result<std::optional<PreviousRun>, std::string> swap_sequence_run(const std::string& dir,
                                                                  const std::string& run);

}  // namespace snowflake::state
