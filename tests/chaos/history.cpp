#include "history.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <stdexcept>

#include "snowflake/ids/layout_json.hpp"

namespace snowflake::chaos {

namespace {

using nlohmann::json;

std::uint64_t parse_u64(const std::string& text) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw std::runtime_error("not an ID: \"" + text + "\"");
  }
  return v;
}

Answer answer_of(const json& j) {
  Answer a;
  a.daemon = j.value("d", -1);
  a.run = j.value("run", -1);
  a.client = j.value("c", 0);
  a.sent_us = j.value("sent", std::int64_t{0});
  a.received_us = j.value("recv", std::int64_t{0});
  a.clock_offset_ms = j.value("off", std::int64_t{0});
  a.status = j.at("status").get<int>();
  a.error = j.value("error", "");
  a.retry_after = j.value("retry_after", false);
  a.standby = j.value("standby", false);
  a.seq = j.value("seq", "");
  if (const auto ids = j.find("ids"); ids != j.end()) {
    for (const auto& r : *ids) {
      if (r.is_string()) {
        a.ids.push_back({parse_u64(r.get<std::string>()), 1});
      } else {
        a.ids.push_back({parse_u64(r.at(0).get<std::string>()), r.at(1).get<std::uint32_t>()});
      }
    }
  }
  return a;
}

}  // namespace

int Fault::daemon() const {
  if (target.size() < 2 || target[0] != 'd') return -1;
  return std::stoi(target.substr(1));
}

std::vector<IdRun> to_runs(const std::vector<std::uint64_t>& ids) {
  std::vector<IdRun> runs;
  for (const std::uint64_t id : ids) {
    if (!runs.empty() && runs.back().last() + 1 == id) {
      ++runs.back().count;
    } else {
      runs.push_back({id, 1});
    }
  }
  return runs;
}

std::string to_json_line(const Answer& a) {
  json j{{"d", a.daemon},     {"run", a.run},          {"c", a.client},
         {"sent", a.sent_us}, {"recv", a.received_us}, {"off", a.clock_offset_ms},
         {"status", a.status}};
  if (!a.error.empty()) j["error"] = a.error;
  if (a.status != 200 && a.status != 0) j["retry_after"] = a.retry_after;
  if (a.standby) j["standby"] = true;
  if (!a.seq.empty()) j["seq"] = a.seq;
  if (!a.ids.empty()) {
    json runs = json::array();
    for (const auto& r : a.ids) runs.push_back(json::array({std::to_string(r.first), r.count}));
    j["ids"] = std::move(runs);
  }
  return j.dump();
}

std::string to_json_line(const Fault& f) {
  json j{{"kind", f.kind},
         {"target", f.target},
         {"start", f.start_us},
         {"end", f.end_us},
         {"detail", f.detail}};
  // A raise's (a floor's, a sequence's): above 0 too (a period thawed).
  if (f.above_id != 0 || !f.tag.empty()) {
    j["above_id"] = std::to_string(f.above_id);
    j["confirmed"] = f.confirmed_us;
  }
  if (!f.tag.empty()) j["tag"] = f.tag;
  return j.dump();
}

std::string layout_line(const LayoutSettings& layout) {
  return json{{"layout", json::parse(encode_layout(layout))}}.dump();
}

std::string sequences_line(const std::map<std::string, std::uint64_t>& starts,
                           const std::set<std::string>& strict) {
  json j{{"sequences", starts}};
  if (!strict.empty()) j["strict"] = strict;
  return j.dump();
}

History read_history(std::istream& in) {
  History h;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    try {
      if (line.front() != '{') {  // a plain list of IDs
        h.answers.push_back(Answer{.status = 200, .ids = {{parse_u64(line), 1}}});
        continue;
      }
      const json j = json::parse(line);
      if (const auto l = j.find("layout"); l != j.end()) {
        h.layout = decode_layout(l->dump());
        if (!h.layout) throw std::runtime_error("not a layout");
        continue;
      }
      if (const auto s = j.find("sequences"); s != j.end()) {
        h.sequence_starts = s->get<std::map<std::string, std::uint64_t>>();
        if (const auto strict = j.find("strict"); strict != j.end()) {
          h.strict_sequences = strict->get<std::set<std::string>>();
        }
        continue;
      }
      h.answers.push_back(answer_of(j));
    } catch (const std::exception& e) {
      throw std::runtime_error("line " + std::to_string(number) + ": " + e.what());
    }
  }
  return h;
}

std::vector<Fault> read_schedule(std::istream& in) {
  std::vector<Fault> faults;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    try {
      const json j = json::parse(line);
      faults.push_back({j.at("kind").get<std::string>(), j.at("target").get<std::string>(),
                        j.at("start").get<std::int64_t>(), j.at("end").get<std::int64_t>(),
                        j.value("detail", ""), parse_u64(j.value("above_id", "0")),
                        j.value("confirmed", std::int64_t{0}), j.value("tag", "")});
    } catch (const std::exception& e) {
      throw std::runtime_error("schedule line " + std::to_string(number) + ": " + e.what());
    }
  }
  return faults;
}

}  // namespace snowflake::chaos
