#pragma once
// Takes up a rotated certificate without a restart. cert-manager, and
// Kubernetes' secret volumes, replace the files (a rename, or a swap of the
// symbolic link of a directory), so the files' identity is looked at on a
// timer: device, inode, size and times of what each path resolves to. When
// they have changed, and then stayed as they are for one more look (a tool
// that renames the key and then the certificate is caught between the two
// only if it takes longer than that), the files are read and checked again
// (tls_identity.hpp) and new contexts are built and installed: connections
// accepted from then on get them, those already open keep theirs. Files
// that do not load (half-written, a key that is not the certificate's) are
// refused: the certificate served so far stays, a warning is logged and
// the failure counted; the next change is tried again.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "snowflake/http/tls_context.hpp"
#include "snowflake/metrics.hpp"
#include "snowflake/tls_identity.hpp"

namespace snowflake::http {

class TlsReloader {
 public:
  using Install = std::function<void(TlsContexts)>;

  // `gauges` get the served certificate's expiry now (`served` is what the
  // listeners start with) and the outcome of each reload. Runs on `io`.
  TlsReloader(boost::asio::io_context& io, TlsFiles files, const TlsIdentity& served,
              std::chrono::milliseconds interval, TlsGauges& gauges, Install install);

  // Looks every interval from now on; the files as they are now count as
  // the ones served. Call stop() on `io`'s thread before `io` is to run out
  // of work.
  void start();
  void stop();

 private:
  // What identifies the content of each path now; a path that cannot be
  // looked at has its errno in place of it.
  std::vector<std::string> look() const;
  void schedule();
  void check();
  void reload();

  boost::asio::steady_timer timer_;
  const TlsFiles files_;
  const std::chrono::milliseconds interval_;
  TlsGauges& gauges_;
  const Install install_;
  std::vector<std::string> seen_;                    // the files served
  std::optional<std::vector<std::string>> changed_;  // a change waiting to settle
  bool stopped_ = false;
};

}  // namespace snowflake::http
