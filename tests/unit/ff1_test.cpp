// FF1 (NIST SP 800-38G) on OpenSSL's AES, against NIST's published samples
// (FF1samples.pdf: AES-128, -192 and -256, radix 10 and 36), and the
// opaque-ID form built on it: a bijection on 63-bit IDs per tag.

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "snowflake/forms/ff1.hpp"
#include "snowflake/forms/opaque_ids.hpp"

using namespace snowflake::forms;

namespace {

std::vector<std::uint8_t> from_hex(std::string_view hex) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<std::uint8_t>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

std::vector<std::uint32_t> digits(std::string_view text) {
  std::vector<std::uint32_t> out;
  for (const char c : text) out.push_back(c <= '9' ? c - '0' : c - 'a' + 10);
  return out;
}

std::string text(const std::vector<std::uint32_t>& digits) {
  std::string out;
  for (const auto d : digits) out += static_cast<char>(d < 10 ? '0' + d : 'a' + d - 10);
  return out;
}

constexpr std::string_view kKey128 = "2B7E151628AED2A6ABF7158809CF4F3C";
constexpr std::string_view kKey192 = "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F";
constexpr std::string_view kKey256 =
    "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94";

struct Sample {
  int number;
  std::string_view key;
  std::uint32_t radix;
  std::string_view tweak;  // hex
  std::string_view plain;
  std::string_view cipher;
};

// NIST's FF1 samples 1 to 9.
const Sample kSamples[] = {
    {1, kKey128, 10, "", "0123456789", "2433477484"},
    {2, kKey128, 10, "39383736353433323130", "0123456789", "6124200773"},
    {3, kKey128, 36, "3737373770717273373737", "0123456789abcdefghi", "a9tv40mll9kdu509eum"},
    {4, kKey192, 10, "", "0123456789", "2830668132"},
    {5, kKey192, 10, "39383736353433323130", "0123456789", "2496655549"},
    {6, kKey192, 36, "3737373770717273373737", "0123456789abcdefghi", "xbj3kv35jrawxv32ysr"},
    {7, kKey256, 10, "", "0123456789", "6657667009"},
    {8, kKey256, 10, "39383736353433323130", "0123456789", "1001623463"},
    {9, kKey256, 36, "3737373770717273373737", "0123456789abcdefghi", "xs8a0azh2avyalyzuwd"},
};

OpaqueKey test_key() {
  OpaqueKey k{};
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::uint8_t>(i * 7 + 3);
  return k;
}

}  // namespace

TEST_CASE("FF1: NIST's samples, AES-128, -192 and -256, radix 10 and 36, both ways", "[forms]") {
  for (const Sample& s : kSamples) {
    INFO("sample " << s.number);
    const auto cipher = Ff1::create(from_hex(s.key));
    REQUIRE(cipher);
    const auto domain = Ff1Domain::create(s.radix, static_cast<std::uint32_t>(s.plain.size()));
    REQUIRE(domain);
    const auto tweak_bytes = from_hex(s.tweak);
    const std::string tweak(tweak_bytes.begin(), tweak_bytes.end());
    const Ff1Halves x = halves_of(domain.value(), digits(s.plain));
    const Ff1Halves y = cipher.value().encrypt(domain.value(), tweak, x);
    CHECK(text(digits_of(domain.value(), y)) == s.cipher);
    CHECK(cipher.value().decrypt(domain.value(), tweak, y) == x);
    Ff1Halves many[] = {x, x};
    cipher.value().encrypt_all(domain.value(), tweak, many);
    CHECK(many[0] == y);
    CHECK(many[1] == y);
  }
}

TEST_CASE("FF1: domains and keys it cannot take are refused, saying why", "[forms]") {
  CHECK_THAT(Ff1Domain::create(1, 20).error(), Catch::Contains("radix"));
  CHECK_THAT(Ff1Domain::create(10, 5).error(), Catch::Contains("1,000,000"));
  CHECK_THAT(Ff1Domain::create(10, 40).error(), Catch::Contains("2^64"));
  CHECK(Ff1Domain::create(2, 63));
  CHECK(Ff1Domain::create(2, 20));  // 2^20 > 1,000,000
  CHECK_THAT(Ff1::create(std::vector<std::uint8_t>(31)).error(), Catch::Contains("31 bytes"));
}

TEST_CASE("opaque IDs: a bijection on 63 bits, a permutation per tag", "[forms]") {
  const auto opaque = OpaqueIds::create(test_key());
  REQUIRE(opaque);
  const OpaqueIds& o = opaque.value();
  std::mt19937_64 random(42);
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t id = random() >> 1;
    const std::uint64_t image = o.encode(id, "order");
    INFO(id);
    CHECK(image < (std::uint64_t{1} << 63));  // fits a signed 64-bit column
    CHECK(o.decode(image, "order") == id);
    CHECK(o.encode(id, "user") != image);  // another tag, another permutation
  }
  CHECK(o.decode(o.encode(0, "t"), "t") == 0);
  const std::uint64_t top = (std::uint64_t{1} << 63) - 1;
  CHECK(o.decode(o.encode(top, "t"), "t") == top);
  // Long tags take more of the PRF's blocks: still a bijection.
  const std::string long_tag(64, 'x');
  CHECK(o.decode(o.encode(12345, long_tag), long_tag) == 12345);
}

TEST_CASE(
    "opaque IDs: in a batch of 100,000, none is its plain ID, and their order is not the "
    "IDs' order",
    "[forms]") {
  const OpaqueIds o = OpaqueIds::create(test_key()).value();
  // Consecutive IDs, as a batch of one worker has.
  std::vector<std::uint64_t> ids(100'000);
  const std::uint64_t first = 251'224'890'190'389'248ULL;
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = first + i;
  std::vector<std::uint64_t> images = ids;
  o.encode_all(images, "order");
  std::size_t fixed = 0, ascents = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    fixed += images[i] == ids[i];
    if (i > 0) ascents += images[i] > images[i - 1];
  }
  CHECK(fixed == 0);
  CHECK(std::set<std::uint64_t>(images.begin(), images.end()).size() == ids.size());
  CHECK_FALSE(std::is_sorted(images.begin(), images.end()));
  // About half the neighbours rise, as in a random order (IDs: all of them).
  CHECK(ascents > 49'000);
  CHECK(ascents < 51'000);
  // One at a time gives the same.
  for (std::size_t i = 0; i < ids.size(); i += 997) CHECK(o.encode(ids[i], "order") == images[i]);
}

TEST_CASE("opaque key: 64 hex digits, else what is wrong without the key", "[forms]") {
  const std::string hex(64, 'a');
  CHECK(parse_opaque_key(hex + "\n").value()[0] == 0xaa);
  // Strings built by hand: GCC 12 at -O1 takes `std::string(n, c) + "..."`
  // for an out-of-bounds copy (-Warray-bounds, a false positive).
  std::string padded(68, ' ');
  padded.replace(2, 64, 64, 'F');
  CHECK(parse_opaque_key(padded).value()[31] == 0xff);
  CHECK_THAT(parse_opaque_key(std::string(63, 'a')).error(), Catch::Contains("63 characters"));
  CHECK_THAT(parse_opaque_key("").error(), Catch::Contains("0 characters"));
  std::string not_hex(64, 'a');
  not_hex.replace(62, 2, "zz");
  const auto bad = parse_opaque_key(not_hex);
  CHECK_THAT(bad.error(), Catch::Contains("not a hex digit"));
  CHECK(bad.error().find("zz") == std::string::npos);
}
