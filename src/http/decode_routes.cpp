#include "decode_routes.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "id_answer.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/forms/uuid_form.hpp"
#include "snowflake/http/route_access.hpp"
#include "snowflake/ids/json.hpp"
#include "snowflake/ids/text.hpp"

namespace snowflake::http {

namespace {

struct DecodeQuery {
  std::optional<IdForm> form;
  std::optional<std::string_view> tag;
};

Result<DecodeQuery, Response> parse_decode_query(std::string_view query) {
  DecodeQuery q;
  auto refused = visit_parameters(
      query, [&](std::string_view key, std::string_view value) -> std::optional<Response> {
        if (key == "form" && !q.form) {
          q.form = parse_id_form(value);
          if (!q.form) {
            return error_response(
                Status::bad_request, "bad_form",
                fmt::format("form must be plain, opaque or uuid, got \"{}\"", value));
          }
        } else if (key == "tag" && !q.tag) {
          if (!is_valid_name(value)) return bad_tag();
          q.tag = value;
        } else {
          return error_response(
              Status::bad_request, "unknown_parameter",
              fmt::format("/decode takes form and tag, each once; not \"{}\"", key));
        }
        return std::nullopt;
      });
  if (refused) return std::move(*refused);
  return q;
}

Response bad_id() {
  return error_response(Status::bad_request, "bad_id",
                        "an ID is decimal digits, at most 9223372036854775807");
}

Response fields_of(std::uint64_t id, RouterContext& ctx, std::optional<IdForm> form,
                   std::string_view given) {
  nlohmann::ordered_json body = decoded_id_to_json(ctx.layout.decompose(id).value());
  if (form) {
    body["form"] = to_string(*form);
    body[std::string(to_string(*form))] = given;
  }
  return json_response(Status::ok, body.dump());
}

}  // namespace

Response decode(const Request& req, std::string_view id_text, std::string_view query,
                RouterContext& ctx) {
  auto q = parse_decode_query(query);
  if (!q) return std::move(q).error();
  const IdForm form =
      q.value().form.value_or(forms::looks_like_uuid(id_text) ? IdForm::uuid : IdForm::plain);
  if (form == IdForm::uuid) {
    const auto id = forms::id_of_uuid(id_text, ctx.layout);
    if (!id)
      return error_response(Status::bad_request, "bad_id", "not a UUID of ours: " + id.error());
    return fields_of(id.value(), ctx, form, id_text);
  }
  const auto number = parse_id(id_text);
  if (form == IdForm::plain) {
    if (!number) return bad_id();
    return fields_of(*number, ctx, std::nullopt, id_text);
  }
  // Opaque: undoing the permutation is for whoever the route table lets.
  const Access access = ctx.routes ? ctx.routes->opaque_decoding : Access::token;
  if (auto refused = check_access(access, req, ctx.settings, "decoding an opaque ID")) {
    return std::move(*refused);
  }
  if (!q.value().tag) {
    return error_response(Status::bad_request, "bad_tag",
                          "decoding an opaque ID needs the tag it was issued for: &tag=<tag>");
  }
  if (!ctx.forms || !ctx.forms->opaque) {
    return error_response(Status::bad_request, "bad_form",
                          "this daemon has no opaque key (forms.opaque_key_file)");
  }
  if (!number) return bad_id();
  return fields_of(ctx.forms->opaque->decode(*number, *q.value().tag), ctx, form, id_text);
}

// GET /decodeSnowflakeId?snowflakeId=N: Leaf's LeafMonitorController fields,
// all strings: {"timestamp":"<ms>(yyyy-MM-dd HH:mm:ss.SSS)","workerId",
// "sequenceId"}, in the configured layout and in UTC (Leaf formats in its
// JVM's zone), "datacenterId" too in a layout with one. A bad ID gets our
// 400 (Leaf answers 200 with an errorMsg).
Response leaf_decode(std::string_view query, RouterContext& ctx) {
  constexpr std::string_view kKey = "snowflakeId=";
  if (!query.starts_with(kKey) || query.find('&') != std::string_view::npos) {
    return error_response(Status::bad_request, "unknown_parameter",
                          "decodeSnowflakeId takes one query parameter: snowflakeId=<ID>");
  }
  const auto id = parse_id(query.substr(kKey.size()));
  if (!id) {
    return error_response(Status::bad_request, "bad_id",
                          "snowflakeId must be decimal digits, at most 9223372036854775807");
  }
  const DecodedId d = ctx.layout.decompose(*id).value();
  std::string time = format_iso8601_ms(d.timestamp_ms);  // 2026-11-23T12:02:21.720Z
  std::replace(time.begin(), time.end(), 'T', ' ');
  time.pop_back();
  nlohmann::ordered_json body{{"timestamp", fmt::format("{}({})", d.timestamp_ms, time)},
                              {"workerId", std::to_string(d.worker_id)},
                              {"sequenceId", std::to_string(d.sequence)}};
  if (ctx.layout.settings().datacenter_bits > 0)
    body["datacenterId"] = std::to_string(d.datacenter_id);
  return json_response(Status::ok, body.dump());
}

}  // namespace snowflake::http
