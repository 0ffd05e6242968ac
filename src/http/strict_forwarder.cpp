#include "snowflake/http/strict_forwarder.hpp"
#include "snowflake/base/clock.hpp"

#include <fmt/format.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <deque>
#include <map>
#include <thread>
#include <utility>
#include <variant>

#include "snowflake/base/thread_name.hpp"
#include "snowflake/base/tls_peer.hpp"
#include "snowflake/version.hpp"

namespace snowflake::http {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

namespace {

// The largest answer passed back: the owner is a peer bounded by its own
// settings (a batch of http.max_batch, at most 1,000,000, numbers printed
// by a template of up to its longest, as JSON strings: under 200 MiB).
constexpr std::uint64_t kMaxBody = 256ULL << 20;
// A kept connection unused this long is closed rather than reused: the
// owner's own idle timeout (http.idle_timeout_ms) may have closed it.
constexpr std::chrono::seconds kIdleAtMost{10};
// Connections kept per owner: as many as requests forwarded at once, up to
// this.
constexpr std::size_t kKeptPerOwner = 64;

std::string describe(const error_code& ec) {
  if (ec == beast::error::timeout) return "timed out";
  if (ec == net::error::connection_refused) return "connection refused";
  return ec.message();
}

// "host:port", "[v6]:port" -> host and port; nullopt when not of that shape.
std::optional<std::pair<std::string, std::string>> split_address(std::string_view address) {
  const auto colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == address.size()) {
    return std::nullopt;
  }
  std::string_view host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return std::pair{std::string(host), std::string(address.substr(colon + 1))};
}

// Plain to an owner serving HTTP, TLS to one serving TLS.
using OwnerPlainStream = beast::tcp_stream;
using OwnerTlsStream = beast::ssl_stream<beast::tcp_stream>;
using OwnerStream = std::variant<OwnerPlainStream, OwnerTlsStream>;

beast::tcp_stream& lowest(OwnerStream& stream) {
  return std::visit([](auto& s) -> beast::tcp_stream& { return beast::get_lowest_layer(s); },
                    stream);
}

// Where kept connections are filed: an owner that turned TLS on at the
// same address is not sent plain HTTP on an old connection.
std::string kept_key(const OwnerPlace& owner) { return owner.url(); }

}  // namespace

// The forwarder's thread, its connections kept per owner, and the calls
// under way. Everything but forward()'s post runs on that one thread.
class StrictForwarder::Pool {
 public:
  explicit Pool(std::optional<ForwardingTls> tls)
      : tls_(std::move(tls)), work_(net::make_work_guard(io_)), sweep_(io_), thread_([this] {
          name_this_thread("forwarder");
          io_.run();
        }) {
    net::post(io_, [this] { sweep(); });
  }
  ~Pool() {
    work_.reset();
    io_.stop();  // calls under way are dropped: their connections' deadlines answer them
    thread_.join();
  }

  void start(OwnerPlace owner, const std::string& self, const std::string& target,
             const std::string& accept, Deadline deadline, std::shared_ptr<ForwardCall> call) {
    // Always GET: a HEAD is never passed on (serve() answers it here, and
    // the owner would take a number for it).
    beast_http::request<beast_http::empty_body> out{beast_http::verb::get, target, kHttp11};
    out.set(beast_http::field::host, owner.address);
    out.set(beast_http::field::user_agent, std::string("snowflaked/") + kVersion);
    if (!accept.empty()) out.set(beast_http::field::accept, accept);
    out.set(to_beast(kForwardedHeader), self);
    out.keep_alive(true);
    auto exchange = std::make_shared<Exchange>(*this, std::move(owner), std::move(out), deadline,
                                               std::move(call));
    net::post(io_, [exchange] { exchange->start(); });
  }

 private:
  struct Kept {
    OwnerStream stream;
    BootClock::time_point since;
  };

  // One request to the owner and its answer.
  class Exchange : public std::enable_shared_from_this<Exchange> {
   public:
    Exchange(Pool& pool, OwnerPlace owner, beast_http::request<beast_http::empty_body> request,
             Deadline deadline, std::shared_ptr<ForwardCall> call)
        : pool_(pool),
          owner_(std::move(owner)),
          request_(std::move(request)),
          deadline_(deadline),
          call_(std::move(call)),
          resolver_(pool.io_) {}

    void start() {
      if (auto kept = pool_.take(kept_key(owner_))) {
        stream_.emplace(std::move(*kept));
        reused_ = true;
        send();
      } else {
        connect();
      }
    }

   private:
    void connect() {
      reused_ = false;
      stream_.reset();
      const auto where = split_address(owner_.address);
      if (!where) return fail("the owner's address is not host:port");
      host_ = where->first;
      resolver_.async_resolve(
          where->first, where->second,
          [self = shared_from_this()](error_code ec, const tcp::resolver::results_type& found) {
            if (ec) return self->fail(describe(ec));
            if (self->owner_.tls) {
              self->stream_.emplace(std::in_place_type<OwnerTlsStream>, self->pool_.io_,
                                    *self->pool_.tls_->context);
            } else {
              self->stream_.emplace(std::in_place_type<OwnerPlainStream>, self->pool_.io_);
            }
            self->expire_at_deadline();
            lowest(*self->stream_)
                .async_connect(found, [self](error_code cec, const tcp::endpoint&) {
                  if (cec) return self->fail(describe(cec));
                  if (self->owner_.tls) return self->handshake();
                  self->send();
                });
          });
    }

    // The owner's certificate must be one the configured CAs issued, for
    // the fleet's name (http.forward_tls_name) or the owner's own host.
    void handshake() {
      auto& tls = std::get<OwnerTlsStream>(*stream_);
      const std::string& name = pool_.tls_->name.empty() ? host_ : pool_.tls_->name;
      if (auto unchecked = expect_peer(tls.native_handle(), name)) return fail(*unchecked);
      tls.async_handshake(net::ssl::stream_base::client,
                          [self = shared_from_this()](error_code ec) {
                            if (ec) return self->fail(self->handshake_failure(ec));
                            self->send();
                          });
    }

    std::string handshake_failure(const error_code& ec) {
      if (ec == beast::error::timeout) return describe(ec);
      const std::string why = untrusted_peer(
          std::get<OwnerTlsStream>(*stream_).native_handle(),
          {"http.forward_ca_file: the CA that issued it",
           "http.forward_tls_name: a name every daemon's certificate carries, or a certificate "
           "naming the owner's advertised host"});
      if (why.empty()) return fmt::format("TLS handshake failed: {}", ec.message());
      return fmt::format("TLS: the owner's certificate is not trusted: {}", why);
    }

    // Beast's stream has a timer of its own clock: the deadline (BootClock)
    // is handed over as what is left of it.
    void expire_at_deadline() {
      lowest(*stream_).expires_after(
          std::max(deadline_ - BootClock::now(), BootClock::duration::zero()));
    }

    void send() {
      expire_at_deadline();
      std::visit(
          [this](auto& stream) {
            beast_http::async_write(stream, request_,
                                    [self = shared_from_this()](error_code ec, std::size_t) {
                                      if (ec) return self->retry_or_fail(ec);
                                      self->read();
                                    });
          },
          *stream_);
    }

    void read() {
      parser_.emplace();
      parser_->body_limit(kMaxBody);
      std::visit(
          [this](auto& stream) {
            beast_http::async_read(stream, buffer_, *parser_,
                                   [self = shared_from_this()](error_code ec, std::size_t) {
                                     if (ec) return self->retry_or_fail(ec);
                                     self->done();
                                   });
          },
          *stream_);
    }

    // A kept connection the owner closed meanwhile (its idle timeout, a
    // restart) fails before any answer: once more on a new one. The owner
    // read no request on a connection it had closed, so none of its
    // numbers went out for this one.
    void retry_or_fail(const error_code& ec) {
      if (reused_ && (!parser_ || !parser_->got_some()) && BootClock::now() < deadline_) {
        buffer_.clear();
        parser_.reset();
        return connect();
      }
      fail(describe(ec));
    }

    void done() {
      auto res = parser_->release();
      OwnerAnswer answer{res.result_int(), std::move(res.body()), {}, {}};
      if (auto t = res.find(beast_http::field::content_type); t != res.end()) {
        answer.content_type = std::string(to_std(t->value()));
      }
      if (auto r = res.find(beast_http::field::retry_after); r != res.end()) {
        answer.retry_after = std::string(to_std(r->value()));
      }
      if (res.keep_alive() && buffer_.size() == 0)
        pool_.keep(kept_key(owner_), std::move(*stream_));
      call_->finish(std::move(answer));
    }

    void fail(std::string why) { call_->finish(outcome::failure(std::move(why))); }

    Pool& pool_;
    OwnerPlace owner_;
    std::string host_;  // of the owner's address, as resolved
    beast_http::request<beast_http::empty_body> request_;
    Deadline deadline_;
    std::shared_ptr<ForwardCall> call_;
    tcp::resolver resolver_;
    std::optional<OwnerStream> stream_;
    bool reused_ = false;
    beast::flat_buffer buffer_;
    std::optional<beast_http::response_parser<beast_http::string_body>> parser_;
  };

  std::optional<OwnerStream> take(const std::string& owner) {
    auto found = kept_.find(owner);
    if (found == kept_.end()) return std::nullopt;
    auto& line = found->second;
    const auto now = BootClock::now();
    while (!line.empty()) {
      Kept kept = std::move(line.back());
      line.pop_back();
      if (now - kept.since < kIdleAtMost) return std::move(kept.stream);
    }
    kept_.erase(found);
    return std::nullopt;
  }

  // Kept connections unused too long closed, and the lines of owners left
  // empty forgotten (an owner that moved on, a pod gone): at most
  // kKeptPerOwner sockets an owner, and only while it is asked.
  void sweep() {
    const auto now = BootClock::now();
    for (auto it = kept_.begin(); it != kept_.end();) {
      auto& line = it->second;
      while (!line.empty() && now - line.front().since >= kIdleAtMost) line.pop_front();
      it = line.empty() ? kept_.erase(it) : std::next(it);
    }
    sweep_.expires_after(kIdleAtMost);
    sweep_.async_wait([this](error_code ec) {
      if (!ec) sweep();
    });
  }

  void keep(const std::string& owner, OwnerStream stream) {
    auto& line = kept_[owner];
    if (line.size() >= kKeptPerOwner) line.pop_front();
    lowest(stream).expires_never();
    line.push_back({std::move(stream), BootClock::now()});
  }

  std::optional<ForwardingTls> tls_;  // before the thread that reads it
  net::io_context io_{1};
  net::executor_work_guard<net::io_context::executor_type> work_;
  std::map<std::string, std::deque<Kept>, std::less<>> kept_;  // oldest first
  net::steady_timer sweep_;
  std::thread thread_;
};

StrictForwarder::StrictForwarder(std::string self, bool serves_tls,
                                 std::optional<ForwardingTls> tls)
    : self_(std::move(self)),
      serves_tls_(serves_tls),
      tls_(tls && tls->context),
      pool_(std::make_unique<Pool>(std::move(tls))) {}

StrictForwarder::~StrictForwarder() = default;

std::shared_ptr<ForwardCall> StrictForwarder::forward(const OwnerPlace& owner,
                                                      const std::string& target,
                                                      const std::string& accept,
                                                      Deadline deadline) {
  auto call = std::make_shared<ForwardCall>();
  if (!passes_to(owner)) {
    call->finish(outcome::failure(std::string("not passed on over this scheme")));
    return call;
  }
  pool_->start(owner, self_, target, accept, deadline, call);
  return call;
}

}  // namespace snowflake::http
