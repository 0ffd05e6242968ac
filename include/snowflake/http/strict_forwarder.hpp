#pragma once
// A strict sequence's requests that reach a daemon which does not own the
// tag (`seq create --order strict`) are passed on to its owner over a
// kept-alive HTTP/1.1 connection (TLS when the owner serves it), and the owner's answer passed
// back: a client behind a load balancer, or curl in a script, needs to know nothing of owners. The
// order still holds: the owner hands the number out while the client's request is open. The
// forwarder has a thread of its own; the connection that asked waits on its event loop
// (answer.hpp's Wait), woken once the owner's answer, or why there is none, is in.
//
// A forwarded request carries kForwardedHeader and is never forwarded
// again: a daemon that does not own the tag either answers it 503
// not_owner (two daemons that disagree on the owner for a moment cannot
// pass a request back and forth).

#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/result.hpp"
#include "snowflake/http/responses.hpp"
#include "snowflake/sequences/pending_outcome.hpp"
#include "snowflake/sequences/strict_gate.hpp"

namespace snowflake::http {

inline constexpr std::string_view kForwardedHeader = "X-Snowflake-Forwarded-By";

// The owner's answer, as much of it as goes back to the client.
struct OwnerAnswer {
  unsigned status = 0;
  std::string body;
  std::string content_type;
  std::string retry_after;  // "" : none
};

// One forwarded request, shared by the forwarder's thread and the waiting
// connection's.
class ForwardCall : public PendingOutcome<Result<OwnerAnswer, std::string>> {
 public:
  using Outcome = Result<OwnerAnswer, std::string>;  // the error: why no answer came
};

// How owners are reached over TLS: the client context (make_peer_tls: the
// CAs that issued the daemons' certificates) and the name their
// certificates carry ("": the host of each owner's address).
struct ForwardingTls {
  std::shared_ptr<boost::asio::ssl::context> context;
  std::string name;
};

class StrictForwarder {
 public:
  using Deadline = BootClock::time_point;

  // `self`: this daemon's own address as its owner records name it (a
  // request is never forwarded there). `serves_tls`: this daemon's
  // listeners speak TLS, and it passes nothing on over plain HTTP (a
  // request that came encrypted is not sent on in the clear). `tls`: null
  // passes nothing on over TLS.
  StrictForwarder(std::string self, bool serves_tls, std::optional<ForwardingTls> tls);
  ~StrictForwarder();
  StrictForwarder(const StrictForwarder&) = delete;
  StrictForwarder& operator=(const StrictForwarder&) = delete;

  const std::string& self() const { return self_; }
  // Whether a request for `owner` is passed on to it (else refused naming it).
  bool passes_to(const OwnerPlace& owner) const { return owner.tls ? tls_ : !serves_tls_; }
  // GET `target` of `owner` with the client's `accept` ("" : none), on a
  // connection kept from an earlier call when there is one, over TLS when
  // the owner serves it (its certificate verified). The outcome is in by
  // `deadline`.
  std::shared_ptr<ForwardCall> forward(const OwnerPlace& owner, const std::string& target,
                                       const std::string& accept, Deadline deadline);

 private:
  class Pool;
  std::string self_;
  bool serves_tls_;
  bool tls_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace snowflake::http
