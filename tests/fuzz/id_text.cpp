// IDs as text (GET /decode/<id>, the history checker): what parse_id accepts
// is a non-negative 63-bit number that prints back the same, and decoding it
// with a layout and composing the fields again gives the ID back.
#include <string>

#include "fuzz_check.hpp"
#include "snowflake/id_json.hpp"
#include "snowflake/id_layout.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const auto text = as_text(data, size);
  const auto id = snowflake::parse_id(text);
  if (!id) return 0;
  FUZZ_CHECK(*id <= 0x7fff'ffff'ffff'ffffULL, text);
  FUZZ_CHECK(snowflake::parse_id(std::to_string(*id)) == id, text);

  // The default layout and a coarse one: every 63-bit ID decodes in both.
  for (const snowflake::LayoutSettings& settings :
       {snowflake::LayoutSettings{},
        snowflake::LayoutSettings{.time_bits = 39, .worker_bits = 16, .sequence_bits = 8,
                                  .time_unit_ms = 10}}) {
    const auto layout = snowflake::IdLayout::create(settings, settings.epoch_ms);
    FUZZ_CHECK(layout.has_value(), text);
    const auto decoded = layout.value().decompose(*id);
    FUZZ_CHECK(decoded.has_value(), text);
    const auto& d = decoded.value();
    FUZZ_CHECK(d.id == *id, text);
    const auto composed = layout.value().compose(d.timestamp_ms, d.worker_id, d.sequence);
    FUZZ_CHECK(composed.has_value() && composed.value() == *id, text);
    (void)snowflake::decoded_id_to_json(d).dump();  // never throws
  }
  return 0;
}
