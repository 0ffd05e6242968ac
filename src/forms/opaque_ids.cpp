#include "snowflake/forms/opaque_ids.hpp"

#include <fmt/format.h>

#include <openssl/crypto.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <vector>

#include "hex_digit.hpp"
#include "snowflake/base/sha256.hpp"

namespace snowflake::forms {

namespace {

constexpr std::uint32_t kBits = 63;                    // below the sign bit
constexpr std::uint32_t kLowBits = kBits - kBits / 2;  // FF1's v: B, the last 32 digits
constexpr std::uint64_t kLowMask = (std::uint64_t{1} << kLowBits) - 1;

// A 63-digit binary numeral string is its value: A the high 31 bits, B the low 32.
Ff1Halves halves(std::uint64_t x) { return {x >> kLowBits, x & kLowMask}; }
std::uint64_t joined(Ff1Halves h) { return (h.a << kLowBits) | h.b; }

}  // namespace

Result<OpaqueIds, std::string> OpaqueIds::create(const OpaqueKey& key) {
  auto cipher = Ff1::create(key);
  if (!cipher) return std::move(cipher).error();
  // A one-way function of a label and the key: it names the key, and no
  // key can be found from it.
  constexpr std::string_view kLabel = "snowflaked opaque key fingerprint 1\n";
  std::array<char, kLabel.size() + sizeof(OpaqueKey)> input{};
  std::copy(kLabel.begin(), kLabel.end(), input.begin());
  std::copy(key.begin(), key.end(), input.begin() + kLabel.size());
  const Sha256Digest digest = sha256({input.data(), input.size()});
  OPENSSL_cleanse(input.data(), input.size());
  std::string fingerprint;
  for (std::size_t i = 0; i < 16; ++i)
    fmt::format_to(std::back_inserter(fingerprint), "{:02x}", digest[i]);
  return OpaqueIds(std::move(cipher).value(), Ff1Domain::create(2, kBits).value(),
                   std::move(fingerprint));
}

std::uint64_t OpaqueIds::encode(std::uint64_t id, std::string_view tag) const {
  return joined(cipher_.encrypt(domain_, tag, halves(id)));
}

std::uint64_t OpaqueIds::decode(std::uint64_t opaque, std::string_view tag) const {
  return joined(cipher_.decrypt(domain_, tag, halves(opaque)));
}

void OpaqueIds::encode_all(std::span<std::uint64_t> ids, std::string_view tag) const {
  thread_local std::vector<Ff1Halves> values;
  values.resize(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) values[i] = halves(ids[i]);
  cipher_.encrypt_all(domain_, tag, values);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = joined(values[i]);
}

Result<OpaqueKey, std::string> parse_opaque_key(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  const auto last = text.find_last_not_of(" \t\r\n");
  const std::string_view hex =
      first == std::string_view::npos ? std::string_view{} : text.substr(first, last - first + 1);
  if (hex.size() != 2 * OpaqueKey{}.size()) {
    return fmt::format("holds {} characters, not the 64 hex digits of a 32-byte key", hex.size());
  }
  OpaqueKey key{};
  for (std::size_t i = 0; i < key.size(); ++i) {
    const int hi = hex_digit_value(hex[2 * i]);
    const int lo = hex_digit_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      OPENSSL_cleanse(key.data(), key.size());  // the part read so far
      return std::string("holds a character that is not a hex digit");
    }
    key[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return key;
}

}  // namespace snowflake::forms
