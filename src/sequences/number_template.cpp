#include "snowflake/sequences/number_template.hpp"

#include <charconv>
#include <cstdint>

namespace snowflake {
namespace {

bool is_literal(char c) noexcept {
  if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("-_./:#+=~@").find(c) != std::string_view::npos;
}

void append_padded(std::string& out, std::int64_t value, int width) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  (void)ec;  // 24 characters hold any int64
  const auto length = static_cast<int>(end - digits);
  if (width > length) out.append(static_cast<std::size_t>(width - length), '0');
  out.append(digits, end);
}

std::string quoted(std::string_view text) { return "template '" + std::string(text) + "'"; }

// The largest number W digits print: W nines, or the largest sequence
// number (INT64_MAX - 1, ranges being [start, end) below INT64_MAX) from 19 on.
std::int64_t nines(int width) noexcept {
  std::int64_t n = 0;
  for (int i = 0; i < width && i < 18; ++i) n = n * 10 + 9;
  return width >= 19 || width == 0 ? INT64_MAX - 1 : n;
}

}  // namespace

void FilledTemplate::append(std::string& out, std::int64_t n) const {
  out += before;
  append_padded(out, n, width);
  out += after;
}

std::string FilledTemplate::format(std::int64_t n) const {
  std::string out;
  out.reserve(before.size() + after.size() + 20);
  append(out, n);
  return out;
}

NumberTemplate::NumberTemplate() : text_("{n}"), pieces_{Piece{Part::number, {}}} {}

Result<std::pair<NumberTemplate::Part, int>, std::string> NumberTemplate::read_token(
    std::string_view token) {
  using P = std::pair<Part, int>;
  if (token == "yyyy") return P{Part::year4, 0};
  if (token == "yy") return P{Part::year2, 0};
  if (token == "MM") return P{Part::month, 0};
  if (token == "dd") return P{Part::day, 0};
  if (token == "n") return P{Part::number, 0};
  if (token.size() >= 4 && token.substr(0, 3) == "n:0") {
    int width = 0;
    const auto digits = token.substr(3);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), width);
    if (ec == std::errc{} && end == digits.data() + digits.size() && width >= 1 && width <= 19 &&
        digits.front() != '0') {
      return P{Part::number, width};
    }
    return "{" + std::string(token) + "}: the width W of {n:0W} is 1 to 19";
  }
  return "unknown token {" + std::string(token) + "}";
}

std::int64_t NumberTemplate::widest() const noexcept { return nines(width_); }

Result<NumberTemplate, std::string> NumberTemplate::parse(std::string_view text,
                                                          PeriodReset reset) {
  if (text.empty() || text.size() > kMaxLength) {
    return quoted(text) + ": 1 to " + std::to_string(kMaxLength) + " characters";
  }
  NumberTemplate t;
  t.text_ = std::string(text);
  t.pieces_.clear();
  int seen[kParts] = {};  // by Part
  auto literal = [&t](char c) {
    if (t.pieces_.empty() || t.pieces_.back().part != Part::literal) t.pieces_.push_back({});
    t.pieces_.back().literal += c;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      literal(c);
      ++i;
      continue;
    }
    if (c == '}') return quoted(text) + ": a lone } at " + std::to_string(i) + " (write }})";
    if (c != '{') {
      if (!is_literal(c)) {
        return quoted(text) + ": character " + std::to_string(i) +
               " is not one of A-Z a-z 0-9 - _ . / : # + = ~ @";
      }
      literal(c);
      continue;
    }
    const auto close = text.find('}', i);
    if (close == std::string_view::npos) {
      return quoted(text) + ": the { at " + std::to_string(i) + " is never closed";
    }
    auto token = read_token(text.substr(i + 1, close - i - 1));
    if (!token) return quoted(text) + ": " + token.error() + " at " + std::to_string(i);
    const auto [part, width] = token.value();
    ++seen[static_cast<int>(part)];
    if (part == Part::number) t.width_ = width;
    t.pieces_.push_back({part, {}});
    i = close;
  }
  const auto count = [&seen](Part p) { return seen[static_cast<int>(p)]; };
  const bool year = count(Part::year4) + count(Part::year2) > 0;
  if (count(Part::number) != 1) {
    return quoted(text) +
           (count(Part::number) == 0 ? ": no {n} (the number)" : ": {n} more than once");
  }
  const bool daily = reset == PeriodReset::daily;
  const bool monthly = daily || reset == PeriodReset::monthly;
  const bool yearly = monthly || reset == PeriodReset::yearly;
  const std::string kind = reset == PeriodReset::none ? std::string("sequence that never restarts")
                                                      : std::string(to_string(reset)) + " sequence";
  if (count(Part::day) > 0 && !daily)
    return quoted(text) + ": {dd} in a " + kind + ", which does not restart each day";
  if (count(Part::month) > 0 && !monthly)
    return quoted(text) + ": {MM} in a " + kind + ", which does not restart each month";
  if (year && !yearly) {
    return quoted(text) + ": the year in a " + kind +
           ": a date needs a sequence that restarts each day, month or year";
  }
  if ((yearly && !year) || (monthly && count(Part::month) == 0) ||
      (daily && count(Part::day) == 0)) {
    return quoted(text) + ": a " + kind + " template must name " +
           (daily     ? "the year ({yyyy} or {yy}), {MM} and {dd}"
            : monthly ? "the year ({yyyy} or {yy}) and {MM}"
                      : "the year ({yyyy} or {yy})") +
           ", or two periods' numbers would print alike";
  }
  return t;
}

FilledTemplate NumberTemplate::fill(const Period& period) const {
  FilledTemplate filled;
  filled.width = width_;
  std::string* out = &filled.before;
  for (const auto& piece : pieces_) {
    switch (piece.part) {
      case Part::literal:
        *out += piece.literal;
        break;
      case Part::year4:
        append_padded(*out, period.year, 4);
        break;
      case Part::year2:
        append_padded(*out, period.year % 100, 2);
        break;
      case Part::month:
        append_padded(*out, period.month, 2);
        break;
      case Part::day:
        append_padded(*out, period.day, 2);
        break;
      case Part::number:
        out = &filled.after;
        break;
    }
  }
  return filled;
}

}  // namespace snowflake
