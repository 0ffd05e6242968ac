// snowflaked decode ID [--config FILE]: an ID's fields as JSON, in the
// config's layout (the default layout without one).

#include <iostream>

#include "commands.hpp"
#include "common.hpp"
#include "snowflake/id_json.hpp"
#include "snowflake/id_text.hpp"

namespace snowflake::commands {

namespace {

int decode(const std::optional<std::string>& config_file, const std::string& id_text) {
  const auto config = load_config(config_file);
  if (!config) return kExitUsage;
  const auto id = parse_id(id_text);
  if (!id) return fail(kExitUsage, "decode: " + not_an_id(id_text));
  std::cout << decoded_id_to_json(layout_of(*config).decompose(*id).value()).dump() << '\n';
  return kExitOk;
}

}  // namespace

Parsed decode_command(const Options& options, const Arguments& args) {
  if (args.size() != 1) return std::string("decode takes exactly one ID");
  return Action([config = config_path(options), id = args[0]] { return decode(config, id); });
}

}  // namespace snowflake::commands
