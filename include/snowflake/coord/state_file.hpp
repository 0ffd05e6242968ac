#pragma once
// The local state file: which worker ID this host held and the time up to
// which it may have issued IDs. A restart reads it to take its worker ID
// back (recycle: without draining the pool in a crash loop), to start while
// ZooKeeper is down (sequential), and for a tight floor after kill -9:
// `reserved_until` is written *before* the generator may issue up to it.
//
// Written atomically: temp file, fsync, rename, fsync of the directory.

#include <cstdint>
#include <optional>
#include <string>

#include "snowflake/coord/node_data.hpp"
#include "snowflake/id_layout.hpp"
#include "snowflake/result.hpp"

namespace snowflake::coord {

struct StateRecord {
  std::string strategy;  // "sequential" | "recycle"
  std::string root;      // zookeeper.root it belongs to
  std::uint32_t worker_id = 0;
  std::string node;      // our node's path
  std::optional<OwnerToken> owner{};  // recycle: the token in our inuse node
  LayoutSettings layout{};
  std::int64_t hwm = 0;             // newest issued time unit (Unix ms)
  std::int64_t reserved_until = 0;  // no ID was or will be issued above this before the next write
};

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

}  // namespace snowflake::coord
