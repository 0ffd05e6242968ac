#include "id_answer.hpp"

#include <fmt/format.h>
#include <boost/beast/http/field.hpp>

#include <algorithm>
#include <charconv>

#include "snowflake/forms/uuid_form.hpp"

namespace snowflake::http {

namespace {

// The body's shape around each item, written by `append_item(out, item)`:
// neither a decimal number nor a UUID needs JSON escaping.
template <class Item, class Append>
std::string body_of(std::string_view tag, const std::vector<Item>& items, Format format, bool batch,
                    std::size_t item_size, Append append_item) {
  std::string out;
  out.reserve(items.size() * (item_size + 3) + tag.size() + 24);
  if (format == Format::text) {
    for (const auto& item : items) {
      append_item(out, item);
      out.push_back('\n');
    }
    return out;
  }
  // The tag is [A-Za-z0-9._-]: nothing in it needs JSON escaping.
  if (!batch) {
    out.append("{\"id\":\"");
    append_item(out, items.front());
    out.append("\",\"tag\":\"").append(tag).append("\"}");
    return out;
  }
  out.append("{\"tag\":\"").append(tag).append("\",\"ids\":[");
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out.push_back(',');
    out.push_back('"');
    append_item(out, items[i]);
    out.push_back('"');
  }
  out.append("]}");
  return out;
}

template <class Number>
std::string numbers_body(std::string_view tag, const std::vector<Number>& ids, Format format,
                         bool batch) {
  return body_of(tag, ids, format, batch, 19, [](std::string& out, Number id) {
    append_id(out, static_cast<std::uint64_t>(id));
  });
}

}  // namespace

Result<IdQuery, Rejection> parse_id_query(std::string_view query, std::uint32_t max_batch) {
  IdQuery q;
  bool seen_count = false;
  const auto refused = visit_parameters(
      query, [&](std::string_view key, std::string_view value) -> std::optional<Rejection> {
        if (key == "count") {
          if (seen_count)
            return Rejection{Status::bad_request, "bad_count", "count is given more than once"};
          seen_count = true;
          std::uint32_t n = 0;
          const bool digits =
              !value.empty() && value.size() <= 10 &&
              std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
          if (!digits ||
              std::from_chars(value.data(), value.data() + value.size(), n).ec != std::errc{} ||
              n < 1 || n > max_batch) {
            return Rejection{
                Status::bad_request, "bad_count",
                fmt::format("count must be an integer from 1 to {}, got \"{}\"", max_batch, value)};
          }
          q.count = n;
          q.batch = true;
        } else if (key == "format") {
          if (q.format)
            return Rejection{Status::bad_request, "bad_format", "format is given more than once"};
          if (value == "json") {
            q.format = Format::json;
          } else if (value == "text") {
            q.format = Format::text;
          } else {
            return Rejection{Status::bad_request, "bad_format",
                             fmt::format("format must be json or text, got \"{}\"", value)};
          }
        } else if (key == "form") {
          if (q.form)
            return Rejection{Status::bad_request, "bad_form", "form is given more than once"};
          q.form = parse_id_form(value);
          if (!q.form) {
            return Rejection{Status::bad_request, "bad_form",
                             fmt::format("form must be plain, opaque or uuid, got \"{}\"", value)};
          }
        } else {
          return Rejection{
              Status::bad_request, "unknown_parameter",
              fmt::format("unknown query parameter \"{}\" (known: count, format, form)", key)};
        }
        return std::nullopt;
      });
  if (refused) return *refused;
  return q;
}

// Without ?format=, plain text only for a client that asks for it and not for JSON.
Format negotiate(const Request& req, const IdQuery& q) {
  if (q.format) return *q.format;
  const std::string_view accept = to_std(req[beast_http::field::accept]);
  const bool text = accept.find("text/plain") != std::string_view::npos;
  const bool json = accept.find("application/json") != std::string_view::npos;
  return text && !json ? Format::text : Format::json;
}

void append_id(std::string& out, std::uint64_t id) {
  char buf[20];
  const auto end = std::to_chars(buf, buf + sizeof buf, id).ptr;
  out.append(buf, end);
}

std::string ids_body(std::string_view tag, const std::vector<std::uint64_t>& ids, Format format,
                     bool batch) {
  return numbers_body(tag, ids, format, batch);
}

std::string ids_body(std::string_view tag, const std::vector<std::int64_t>& ids, Format format,
                     bool batch) {
  return numbers_body(tag, ids, format, batch);
}

std::string uuids_body(std::string_view tag, const std::vector<std::uint64_t>& ids,
                       const IdLayout& layout, Format format, bool batch) {
  return body_of(tag, ids, format, batch, 36, [&](std::string& out, std::uint64_t id) {
    forms::append_uuid(out, id, layout, forms::uuid_random());
  });
}

Response bad_tag() {
  return error_response(Status::bad_request, "bad_tag",
                        "tag must match [A-Za-z0-9._-]{1,64}, not . or ..");
}

Response ids_response(std::string body, Format format) {
  return format == Format::text ? text_response(Status::ok, std::move(body))
                                : json_response(Status::ok, std::move(body));
}

}  // namespace snowflake::http
