// IDs as text (GET /decode/<id>, the history checker): what parse_id accepts
// is a non-negative 63-bit number that prints back the same, and decoding it
// with a layout and composing the fields again gives the ID back.
#include <string>

#include "fuzz_check.hpp"
#include "snowflake/ids/json.hpp"
#include "snowflake/ids/layout.hpp"
#include "snowflake/ids/text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const auto text = as_text(data, size);
  const auto id = snowflake::parse_id(text);
  if (!id) return 0;
  FUZZ_CHECK(*id <= 0x7fff'ffff'ffff'ffffULL, text);
  FUZZ_CHECK(snowflake::parse_id(std::to_string(*id)) == id, text);

  // The default layout, a coarse one, Twitter's with a datacenter field and
  // sonyflake's with the sequence above the machine: every 63-bit ID decodes
  // in each, and composes back.
  for (const snowflake::LayoutSettings& settings :
       {snowflake::LayoutSettings{},
        snowflake::LayoutSettings{
            .time_bits = 39, .worker_bits = 16, .sequence_bits = 8, .time_unit_ms = 10},
        *snowflake::find_layout_preset("twitter"), *snowflake::find_layout_preset("sonyflake")}) {
    const auto layout = snowflake::IdLayout::create(settings, settings.epoch_ms);
    FUZZ_CHECK(layout.has_value(), text);
    const auto decoded = layout.value().decompose(*id);
    FUZZ_CHECK(decoded.has_value(), text);
    const auto& d = decoded.value();
    FUZZ_CHECK(d.id == *id, text);
    const auto composed =
        layout.value().compose(d.timestamp_ms, d.datacenter_id, d.worker_id, d.sequence);
    FUZZ_CHECK(composed.has_value() && composed.value() == *id, text);
    (void)snowflake::decoded_id_to_json(d).dump();  // never throws
  }
  return 0;
}
