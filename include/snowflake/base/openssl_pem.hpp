#pragma once
// OpenSSL's objects in owning pointers, and what reading PEM text with it
// needs wherever that is done (the TLS identity's check, the contexts built
// from it, snowflaked get's CA file).

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>
#include <string>

namespace snowflake::openssl {

template <class T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const noexcept { Free(p); }
};
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;

// A read-only BIO over `text`, which must outlive it.
inline Bio memory_bio(const std::string& text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// The passphrase callback of every PEM read: none is ever asked for, as a
// daemon has no terminal to ask on (OpenSSL's default prompts on one).
inline int no_passphrase(char*, int, int, void*) { return -1; }

// OpenSSL reports on a per-thread queue that later TLS calls on the same
// thread (Asio's engine, a session's) read: a scope that may leave errors
// there clears it, however it ends.
class ErrorQueueCleared {
 public:
  ErrorQueueCleared() { ERR_clear_error(); }
  ~ErrorQueueCleared() { ERR_clear_error(); }
  ErrorQueueCleared(const ErrorQueueCleared&) = delete;
  ErrorQueueCleared& operator=(const ErrorQueueCleared&) = delete;
};

// The newest error's reason ("bad end line"), for a message.
inline std::string last_error_reason() {
  const unsigned long code = ERR_peek_last_error();
  if (code == 0) return "unknown error";
  const char* reason = ERR_reason_error_string(code);
  return reason != nullptr ? std::string(reason) : "error " + std::to_string(code);
}

}  // namespace snowflake::openssl
