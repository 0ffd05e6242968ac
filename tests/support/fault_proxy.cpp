#include "fault_proxy.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace snowflake::test {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

constexpr auto kStallPoll = std::chrono::milliseconds(5);

std::int32_t big_endian_32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<std::int32_t>((std::uint32_t{u[0]} << 24) | (std::uint32_t{u[1]} << 16) |
                                   (std::uint32_t{u[2]} << 8) | std::uint32_t{u[3]});
}

}  // namespace

// Follows ZooKeeper's framing in one direction: each frame is a 4-byte
// big-endian length and that many bytes. The first frame of a connection is
// the session handshake; every later one starts with its xid (and, from the
// client, the operation code). A frame's head is held back until whole, so
// a frame can be dropped from its first byte. Not in an anonymous namespace:
// Impl's members hold one, and Impl has external linkage.
class FrameScanner {
 public:
  explicit FrameScanner(std::size_t head_size) : head_size_(head_size) {}

  // Returns the bytes to forward. `judge(xid, op)` sees each frame after the
  // handshake; if it returns false, that frame and everything after it are
  // dropped and `cut` is set.
  template <class Judge>
  std::string scan(const char* data, std::size_t n, Judge judge, bool& cut) {
    std::string out;
    std::size_t i = 0;
    while (i < n) {
      if (body_left_ > 0) {
        const std::size_t take = std::min(body_left_, n - i);
        out.append(data + i, take);
        i += take;
        body_left_ -= take;
        continue;
      }
      std::size_t need = head_.size() < 4 ? 4 : wanted();
      while (i < n && head_.size() < need) {
        head_.push_back(data[i++]);
        if (head_.size() == 4) need = wanted();
      }
      if (head_.size() < need) break;  // the rest comes with the next chunk
      const auto length = static_cast<std::size_t>(std::max(0, big_endian_32(head_.data())));
      if (!handshake_) {
        const std::int32_t xid = head_.size() >= 8 ? big_endian_32(head_.data() + 4) : 0;
        const std::int32_t op = head_.size() >= 12 ? big_endian_32(head_.data() + 8) : 0;
        if (!judge(xid, op)) {
          cut = true;
          return out;
        }
      }
      handshake_ = false;
      out += head_;
      body_left_ = 4 + length - head_.size();
      head_.clear();
    }
    return out;
  }

 private:
  std::size_t wanted() const {
    const auto length = static_cast<std::size_t>(std::max(0, big_endian_32(head_.data())));
    return std::min(4 + length, head_size_);
  }

  std::size_t head_size_;
  bool handshake_ = true;
  std::size_t body_left_ = 0;
  std::string head_;
};

struct FaultProxy::Impl {
  struct Link;

  Impl(FaultProxy& proxy, unsigned short upstream_port)
      : owner(proxy),
        acceptor(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)),
        upstream(net::ip::make_address("127.0.0.1"), upstream_port),
        outage_timer(ioc) {}

  void accept();
  // After a lost reply: new connections are refused for the outage asked for.
  void begin_outage() {
    const auto outage = std::chrono::milliseconds(outage_ms.load());
    if (outage.count() <= 0) return;
    refusing = true;
    outage_timer.expires_after(outage);
    outage_timer.async_wait([this](boost::system::error_code ec) {
      if (!ec) refusing = false;
    });
  }

  FaultProxy& owner;
  net::io_context ioc;
  tcp::acceptor acceptor;
  tcp::endpoint upstream;
  std::atomic<bool> stalled{false};
  bool refusing = false;  // proxy's thread only
  std::atomic<std::int64_t> delay_ms{0};
  std::atomic<int> armed_op{-1};
  std::atomic<std::int64_t> outage_ms{0};
  net::steady_timer outage_timer;
  std::vector<std::weak_ptr<Link>> links;  // touched on the proxy's thread only
  std::thread thread;
};

struct FaultProxy::Impl::Link : std::enable_shared_from_this<Link> {
  Link(Impl& impl, tcp::socket accepted)
      : proxy(impl),
        client(std::move(accepted)),
        server(impl.ioc),
        timers{{net::steady_timer(impl.ioc), net::steady_timer(impl.ioc)}} {}

  // Connects upstream once the proxy is not stalled.
  void start() {
    if (closed) return;
    if (proxy.stalled) {
      timers[0].expires_after(kStallPoll);
      timers[0].async_wait(
          [self = shared_from_this()](boost::system::error_code) { self->start(); });
      return;
    }
    server.async_connect(proxy.upstream, [self = shared_from_this()](boost::system::error_code ec) {
      if (ec) return self->close();
      self->pump(true);
      self->pump(false);
    });
  }

  // to_server: client -> server, else server -> client.
  void pump(bool to_server) {
    if (closed) return;
    auto buffer = std::make_shared<std::array<char, 16384>>();
    tcp::socket& from = to_server ? client : server;
    from.async_read_some(net::buffer(*buffer), [self = shared_from_this(), buffer, to_server](
                                                   boost::system::error_code ec, std::size_t n) {
      if (ec || self->closed) return self->close();
      bool cut = false;
      auto data = std::make_shared<std::string>(
          to_server ? self->requests.scan(
                          buffer->data(), n,
                          [&](std::int32_t xid, std::int32_t op) {
                            int armed = self->proxy.armed_op.load();
                            if (armed >= 0 && op == armed &&
                                self->proxy.armed_op.compare_exchange_strong(armed, -1)) {
                              self->doomed_xid = xid;
                            }
                            return true;
                          },
                          cut)
                    : self->replies.scan(
                          buffer->data(), n,
                          [&](std::int32_t xid, std::int32_t) {
                            return !(self->doomed_xid && *self->doomed_xid == xid);
                          },
                          cut));
      self->forward(to_server, std::move(data), cut, false);
    });
  }

  void forward(bool to_server, std::shared_ptr<std::string> data, bool cut, bool delayed) {
    if (closed) return;
    net::steady_timer& timer = timers[to_server ? 0 : 1];
    const auto delay = std::chrono::milliseconds(proxy.delay_ms.load());
    if (proxy.stalled || (!delayed && delay.count() > 0)) {
      timer.expires_after(proxy.stalled ? kStallPoll : delay);
      timer.async_wait([self = shared_from_this(), to_server, data, cut, delayed,
                        stalled = proxy.stalled.load()](boost::system::error_code) {
        self->forward(to_server, data, cut, delayed || !stalled);
      });
      return;
    }
    tcp::socket& to = to_server ? server : client;
    net::async_write(to, net::buffer(*data),
                     [self = shared_from_this(), data, cut, to_server](boost::system::error_code ec,
                                                                       std::size_t) {
                       if (ec) return self->close();
                       if (cut) {
                         self->proxy.owner.replies_lost_.fetch_add(1);
                         self->proxy.begin_outage();
                         return self->close();
                       }
                       self->pump(to_server);
                     });
  }

  void close() {
    if (closed) return;
    closed = true;
    boost::system::error_code ignored;
    for (tcp::socket* s : {&client, &server}) {
      if (!s->is_open()) continue;
      s->set_option(net::socket_base::linger(true, 0), ignored);  // a reset, not a goodbye
      s->close(ignored);
    }
    for (auto& t : timers) t.cancel();
  }

  Impl& proxy;
  tcp::socket client;
  tcp::socket server;
  std::array<net::steady_timer, 2> timers;
  FrameScanner requests{12};  // length, xid, op
  FrameScanner replies{8};    // length, xid
  std::optional<std::int32_t> doomed_xid;
  bool closed = false;
};

void FaultProxy::Impl::accept() {
  acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec) return;
    owner.accepted_.fetch_add(1);
    auto link = std::make_shared<Link>(*this, std::move(socket));
    if (refusing) {
      link->close();
      return accept();
    }
    std::erase_if(links, [](const std::weak_ptr<Link>& l) { return l.expired(); });
    links.push_back(link);
    link->start();
    accept();
  });
}

FaultProxy::FaultProxy(unsigned short upstream_port)
    : impl_(std::make_unique<Impl>(*this, upstream_port)) {
  port_ = impl_->acceptor.local_endpoint().port();
  impl_->accept();
  impl_->thread = std::thread([this] { impl_->ioc.run(); });
}

FaultProxy::~FaultProxy() {
  impl_->ioc.stop();
  impl_->thread.join();
}

void FaultProxy::stall() { impl_->stalled = true; }
void FaultProxy::heal() { impl_->stalled = false; }
void FaultProxy::set_delay(std::chrono::milliseconds delay) { impl_->delay_ms = delay.count(); }
void FaultProxy::lose_next_reply(int op, std::chrono::milliseconds outage) {
  impl_->outage_ms = outage.count();
  impl_->armed_op = op;
}

void FaultProxy::reset() {
  net::post(impl_->ioc, [impl = impl_.get()] {
    for (auto& weak : impl->links) {
      if (auto link = weak.lock()) link->close();
    }
  });
}

}  // namespace snowflake::test
