#include "snowflake/http/server.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iterator>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace snowflake::http {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
using error_code = beast::error_code;

class Session;

// What the server and its sessions share: settings, handlers, the registry of
// live sessions (for stop() and the connection limit), the drain timer.
struct ServerState {
  ServerState(net::io_context& ioc_, ServerSettings s, Handlers h)
      : ioc(ioc_), settings(std::move(s)), handlers(std::move(h)),
        acceptor(net::make_strand(ioc_)), retry_timer(acceptor.get_executor()),
        drain_timer(acceptor.get_executor()) {}

  net::io_context& ioc;
  const ServerSettings settings;
  const Handlers handlers;
  tcp::acceptor acceptor;
  net::steady_timer retry_timer;  // backs off after an accept error
  net::steady_timer drain_timer;

  mutable std::mutex mutex;
  bool stopping = false;
  std::uint64_t next_id = 0;
  std::unordered_map<std::uint64_t, std::weak_ptr<Session>> sessions;

  // Forgets a session; true if it was the last one of a drain.
  bool remove(std::uint64_t id);
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, std::shared_ptr<ServerState> state, std::uint64_t id)
      : stream_(std::move(socket)), state_(std::move(state)), id_(id) {}
  ~Session() {
    if (state_->remove(id_)) {
      // Nothing left to drain: stop the drain timer (on the acceptor's
      // strand, which owns it) so that the io_context can run out of work.
      net::post(state_->acceptor.get_executor(), [state = state_] { state->drain_timer.cancel(); });
    }
  }

  void run() {
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&Session::do_read, shared_from_this()));
  }

  // On the session's strand: stop after the current response; an idle
  // connection closes now.
  void drain() {
    draining_ = true;
    if (idle_) stream_.socket().close();
  }
  void cut() { stream_.socket().close(); }
  auto executor() { return stream_.get_executor(); }

 private:
  const ServerSettings& settings() const { return state_->settings; }

  void do_read() {
    if (draining_) return close();
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(settings().header_limit));
    parser_->body_limit(0);  // no request of this API has a body
    // Bytes of a pipelined request already buffered: the request has begun.
    started_ = buffer_.size() > 0;
    idle_ = !started_;
    stream_.expires_after(started_ ? settings().request_timeout : settings().idle_timeout);
    read_some();
  }

  void read_some() {
    beast::http::async_read_some(stream_, buffer_, *parser_,
                                 beast::bind_front_handler(&Session::on_read, shared_from_this()));
  }

  void on_read(error_code ec, std::size_t bytes) {
    idle_ = false;
    using he = beast::http::error;
    if (ec == he::end_of_stream || ec == net::error::operation_aborted) return close();
    if (ec == beast::error::timeout) {
      if (!started_) return close();  // idle keep-alive connection
      return reject(Status::request_timeout, "request_timeout",
                    "the request did not arrive in time");
    }
    if (ec == he::header_limit) {
      return reject(Status::request_header_fields_too_large, "headers_too_large",
                    fmt::format("request headers are over {} bytes", settings().header_limit));
    }
    if (ec == he::body_limit || ec == he::unexpected_body) {
      return reject(Status::payload_too_large, "body_not_allowed",
                    "requests to this API carry no body");
    }
    if (ec && ec.category() == beast::http::make_error_code(he::bad_method).category()) {
      // Any other parse error: garbage, HTTP/0.9, a bad header line.
      return reject(Status::bad_request, "bad_request", "malformed HTTP request");
    }
    if (ec) return close();  // the connection failed: nobody to answer

    if (!started_ && bytes > 0) {
      // First bytes of a request: from now on the whole of it must arrive
      // within request_timeout, however slowly it trickles in.
      started_ = true;
      stream_.expires_after(settings().request_timeout);
    }
    if (!parser_->is_done()) return read_some();

    const Request& request = parser_->get();
    if (static_cast<std::size_t>(std::distance(request.begin(), request.end())) >
        settings().max_header_fields) {
      return reject(Status::request_header_fields_too_large, "headers_too_large",
                    fmt::format("more than {} header fields", settings().max_header_fields));
    }
    response_ = state_->handlers.handle(request);
    if (draining_) response_.keep_alive(false);
    write();
  }

  void reject(Status status, std::string_view code, std::string_view message) {
    response_ = state_->handlers.reject(status, code, message);
    response_.keep_alive(false);
    write();
  }

  void write() {
    stream_.expires_after(settings().request_timeout);
    beast::http::async_write(stream_, response_,
                             beast::bind_front_handler(&Session::on_write, shared_from_this()));
  }

  void on_write(error_code ec, std::size_t) {
    if (ec) return close();
    if (!response_.keep_alive() || draining_) return close();
    do_read();
  }

  void close() {
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<beast::http::request_parser<beast::http::empty_body>> parser_;
  Response response_;
  std::shared_ptr<ServerState> state_;
  const std::uint64_t id_;
  bool started_ = false;   // bytes of the current request have arrived
  bool idle_ = false;      // waiting for a request with none begun
  bool draining_ = false;
};

bool ServerState::remove(std::uint64_t id) {
  std::lock_guard lock(mutex);
  sessions.erase(id);
  return stopping && sessions.empty();
}

namespace {

void do_accept(const std::shared_ptr<ServerState>& state);

void on_accept(const std::shared_ptr<ServerState>& state, error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || !state->acceptor.is_open()) return;  // stopped
  if (ec) {
    // Out of file descriptors and the like: back off instead of spinning.
    spdlog::warn("accept failed: {}; retrying in 100 ms", ec.message());
    state->retry_timer.expires_after(std::chrono::milliseconds(100));
    state->retry_timer.async_wait([state](error_code wait_ec) {
      if (!wait_ec) do_accept(state);
    });
    return;
  }
  std::shared_ptr<Session> session;
  {
    std::lock_guard lock(state->mutex);
    if (state->stopping) return;  // the socket closes as it goes out of scope
    if (state->sessions.size() >= state->settings.max_connections) {
      spdlog::debug("connection limit {} reached; closing a new connection",
                    state->settings.max_connections);
    } else {
      const auto id = state->next_id++;
      session = std::make_shared<Session>(std::move(socket), state, id);
      state->sessions.emplace(id, session);
    }
  }
  if (session) session->run();
  do_accept(state);
}

void do_accept(const std::shared_ptr<ServerState>& state) {
  // Each connection gets its own strand: its handlers never run concurrently.
  state->acceptor.async_accept(net::make_strand(state->ioc),
                               [state](error_code ec, tcp::socket socket) {
                                 on_accept(state, ec, std::move(socket));
                               });
}

}  // namespace

HttpServer::HttpServer(net::io_context& ioc, ServerSettings settings, Handlers handlers)
    : state_(std::make_shared<ServerState>(ioc, std::move(settings), std::move(handlers))) {}

HttpServer::~HttpServer() = default;

Result<tcp::endpoint, std::string> HttpServer::listen() {
  auto& acceptor = state_->acceptor;
  const auto& endpoint = state_->settings.endpoint;
  error_code ec;
  const auto fail = [&](std::string_view step) {
    return fmt::format("cannot listen on {}:{} ({}): {}", endpoint.address().to_string(),
                       endpoint.port(), step, ec.message());
  };
  if (acceptor.open(endpoint.protocol(), ec); ec) return fail("open");
  if (acceptor.set_option(net::socket_base::reuse_address(true), ec); ec) return fail("setsockopt");
  if (acceptor.bind(endpoint, ec); ec) return fail("bind");
  if (acceptor.listen(net::socket_base::max_listen_connections, ec); ec) return fail("listen");
  return acceptor.local_endpoint();
}

void HttpServer::start() {
  net::dispatch(state_->acceptor.get_executor(), [state = state_] { do_accept(state); });
}

void HttpServer::stop() {
  std::vector<std::shared_ptr<Session>> live;
  {
    std::lock_guard lock(state_->mutex);
    if (state_->stopping) return;
    state_->stopping = true;
    for (auto& [id, weak] : state_->sessions) {
      if (auto s = weak.lock()) live.push_back(std::move(s));
    }
  }
  spdlog::info("stopping: no new connections; draining {} open connection(s), at most {} ms",
               live.size(), state_->settings.drain_timeout.count());
  net::post(state_->acceptor.get_executor(), [state = state_, live] {
    error_code ignored;
    state->acceptor.close(ignored);
    state->retry_timer.cancel();
    {
      std::lock_guard lock(state->mutex);
      if (state->sessions.empty()) return;  // all gone already: no timer to keep
    }
    state->drain_timer.expires_after(state->settings.drain_timeout);
    state->drain_timer.async_wait([state](error_code ec) {
      if (ec) return;  // cancelled: every session finished in time
      std::lock_guard lock(state->mutex);
      spdlog::warn("drain timeout: cutting {} connection(s)", state->sessions.size());
      for (auto& [id, weak] : state->sessions) {
        if (auto s = weak.lock()) net::post(s->executor(), [s] { s->cut(); });
      }
    });
  });
  for (auto& s : live) net::post(s->executor(), [s] { s->drain(); });
}

std::size_t HttpServer::connections() const {
  std::lock_guard lock(state_->mutex);
  return state_->sessions.size();
}

}  // namespace snowflake::http
