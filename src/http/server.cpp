// One job: the Beast server. Its listeners (client and admin, plain or
// TLS), a connection's session from the first byte to its close (reading,
// pipelining, waiting answers, writing, timeouts), and the I/O threads that
// run them; what is answered is the router's (router.cpp).

#include "snowflake/http/server.hpp"
#include "snowflake/base/clock.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/status.hpp>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>
#include "snowflake/base/thread_name.hpp"
#include "snowflake/runtime/tls_gauges.hpp"

namespace snowflake::http {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
using error_code = beast::error_code;
using Clock = BootClock;
// Concrete types, not any_io_executor: no type-erased call on every operation.
using Executor = net::io_context::executor_type;
using Socket = net::basic_stream_socket<tcp, Executor>;
using Timer = net::basic_waitable_timer<Clock, net::wait_traits<Clock>, Executor>;
using WorkGuard = net::executor_work_guard<Executor>;
using TlsStream = net::ssl::stream<Socket>;
using TlsContext = std::shared_ptr<net::ssl::context>;

class SessionBase;

// One listening socket and what answers its connections. Its acceptor and
// timer live on the main context, whose thread accepts for every listener.
struct Listener {
  Listener(const tcp::endpoint& e, Handlers h, const Executor& executor, TlsContext tls,
           std::atomic<std::uint64_t>* failed_handshakes)
      : endpoint(e),
        handlers(std::move(h)),
        acceptor(executor),
        retry_timer(executor),
        speaks_tls(tls != nullptr),
        handshakes_failed(failed_handshakes),
        tls_(std::move(tls)) {}
  const tcp::endpoint endpoint;
  const Handlers handlers;
  net::basic_socket_acceptor<tcp, Executor> acceptor;
  Timer retry_timer;
  // Whether its connections speak TLS: fixed for the listener's life; the
  // context it uses changes when the certificate is reloaded.
  const bool speaks_tls;
  // Where its failed handshakes are counted; null: nowhere.
  std::atomic<std::uint64_t>* const handshakes_failed;

  TlsContext tls_context() const {
    std::lock_guard lock(tls_mutex_);
    return tls_;
  }
  void replace_tls_context(TlsContext tls) {
    std::lock_guard lock(tls_mutex_);
    tls_.swap(tls);
    // The old one is released after the lock: the last connection that
    // used it may already be gone, and freeing a context takes its time.
  }

 private:
  mutable std::mutex tls_mutex_;
  TlsContext tls_;
};

// What the server and its sessions share: settings, the listeners, the
// registry of live sessions (for stop(), the connection limit and the
// deadline sweep), and the server's timers (on the main context).
struct ServerState {
  ServerState(ServerSettings s, Handlers h, std::optional<Handlers> admin,
              std::optional<TlsContexts> tls)
      : settings(std::move(s)),
        contexts(make_contexts(settings.io_threads)),
        sweep_timer(contexts[0]->get_executor()),
        drain_timer(contexts[0]->get_executor()),
        loop_seen_ns(std::make_unique<std::atomic<std::int64_t>[]>(contexts.size())) {
    TlsGauges* gauges = settings.tls_gauges;
    listeners.push_back(std::make_unique<Listener>(
        settings.endpoint, std::move(h), contexts[0]->get_executor(), tls ? tls->main : nullptr,
        gauges != nullptr ? &gauges->handshakes_failed[0] : nullptr));
    if (settings.admin_endpoint && admin) {
      listeners.push_back(std::make_unique<Listener>(
          *settings.admin_endpoint, std::move(*admin), contexts[0]->get_executor(),
          tls ? tls->admin : nullptr, gauges != nullptr ? &gauges->handshakes_failed[1] : nullptr));
    }
    for (auto& c : contexts) guards.emplace_back(c->get_executor());
    for (std::size_t i = 0; i < contexts.size(); ++i) loop_seen_ns[i] = now_ns();
  }

  static std::int64_t now_ns() { return BootClock::now().time_since_epoch().count(); }

  static std::vector<std::unique_ptr<net::io_context>> make_contexts(unsigned n) {
    std::vector<std::unique_ptr<net::io_context>> out;
    // Concurrency hint 1: each context is run by one thread only.
    for (unsigned i = 0; i < std::max(n, 1u); ++i)
      out.push_back(std::make_unique<net::io_context>(1));
    return out;
  }

  // The context for the next connection, round robin. Only the main
  // context's thread accepts, so next_id is not raced here.
  net::io_context& next_context() { return *contexts[next_id % contexts.size()]; }

  const ServerSettings settings;
  std::vector<std::unique_ptr<net::io_context>> contexts;
  std::vector<WorkGuard> guards;                     // keep idle contexts running until stop()
  std::vector<std::unique_ptr<Listener>> listeners;  // the main one first
  Timer sweep_timer;
  Timer drain_timer;
  // Per context: when it last ran a watchdog probe (steady clock, ns).
  std::unique_ptr<std::atomic<std::int64_t>[]> loop_seen_ns;

  // Set by close_after_reply(): each reply from then on ends its connection.
  std::atomic<bool> leaving{false};

  mutable std::mutex mutex;
  bool stopping = false;
  std::uint64_t next_id = 0;
  std::unordered_map<std::uint64_t, std::weak_ptr<SessionBase>> sessions;

  // Forgets a session; true if it was the last one of a drain.
  bool remove(std::uint64_t id);

  // The live sessions that `pick` selects. Never act on sessions while
  // holding the mutex: a session whose last owner is released there would
  // run its destructor, which takes the mutex again.
  template <class Pick>
  std::vector<std::shared_ptr<SessionBase>> live_sessions(Pick pick);
};

// One connection, as the server's registry sees it: what stop(), the drain
// and the deadline sweep do to it, whatever its stream. Only those calls
// (rare: per sweep and per stop, never per request) go through the vtable.
class SessionBase {
 public:
  SessionBase(std::shared_ptr<ServerState> state, const Executor& executor, std::uint64_t id)
      : state_(std::move(state)), executor_(executor), id_(id) {}
  virtual ~SessionBase() {
    if (state_->remove(id_)) {
      // Nothing left to drain: stop the drain timer (on the main context,
      // whose thread owns it) so that the contexts can run out of work.
      net::post(*state_->contexts[0], [state = state_] { state->drain_timer.cancel(); });
    }
  }
  SessionBase(const SessionBase&) = delete;
  SessionBase& operator=(const SessionBase&) = delete;

  // These run on the session's own context, so on one thread.

  // Stop after the current response; an idle connection closes now.
  virtual void drain() = 0;
  virtual void cut() = 0;
  // From the sweep: act if the deadline has really passed (it may have moved).
  virtual void check_deadline(Clock::time_point now) = 0;

  Clock::time_point deadline() const {
    return Clock::time_point(Clock::duration(deadline_.load(std::memory_order_relaxed)));
  }
  Executor executor() const { return executor_; }

 protected:
  const ServerSettings& settings() const { return state_->settings; }
  void set_deadline(std::chrono::milliseconds from_now) {
    deadline_.store((Clock::now() + from_now).time_since_epoch().count(),
                    std::memory_order_relaxed);
  }

  std::shared_ptr<ServerState> state_;

 private:
  const Executor executor_;
  const std::uint64_t id_;
  // Steady-clock ticks; read by the sweep from another thread.
  std::atomic<Clock::rep> deadline_{Clock::time_point::max().time_since_epoch().count()};
};

// One connection over `Stream`: a plain socket, or TLS over one. The two
// differ only where TLS has a step of its own (the handshake first, the
// close_notify last), each an `if constexpr`: the plain session is the same
// code it was before TLS, with no call or allocation added per request.
// Timeouts are a deadline per session (a plain number, no timer per read or
// write); the server's sweep closes sessions past theirs.
template <class Stream>
class Session final : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

 public:
  Session(Socket&& socket, std::shared_ptr<ServerState> state, const Listener& listener,
          std::uint64_t id, TlsContext tls)
      : SessionBase(std::move(state), socket.get_executor(), id),
        tls_(std::move(tls)),
        stream_(make_stream(std::move(socket), tls_)),
        wait_timer_(stream_.get_executor()),
        handlers_(listener.handlers),
        handshakes_failed_(listener.handshakes_failed) {}

  void run() {
    if constexpr (kTls) {
      net::dispatch(stream_.get_executor(),
                    beast::bind_front_handler(&Session::handshake, this->shared_from_this()));
    } else {
      net::dispatch(stream_.get_executor(),
                    beast::bind_front_handler(&Session::do_read, this->shared_from_this()));
    }
  }

  void drain() override {
    draining_ = true;
    if (idle_) close();
  }
  void cut() override { close(); }
  void check_deadline(Clock::time_point now) override {
    if (deadline() > now) return;
    timed_out_ = true;
    error_code ignored;
    socket().cancel(ignored);  // the pending read or write ends with operation_aborted
  }

 private:
  // The TLS stream keeps the context it was made with: a reload installs a
  // new one for later connections, and this one's lives on with it.
  static Stream make_stream(Socket&& socket, const TlsContext& tls) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *tls);
    } else {
      return std::move(socket);
    }
  }
  Socket& socket() {
    if constexpr (kTls) {
      return stream_.next_layer();
    } else {
      return stream_;
    }
  }

  // TLS first: the handshake has request_timeout (a client that connects and
  // says nothing is the idle case of a plain connection, but holds more
  // memory), and no request has begun, so a drain may close it.
  void handshake() {
    // A drain that came before this ran (stop() from another thread) has
    // nothing to wait for.
    if (draining_) return close();
    idle_ = true;
    set_deadline(settings().request_timeout);
    stream_.async_handshake(
        net::ssl::stream_base::server,
        beast::bind_front_handler(&Session::on_handshake, this->shared_from_this()));
  }
  void on_handshake(error_code ec) {
    // Plain HTTP, a client that does not trust us, one without the client
    // certificate the admin listener asks for, a scan: nobody to answer in
    // HTTP, so the connection just closes.
    if (ec || timed_out_) {
      // Counted, logged only at debug: a scan or a flood must not fill the
      // log; a rate of these after a rotation is what an operator looks at.
      if (handshakes_failed_ != nullptr)
        handshakes_failed_->fetch_add(1, std::memory_order_relaxed);
      if (spdlog::should_log(spdlog::level::debug)) {
        error_code ignored;
        const auto peer = socket().remote_endpoint(ignored);
        spdlog::debug("TLS handshake with {}:{} failed: {}", peer.address().to_string(),
                      peer.port(), timed_out_ ? "timed out" : ec.message());
      }
      return close();
    }
    do_read();
  }

  // The peer closed its side: at a request's boundary this is the end of a
  // keep-alive connection. A TLS peer that closes without close_notify
  // (most HTTP clients, once they have their answer) counts the same: the
  // request's own framing says whether it came whole.
  static bool end_of_stream(const error_code& ec) {
    if constexpr (kTls) {
      return ec == net::error::eof || ec == net::ssl::error::stream_truncated;
    } else {
      return ec == net::error::eof;
    }
  }

  void do_read() {
    if (draining_) return close();
    parser_.emplace();
    apply_limits(*parser_, settings().limits);
    // Bytes of a pipelined request already buffered: the request has begun.
    started_ = buffer_.size() > 0;
    idle_ = !started_;
    set_deadline(started_ ? settings().request_timeout : settings().idle_timeout);
    parse();
  }

  // Raw bytes into the buffer, parsed by parse(): see parse_buffered() for
  // why not Beast's http::async_read_some. The read size is the one Beast's
  // own reads use (the buffer's spare capacity, 512 bytes to 64 KiB).
  void read_some() {
    stream_.async_read_some(buffer_.prepare(beast::read_size(buffer_, 65536)),
                            beast::bind_front_handler(&Session::on_read, this->shared_from_this()));
  }

  void on_read(error_code ec, std::size_t bytes) {
    idle_ = false;
    buffer_.commit(bytes);
    if (timed_out_) {
      if (!started_ && bytes == 0) return close();  // an idle keep-alive connection
      return reject(
          {Status::request_timeout, "request_timeout", "the request did not arrive in time"});
    }
    if (!started_ && bytes > 0) {
      // First bytes of a request, even of an incomplete header: from now on
      // the whole of it must arrive within request_timeout, however slowly
      // it trickles in.
      started_ = true;
      set_deadline(settings().request_timeout);
    }
    if (end_of_stream(ec)) return refuse_or_close(parse_end(*parser_));
    if (ec) return close();  // the connection failed: nobody to answer
    parse();
  }

  void refuse_or_close(const error_code& ec) {
    const auto refusal = refusal_for_read_error(ec, settings().limits);
    return refusal ? reject(*refusal) : close();
  }

  void parse() {
    const error_code ec = parse_buffered(*parser_, buffer_);
    if (ec == beast::http::error::need_more) return read_some();
    if (ec) return refuse_or_close(ec);

    const Request& request = parser_->get();
    if (const auto refusal = refusal_for_request(request, settings().limits))
      return reject(*refusal);
    Answer answer = handlers_.handle(request);
    if (auto* reply = std::get_if<Reply>(&answer)) [[likely]]
      return send(std::move(*reply));
    start_wait(std::get<Wait>(std::move(answer)));
  }

  void send(Reply reply) {
    if (draining_ || state_->leaving.load(std::memory_order_relaxed))
      reply.response.keep_alive(false);
    in_flight_ = std::move(reply.in_flight);  // until written (or the connection dropped)
    write(reply.response);
  }

  // A request whose answer must wait (a dry sequence): kept here with a
  // timer for its deadline and a wake the supplier's side calls when a
  // retry may succeed. The loop serves its other connections meanwhile.
  void start_wait(Wait wait) {
    wait_ = std::move(wait);
    // The server's state kept too: the context the wake posts to lives as
    // long as the wake does, whenever the supplier calls it.
    wake_ = std::make_shared<const Wake>(
        [weak = this->weak_from_this(), state = state_, executor = executor()] {
          net::post(executor, [weak] {
            if (auto self = weak.lock()) self->retry_wait(false);
          });
        });
    // The request's own deadline lasts as long as its answer may take.
    set_deadline(
        std::chrono::duration_cast<std::chrono::milliseconds>(wait_->deadline - Clock::now()) +
        settings().request_timeout);
    wait_timer_.expires_at(wait_->deadline);
    wait_timer_.async_wait([self = this->shared_from_this()](error_code ec) {
      if (!ec) self->retry_wait(true);
    });
    retry_wait(false);
  }

  void retry_wait(bool last) {
    if (!wait_) return;  // answered already: a late wake
    // Subscribed before the retry: a change between the two wakes us again.
    if (!last) wait_->subscribe(wake_);
    auto reply = wait_->retry(last);
    if (!reply) return;
    wait_.reset();
    wake_.reset();  // what it subscribed to expires
    wait_timer_.cancel();
    send(std::move(*reply));
  }

  void reject(const Refusal& refusal) {
    Response response = handlers_.reject(refusal.status, refusal.code, refusal.message);
    // The method is known once the request line has been read.
    if (parser_->get().method() == beast::http::verb::head) omit_body(response);
    response.keep_alive(false);
    timed_out_ = false;  // the answer gets its own deadline
    write(response);
  }

  // Serialises into one reused buffer and sends it with one write: our
  // responses are small and complete (the router set every header).
  void write(const Response& response) {
    keep_alive_ = response.keep_alive();
    out_.clear();
    out_.append(response.version() == 10 ? "HTTP/1.0 " : "HTTP/1.1 ");
    out_.append(std::to_string(response.result_int()));
    out_.push_back(' ');
    out_.append(to_std(beast::http::obsolete_reason(response.result())));
    out_.append("\r\n");
    for (const auto& field : response) {
      out_.append(to_std(field.name_string()))
          .append(": ")
          .append(to_std(field.value()))
          .append("\r\n");
    }
    out_.append("\r\n");
    out_.append(response.body());
    set_deadline(settings().request_timeout);
    net::async_write(stream_, net::buffer(out_),
                     beast::bind_front_handler(&Session::on_write, this->shared_from_this()));
  }

  void on_write(error_code ec, std::size_t) {
    in_flight_.reset();  // written, or never to be
    if (ec || timed_out_) return close();
    if (!keep_alive_ || draining_) return linger();
    do_read();
  }

  // After a last response (Connection: close): the client may have sent
  // more already (pipelined requests, or one that crossed our close).
  // Closing a socket with unread bytes sends a reset, which can destroy the
  // response before the client reads it; so the sending side is shut first,
  // and what still comes is read and dropped until the client closes, for
  // a second at most (nginx's lingering close). Over TLS the sending side
  // ends with close_notify first, so that the client can tell the end of
  // the stream from a cut; the wait for the client's own close_notify comes
  // out of the same second, so a client that never answers it cannot hold
  // the connection, or a drain, any longer than a plain one.
  void linger() {
    // Its own timer (free now: nothing waits on it): the deadline sweep has
    // ended once the server drains.
    lingering_ = true;
    wait_timer_.expires_after(kLingerAtMost);
    wait_timer_.async_wait([self = this->shared_from_this()](error_code ec) {
      if (!ec) self->close();
    });
    if constexpr (kTls) {
      stream_.async_shutdown([self = this->shared_from_this()](error_code) {
        // Whatever the client did (its close_notify, a close, more data):
        // the rest of the second as for a plain connection, on the socket.
        if (self->lingering_) self->shut_and_discard();
      });
    } else {
      shut_and_discard();
    }
  }
  void shut_and_discard() {
    error_code ignored;
    socket().shutdown(tcp::socket::shutdown_send, ignored);
    discard();
  }
  void discard() {
    buffer_.clear();
    // Below TLS: what still comes is dropped unread, so it need not decrypt.
    socket().async_read_some(buffer_.prepare(4096),
                             [self = this->shared_from_this()](error_code ec, std::size_t) {
                               if (ec) return self->close();  // the client closed, or we did
                               self->discard();
                             });
  }

  static constexpr std::chrono::milliseconds kLingerAtMost{1000};

  // Hard close: a failed or timed-out connection, an idle one (its FIN ends
  // a TLS connection between requests too: an HTTP client takes it as the
  // end of keep-alive), or the drain's cut.
  void close() {
    if (lingering_) {
      lingering_ = false;
      wait_timer_.cancel();
    }
    if (wait_) {
      // A request still waiting goes with its connection: no answer is
      // taken for a socket that is closed (what it took is a gap).
      wait_timer_.cancel();
      wait_.reset();
      wake_.reset();
    }
    error_code ignored;
    socket().shutdown(tcp::socket::shutdown_send, ignored);
    socket().close(ignored);
  }

  const TlsContext tls_;  // before the stream, which uses it: null for plain
  Stream stream_;
  Timer wait_timer_;                  // a waiting request's deadline
  std::optional<Wait> wait_;          // the request waiting for its answer
  std::shared_ptr<const Wake> wake_;  // what its subscriptions call
  InFlightToken in_flight_;           // the reply being written holds numbers
  beast::flat_buffer buffer_;
  std::optional<beast::http::request_parser<beast::http::empty_body>> parser_;
  std::string out_;
  const Handlers& handlers_;                             // its listener's: the state keeps it
  std::atomic<std::uint64_t>* const handshakes_failed_;  // its listener's; may be null
  bool started_ = false;  // bytes of the current request have arrived
  bool idle_ = false;     // waiting for a request with none begun
  bool keep_alive_ = false;
  bool draining_ = false;
  bool timed_out_ = false;
  bool lingering_ = false;  // after the last response, until the client closes
};

template <class Pick>
std::vector<std::shared_ptr<SessionBase>> ServerState::live_sessions(Pick pick) {
  std::vector<std::shared_ptr<SessionBase>> live;
  {
    std::lock_guard lock(mutex);
    live.reserve(sessions.size());
    // lock() and move: no owning pointer is released while the mutex is held.
    for (auto& [id, weak] : sessions) {
      if (auto s = weak.lock()) live.push_back(std::move(s));
    }
  }
  std::erase_if(live, [&pick](const std::shared_ptr<SessionBase>& s) { return !pick(*s); });
  return live;
}

bool ServerState::remove(std::uint64_t id) {
  std::lock_guard lock(mutex);
  sessions.erase(id);
  return stopping && sessions.empty();
}

namespace {

// How often deadlines are checked: a quarter of the shortest timeout, so a
// timeout fires at most 25 % late, within 10 ms .. 1 s.
std::chrono::milliseconds sweep_interval(const ServerSettings& s) {
  return std::clamp(std::min(s.idle_timeout, s.request_timeout) / 4, std::chrono::milliseconds(10),
                    std::chrono::milliseconds(1000));
}

void sweep(const std::shared_ptr<ServerState>& state) {
  state->sweep_timer.expires_after(sweep_interval(state->settings));
  state->sweep_timer.async_wait([state](error_code ec) {
    if (ec) return;  // stopped
    {
      // A wait that completed before stop()'s cancel() still runs, and would
      // arm the timer again: the main context would never run out of work.
      std::lock_guard lock(state->mutex);
      if (state->stopping) return;
    }
    const auto now = Clock::now();
    for (auto& s :
         state->live_sessions([now](const SessionBase& s) { return s.deadline() <= now; })) {
      net::post(s->executor(), [s, now] { s->check_deadline(now); });
    }
    sweep(state);
  });
}

void do_accept(const std::shared_ptr<ServerState>& state, Listener& listener);

void on_accept(const std::shared_ptr<ServerState>& state, Listener& listener, error_code ec,
               Socket socket) {
  if (ec == net::error::operation_aborted || !listener.acceptor.is_open()) return;  // stopped
  if (ec) {
    // Out of file descriptors and the like: back off instead of spinning.
    spdlog::warn("accept failed: {}; retrying in 100 ms", ec.message());
    listener.retry_timer.expires_after(std::chrono::milliseconds(100));
    listener.retry_timer.async_wait([state, &listener](error_code wait_ec) {
      if (!wait_ec) do_accept(state, listener);
    });
    return;
  }
  // Built before the registry's lock (a TLS stream allocates its buffers,
  // and the context is read under a lock of its own that a reload takes),
  // and dropped unregistered when over the limit or stopping.
  std::shared_ptr<Session<Socket>> plain;
  std::shared_ptr<Session<TlsStream>> secure;
  std::shared_ptr<SessionBase> session;
  const auto id = state->next_id++;  // only the main context's thread accepts
  if (listener.speaks_tls) {
    TlsContext tls = listener.tls_context();
    if (!tls) return do_accept(state, listener);  // never plain on a TLS port
    session = secure = std::make_shared<Session<TlsStream>>(std::move(socket), state, listener, id,
                                                            std::move(tls));
  } else {
    session = plain =
        std::make_shared<Session<Socket>>(std::move(socket), state, listener, id, nullptr);
  }
  {
    std::lock_guard lock(state->mutex);
    if (state->stopping) return;  // the connection closes as the session goes
    if (state->sessions.size() >= state->settings.max_connections) {
      spdlog::debug("connection limit {} reached; closing a new connection",
                    state->settings.max_connections);
      plain.reset();
      secure.reset();
    } else {
      state->sessions.emplace(id, session);
    }
  }
  if (plain) plain->run();
  if (secure) secure->run();
  do_accept(state, listener);
}

void do_accept(const std::shared_ptr<ServerState>& state, Listener& listener) {
  // The connection lives on one context, so on one thread, for life.
  listener.acceptor.async_accept(state->next_context().get_executor(),
                                 [state, &listener](error_code ec, Socket socket) {
                                   on_accept(state, listener, ec, std::move(socket));
                                 });
}

}  // namespace

HttpServer::HttpServer(ServerSettings settings, Handlers handlers, std::optional<Handlers> admin,
                       std::optional<TlsContexts> tls)
    : state_(std::make_shared<ServerState>(std::move(settings), std::move(handlers),
                                           std::move(admin), std::move(tls))) {}

HttpServer::~HttpServer() = default;

Result<tcp::endpoint, std::string> HttpServer::listen() {
  for (auto& listener : state_->listeners) {
    auto& acceptor = listener->acceptor;
    const auto& endpoint = listener->endpoint;
    error_code ec;
    const auto fail = [&](std::string_view step) {
      return fmt::format("cannot listen on {}:{} ({}): {}", endpoint.address().to_string(),
                         endpoint.port(), step, ec.message());
    };
    if (acceptor.open(endpoint.protocol(), ec); ec) return fail("open");
    if (acceptor.set_option(net::socket_base::reuse_address(true), ec); ec)
      return fail("setsockopt");
    if (acceptor.bind(endpoint, ec); ec) return fail("bind");
    if (acceptor.listen(net::socket_base::max_listen_connections, ec); ec) return fail("listen");
  }
  return state_->listeners.front()->acceptor.local_endpoint();
}

std::optional<tcp::endpoint> HttpServer::admin_endpoint() const {
  if (state_->listeners.size() < 2 || !state_->listeners[1]->acceptor.is_open())
    return std::nullopt;
  error_code ec;
  const auto endpoint = state_->listeners[1]->acceptor.local_endpoint(ec);
  if (ec) return std::nullopt;
  return endpoint;
}

net::io_context& HttpServer::main_context() { return *state_->contexts[0]; }

void HttpServer::run() {
  net::dispatch(*state_->contexts[0], [state = state_] {
    {
      // stop() may come first (a fatal error while starting): then start nothing.
      std::lock_guard lock(state->mutex);
      if (state->stopping) return;
    }
    for (auto& listener : state->listeners) do_accept(state, *listener);
    sweep(state);
  });
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < state_->contexts.size(); ++i) {
    threads.emplace_back([context = state_->contexts[i].get(), i] {
      name_this_thread("http-" + std::to_string(i));
      context->run();
    });
  }
  state_->contexts[0]->run();
  for (auto& t : threads) t.join();
}

void HttpServer::replace_tls(TlsContexts tls) {
  auto& listeners = state_->listeners;
  if (!listeners.empty() && listeners[0]->speaks_tls) listeners[0]->replace_tls_context(tls.main);
  if (listeners.size() > 1 && listeners[1]->speaks_tls)
    listeners[1]->replace_tls_context(std::move(tls.admin));
}

void HttpServer::close_after_reply() { state_->leaving.store(true, std::memory_order_relaxed); }

void HttpServer::stop() {
  {
    std::lock_guard lock(state_->mutex);
    if (state_->stopping) return;
    state_->stopping = true;
  }
  const auto live = state_->live_sessions([](const SessionBase&) { return true; });
  spdlog::info("stopping: no new connections; draining {} open connection(s), at most {} ms",
               live.size(), state_->settings.drain_timeout.count());
  net::post(*state_->contexts[0], [state = state_, live] {
    for (auto& listener : state->listeners) {
      error_code ignored;
      listener->acceptor.close(ignored);
      listener->retry_timer.cancel();
    }
    state->sweep_timer.cancel();
    // Contexts now run only as long as they have connections to finish.
    state->guards.clear();
    {
      std::lock_guard lock(state->mutex);
      if (state->sessions.empty()) return;  // all gone already: no timer to keep
    }
    state->drain_timer.expires_after(state->settings.drain_timeout);
    state->drain_timer.async_wait([state](error_code ec) {
      if (ec) return;  // cancelled: every session finished in time
      const auto rest = state->live_sessions([](const SessionBase&) { return true; });
      spdlog::warn("drain timeout: cutting {} connection(s)", rest.size());
      for (auto& s : rest) net::post(s->executor(), [s] { s->cut(); });
    });
  });
  for (auto& s : live) net::post(s->executor(), [s] { s->drain(); });
}

void HttpServer::probe_event_loops() {
  for (std::size_t i = 0; i < state_->contexts.size(); ++i) {
    net::post(*state_->contexts[i], [state = state_, i] {
      state->loop_seen_ns[i].store(ServerState::now_ns(), std::memory_order_relaxed);
    });
  }
}

BootClock::duration HttpServer::event_loop_silence() const {
  std::int64_t oldest = ServerState::now_ns();
  for (std::size_t i = 0; i < state_->contexts.size(); ++i) {
    oldest = std::min(oldest, state_->loop_seen_ns[i].load(std::memory_order_relaxed));
  }
  return std::chrono::nanoseconds(ServerState::now_ns() - oldest);
}

}  // namespace snowflake::http
