#pragma once
// A strict sequence's gate on the request path (`seq create --order
// strict`): only its owner hands out its numbers, and only within the run
// of its worker-ID lease in which it last read the ownership as its own
// (sequence_store/strict_owner.hpp says why that fences it). The supplier opens and
// closes it; a request reads it with three atomic loads.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/lease.hpp"

namespace snowflake {

// Where a strict tag's owner answers, read in one piece (an address with
// another owner's scheme would send a client to the wrong one).
struct OwnerPlace {
  std::string address;  // "host:port"; "": none known
  bool tls = false;     // its listeners serve TLS
  // "https://host:port" or "http://host:port"; "" with no address.
  std::string url() const {
    if (address.empty()) return {};
    return (tls ? "https://" : "http://") + address;
  }
};

class StrictGate {
 public:
  bool strict() const noexcept { return strict_.load(std::memory_order_acquire); }
  void set_strict() noexcept { strict_.store(true, std::memory_order_release); }
  // The record names this daemon, its gate not open yet (a claim confirmed
  // on the supplier's next pass): requests wait for it rather than be
  // refused, those passed on to it by a daemon that read the record first
  // among them.
  void set_coming(bool named_here) noexcept {
    coming_.store(named_here, std::memory_order_release);
  }
  bool coming() const noexcept { return coming_.load(std::memory_order_acquire); }

  // `seq order TAG per-daemon`: handed out by every daemon again.
  void set_per_daemon() {
    set_coming(false);
    disown();
    set_owner_address({});
    ownerless(false);
    strict_.store(false, std::memory_order_release);
  }

  // Ours within lease run `generation`; 0: not ours.
  void own(std::uint64_t generation) noexcept {
    owned_generation_.store(generation, std::memory_order_release);
  }
  void disown() noexcept { own(0); }
  std::uint64_t owned_generation() const noexcept {
    return owned_generation_.load(std::memory_order_acquire);
  }
  // A number may be handed out now: ours, and the lease valid in the run
  // in which we confirmed it (the deadline read first: see Lease).
  bool open(const Lease& lease) const noexcept {
    const std::uint64_t owned = owned_generation();
    return owned != 0 && lease.may_issue() && lease.generation() == owned;
  }

  // For /metrics: the owner record's changes this daemon has seen, its
  // refusals (not_owner), and since when (steady clock, ns; 0: not) it has
  // known no owner that could hand out: none recorded, or one whose run
  // lost its worker ID and is waited out.
  std::atomic<std::uint64_t> owner_changes{0};
  mutable std::atomic<std::uint64_t> refused{0};  // counted by the request path
  // Requests passed on to the owner and answered by it, and those that got
  // no answer from it (then refused not_owner, and counted there too).
  mutable std::atomic<std::uint64_t> forwarded{0};
  mutable std::atomic<std::uint64_t> forward_failures{0};
  std::atomic<std::int64_t> ownerless_since_ns{0};
  void ownerless(bool none) noexcept {
    if (!none) {
      ownerless_since_ns.store(0, std::memory_order_relaxed);
      return;
    }
    std::int64_t expected = 0;
    ownerless_since_ns.compare_exchange_strong(
        expected, BootClock::now().time_since_epoch().count(), std::memory_order_relaxed);
  }

  // Where the owner answers ("host:port"; "" : none known), and whether
  // over TLS (a daemon with plain HTTP cannot pass requests on to it).
  void set_owner_address(std::string address, bool tls = false) {
    std::lock_guard lock(mutex_);
    owner_address_ = std::move(address);
    owner_tls_ = tls && !owner_address_.empty();
  }
  std::string owner_address() const {
    std::lock_guard lock(mutex_);
    return owner_address_;
  }
  OwnerPlace owner() const {
    std::lock_guard lock(mutex_);
    return {owner_address_, owner_tls_};
  }

 private:
  std::atomic<bool> strict_{false};
  std::atomic<std::uint64_t> owned_generation_{0};
  std::atomic<bool> coming_{false};
  mutable std::mutex mutex_;
  std::string owner_address_;
  bool owner_tls_ = false;
};

}  // namespace snowflake
