#pragma once
// FF1, the format-preserving encryption mode of NIST SP 800-38G (Rev. 1),
// on AES from OpenSSL 3's EVP: a keyed permutation of the numeral strings of
// n digits in a radix, one per tweak.
//
// FF1 splits a numeral string X into A (the first u = n/2 digits) and B (the
// last v = n - u), and its ten Feistel rounds only ever read a half as the
// number it denotes (NUM_radix) and write one from a number (STR_radix). So
// this works on the halves' values, a = NUM_radix(A) and b = NUM_radix(B):
// a numeral string and its pair of values are one and the same thing, and
// the digits are only ever needed at the edges (digits_of/value_of, for the
// standard's samples). Values must fit 64 bits: radix^v <= 2^64.
//
// Each round's PRF is a CBC-MAC over P || Q; P and Q's blocks before its
// last depend only on the key, the domain and the tweak, so they are MAC-ed
// once per call, and each round costs one AES block. encrypt_all() runs a
// round over many values in one EVP call (AES-NI pipelines the blocks).
//
// Thread-safe: each thread keeps its own cipher context for a key.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "snowflake/base/result.hpp"

namespace snowflake::forms {

// The numeral strings FF1 permutes: n digits in radix, split u + v.
class Ff1Domain {
 public:
  // radix in [2, 2^16], radix^n >= 1,000,000 (the standard's minimum), and
  // radix^v <= 2^64 (this implementation's bound). The error says which.
  static Result<Ff1Domain, std::string> create(std::uint32_t radix, std::uint32_t n);

  std::uint32_t radix() const { return radix_; }
  std::uint32_t n() const { return n_; }
  std::uint32_t u() const { return u_; }
  std::uint32_t v() const { return v_; }
  // radix^u and radix^v: a half's values are below them. 2^64 is held as 0.
  std::uint64_t modulus_u() const { return modulus_u_; }
  std::uint64_t modulus_v() const { return modulus_v_; }
  std::uint32_t b() const { return b_; }  // bytes of NUM_radix(B) in Q
  std::uint32_t d() const { return d_; }  // bytes of the PRF's output used

 private:
  Ff1Domain() = default;
  std::uint32_t radix_ = 0, n_ = 0, u_ = 0, v_ = 0, b_ = 0, d_ = 0;
  std::uint64_t modulus_u_ = 0, modulus_v_ = 0;
};

// A numeral string as its halves' values.
struct Ff1Halves {
  std::uint64_t a = 0;  // NUM_radix of the first u digits
  std::uint64_t b = 0;  // NUM_radix of the last v digits
  bool operator==(const Ff1Halves&) const = default;
};

// Digits (most significant first) <-> halves, for the domain's n digits.
Ff1Halves halves_of(const Ff1Domain& domain, std::span<const std::uint32_t> digits);
std::vector<std::uint32_t> digits_of(const Ff1Domain& domain, Ff1Halves x);

class Ff1 {
 public:
  // An AES key of 16, 24 or 32 bytes (FF1-AES128, -192, -256). The bytes are
  // kept only in this object's state (wiped when the last copy goes).
  static Result<Ff1, std::string> create(std::span<const std::uint8_t> key);

  Ff1Halves encrypt(const Ff1Domain& domain, std::string_view tweak, Ff1Halves x) const;
  Ff1Halves decrypt(const Ff1Domain& domain, std::string_view tweak, Ff1Halves y) const;
  // Every value at once, in place: the same as encrypt() on each.
  void encrypt_all(const Ff1Domain& domain, std::string_view tweak,
                   std::span<Ff1Halves> values) const;

  struct Key;  // the key and an id for the threads' contexts (ff1.cpp)

 private:
  explicit Ff1(std::shared_ptr<const Key> key) : key_(std::move(key)) {}
  std::shared_ptr<const Key> key_;
};

}  // namespace snowflake::forms
