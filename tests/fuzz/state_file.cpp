// The state files (worker.json, cluster.json, sequence-run): the disk is
// not trusted. Whatever decodes encodes to a text that decodes to the same
// record; a sequence-run names a run by a valid name, and proves it over
// only when it names this boot and this directory, and not otherwise.
#include <string>

#include "fuzz_check.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/state/cluster_file.hpp"
#include "snowflake/state/sequence_run.hpp"
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
  if (const auto run = s::decode_sequence_run(text, "boot-now", "8:42")) {
    FUZZ_CHECK(snowflake::is_valid_name(run->run), text);
    FUZZ_CHECK(run->proven_over == run->why_not.empty(), text);
    if (run->proven_over) {
      FUZZ_CHECK(text.find("boot-now") != std::string_view::npos, text);
      FUZZ_CHECK(!s::decode_sequence_run(text, "another-boot", "8:42")->proven_over, text);
      FUZZ_CHECK(!s::decode_sequence_run(text, "boot-now", "8:43")->proven_over, text);
      FUZZ_CHECK(!s::decode_sequence_run(text, "", "")->proven_over, text);
    }
  }
  return 0;
}
