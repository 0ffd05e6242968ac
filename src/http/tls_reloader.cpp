#include "snowflake/http/tls_reloader.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "snowflake/base/clock.hpp"
#include "snowflake/base/time_format.hpp"

namespace snowflake::http {

TlsReloader::TlsReloader(boost::asio::io_context& io, TlsFiles files, const TlsIdentity& served,
                         std::chrono::milliseconds interval, TlsGauges& gauges, Install install)
    : timer_(io),
      files_(std::move(files)),
      interval_(interval),
      gauges_(gauges),
      install_(std::move(install)),
      seen_(served.stamp) {
  gauges_.cert_not_before_s.store(served.not_before_s, std::memory_order_relaxed);
  gauges_.cert_not_after_s.store(served.not_after_s, std::memory_order_relaxed);
  gauges_.enabled.store(true, std::memory_order_relaxed);
}

void TlsReloader::start() { schedule(); }

void TlsReloader::stop() {
  stopped_ = true;
  timer_.cancel();
}

void TlsReloader::schedule() {
  timer_.expires_after(interval_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    check();
    schedule();
  });
}

void TlsReloader::check() {
  auto now = stamp_tls_files(files_);
  if (now == seen_) {
    changed_.reset();  // changed and back again
    if (failing_) reload(true);
    return;
  }
  if (changed_ != now) {
    changed_ = std::move(now);  // read once it has settled for a look
    return;
  }
  changed_.reset();
  seen_ = std::move(now);
  reload(false);
}

void TlsReloader::reload(bool again) {
  const auto served_until_s = gauges_.cert_not_after_s.load(std::memory_order_relaxed);
  const auto failed = [&](std::string_view key, const std::string& why) {
    failing_ = true;
    gauges_.reload_failing.store(true, std::memory_order_relaxed);
    if (again) return;
    gauges_.reloads_failed.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn(
        "TLS files changed but cannot be served: http.{}: {}; the certificate served so far "
        "stays (it expires {}); tried again at every look",
        key, why, format_iso8601_ms(served_until_s * 1000));
  };
  auto identity = load_tls_identity(files_);
  if (!identity) return failed(tls_file_key(identity.error().file), identity.error().message);
  const TlsIdentity& id = identity.value();
  const auto now_s = SystemClock::instance().wall_ms() / 1000;
  if (id.not_after_s <= now_s && served_until_s > now_s) {
    return failed(
        tls_file_key(TlsFile::cert),
        fmt::format("the certificate in \"{}\" ({}, serial {}) expired {}", files_.cert_file,
                    id.subject, id.serial, format_iso8601_ms(id.not_after_s * 1000)));
  }
  auto contexts = make_tls_contexts(id);
  if (!contexts) return failed(tls_file_key(contexts.error().file), contexts.error().message);
  // The gauges first: whoever sees the new certificate served sees them too.
  gauges_.cert_not_before_s.store(id.not_before_s, std::memory_order_relaxed);
  gauges_.cert_not_after_s.store(id.not_after_s, std::memory_order_relaxed);
  gauges_.reloads_ok.fetch_add(1, std::memory_order_relaxed);
  gauges_.reload_failing.store(false, std::memory_order_relaxed);
  install_(std::move(contexts).value());
  failing_ = false;
  seen_ = id.stamp;  // taken before the read: a change since is read at the next looks
  spdlog::info("TLS: certificate reloaded from {}: {}, serial {}, expires {}", files_.cert_file,
               id.subject, id.serial, format_iso8601_ms(id.not_after_s * 1000));
}

}  // namespace snowflake::http
