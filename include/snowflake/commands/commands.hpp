#pragma once
// The subcommands of snowflaked, one file each in src/commands/ (the daemon
// itself: run.cpp and ../daemon.cpp). Each reads its own options and
// arguments from the parsed command line, refuses what it cannot take with a
// message (exit 2, with the usage), and otherwise returns its action.

#include <boost/program_options/variables_map.hpp>

#include <functional>
#include <string>
#include <vector>

#include "snowflake/base/result.hpp"

namespace snowflake::commands {

using Options = boost::program_options::variables_map;
using Arguments = std::vector<std::string>;  // the words after the command's name
using Action = std::function<int()>;         // runs the command; returns its exit code
using Parsed = Result<Action, std::string>;  // or a usage error

Parsed run_command(const Options& options);  // no command: run the daemon
Parsed decode_command(const Options& options, const Arguments& args);
Parsed check_config_command(const Options& options, const Arguments& args);
Parsed pool_status_command(const Options& options);
Parsed pool_floor_command(const Options& options);
// cluster create and cluster fence (cluster.cpp).
Parsed cluster_command(const Options& options, const Arguments& args);
// snowflaked cluster forms (cluster_forms.cpp): the exit code.
int cluster_forms(const std::string& config_file, bool set_policy);
// snowflaked cluster export / import (cluster_export.cpp).
int cluster_export(const std::string& config_file);
int cluster_import(const std::string& config_file, const std::string& export_file);
Parsed get_command(const Options& options, const Arguments& args);
Parsed probe_command(const Options& options, const Arguments& args);
Parsed seq_command(const Options& options, const Arguments& args);
Parsed lease_command(const Options& options, const Arguments& args);
// seq raise and seq forget (seq_raise.cpp), --config checked by seq_command.
Parsed seq_raise_command(const Options& options, const Arguments& args);
Parsed seq_forget_command(const Options& options, const Arguments& args);
Parsed seq_order_command(const Options& options, const Arguments& args);
// seq import (seq_import.cpp).
Parsed seq_import_command(const Options& options, const Arguments& args);

}  // namespace snowflake::commands
