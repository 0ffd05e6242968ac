#include "snowflake/base/tls_identity.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <memory>
#include <optional>

#include "snowflake/base/error_text.hpp"
#include "snowflake/base/openssl_pem.hpp"
#include "snowflake/base/secret_wipe.hpp"

namespace snowflake {

namespace {

// A certificate bundle (a CA file may be a whole system bundle) or a key is
// far below this; a path naming something else (a log, /dev/zero) is refused
// instead of read without end.
constexpr std::size_t kMaxPemFile = 4 << 20;

using openssl::Bio;
using openssl::ErrorQueueCleared;
using openssl::KeyPtr;
using openssl::last_error_reason;
using openssl::memory_bio;
using openssl::no_passphrase;
using openssl::X509Ptr;
using BigNum = std::unique_ptr<BIGNUM, openssl::Deleter<BIGNUM, BN_free>>;

// Why a file could not be read (a type apart from the text, which Outcome
// needs to tell the two apart).
struct ReadError {
  std::string message;
};

Result<std::string, ReadError> read_file(const std::string& path) {
  // O_NONBLOCK: a FIFO at the path is refused below, not waited on.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ReadError{fmt::format("cannot open \"{}\": {}", path, error_text(errno))};
  struct Closed {
    int fd;
    ~Closed() { ::close(fd); }
  } closed{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return ReadError{fmt::format("cannot read \"{}\": {}", path, error_text(errno))};
  if (!S_ISREG(st.st_mode)) return ReadError{fmt::format("\"{}\" is not a regular file", path)};
  if (static_cast<std::uint64_t>(st.st_size) > kMaxPemFile)
    return ReadError{fmt::format("\"{}\" is over {} bytes: not a PEM file", path, kMaxPemFile)};
  // Room for the whole file up front: a key is not left behind in a buffer
  // that a growing string let go of.
  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size) + 1);
  std::string chunk(16384, '\0');
  const WipedOnExit chunk_wiped(chunk);
  for (;;) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      wipe(text);
      return ReadError{fmt::format("cannot read \"{}\": {}", path, error_text(errno))};
    }
    if (n == 0) break;
    text.append(chunk.data(), static_cast<std::size_t>(n));
    if (text.size() > kMaxPemFile) {  // it grew while read
      wipe(text);
      return ReadError{fmt::format("\"{}\" is over {} bytes: not a PEM file", path, kMaxPemFile)};
    }
  }
  return text;
}

// Every certificate of a PEM text; the first, or an error that says why
// there is none or where the text stops being PEM.
Result<X509Ptr, std::string> read_certificates(const std::string& text, const std::string& path) {
  const Bio bio = memory_bio(text);
  X509Ptr first;
  int count = 0;
  while (X509Ptr cert{PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr)}) {
    if (!first) first = std::move(cert);
    ++count;
  }
  // The loop ends on "no start line" once the text has no further block;
  // anything else is a block that does not parse (a file cut short).
  const unsigned long last = ERR_peek_last_error();
  const bool clean_end =
      ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE;
  if (last != 0 && !clean_end) {
    return fmt::format("\"{}\" is not valid PEM after {} certificate(s): {}", path, count,
                       last_error_reason());
  }
  if (count == 0) return fmt::format("\"{}\" holds no PEM certificate", path);
  ERR_clear_error();
  return first;
}

std::int64_t unix_seconds(const ASN1_TIME* time) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(time, &tm) != 1) return 0;
  return static_cast<std::int64_t>(::timegm(&tm));
}

std::string serial_of(const X509* cert) {
  const BigNum bn{ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr)};
  if (!bn) return "?";
  char* hex = BN_bn2hex(bn.get());
  std::string out = hex != nullptr ? hex : "?";
  OPENSSL_free(hex);
  return out;
}

std::string subject_of(const X509* cert) {
  const Bio bio{BIO_new(BIO_s_mem())};
  if (!bio || X509_NAME_print_ex(bio.get(), X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) < 0)
    return "?";
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return size > 0 ? std::string(data, static_cast<std::size_t>(size)) : std::string();
}

}  // namespace

std::string_view tls_file_key(TlsFile file) noexcept {
  switch (file) {
    case TlsFile::cert:
      return "tls_cert_file";
    case TlsFile::key:
      return "tls_key_file";
    case TlsFile::client_ca:
      return "admin_client_ca_file";
  }
  return "tls_cert_file";
}

TlsFilesStamp stamp_tls_files(const TlsFiles& files) {
  TlsFilesStamp out;
  for (const std::string* path : {&files.cert_file, &files.key_file, &files.client_ca_file}) {
    if (path->empty()) continue;
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

TlsIdentity::~TlsIdentity() {
  wipe(key_pem);
  // A combined file (certificate and key in one) has the key here too.
  if (chain_pem.find("PRIVATE KEY") != std::string::npos) wipe(chain_pem);
}

TlsIdentity TlsIdentity::description() const {
  TlsIdentity d;
  d.not_before_s = not_before_s;
  d.not_after_s = not_after_s;
  d.serial = serial;
  d.subject = subject;
  d.stamp = stamp;
  return d;
}

Result<TlsIdentity, TlsFileError> load_tls_identity(const TlsFiles& files) {
  const ErrorQueueCleared cleared;
  TlsIdentity id;
  id.stamp = stamp_tls_files(files);
  const auto fail = [](TlsFile file, std::string message) {
    return TlsFileError{file, std::move(message)};
  };

  auto chain = read_file(files.cert_file);
  if (!chain) return fail(TlsFile::cert, chain.error().message);
  id.chain_pem = std::move(chain).value();
  auto cert = read_certificates(id.chain_pem, files.cert_file);
  if (!cert) return fail(TlsFile::cert, cert.error());

  auto key_text = read_file(files.key_file);
  if (!key_text) return fail(TlsFile::key, key_text.error().message);
  id.key_pem = std::move(key_text).value();
  const Bio key_bio = memory_bio(id.key_pem);
  const KeyPtr key{PEM_read_bio_PrivateKey(key_bio.get(), nullptr, no_passphrase, nullptr)};
  if (!key) {
    const bool encrypted = id.key_pem.find("ENCRYPTED") != std::string::npos;
    return fail(TlsFile::key,
                encrypted ? fmt::format("\"{}\" is encrypted: the daemon takes an unencrypted "
                                        "key (openssl pkey -in KEY -out KEY.plain)",
                                        files.key_file)
                          : fmt::format("\"{}\" holds no PEM private key: {}", files.key_file,
                                        last_error_reason()));
  }
  if (X509_check_private_key(cert.value().get(), key.get()) != 1) {
    return fail(TlsFile::key,
                fmt::format("\"{}\" is not the key of the certificate in \"{}\" ({})",
                            files.key_file, files.cert_file, subject_of(cert.value().get())));
  }

  if (!files.client_ca_file.empty()) {
    auto ca = read_file(files.client_ca_file);
    if (!ca) return fail(TlsFile::client_ca, ca.error().message);
    id.client_ca_pem = std::move(ca).value();
    if (auto ca_cert = read_certificates(id.client_ca_pem, files.client_ca_file); !ca_cert)
      return fail(TlsFile::client_ca, ca_cert.error());
  }

  id.not_before_s = unix_seconds(X509_get0_notBefore(cert.value().get()));
  id.not_after_s = unix_seconds(X509_get0_notAfter(cert.value().get()));
  id.serial = serial_of(cert.value().get());
  id.subject = subject_of(cert.value().get());
  return id;
}

}  // namespace snowflake
