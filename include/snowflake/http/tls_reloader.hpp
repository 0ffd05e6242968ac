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
// the failure counted, once per change; the same files are tried again at
// every look (a read that failed for want of a file descriptor succeeds
// later), quietly. A replacement that has already expired is refused while
// the certificate served is still valid: clients would refuse it.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <optional>

#include "snowflake/base/tls_identity.hpp"
#include "snowflake/http/tls_context.hpp"
#include "snowflake/runtime/metrics.hpp"

namespace snowflake::http {

class TlsReloader {
 public:
  using Install = std::function<void(TlsContexts)>;

  // `gauges` get the served certificate's expiry now (`served` is what the
  // listeners start with) and the outcome of each reload. Runs on `io`.
  TlsReloader(boost::asio::io_context& io, TlsFiles files, const TlsIdentity& served,
              std::chrono::milliseconds interval, TlsGauges& gauges, Install install);

  // Looks every interval from now on; the files as `served` was read from
  // them (its stamp) count as the ones served, so a rotation between the
  // config's load and now is taken up at the next looks. Call stop() on
  // `io`'s thread before `io` is to run out of work.
  void start();
  void stop();

 private:
  void schedule();
  void check();
  // Reads the files and installs them; `again`: the same files failed
  // before, so a failure now is neither counted nor logged again.
  void reload(bool again);

  boost::asio::steady_timer timer_;
  const TlsFiles files_;
  const std::chrono::milliseconds interval_;
  TlsGauges& gauges_;
  const Install install_;
  TlsFilesStamp seen_;                    // the files served, or last tried
  std::optional<TlsFilesStamp> changed_;  // a change waiting to settle
  bool failing_ = false;                  // seen_ are files that did not load
  bool stopped_ = false;
};

}  // namespace snowflake::http
