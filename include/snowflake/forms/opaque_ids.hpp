#pragma once
// Opaque IDs: the image of an ID under FF1-AES256 (ff1.hpp) over the 63
// bits below the sign bit (radix 2, 63 digits), with the tag as the tweak.
// A bijection on [0, 2^63) for each tag: opaque IDs are exactly as unique as
// the IDs, fit a signed 64-bit column, and each tag has a permutation of its
// own. Without the key they reveal nothing of the time, the worker or the
// count behind them; with it, decode() gives the ID back.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "snowflake/base/result.hpp"
#include "snowflake/forms/ff1.hpp"

namespace snowflake::forms {

using OpaqueKey = std::array<std::uint8_t, 32>;  // AES-256

class OpaqueIds {
 public:
  static Result<OpaqueIds, std::string> create(const OpaqueKey& key);

  // `id` below 2^63 (every ID is); so is the answer.
  std::uint64_t encode(std::uint64_t id, std::string_view tag) const;
  std::uint64_t decode(std::uint64_t opaque, std::string_view tag) const;
  // encode() on each, in place, a round over all of them at a time.
  void encode_all(std::span<std::uint64_t> ids, std::string_view tag) const;

  // 32 hex digits that tell keys apart and reveal nothing of them (SHA-256
  // of a label and the key, cut short): the cluster's root records it, so
  // that a daemon with another key cannot join (cluster_root.hpp).
  const std::string& fingerprint() const { return fingerprint_; }

 private:
  OpaqueIds(Ff1 cipher, Ff1Domain domain, std::string fingerprint)
      : cipher_(std::move(cipher)), domain_(domain), fingerprint_(std::move(fingerprint)) {}
  Ff1 cipher_;
  Ff1Domain domain_;
  std::string fingerprint_;
};

// The key file's text: 64 hex digits (32 bytes), surrounding white space
// allowed. The error says what is wrong without showing any of it.
Result<OpaqueKey, std::string> parse_opaque_key(std::string_view text);

}  // namespace snowflake::forms
