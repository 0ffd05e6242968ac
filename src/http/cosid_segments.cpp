// CosId's segment distributor, answered as its ProxyIdSegmentDistributor
// asks it (docs/api.md, "CosId's proxy API"), over our sequence
// "<namespace>.<name>" (made with `seq create`, as any sequence):
//
//   PATCH /segments/<ns>/<name>?step=N                 the next segment
//   POST  /segments/distributor/<ns>/<name>?offset=O&step=N
//
// The first answers the segment's maximum as plain text: CosId hands out
// (maximum - step, maximum], so the answer covers exactly `step` numbers
// nobody else is handed (sequences/segment_calls.hpp says how they are
// taken). The second is what CosId's distributor factory sends once, and
// ignores: 200 if the sequence exists, else 404 saying how to make it (a
// sequence is made by an operator, never by a request). A refusal is in
// CosId's shape, {"code": .., "msg": ..}, which CosId reports as the body it
// could not read as a number.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <optional>

#include "cosid_routes.hpp"
#include "id_answer.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/sequences/registry.hpp"

namespace snowflake::http {

namespace {

using beast_http::field;
using beast_http::verb;

constexpr std::string_view kSegments = "/segments/";
constexpr std::string_view kDistributor = "distributor/";

// "<ns>/<name>", each a name: the sequence "<ns>.<name>", if it is one.
std::optional<std::string> sequence_of(std::string_view rest) {
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::string_view ns = rest.substr(0, slash);
  const std::string_view name = rest.substr(slash + 1);
  if (!is_valid_name(ns) || !is_valid_name(name)) return std::nullopt;
  std::string tag = fmt::format("{}.{}", ns, name);
  if (!is_valid_name(tag)) return std::nullopt;
  return tag;
}

std::optional<std::int64_t> whole_number(std::string_view text) {
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return n;
}

// The query's step (and, for the distributor, its offset): each once, nothing else.
Result<std::int64_t, Response> parse_step(std::string_view query, bool distributor) {
  std::optional<std::int64_t> step;
  bool offset_seen = false;
  auto refused = visit_parameters(
      query, [&](std::string_view key, std::string_view value) -> std::optional<Response> {
        if (key == "step" && !step) {
          step = whole_number(value);
          if (!step || *step < 1 || *step > kMaxSegmentStep) {
            return cosid_bad_request(
                fmt::format("step must be 1 to {}, got \"{}\"", kMaxSegmentStep, value));
          }
        } else if (key == "offset" && distributor && !offset_seen) {
          const auto offset = whole_number(value);
          if (!offset || *offset < 0) {
            return cosid_bad_request(
                fmt::format("offset must be a whole number from 0, got \"{}\"", value));
          }
          offset_seen = true;
        } else {
          return cosid_bad_request(
              fmt::format("this request does not take \"{}\" (or takes it once)", key));
        }
        return std::nullopt;
      });
  if (refused) return std::move(*refused);
  if (!step) return cosid_bad_request("step is required");
  return *step;
}

Response segment_body(const SegmentCall::Outcome& outcome, const std::string& tag) {
  if (const auto* grant = std::get_if<SegmentGrant>(&outcome)) {
    return text_response(Status::ok, std::to_string(grant->last));
  }
  const auto& refusal = std::get<SegmentRefusal>(outcome);
  switch (refusal.why) {
    case SegmentRefusal::Why::no_sequence:
      return cosid_error(Status::not_found, "no_such_sequence", refusal.message);
    case SegmentRefusal::Why::exhausted:
      return cosid_error(Status::gone, "sequence_exhausted", refusal.message);
    case SegmentRefusal::Why::not_plain:
      return cosid_error(Status::conflict, "not_segmentable", refusal.message);
    case SegmentRefusal::Why::frozen:
      return in_cosid_shape(
          unavailable_response("sequence_frozen", refusal.message, std::chrono::seconds(60)));
    case SegmentRefusal::Why::unavailable:
      break;
  }
  return in_cosid_shape(unavailable_response(
      "sequence_unavailable",
      refusal.message.empty() ? fmt::format("no segment of \"{}\" now", tag) : refusal.message,
      kRetrySoon));
}

Answer distributor(std::string_view rest, std::string_view query, RouterContext& ctx) {
  const auto tag = sequence_of(rest);
  if (!tag) {
    return cosid_error(Status::not_found, "not_found",
                       "no route: /segments/distributor/<namespace>/<name>, each [A-Za-z0-9._-]");
  }
  auto step = parse_step(query, /*distributor=*/true);
  if (!step) return Reply{std::move(step.error())};
  if (ctx.sequences->find(*tag)) {
    return json_response(Status::ok,
                         nlohmann::ordered_json{{"sequence", *tag}, {"exists", true}}.dump());
  }
  return cosid_error(
      Status::not_found, "no_such_sequence",
      fmt::format("no sequence \"{}\" is served here: an operator makes it with snowflaked seq "
                  "create {} (--start and --step as this cluster's sequences need)",
                  *tag, *tag));
}

}  // namespace

Answer cosid_segment_route(const Request& req, std::string_view path, std::string_view query,
                           RouterContext& ctx) {
  std::string_view rest = path.substr(kSegments.size());
  const bool factory = rest.starts_with(kDistributor) &&
                       rest.find('/', kDistributor.size()) != std::string_view::npos;
  const verb allowed = factory ? verb::post : verb::patch;
  if (req.method() != allowed) {
    Response res = cosid_error(Status::method_not_allowed, "method_not_allowed",
                               fmt::format("{} only answers {}", path, factory ? "POST" : "PATCH"));
    res.set(field::allow, factory ? "POST" : "PATCH");
    return res;
  }
  if (!ctx.sequences) {
    return in_cosid_shape(unavailable_response(
        "sequences_disabled", "this daemon serves no sequences (sequences.enabled)",
        std::chrono::seconds(60)));
  }
  if (factory) return distributor(rest.substr(kDistributor.size()), query, ctx);
  const auto tag = sequence_of(rest);
  if (!tag) {
    return cosid_error(Status::not_found, "not_found",
                       fmt::format("no route for {}: /segments/<namespace>/<name>, each "
                                   "[A-Za-z0-9._-]{{1,64}} and the two joined by a dot 64 at most",
                                   path));
  }
  auto step = parse_step(query, /*distributor=*/false);
  if (!step) return Reply{std::move(step.error())};
  auto call = std::make_shared<SegmentCall>(*tag, step.value());
  if (!ctx.sequences->segments.queue(call)) {
    return in_cosid_shape(unavailable_response(
        "sequence_unavailable",
        fmt::format("{} segments wait for ZooKeeper already: ask again", kMaxQueuedSegments),
        kRetrySoon));
  }
  ctx.sequences->request_refill();
  return Wait{[call, tag = *tag](bool last) -> std::optional<Reply> {
                auto outcome = call->take_outcome();
                if (!outcome) {
                  if (!last) return std::nullopt;
                  return Reply{segment_body(
                      SegmentRefusal{SegmentRefusal::Why::unavailable,
                                     fmt::format("ZooKeeper did not answer within {} s",
                                                 kSegmentAnswerWait.count())},
                      tag)};
                }
                return Reply{segment_body(*outcome, tag)};
              },
              [call](std::weak_ptr<const Wake> wake) { call->subscribe(std::move(wake)); },
              call->answer_by()};
}

}  // namespace snowflake::http
