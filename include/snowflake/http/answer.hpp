#pragma once
// What a handler gives the server for a request: a reply now, or a wait for
// one. A wait is for a dense sequence whose buffer is dry: its numbers come
// from the supplier's thread, and the event loop the request came in on
// must go on serving its other connections meanwhile. The server keeps the
// wait with the connection (no thread blocks), asks `retry` again each time
// the wake it subscribed fires, and at the deadline a last time, when the
// answer must come.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <variant>

#include "snowflake/base/clock.hpp"
#include "snowflake/http/responses.hpp"
#include "snowflake/sequences/in_flight_token.hpp"

namespace snowflake::http {

struct Reply {
  // From a response alone: most routes answer at once and hold nothing.
  Reply(Response r, InFlightToken held = {})  // NOLINT(google-explicit-constructor)
      : response(std::move(r)), in_flight(std::move(held)) {}
  Response response;
  // Held until the response has been written to its socket, or the
  // connection dropped: a sequence's numbers in flight, which `seq raise`'s
  // acknowledgement waits for (sequences/replies.hpp).
  InFlightToken in_flight{};
};

// Called once, from any thread, when a retry may succeed.
using Wake = std::function<void()>;

struct Wait {
  // On the connection's thread: the reply, or nullopt to wait on. With
  // `last` (the deadline has come) it replies.
  std::function<std::optional<Reply>(bool last)> retry;
  // Keeps `wake` to call once a retry may succeed, as long as the weak
  // pointer lives (the connection drops it once answered). The server
  // subscribes before each retry, so a change between the two is not lost.
  std::function<void(std::weak_ptr<const Wake>)> subscribe;
  BootClock::time_point deadline;
};

using Answer = std::variant<Reply, Wait>;

}  // namespace snowflake::http
