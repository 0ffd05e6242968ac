#pragma once
// The HTTP/1.x server on Boost.Beast. It moves bytes and enforces limits;
// what a request means is the handler's business (see router.hpp).
//
//  - one single-threaded io_context per io thread (nginx's worker model): a
//    connection stays on one thread for life, so it needs no strand;
//    keep-alive; pipelined requests are answered in order (they wait in the
//    read buffer);
//  - limits: header bytes (431), header count (431), no request bodies (413),
//    max connections (further ones are closed at once);
//  - timeouts: an idle keep-alive connection closes after idle_timeout; once
//    a request's first byte arrives the whole request must follow within
//    request_timeout (408), so a byte-at-a-time client cannot pin a
//    connection; a response must be taken up within request_timeout too;
//  - stop(): no new connections, idle ones closed, busy ones finish their
//    current response and close; after drain_timeout the rest are cut;
//  - listeners: the main one (settings.endpoint), and optionally an admin
//    one, each with handlers of its own (its own route table); their
//    connections share the threads, limits and the drain;
//  - TLS (when given contexts): every listener speaks it, each with its own
//    context (the admin one may ask for client certificates). The handshake
//    must be done within request_timeout; a last response ends with
//    close_notify, within the same second of lingering a plain connection
//    gets. replace_tls() swaps the contexts for connections accepted later.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/result.hpp"
#include "snowflake/http/answer.hpp"
#include "snowflake/http/request_reading.hpp"
#include "snowflake/http/responses.hpp"
#include "snowflake/http/tls_context.hpp"

namespace snowflake {
struct TlsGauges;  // metrics.hpp
}

namespace snowflake::http {

struct ServerSettings {
  boost::asio::ip::tcp::endpoint endpoint;
  // A second listener (http.admin_listen), served by the handlers given for it.
  std::optional<boost::asio::ip::tcp::endpoint> admin_endpoint{};
  unsigned io_threads = 1;
  std::size_t max_connections = 10'000;
  std::chrono::milliseconds idle_timeout{60'000};
  std::chrono::milliseconds request_timeout{10'000};
  std::chrono::milliseconds drain_timeout{10'000};
  RequestLimits limits;
  // With TLS: counts the handshakes that fail, by listener. May be null.
  TlsGauges* tls_gauges = nullptr;
};

struct Handlers {
  // A reply, or a wait kept on the connection's event loop (answer.hpp).
  std::function<Answer(const Request&)> handle;
  // Answers a request refused before it could be handled.
  std::function<Response(Status, std::string_view code, std::string_view message)> reject;
};

struct ServerState;  // shared by the server and its sessions

class HttpServer {
 public:
  // `admin` serves settings.admin_endpoint; required when that is set.
  // With `tls`, every listener speaks TLS only.
  HttpServer(ServerSettings settings, Handlers handlers, std::optional<Handlers> admin = {},
             std::optional<TlsContexts> tls = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Opens, binds and listens, on every listener; the error says why not
  // ("address in use"). The main listener's endpoint.
  Result<boost::asio::ip::tcp::endpoint, std::string> listen();
  // The admin listener's endpoint, once listen() succeeded with one.
  std::optional<boost::asio::ip::tcp::endpoint> admin_endpoint() const;
  // The context that accepts and keeps the server's timers; others may put
  // their own work on it (main's signal handling).
  boost::asio::io_context& main_context();
  // Accepts and serves on io_threads threads (the calling one included);
  // returns once stop() has drained every connection.
  void run();
  // Thread-safe.
  void stop();
  // A server started with TLS: connections accepted from now on use these
  // contexts; open ones keep theirs. Thread-safe.
  void replace_tls(TlsContexts tls);
  // From now on each reply says Connection: close and ends its connection,
  // so that a keep-alive client reconnects, through its load balancer, to
  // another replica while this one still serves (http.shutdown_delay_ms).
  // Thread-safe.
  void close_after_reply();

  // For the watchdog. probe_event_loops() posts a no-op to every event loop
  // that records when it ran; event_loop_silence() is the longest any loop
  // has gone without running one (a loop stuck in a handler shows here).
  // Thread-safe.
  void probe_event_loops();
  BootClock::duration event_loop_silence() const;

 private:
  std::shared_ptr<ServerState> state_;  // sessions hold it too: they may outlive a stop()
};

}  // namespace snowflake::http
