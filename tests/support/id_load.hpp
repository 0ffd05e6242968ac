#pragma once
// Steady client load on one daemon for uniqueness tests: a thread asks for
// batches of IDs over a keep-alive connection until stopped, and records
// every ID issued and every refusal by its error code. Results are read after
// stop(), on the test's own thread (Catch2 assertions are not thread-safe).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace snowflake::test {

class IdLoad {
 public:
  // `route`: "/id/", or "/seq/" for a sequence's numbers (the same shape).
  IdLoad(unsigned short port, unsigned batch = 100, std::string tag = "load",
         std::string route = "/id/");
  ~IdLoad();
  IdLoad(const IdLoad&) = delete;
  IdLoad& operator=(const IdLoad&) = delete;

  void stop();
  // After stop():
  const std::vector<std::uint64_t>& ids() const { return ids_; }
  // Refusals by error code ("lease_expired", ...); "no_answer" for a failed
  // connection or a reply that did not arrive.
  const std::map<std::string, int>& refusals() const { return refusals_; }
  // IDs issued so far (readable while running).
  std::size_t issued() const { return issued_.load(); }
  // The largest ID (or number) issued so far (readable while running).
  std::uint64_t highest() const { return highest_.load(); }
  // After stop(): the index in ids() of the first ID whose request was sent
  // at or after `t` (ids().size() if none was).
  std::size_t first_asked_at_or_after(std::chrono::steady_clock::time_point t) const;

 private:
  void run();
  // Each answered batch: when its request was sent, and its first ID's index.
  struct Batch {
    std::chrono::steady_clock::time_point asked;
    std::size_t first;
  };

  unsigned short port_;
  unsigned batch_;
  std::string tag_;
  std::string route_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> issued_{0};
  std::atomic<std::uint64_t> highest_{0};
  std::vector<std::uint64_t> ids_;
  std::vector<Batch> batches_;
  std::map<std::string, int> refusals_;
  std::thread thread_;
};

// How many IDs occur more than once in `a` and `b` together.
std::size_t duplicates(const std::vector<std::uint64_t>& a,
                       const std::vector<std::uint64_t>& b = {});

}  // namespace snowflake::test
