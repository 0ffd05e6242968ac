#pragma once
// The local state file: which worker ID this host held and the time up to
// which it may have issued IDs. A restart reads it to take its worker ID
// back (recycle: without draining the pool in a crash loop) and for a tight
// floor after kill -9: `reserved_until` is written *before* the generator may
// issue up to it.
//
// Each record also says where and when it was written (the machine's boot ID
// and the directory's identity), which is what lets a restart prove that the
// writer is dead (see StateDir::proves_writer_dead).
//
// Written atomically: temp file, fsync, rename, fsync of the directory.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "snowflake/base/result.hpp"
#include "snowflake/config/coordinator_type.hpp"
#include "snowflake/ids/layout.hpp"
#include "snowflake/state/owner_token.hpp"

namespace snowflake::state {

struct StateRecord {
  CoordinatorType strategy = CoordinatorType::static_id;
  std::string root;  // zookeeper.root it belongs to ("" in static mode)
  std::uint32_t worker_id = 0;
  std::string node;                   // our node's path ("" in static mode)
  std::optional<OwnerToken> owner{};  // the token in our node (ZooKeeper modes)
  LayoutSettings layout{};
  std::int64_t hwm = 0;             // newest issued time unit (Unix ms)
  std::int64_t reserved_until = 0;  // no ID was or will be issued above this before the next write
  // Where and when this was written: /proc/sys/kernel/random/boot_id, and the
  // state directory's "device:inode". Empty in files written by 0.1.0.
  std::string boot_id{};
  std::string dir_id{};

  bool operator==(const StateRecord&) const = default;
};

// The file's text (worker.json) and back; nullopt for anything that is not a
// state file of this format, however it came to be (the disk is not trusted).
std::optional<StateRecord> decode_state(std::string_view text);
std::string encode_state(const StateRecord& record);

class StateFile {
 public:
  explicit StateFile(std::string dir);

  // nullopt: no file yet. An unreadable or malformed file is an error (the
  // caller decides; it never silently means "no floor").
  Result<std::optional<StateRecord>, std::string> load() const;
  Result<void, std::string> save(const StateRecord& record) const;

  const std::string& path() const noexcept { return path_; }

 private:
  std::string dir_;
  std::string path_;
};

}  // namespace snowflake::state
