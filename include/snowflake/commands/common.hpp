#pragma once
// What the subcommands share beyond what every process of ours does
// (process/program_config.hpp): the config a command is given, and a
// ZooKeeper session for operator commands.

#include <boost/program_options/variables_map.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "snowflake/base/clock.hpp"
#include "snowflake/config/config.hpp"
#include "snowflake/process/program_config.hpp"
#include "snowflake/zk/coord_error.hpp"
#include "snowflake/zk/zk_session.hpp"

namespace snowflake::commands {

// --config FILE, if given.
std::optional<std::string> config_path(const boost::program_options::variables_map& vm);

// A session for an operator command (pool status, pool floor), with the
// ZooKeeper client's chatter kept out of the report. On failure prints why
// and returns nullptr (exit 1).
// `wait`: keep trying this long (ZooKeeper not up yet, its names not yet
// resolvable), instead of zookeeper.connect_timeout_ms once.
std::unique_ptr<coord::ZkSession> connect_for_command(
    const Config& config, std::optional<std::chrono::milliseconds> wait = std::nullopt);

// Whether ZooKeeper's answer was lost rather than given: the connection
// dropped (a server that failed, an ensemble electing a leader) or the call
// timed out. The session lives on and finds another server; asked again,
// the command gets an answer.
bool answer_lost(const coord::CoordError& error);

// A step of an operator command, tried again while its answer is lost, up
// to `deadline` (the command's --wait). Only for steps that may run twice:
// reads, and writes that read first and are conditional (a fence written
// twice is one fence, a frozen sequence frozen again is unchanged).
template <class Step>
auto until_answered(BootClock::time_point deadline, Step step) -> decltype(step()) {
  for (;;) {
    auto result = step();
    if (result || !answer_lost(result.error()) || BootClock::now() >= deadline) return result;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace snowflake::commands
