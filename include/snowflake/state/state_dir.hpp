#pragma once
// The daemon's state directory (coordinator.state_dir), held by one process
// at a time: a `flock` on <dir>/lock, which also holds the holder's pid so a
// second daemon can say who has it. It owns the state file in it.
//
// The lock is also half of the proof that an earlier owner is dead (see
// proves_writer_dead): a daemon that restarts after a crash may take its
// worker ID back with its own state file's floor only with that proof.

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "snowflake/base/result.hpp"
#include "snowflake/state/state_file.hpp"

namespace snowflake::state {

class StateDir {
 public:
  // Creates the directory if it is missing (mode 0700), locks it and reads
  // the state file. Errors name the directory (and the holder's pid if
  // another process has it).
  static Result<std::unique_ptr<StateDir>, std::string> open(const std::string& dir);
  ~StateDir();
  StateDir(const StateDir&) = delete;
  StateDir& operator=(const StateDir&) = delete;

  // The state file as found when the directory was opened.
  const std::optional<StateRecord>& previous() const noexcept { return previous_; }
  // Saves `record`, stamped with this boot and this directory.
  Result<void, std::string> save(StateRecord record) const;

  // True if `record`'s writer has certainly exited: it was written in this
  // boot of this machine, into this very directory (not a copy of it), and
  // we hold the directory's lock, which every writer holds while it runs. A
  // record from a copied directory, a restored snapshot or a cloned machine
  // proves nothing.
  bool proves_writer_dead(const StateRecord& record) const;
  // False when this boot's ID could not be read (a sandbox that hides
  // /proc/sys): then proves_writer_dead() never holds.
  bool knows_boot() const noexcept { return !boot_id_.empty(); }

  const std::string& dir() const noexcept { return dir_; }
  const std::string& file_path() const noexcept { return file_.path(); }

 private:
  StateDir(std::string dir, int lock_fd, std::string boot_id, std::string dir_id);

  std::string dir_;
  int lock_fd_;
  std::string boot_id_;  // empty if the kernel does not say: then nothing is ever proved
  std::string dir_id_;   // "device:inode" of the directory
  StateFile file_;
  std::optional<StateRecord> previous_;
};

// This boot's ID (/proc/sys/kernel/random/boot_id), or "" if unreadable.
std::string current_boot_id();

// A directory's identity, "device:inode" ("" if it cannot be read): a copy
// of the directory, or the same path on a restored snapshot, has another.
std::string directory_identity(const std::string& dir);

// Whether a record stamped with `boot_id` and `dir_id` was written in this
// boot (`boot_now`, known) into the directory whose identity is `dir_now`.
// With the directory's lock held, that proves its writer has exited.
bool written_here(std::string_view boot_id, std::string_view dir_id, std::string_view boot_now,
                  std::string_view dir_now) noexcept;

}  // namespace snowflake::state
