// What the ID forms read from outside: UUID text (GET /decode/<uuid>,
// snowflaked decode), opaque IDs with their tag, and the key file's text.
// The first byte picks which:
//  0  UUID text: what id_of_uuid accepts looks like a UUID, is an ID of the
//     layout, and that ID's UUID (any random bits) decodes back to it;
//  1  an opaque ID and a tag (8 bytes, then the tag): decoding, then
//     encoding, gives it back, below 2^63, and a batch encodes the same;
//  2  a key file's text: what parses is 64 hex digits (white space around),
//     and a refusal says nothing of the text but its length.
#include <cstring>
#include <string>

#include "fuzz_check.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/forms/opaque_ids.hpp"
#include "snowflake/forms/uuid_form.hpp"
#include "snowflake/ids/layout.hpp"

namespace {

using namespace snowflake;

void uuid_text(std::string_view text) {
  for (const LayoutSettings& settings :
       {LayoutSettings{}, *find_layout_preset("sonyflake"), *find_layout_preset("twitter")}) {
    const auto layout = IdLayout::create(settings, settings.epoch_ms).value();
    const auto id = forms::id_of_uuid(text, layout);
    if (!id) continue;
    FUZZ_CHECK(forms::looks_like_uuid(text), text);
    FUZZ_CHECK(layout.decompose(id.value()).has_value(), text);
    std::string again;
    forms::append_uuid(again, id.value(), layout, forms::uuid_random());
    FUZZ_CHECK(forms::looks_like_uuid(again), text);
    FUZZ_CHECK(forms::id_of_uuid(again, layout).value() == id.value(), text);
    // The time and the fields are the text's: only its random bits differ.
    FUZZ_CHECK(again.substr(0, 18) == std::string(text.substr(0, 18)) ||
                   text.find_first_of("ABCDEF") != std::string_view::npos,
               text);
  }
}

const forms::OpaqueIds& opaque_ids() {
  static const forms::OpaqueIds ids = [] {
    forms::OpaqueKey key{};
    for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<std::uint8_t>(i * 37);
    return forms::OpaqueIds::create(key).value();
  }();
  return ids;
}

void opaque_id(std::string_view input) {
  if (input.size() < 8) return;
  std::uint64_t value = 0;
  std::memcpy(&value, input.data(), 8);
  value >>= 1;  // below 2^63, as every ID and opaque ID is
  const std::string_view tag = input.substr(8);
  const auto& ids = opaque_ids();
  const std::uint64_t plain = ids.decode(value, tag);
  FUZZ_CHECK(plain < (std::uint64_t{1} << 63), input);
  FUZZ_CHECK(ids.encode(plain, tag) == value, input);
  std::uint64_t batch[] = {plain, value};
  ids.encode_all(batch, tag);
  FUZZ_CHECK(batch[0] == value && batch[1] == ids.encode(value, tag), input);
}

void key_text(std::string_view text) {
  const auto key = forms::parse_opaque_key(text);
  const auto first = text.find_first_not_of(" \t\r\n");
  const auto length =
      first == std::string_view::npos ? 0 : text.find_last_not_of(" \t\r\n") - first + 1;
  if (key) {
    FUZZ_CHECK(length == 64, text);
    return;
  }
  // A refusal says what is wrong and nothing of what the file holds: one of
  // two messages, the length the only thing taken from the text.
  const std::string wrong_length =
      std::to_string(length) + " characters, not the 64 hex digits of a 32-byte key";
  FUZZ_CHECK(key.error() == "holds " + wrong_length ||
                 (length == 64 && key.error() == "holds a character that is not a hex digit"),
             text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  if (size == 0) return 0;
  const auto text = as_text(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      uuid_text(text);
      break;
    case 1:
      opaque_id(text);
      break;
    case 2:
      key_text(text);
      break;
  }
  return 0;
}
