// ISO-8601 parsing (layout.epoch in the config, /decode answers): whatever it
// accepts formats back to an instant it parses to again.
#include <cstdint>

#include "fuzz_check.hpp"
#include "snowflake/base/time_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const auto text = as_text(data, size);
  const auto ms = snowflake::parse_iso8601_ms(text);
  if (!ms) return 0;
  const std::string formatted = snowflake::format_iso8601_ms(*ms);
  FUZZ_CHECK(snowflake::parse_iso8601_ms(formatted) == ms, text);
  return 0;
}
