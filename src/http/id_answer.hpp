#pragma once
// What the ID routes share (/id/<tag>, /seq/<tag> and Leaf's): the query
// (?count=, ?format=, ?form=), the format a client gets, and the body of
// numbers or UUIDs, JSON or text. Internal to the router.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snowflake/base/result.hpp"
#include "snowflake/http/responses.hpp"
#include "snowflake/ids/form.hpp"
#include "snowflake/ids/layout.hpp"

namespace snowflake::http {

// What a 503 of these routes tells a client to wait before asking again.
inline constexpr auto kRetrySoon = std::chrono::seconds(1);

enum class Format { json, text };

struct Rejection {
  Status status;
  std::string code;
  std::string message;
};

struct IdQuery {
  std::uint32_t count = 1;
  bool batch = false;  // ?count= given: answer with a list, even of one
  std::optional<Format> format;
  std::optional<IdForm> form;  // ?form=; none: the tag's own (forms.tags, forms.default)
};

// Calls visit(key, value) for each "key=value" of a query ("a=1&b&c=2":
// ("a", "1"), ("b", ""), ("c", "2"); empty pairs skipped), in order, and
// returns the first answer it gives (an optional: a refusal), else none. No
// percent-decoding: no valid value of ours needs it, so an encoded one is
// simply invalid.
template <class Visit>
auto visit_parameters(std::string_view query, Visit visit)
    -> decltype(visit(std::string_view{}, std::string_view{})) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    const std::string_view value =
        eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    if (auto stop = visit(pair.substr(0, eq), value)) return stop;
  }
  return {};
}

// "count=5&format=text&form=opaque" -> values.
Result<IdQuery, Rejection> parse_id_query(std::string_view query, std::uint32_t max_batch);

// Without ?format=, plain text only for a client that asks for it and not for JSON.
Format negotiate(const Request& req, const IdQuery& q);

// The decimal digits of `id`, appended.
void append_id(std::string& out, std::uint64_t id);

// {"id":"<n>","tag":"<tag>"}, {"tag":"<tag>","ids":["<n>",...]} for a
// batch, or one number per line as text. `tag` is a valid name.
std::string ids_body(std::string_view tag, const std::vector<std::uint64_t>& ids, Format format,
                     bool batch);
std::string ids_body(std::string_view tag, const std::vector<std::int64_t>& ids, Format format,
                     bool batch);
// The same shapes with each ID's UUID (forms/uuid_form.hpp) for its number.
std::string uuids_body(std::string_view tag, const std::vector<std::uint64_t>& ids,
                       const IdLayout& layout, Format format, bool batch);

// 400 bad_tag: the tag (or Leaf's key) is not [A-Za-z0-9._-]{1,64}, or is . or ..
Response bad_tag();

// The answer with that body, in its format's content type.
Response ids_response(std::string body, Format format);

}  // namespace snowflake::http
