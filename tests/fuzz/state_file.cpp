// The state files (worker.json, cluster.json): the disk is not trusted.
// Whatever decodes encodes to a text that decodes to the same record.
#include <string>

#include "fuzz_check.hpp"
#include "snowflake/state/cluster_file.hpp"
#include "snowflake/state/state_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  namespace s = snowflake::state;
  const auto text = as_text(data, size);
  if (const auto record = s::decode_state(text)) {
    FUZZ_CHECK(s::decode_state(s::encode_state(*record)) == record, text);
  }
  if (const auto cluster = s::decode_cluster_record(text)) {
    FUZZ_CHECK(s::decode_cluster_record(s::encode_cluster_record(*cluster)) == cluster, text);
  }
  return 0;
}
