// --listen / http.listen: an accepted address, written back in the accepted
// form, parses to the same endpoint.
#include <fmt/format.h>

#include "fuzz_check.hpp"
#include "snowflake/base/listen_address.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const auto text = as_text(data, size);
  const auto endpoint = snowflake::parse_listen_address(text);
  if (!endpoint) return 0;
  const auto address = endpoint->address();
  const std::string again = address.is_v6()
                                ? fmt::format("[{}]:{}", address.to_string(), endpoint->port())
                                : fmt::format("{}:{}", address.to_string(), endpoint->port());
  FUZZ_CHECK(snowflake::parse_listen_address(again) == endpoint, text);
  return 0;
}
