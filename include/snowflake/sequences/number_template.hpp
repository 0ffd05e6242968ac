#pragma once
// How a sequence's number is printed: 'INV-{yyyy}{MM}{dd}-{n:06}' ->
// "INV-20261126-000123". A pure function of (period, number), like an ID
// form; checked once, at `seq create`, and again by every daemon that reads
// the sequence's node.
//
// Tokens: {yyyy} {yy} {MM} {dd} (the period's civil date, zero-padded),
// {n} (the number) and {n:0W} (the number zero-padded to W digits, 1..19);
// "{{" and "}}" are literal braces. Everything else is literal and must be
// one of A-Z a-z 0-9 and - _ . / : # + = ~ @ (nothing to escape in JSON
// or in a URL's path).
//
// A template must tell its periods apart, or two periods' numbers would
// print alike: a daily one names the year ({yyyy} or {yy}), the month and
// the day; a monthly one the year and the month; a yearly one the year. It
// may not name a field its period does not have ({dd} in a monthly
// template would be a day the number does not restart on). {yy} repeats
// each century: that is the template's author's call. With {n:0W}, the
// largest number printed is W nines: a number wider than the template is
// never printed (the period is exhausted first).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "snowflake/base/result.hpp"
#include "snowflake/sequences/period.hpp"

namespace snowflake {

// The template filled in for one period: the number goes between `before`
// and `after`, zero-padded to `width` (0: as wide as it is).
struct FilledTemplate {
  std::string before;
  std::string after;
  int width = 0;
  // Appends the formatted number (n >= 0).
  void append(std::string& out, std::int64_t n) const;
  std::string format(std::int64_t n) const;
};

class NumberTemplate {
 public:
  static constexpr std::size_t kMaxLength = 64;

  // The error names what is wrong and where ("template 'X{q}': unknown
  // token {q} at 2").
  static Result<NumberTemplate, std::string> parse(std::string_view text, PeriodReset reset);
  // '{n}': what a sequence without a template prints.
  NumberTemplate();

  FilledTemplate fill(const Period& period) const;
  // The largest number the template can print: W nines for {n:0W}, else
  // the largest number a sequence has.
  std::int64_t widest() const noexcept;
  int width() const noexcept { return width_; }
  const std::string& text() const noexcept { return text_; }

 private:
  enum class Part { literal, year4, year2, month, day, number };
  static constexpr int kParts = 6;
  // One token between braces: its part, and for {n:0W} the width.
  static Result<std::pair<Part, int>, std::string> read_token(std::string_view token);
  struct Piece {
    Part part = Part::literal;
    std::string literal;
  };
  std::string text_;
  std::vector<Piece> pieces_;
  int width_ = 0;
};

}  // namespace snowflake
