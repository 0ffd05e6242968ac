#pragma once
// What the listeners' TLS is made of, read from PEM files and checked before
// anything uses it: the certificate chain, its private key (that they belong
// together), and the CAs that client certificates must chain to. The config
// checks it at load (so a bad file is exit code 2 naming its key) and the
// reloader on every change of the files: a file caught half-written by a
// rotation is refused, not served. The bytes that were checked are the
// bytes a TLS context is built from, so a file that changes between the two
// cannot slip in unchecked.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "snowflake/base/result.hpp"

namespace snowflake {

// The files, as the config names them (paths already resolved).
struct TlsFiles {
  std::string cert_file;       // PEM: the server's certificate first, then its chain
  std::string key_file;        // PEM: its private key, unencrypted
  std::string client_ca_file;  // PEM: CAs for client certificates; empty: none asked for
};

// What identifies the content each path names now: device, inode, size and
// times of the file it resolves to, through every symbolic link (a secret
// volume swaps a link two levels up); a path that cannot be looked at has
// its errno in its place. Equal stamps: the same files.
using TlsFilesStamp = std::vector<std::string>;
TlsFilesStamp stamp_tls_files(const TlsFiles& files);

// Which file an error is about, so that the config can name its key.
enum class TlsFile : std::uint8_t { cert, key, client_ca };
// The key of the config's http section that names the file: "tls_cert_file".
std::string_view tls_file_key(TlsFile file) noexcept;

struct TlsFileError {
  TlsFile file;
  std::string message;  // names the path; never quotes the key
};

class TlsIdentity {
 public:
  TlsIdentity() = default;
  ~TlsIdentity();  // wipes the key's text
  TlsIdentity(const TlsIdentity&) = default;
  TlsIdentity& operator=(const TlsIdentity&) = default;
  TlsIdentity(TlsIdentity&&) noexcept = default;
  TlsIdentity& operator=(TlsIdentity&&) noexcept = default;

  std::string chain_pem;      // the certificate first, as read
  std::string key_pem;        // the private key, as read
  std::string client_ca_pem;  // empty: no client certificates
  // Of the certificate itself (the chain's first), for the log and the
  // expiry gauge.
  std::int64_t not_before_s = 0;  // Unix seconds
  std::int64_t not_after_s = 0;   // Unix seconds
  std::string serial;             // hex
  std::string subject;            // RFC 2253
  // The files' stamp, taken before they were read: a change made while
  // (or after) they were read differs from it, so the reloader reads again.
  TlsFilesStamp stamp;

  // What describes the certificate (for the log, the gauges), without the
  // files' text: to keep once the key is in a TLS context, and nowhere else.
  TlsIdentity description() const;
};

// Reads and checks the files: each parses as PEM (a certificate file holds
// at least one certificate, the key file a private key without a
// passphrase, the CA file at least one certificate), and the key is the
// certificate's.
Result<TlsIdentity, TlsFileError> load_tls_identity(const TlsFiles& files);

}  // namespace snowflake
