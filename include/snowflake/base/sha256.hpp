#pragma once
// SHA-256 (OpenSSL's EVP): what the admin token is kept and compared as, and
// what the opaque key's fingerprint is made of.

#include <array>
#include <cstdint>
#include <string_view>

namespace snowflake {

using Sha256Digest = std::array<std::uint8_t, 32>;

// Throws std::runtime_error if OpenSSL fails (it has no reason to).
Sha256Digest sha256(std::string_view bytes);

// Equal digests, compared in constant time (CRYPTO_memcmp): how long it
// takes says nothing of where two digests differ.
bool same_digest(const Sha256Digest& a, const Sha256Digest& b) noexcept;

}  // namespace snowflake
