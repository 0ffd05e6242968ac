// The data of our ZooKeeper nodes, which any client with write access can
// change: each decoder either refuses the text or returns data that encodes
// to a text it decodes again to the same data. The first byte picks the node.
#include <string_view>

#include "fuzz_check.hpp"
#include "snowflake/coord/node_data.hpp"
#include "snowflake/layout_json.hpp"

namespace {

template <typename Decode, typename Encode>
void round_trip(std::string_view text, Decode decode, Encode encode) {
  const auto data = decode(text);
  if (!data) return;
  const std::string encoded = encode(*data);
  FUZZ_CHECK(decode(encoded) == data, text);
}

template <typename Decode>
void round_trip(std::string_view text, Decode decode) {
  round_trip(text, decode, [](const auto& d) { return snowflake::coord::encode(d); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  if (size == 0) return 0;
  const auto text = as_text(data + 1, size - 1);
  namespace c = snowflake::coord;
  switch (data[0] % 5) {
    case 0:
      round_trip(text, [](std::string_view t) { return c::decode_inuse(t); });
      break;
    case 1:
      round_trip(text, [](std::string_view t) { return c::decode_notuse(t); });
      break;
    case 2:
      round_trip(text, [](std::string_view t) { return c::decode_sequential(t); });
      break;
    case 3:
      round_trip(
          text, [](std::string_view t) { return snowflake::decode_layout(t); },
          [](const snowflake::LayoutSettings& l) { return snowflake::encode_layout(l); });
      break;
    case 4:
      round_trip(text, [](std::string_view t) { return c::decode_owner(t); });
      break;
  }
  (void)c::worker_id_of_node(text);
  return 0;
}
