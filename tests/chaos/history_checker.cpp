// Checks a record of IDs: a chaos run's history.jsonl (with its schedule,
// for the figures) or a plain list of IDs, one a line (duplicates only).
//
//   history_checker HISTORY [--schedule SCHEDULE] [--layout '{"worker_bits":..}']
//
// Exit 0: no rule broken; 1: a rule broken (the report says which, with
// examples); 2: bad usage or unreadable input.

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "check.hpp"
#include "snowflake/ids/layout_json.hpp"

using namespace snowflake;

int main(int argc, char** argv) {
  std::string history_path, schedule_path, layout_json;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--schedule" && i + 1 < argc)
      schedule_path = argv[++i];
    else if (arg == "--layout" && i + 1 < argc)
      layout_json = argv[++i];
    else if (!arg.starts_with("--") && history_path.empty())
      history_path = arg;
    else {
      std::cerr << "usage: history_checker HISTORY [--schedule FILE] [--layout JSON]\n";
      return 2;
    }
  }
  if (history_path.empty()) {
    std::cerr << "usage: history_checker HISTORY [--schedule FILE] [--layout JSON]\n";
    return 2;
  }
  try {
    std::ifstream in(history_path);
    if (!in) throw std::runtime_error("cannot open " + history_path);
    chaos::History history = chaos::read_history(in);
    std::vector<chaos::Fault> schedule;
    if (!schedule_path.empty()) {
      std::ifstream s(schedule_path);
      if (!s) throw std::runtime_error("cannot open " + schedule_path);
      schedule = chaos::read_schedule(s);
    }
    LayoutSettings settings = history.layout.value_or(LayoutSettings{});
    if (!layout_json.empty()) {
      const auto given = decode_layout(layout_json);
      if (!given) throw std::runtime_error("--layout: not a layout: " + layout_json);
      settings = *given;
    }
    const auto layout = IdLayout::create(settings, settings.epoch_ms);
    if (!layout) throw std::runtime_error("layout: " + layout.error().message);
    const auto report = chaos::check(history, schedule, layout.value());
    std::cout << chaos::to_text(report);
    return report.ok() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "history_checker: " << e.what() << '\n';
    return 2;
  }
}
