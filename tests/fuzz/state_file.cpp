// The state file (worker.json): the disk is not trusted. Whatever decodes
// encodes to a text that decodes to the same record.
#include <string>

#include "fuzz_check.hpp"
#include "snowflake/state/state_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const auto text = as_text(data, size);
  const auto record = snowflake::state::decode_state(text);
  if (!record) return 0;
  const std::string encoded = snowflake::state::encode_state(*record);
  FUZZ_CHECK(snowflake::state::decode_state(encoded) == record, text);
  return 0;
}
