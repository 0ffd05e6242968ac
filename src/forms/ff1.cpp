#include "snowflake/forms/ff1.hpp"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <optional>
#include <stdexcept>

namespace snowflake::forms {

namespace {

using Block = std::array<std::uint8_t, 16>;
__extension__ typedef unsigned __int128 u128;  // GCC and Clang's, as -Wpedantic wants it said

constexpr std::uint32_t kRounds = 10;

// radix^e, or nullopt once it reaches 2^64.
std::optional<std::uint64_t> power_below_2_64(std::uint32_t radix, std::uint32_t e) {
  u128 p = 1;
  for (std::uint32_t i = 0; i < e; ++i) {
    p *= radix;
    if (p >> 64) return std::nullopt;
  }
  return static_cast<std::uint64_t>(p);
}

std::uint32_t bit_length(std::uint64_t x) {
  std::uint32_t bits = 0;
  for (; x; x >>= 1) ++bits;
  return bits;
}

std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "no reason given";
  std::array<char, 256> text{};
  ERR_error_string_n(e, text.data(), text.size());
  return text.data();
}

}  // namespace

// --- the domain -------------------------------------------------------------

Result<Ff1Domain, std::string> Ff1Domain::create(std::uint32_t radix, std::uint32_t n) {
  if (radix < 2 || radix > 65536) {
    return fmt::format("FF1: radix {} is not in [2, 65536]", radix);
  }
  if (n < 2) return fmt::format("FF1: {} digits; at least 2", n);
  // radix^n >= 1,000,000 (SP 800-38G Rev. 1): fewer strings are too few to hide.
  u128 all = 1;
  for (std::uint32_t i = 0; i < n && all < 1'000'000; ++i) all *= radix;
  if (all < 1'000'000) {
    return fmt::format("FF1: radix {} and {} digits make under 1,000,000 strings", radix, n);
  }
  Ff1Domain d;
  d.radix_ = radix;
  d.n_ = n;
  d.u_ = n / 2;
  d.v_ = n - d.u_;
  const auto mv = power_below_2_64(radix, d.v_);
  if (!mv) {
    return fmt::format("FF1: radix {} to the power {} (the longer half) is not below 2^64", radix,
                       d.v_);
  }
  d.modulus_v_ = *mv;
  d.modulus_u_ = *power_below_2_64(radix, d.u_);
  // ceil(v * log2(radix)) is the bit length of radix^v - 1.
  d.b_ = (bit_length(d.modulus_v_ - 1) + 7) / 8;
  d.d_ = 4 * ((d.b_ + 3) / 4) + 4;
  return d;
}

Ff1Halves halves_of(const Ff1Domain& domain, std::span<const std::uint32_t> digits) {
  Ff1Halves x;
  for (std::uint32_t i = 0; i < domain.n(); ++i) {
    std::uint64_t& half = i < domain.u() ? x.a : x.b;
    half = half * domain.radix() + digits[i];
  }
  return x;
}

std::vector<std::uint32_t> digits_of(const Ff1Domain& domain, Ff1Halves x) {
  std::vector<std::uint32_t> digits(domain.n());
  for (std::uint32_t i = domain.n(); i-- > 0;) {
    std::uint64_t& half = i < domain.u() ? x.a : x.b;
    digits[i] = static_cast<std::uint32_t>(half % domain.radix());
    half /= domain.radix();
  }
  return digits;
}

// --- the key and the threads' contexts ------------------------------------

struct Ff1::Key {
  std::vector<std::uint8_t> bytes;
  EVP_CIPHER* cipher = nullptr;  // AES-<bits>-ECB, fetched once
  std::uint64_t id = 0;          // distinct per key, never reused
  Key() = default;
  Key(const Key&) = delete;
  Key& operator=(const Key&) = delete;
  ~Key() {
    OPENSSL_cleanse(bytes.data(), bytes.size());
    EVP_CIPHER_free(cipher);
  }
};

namespace {

std::atomic<std::uint64_t> next_key_id{1};

// One EVP context per thread, set up for the key it last used: a context
// may not be shared between threads, and setting one up costs more than
// the permutation itself.
struct ThreadCipher {
  std::uint64_t key_id = 0;
  EVP_CIPHER_CTX* ctx = nullptr;
  ThreadCipher() = default;
  ThreadCipher(const ThreadCipher&) = delete;
  ThreadCipher& operator=(const ThreadCipher&) = delete;
  ~ThreadCipher() { EVP_CIPHER_CTX_free(ctx); }
};

[[noreturn]] void aes_failed(const char* what) {
  throw std::runtime_error(
      fmt::format("FF1: AES (OpenSSL) failed in {}: {}", what, openssl_error()));
}

EVP_CIPHER_CTX* context_for(const Ff1::Key& key) {
  thread_local ThreadCipher mine;
  if (mine.ctx == nullptr) {
    mine.ctx = EVP_CIPHER_CTX_new();
    if (mine.ctx == nullptr) aes_failed("EVP_CIPHER_CTX_new");
  }
  if (mine.key_id != key.id) {
    mine.key_id = 0;
    if (EVP_EncryptInit_ex2(mine.ctx, key.cipher, key.bytes.data(), nullptr, nullptr) != 1 ||
        EVP_CIPHER_CTX_set_padding(mine.ctx, 0) != 1) {
      aes_failed("EVP_EncryptInit_ex2");
    }
    mine.key_id = key.id;
  }
  return mine.ctx;
}

// AES on `count` blocks at once, ECB: each block on its own.
void aes_blocks(EVP_CIPHER_CTX* ctx, const std::uint8_t* in, std::uint8_t* out, std::size_t count) {
  int written = 0;
  if (EVP_EncryptUpdate(ctx, out, &written, in, static_cast<int>(count * 16)) != 1 ||
      written != static_cast<int>(count * 16)) {
    aes_failed("EVP_EncryptUpdate");
  }
}

void xor_into(Block& x, const Block& y) {
  for (std::size_t i = 0; i < 16; ++i) x[i] ^= y[i];
}

std::uint64_t load_big_endian(const std::uint8_t* at) {
  std::uint64_t v = 0;
  std::memcpy(&v, at, 8);
  return __builtin_bswap64(v);
}

void store_big_endian(std::uint8_t* at, std::uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(at, &v, 8);
}

void put_big_endian(std::uint8_t* at, std::uint64_t value, std::uint32_t bytes) {
  for (std::uint32_t i = bytes; i-- > 0; value >>= 8) at[i] = static_cast<std::uint8_t>(value);
}

// What a call does before its rounds: the CBC-MAC's state after P and Q's
// blocks but the last, and Q's last block with the tweak's tail in place.
struct RoundSetup {
  Block state{};  // CBC-MAC of P || Q's blocks before its last
  Block last{};   // Q's last block, zeros where [i] and NUM(B) go
  // state XOR last, as a 128-bit big-endian number: a round's PRF input is
  // this XOR ([i] << 8b | NUM(B)).
  std::uint64_t high = 0, low = 0;
};

RoundSetup set_up(EVP_CIPHER_CTX* ctx, const Ff1Domain& dom, std::string_view tweak) {
  const auto t = static_cast<std::uint32_t>(tweak.size());
  Block p{1, 2, 1};
  put_big_endian(&p[3], dom.radix(), 3);
  p[6] = 10;
  p[7] = static_cast<std::uint8_t>(dom.u() % 256);
  put_big_endian(&p[8], dom.n(), 4);
  put_big_endian(&p[12], t, 4);
  RoundSetup s;
  aes_blocks(ctx, p.data(), s.state.data(), 1);
  // Q = T || 0^((-t-b-1) mod 16) || [i]^1 || [NUM(B)]^b: a multiple of 16.
  const std::uint32_t pad = (16 - (t + dom.b() + 1) % 16) % 16;
  const std::uint32_t q_len = t + pad + 1 + dom.b();
  const std::uint32_t blocks = q_len / 16;
  for (std::uint32_t k = 0; k < blocks; ++k) {
    Block q{};  // zeros where the padding is
    for (std::uint32_t j = 0; j < 16; ++j) {
      const std::uint32_t at = k * 16 + j;
      if (at < t) q[j] = static_cast<std::uint8_t>(tweak[at]);
    }
    if (k + 1 == blocks) {
      s.last = q;
      break;
    }
    xor_into(s.state, q);
    aes_blocks(ctx, s.state.data(), s.state.data(), 1);
  }
  Block both = s.state;
  xor_into(both, s.last);
  s.high = load_big_endian(both.data());
  s.low = load_big_endian(both.data() + 8);
  return s;
}

// The PRF's input block of round i: the MAC's state XOR Q's last block,
// whose last b bytes are NUM(B) and the byte before them i. Two 64-bit
// stores: every round of every ID comes here.
void round_input(const RoundSetup& s, const Ff1Domain& dom, std::uint32_t i, std::uint64_t num_b,
                 std::uint8_t* out) {
  const u128 tail = (static_cast<u128>(i) << (8 * dom.b())) | num_b;
  store_big_endian(out, s.high ^ static_cast<std::uint64_t>(tail >> 64));
  store_big_endian(out + 8, s.low ^ static_cast<std::uint64_t>(tail));
}

// y = NUM(S), S the first d bytes of R (d <= 12 here), reduced mod radix^m.
// The hot path of every round: a power-of-two modulus (radix 2, the opaque
// IDs') is a mask, and S of 8 bytes or fewer needs no 128-bit division.
std::uint64_t y_mod(const std::uint8_t* r, const Ff1Domain& dom, std::uint64_t modulus) {
  if (dom.d() == 8) {  // d is 8 or 12
    const std::uint64_t y = load_big_endian(r);
    return (modulus & (modulus - 1)) == 0 ? y & (modulus - 1) : y % modulus;
  }
  u128 y = 0;
  for (std::uint32_t k = 0; k < dom.d(); ++k) y = (y << 8) | r[k];
  return static_cast<std::uint64_t>(y % modulus);
}

std::uint64_t modulus_of_round(const Ff1Domain& dom, std::uint32_t i) {
  return i % 2 == 0 ? dom.modulus_u() : dom.modulus_v();
}

// (x + y) mod m, both below m: a mask for a power of two (radix 2), else
// one subtraction; never a division, and no branch on the data (which a
// CPU would guess wrong half the time).
std::uint64_t add_mod(std::uint64_t x, std::uint64_t y, std::uint64_t m) {
  if ((m & (m - 1)) == 0) return (x + y) & (m - 1);
  const u128 sum = static_cast<u128>(x) + y;
  return static_cast<std::uint64_t>(sum - (sum >= m ? m : 0));
}

}  // namespace

Result<Ff1, std::string> Ff1::create(std::span<const std::uint8_t> key) {
  const char* name = key.size() == 16   ? "AES-128-ECB"
                     : key.size() == 24 ? "AES-192-ECB"
                     : key.size() == 32 ? "AES-256-ECB"
                                        : nullptr;
  if (name == nullptr) {
    return fmt::format("FF1: a key of {} bytes; AES takes 16, 24 or 32", key.size());
  }
  auto k = std::make_shared<Key>();
  k->bytes.assign(key.begin(), key.end());
  k->cipher = EVP_CIPHER_fetch(nullptr, name, nullptr);
  if (k->cipher == nullptr) return fmt::format("FF1: OpenSSL has no {}: {}", name, openssl_error());
  k->id = next_key_id.fetch_add(1);
  // Set up once here, so that a key OpenSSL refuses is refused at start.
  try {
    (void)context_for(*k);
  } catch (const std::runtime_error& e) {
    return std::string(e.what());
  }
  return Ff1(std::move(k));
}

Ff1Halves Ff1::encrypt(const Ff1Domain& dom, std::string_view tweak, Ff1Halves x) const {
  EVP_CIPHER_CTX* ctx = context_for(*key_);
  const RoundSetup s = set_up(ctx, dom, tweak);
  for (std::uint32_t i = 0; i < kRounds; ++i) {
    Block r;
    round_input(s, dom, i, x.b, r.data());
    aes_blocks(ctx, r.data(), r.data(), 1);
    const std::uint64_t m = modulus_of_round(dom, i);
    const std::uint64_t c = add_mod(x.a, y_mod(r.data(), dom, m), m);
    x.a = x.b;
    x.b = c;
  }
  return x;
}

Ff1Halves Ff1::decrypt(const Ff1Domain& dom, std::string_view tweak, Ff1Halves y) const {
  EVP_CIPHER_CTX* ctx = context_for(*key_);
  const RoundSetup s = set_up(ctx, dom, tweak);
  for (std::uint32_t i = kRounds; i-- > 0;) {
    Block r;
    round_input(s, dom, i, y.a, r.data());
    aes_blocks(ctx, r.data(), r.data(), 1);
    const std::uint64_t m = modulus_of_round(dom, i);
    const std::uint64_t c = add_mod(y.b, m - y_mod(r.data(), dom, m), m);
    y.b = y.a;
    y.a = c;
  }
  return y;
}

void Ff1::encrypt_all(const Ff1Domain& dom, std::string_view tweak,
                      std::span<Ff1Halves> values) const {
  if (values.empty()) return;
  EVP_CIPHER_CTX* ctx = context_for(*key_);
  const RoundSetup s = set_up(ctx, dom, tweak);
  // A round for every value in one call; chunks keep the blocks in cache.
  constexpr std::size_t kChunk = 1024;
  thread_local std::vector<Block> blocks;
  blocks.resize(std::min(values.size(), kChunk));
  for (std::size_t from = 0; from < values.size(); from += kChunk) {
    const auto chunk = values.subspan(from, std::min(kChunk, values.size() - from));
    for (std::uint32_t i = 0; i < kRounds; ++i) {
      for (std::size_t k = 0; k < chunk.size(); ++k)
        round_input(s, dom, i, chunk[k].b, blocks[k].data());
      aes_blocks(ctx, blocks[0].data(), blocks[0].data(), chunk.size());
      const std::uint64_t m = modulus_of_round(dom, i);
      for (std::size_t k = 0; k < chunk.size(); ++k) {
        Ff1Halves& x = chunk[k];
        const std::uint64_t c = add_mod(x.a, y_mod(blocks[k].data(), dom, m), m);
        x.a = x.b;
        x.b = c;
      }
    }
  }
}

}  // namespace snowflake::forms
