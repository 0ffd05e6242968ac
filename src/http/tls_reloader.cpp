#include "snowflake/http/tls_reloader.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>

#include "snowflake/time_format.hpp"

namespace snowflake::http {

TlsReloader::TlsReloader(boost::asio::io_context& io, TlsFiles files, const TlsIdentity& served,
                         std::chrono::milliseconds interval, TlsGauges& gauges, Install install)
    : timer_(io),
      files_(std::move(files)),
      interval_(interval),
      gauges_(gauges),
      install_(std::move(install)) {
  gauges_.cert_not_after_s.store(served.not_after_s, std::memory_order_relaxed);
  gauges_.enabled.store(true, std::memory_order_relaxed);
}

std::vector<std::string> TlsReloader::look() const {
  std::vector<std::string> out;
  for (const std::string* path : {&files_.cert_file, &files_.key_file, &files_.client_ca_file}) {
    if (path->empty()) continue;
    // stat, not lstat: through every symbolic link, to the file whose
    // content is served (a secret volume swaps a link two levels up).
    struct stat st {};
    if (::stat(path->c_str(), &st) != 0) {
      out.push_back(fmt::format("errno {}", errno));
      continue;
    }
    out.push_back(fmt::format("{}:{}:{}:{}.{}:{}.{}", st.st_dev, st.st_ino, st.st_size,
                              st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_ctim.tv_sec,
                              st.st_ctim.tv_nsec));
  }
  return out;
}

void TlsReloader::start() {
  seen_ = look();
  schedule();
}

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
  auto now = look();
  if (now == seen_) {
    changed_.reset();  // changed and back again
    return;
  }
  if (changed_ != now) {
    changed_ = std::move(now);  // read once it has settled for a look
    return;
  }
  // Taken before the files are read: a change while they are read is seen
  // at the next look, and read again then.
  seen_ = std::move(now);
  changed_.reset();
  reload();
}

void TlsReloader::reload() {
  const auto failed = [this](std::string_view key, const std::string& why) {
    gauges_.reloads_failed.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn(
        "TLS files changed but cannot be served: http.{}: {}; the certificate served so far "
        "stays (it expires {})",
        key, why,
        format_iso8601_ms(gauges_.cert_not_after_s.load(std::memory_order_relaxed) * 1000));
  };
  auto identity = load_tls_identity(files_);
  if (!identity) return failed(tls_file_key(identity.error().file), identity.error().message);
  auto contexts = make_tls_contexts(identity.value());
  if (!contexts) return failed(tls_file_key(TlsFile::cert), contexts.error());
  install_(std::move(contexts).value());
  const TlsIdentity& id = identity.value();
  gauges_.cert_not_after_s.store(id.not_after_s, std::memory_order_relaxed);
  gauges_.reloads_ok.fetch_add(1, std::memory_order_relaxed);
  spdlog::info("TLS: certificate reloaded from {}: {}, serial {}, expires {}", files_.cert_file,
               id.subject, id.serial, format_iso8601_ms(id.not_after_s * 1000));
}

}  // namespace snowflake::http
