// snowflaked get [TAG] [--count N] [--form FORM] [--seq] [--servers URL,...]
// [--cacert FILE] [--timeout MS] [--json]: IDs for shell scripts from whichever replica can
// issue (the client itself: src/client/).

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "snowflake/base/names.hpp"
#include "snowflake/client/get_command.hpp"
#include "snowflake/commands/commands.hpp"
#include "snowflake/commands/common.hpp"

namespace snowflake::commands {

namespace {

struct GetCommandOptions {
  std::string tag = "default";
  std::uint32_t count = 1;
  std::optional<std::string> servers;  // else $SNOWFLAKED_SERVERS, else the default
  std::chrono::milliseconds timeout{5'000};
  bool json = false;
  std::optional<IdForm> form;
  bool sequence = false;               // --seq: GET /seq/TAG
  std::optional<std::string> ca_file;  // else $SNOWFLAKED_CACERT, else the system's CAs
};

int get(const GetCommandOptions& options) {
  std::string servers(client::kDefaultServers);
  if (options.servers) {
    servers = *options.servers;
  } else {
    // Read before any thread starts; nothing calls setenv.
    const char* env = std::getenv(client::kServersVariable);  // NOLINT(concurrency-mt-unsafe)
    if (env && *env) servers = env;
  }
  std::string ca_file = options.ca_file.value_or("");
  if (!options.ca_file) {
    const char* env = std::getenv(client::kCaCertVariable);  // NOLINT(concurrency-mt-unsafe)
    if (env) ca_file = env;
  }
  auto replicas = client::parse_replica_list(servers);
  if (!replicas) return fail(kExitUsage, "snowflaked get: " + replicas.error());
  std::ostringstream errors;
  const int code = client::run_get({.tag = options.tag,
                                    .count = options.count,
                                    .servers = std::move(replicas).value(),
                                    .timeout = options.timeout,
                                    .json = options.json,
                                    .form = options.form,
                                    .sequence = options.sequence,
                                    .ca_file = std::move(ca_file)},
                                   std::cout, errors);
  if (errors.tellp() > 0) return fail(code, errors.str());
  return code;
}

}  // namespace

Parsed get_command(const Options& options, const Arguments& args) {
  GetCommandOptions o;
  if (args.size() > 1) return std::string("get takes at most one TAG");
  if (!args.empty()) o.tag = args[0];
  if (!is_valid_name(o.tag)) {
    return fmt::format("get: TAG must match [A-Za-z0-9._-]{{1,64}} (not . or ..), got \"{}\"",
                       o.tag);
  }
  if (options.count("count")) o.count = options["count"].as<std::uint32_t>();
  if (o.count < 1) return std::string("get: --count must be at least 1");
  if (options.count("servers")) o.servers = options["servers"].as<std::string>();
  if (options.count("cacert")) o.ca_file = options["cacert"].as<std::string>();
  if (options.count("timeout")) {
    o.timeout = std::chrono::milliseconds(options["timeout"].as<std::uint32_t>());
  }
  if (o.timeout.count() < 1) return std::string("get: --timeout must be at least 1 ms");
  o.json = options.count("json") > 0;
  o.sequence = options.count("seq") > 0;
  if (o.sequence && options.count("form")) {
    return std::string("get: --form is for IDs; a sequence's numbers are plain");
  }
  if (options.count("form")) {
    const auto text = options["form"].as<std::string>();
    o.form = parse_id_form(text);
    if (!o.form) return fmt::format("get: --form must be plain, opaque or uuid, got \"{}\"", text);
  }
  return Action([o] { return get(o); });
}

}  // namespace snowflake::commands
