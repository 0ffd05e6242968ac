#include "snowflake/http/router.hpp"

#include <fmt/format.h>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <optional>

#include "cosid_routes.hpp"
#include "decode_routes.hpp"
#include "id_answer.hpp"
#include "lease_routes.hpp"
#include "sequence_routes.hpp"
#include "snowflake/base/clock.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/base/time_format.hpp"
#include "snowflake/forms/uuid_form.hpp"
#include "snowflake/http/openapi_document.hpp"
#include "snowflake/ids/json.hpp"
#include "snowflake/ids/text.hpp"
#include "snowflake/runtime/process_metrics.hpp"
#include "snowflake/version.hpp"
#include "status_route.hpp"

namespace snowflake::http {

namespace {

using beast_http::field;
using beast_http::verb;

// Longer targets get 414; the header limit bounds the whole request anyway.
constexpr std::size_t kMaxTargetLength = 2048;

}  // namespace

// The cluster's fence (cluster/cluster_identity.hpp), while it is up: the
// 503 that says so, until when, and why.
std::optional<Response> fence_refusal(const RouterContext& ctx) {
  const std::int64_t until = ctx.coordination.fence_until_ms.load(std::memory_order_acquire);
  const std::int64_t now = SystemClock::instance().wall_ms();
  if (until == INT64_MIN || until < now) return std::nullopt;
  const bool lost =
      ctx.coordination.fence_kind.load(std::memory_order_relaxed) == FenceGauge::history_lost;
  return unavailable_response(
      "cluster_fenced",
      fmt::format("the cluster is fenced until {}: {}", format_iso8601_ms(until),
                  lost ? "ZooKeeper lost or rolled back some of its history, and no ID is "
                         "issued until every lease from before could have run out"
                       : "it is new, and nothing proved that no earlier cluster ran on its "
                         "root (snowflaked cluster create vouches that it is new)"),
      std::chrono::milliseconds(until - now + 1));
}

namespace {

Response lease_unavailable(LeaseState state, const RouterContext& ctx) {
  switch (state) {
    case LeaseState::fenced:
      return unavailable_response(
          to_string(state),
          "ZooKeeper lost or rolled back some of the cluster's history: this daemon stopped "
          "issuing at once, and fences the cluster",
          kRetrySoon);
    case LeaseState::expired:
      // A lease that ran out while ZooKeeper was away, come back fenced (a
      // restore): the fence is what binds longer, and it says until when.
      if (auto fenced = fence_refusal(ctx)) return std::move(*fenced);
      return unavailable_response(to_string(state),
                                  "this daemon's worker-ID lease has expired (no heartbeat reached "
                                  "ZooKeeper in time); it may not issue IDs until one does",
                                  kRetrySoon);
    case LeaseState::clock_skew:
      return unavailable_response(
          to_string(state),
          fmt::format("the wall clock is {} ms apart from ZooKeeper's, more than allowed; IDs "
                      "resume when it is back within coordinator.max_skew_ms",
                      ctx.coordination.clock_skew_ms.load(std::memory_order_relaxed)),
          kRetrySoon);
    default:
      if (auto fenced = fence_refusal(ctx)) return std::move(*fenced);
      return unavailable_response(
          "not_ready",
          ctx.coordination.pool_exhausted.load(std::memory_order_relaxed)
              ? "this daemon does not own a worker ID: every worker ID of the pool is in use; "
                "it keeps retrying"
              : "this daemon does not own a worker ID yet",
          kRetrySoon);
  }
}

// A generator's refusal; its floor ahead of the clock is the cluster's fence
// when the fence is what binds.
Response generator_refusal(const GenerateError& e, const RouterContext& ctx) {
  if (e.code == GenerateErrc::floor_ahead &&
      ctx.coordination.fence_until_ms.load(std::memory_order_relaxed) >=
          ctx.coordination.migration_floor_ms.load(std::memory_order_relaxed)) {
    if (auto fenced = fence_refusal(ctx)) return std::move(*fenced);
  }
  return unavailable_response(to_string(e.code), e.message(), e.gap);
}

// The generator to issue with, if the lease allows issuing at all.
IdGenerator* issuer(const RouterContext& ctx) {
  return ctx.lease.state() == LeaseState::valid ? ctx.worker.current() : nullptr;
}

// The generator that may issue `tag`'s IDs now; or the answer to send
// instead: unknown_tag, or a 503 when none can be proven unique.
Result<IdGenerator*, Response> issuer_for(std::string_view tag, const RouterContext& ctx) {
  const auto& allow = ctx.settings.tag_allowlist;
  if (!allow.empty() && std::find(allow.begin(), allow.end(), tag) == allow.end()) {
    return error_response(Status::not_found, "unknown_tag",
                          fmt::format("tag \"{}\" is not in this service's tag_allowlist", tag));
  }
  IdGenerator* generator = issuer(ctx);
  if (!generator) return lease_unavailable(ctx.lease.state(), ctx);
  // The cluster's form policy changed under this daemon's config: a tag
  // whose form the two disagree on is not handed out here.
  if (ctx.coordination.forms.disagrees() &&
      !ctx.coordination.forms.allows(tag, ctx.forms ? ctx.forms->pinned_form(tag) : std::nullopt,
                                     ctx.forms ? ctx.forms->default_form : IdForm::plain))
      [[unlikely]] {
    return unavailable_response(
        "form_policy_changed",
        fmt::format("the cluster's form policy (snowflaked cluster forms) gives tag \"{}\" "
                    "another form than this daemon's config: ask another replica, or restart "
                    "this one with the cluster's forms",
                    tag),
        kRetrySoon);
  }
  return generator;
}

// `count` IDs for `tag` (a valid name), counted in the metrics; or the answer
// to send instead (issuer_for's, or the generator's refusal).
Result<std::vector<std::uint64_t>, Response> take_ids(std::string_view tag, std::uint32_t count,
                                                      IdForm form, RouterContext& ctx) {
  auto generator = issuer_for(tag, ctx);
  if (!generator) return std::move(generator).error();
  std::vector<std::uint64_t> ids;
  const auto issued = generator.value()->next_n(count, ids);
  if (!issued) return generator_refusal(issued.error(), ctx);
  // The lease again, after the IDs were taken: a request may have waited for
  // the next time unit meanwhile. IDs whose time was read while the lease
  // held are ours; past the deadline they are dropped, never sent.
  if (const LeaseState after = ctx.lease.state(); after != LeaseState::valid) [[unlikely]] {
    return lease_unavailable(after, ctx);
  }
  ctx.metrics.count_ids(tag, ids.size(), form);
  return ids;
}

// The form the tag's IDs go out in: asked for, or the tag's own; or the
// answer to send when this daemon cannot make it.
Result<IdForm, Response> form_for(std::string_view tag, std::optional<IdForm> asked,
                                  const RouterContext& ctx) {
  // A tag of forms.tags goes out in its form only: asked for another, its
  // plain IDs would show what the opaque ones hide, or its opaque IDs meet
  // its plain ones in one number space.
  if (asked && ctx.forms) {
    if (const auto pinned = ctx.forms->pinned_form(tag); pinned && *pinned != *asked) {
      return error_response(
          Status::bad_request, "bad_form",
          fmt::format("tag \"{}\" is handed out {} only (forms.tags)", tag, to_string(*pinned)));
    }
  }
  const IdForm form = asked.value_or(ctx.forms ? ctx.forms->form_of(tag) : IdForm::plain);
  if (form == IdForm::opaque && (!ctx.forms || !ctx.forms->opaque)) {
    return error_response(Status::bad_request, "bad_form",
                          "this daemon has no opaque key (forms.opaque_key_file)");
  }
  if (form == IdForm::uuid) {
    if (auto fits = forms::check_uuid_layout(ctx.layout); !fits) {
      return error_response(Status::bad_request, "bad_form",
                            "no UUID form in this layout: " + fits.error());
    }
  }
  return form;
}

// The body of `ids` in `form`: opaque IDs replace the IDs in place.
std::string form_body(std::string_view tag, std::vector<std::uint64_t>& ids, IdForm form,
                      Format format, bool batch, const RouterContext& ctx) {
  switch (form) {
    case IdForm::opaque:
      ctx.forms->opaque->encode_all(ids, tag);
      break;
    case IdForm::uuid:
      return uuids_body(tag, ids, ctx.layout, format, batch);
    case IdForm::plain:
      break;
  }
  return ids_body(tag, ids, format, batch);
}

// HEAD: what a GET would be answered now, nothing taken: the refusal it
// would get, or 200 with its headers (probe_response).
Response probe_ids(std::string_view tag, bool text, const RouterContext& ctx) {
  auto generator = issuer_for(tag, ctx);
  if (!generator) return std::move(generator).error();
  if (const auto refusal = generator.value()->check()) return generator_refusal(*refusal, ctx);
  return probe_response(text);
}

Response issue_ids(const Request& req, std::string_view tag, std::string_view query,
                   RouterContext& ctx) {
  if (!is_valid_name(tag)) return bad_tag();
  const auto q = parse_id_query(query, ctx.settings.max_batch);
  if (!q) return error_response(q.error().status, q.error().code, q.error().message);
  const auto form = form_for(tag, q.value().form, ctx);
  if (!form) return form.error();
  const Format format = negotiate(req, q.value());
  if (req.method() == verb::head) return probe_ids(tag, format == Format::text, ctx);
  auto taken = take_ids(tag, q.value().count, form.value(), ctx);
  if (!taken) return std::move(taken).error();
  return ids_response(form_body(tag, taken.value(), form.value(), format, q.value().batch, ctx),
                      format);
}

// --- Meituan Leaf's routes (http.leaf_compat) ------------------------------

// GET /api/snowflake/get/<key>: the bare decimal ID, text/plain, as Leaf's
// LeafController answers. Refusals are ours (JSON, 503 with Retry-After).
// The tag's own form: an opaque ID is a number too, as Leaf's clients expect.
Response leaf_get(const Request& req, std::string_view key, RouterContext& ctx) {
  if (!is_valid_name(key)) return bad_tag();
  const auto form = form_for(key, std::nullopt, ctx);
  if (!form) return form.error();
  if (req.method() == verb::head) return probe_ids(key, /*text=*/true, ctx);
  auto taken = take_ids(key, 1, form.value(), ctx);
  if (!taken) return std::move(taken).error();
  std::string body = form_body(key, taken.value(), form.value(), Format::text, false, ctx);
  body.pop_back();  // Leaf's answer is the bare number
  return text_response(Status::ok, std::move(body));
}

// Liveness, not readiness: 503 only when a restart would help (liveness.hpp).
Response health(const RouterContext& ctx) {
  if (const auto problem = ctx.liveness.problem(Liveness::Clock::now())) {
    return error_response(Status::service_unavailable, "unhealthy", *problem);
  }
  return json_response(Status::ok, R"({"status":"ok"})");
}

bool is_stopping(const RouterContext& ctx) {
  return ctx.stopping != nullptr && ctx.stopping->load(std::memory_order_acquire);
}

// What a readiness probe asks about: IDs (the default) or sequences, which
// need no lease and are served from their buffers through a ZooKeeper
// outage (a Service of their own: docs/operations.md, "Kubernetes").
enum class ReadyFor { id, seq };

Result<ReadyFor, Response> parse_ready_query(std::string_view query) {
  std::optional<ReadyFor> kind;
  auto refused = visit_parameters(
      query, [&](std::string_view key, std::string_view value) -> std::optional<Response> {
        if (key != "for") {
          return error_response(Status::bad_request, "unknown_parameter",
                                fmt::format("/ready takes for (id or seq); not \"{}\"", key));
        }
        if (kind)
          return error_response(Status::bad_request, "bad_for", "for is given more than once");
        if (value == "id") {
          kind = ReadyFor::id;
        } else if (value == "seq") {
          kind = ReadyFor::seq;
        } else {
          return error_response(Status::bad_request, "bad_for",
                                fmt::format("for must be id or seq, got \"{}\"", value));
        }
        return std::nullopt;
      });
  if (refused) return std::move(*refused);
  return kind.value_or(ReadyFor::id);
}

Response ready(std::string_view query, RouterContext& ctx) {
  auto kind = parse_ready_query(query);
  if (!kind) return std::move(kind).error();
  if (is_stopping(ctx)) {
    return unavailable_response(
        "stopping",
        "this daemon is stopping: it still answers requests for a while "
        "(http.shutdown_delay_ms) so that load balancers take it out first, then drains",
        kRetrySoon);
  }
  if (kind.value() == ReadyFor::seq) return ready_for_sequences(ctx);
  // A root whose forms record is not a policy: no tag's form can be vouched
  // for, every ID is refused, so the daemon is not ready either.
  if (ctx.coordination.forms.disagrees() && !ctx.coordination.forms.disagreeing()) {
    return unavailable_response("form_policy_changed",
                                "the cluster's form policy cannot be read (snowflaked cluster "
                                "forms --set records one): no ID is handed out here",
                                kRetrySoon);
  }
  const IdGenerator* generator = issuer(ctx);
  if (!generator) return lease_unavailable(ctx.lease.state(), ctx);
  if (const auto refusal = generator->check()) return generator_refusal(*refusal, ctx);
  nlohmann::ordered_json body{{"ready", true}, {"worker_id", generator->worker_id()}};
  // Sequences need no lease: each tag's own readiness, beside the IDs'.
  if (ctx.sequences) body["sequences"] = sequences_json(ctx)["tags"];
  return json_response(Status::ok, body.dump());
}

}  // namespace

bool ready_to_issue(const RouterContext& ctx) {
  const IdGenerator* generator = issuer(ctx);
  return generator != nullptr && !generator->check() && !is_stopping(ctx);
}

std::string state_line(const RouterContext& ctx) {
  const IdGenerator* generator = ctx.worker.current();
  std::string line = generator
                         ? fmt::format("worker ID {} ({})", generator->worker_id(), ctx.info.mode)
                         : fmt::format("no worker ID yet ({})", ctx.info.mode);
  line += fmt::format(", lease {}", to_string(ctx.lease.state()));
  const auto zookeeper = ctx.coordination.zookeeper.load(std::memory_order_relaxed);
  if (zookeeper != ZkConnection::not_used)
    line += fmt::format(", ZooKeeper {}", to_string(zookeeper));
  if (ctx.coordination.pool_exhausted.load(std::memory_order_relaxed)) line += ", pool exhausted";
  if (is_stopping(ctx)) line = "stopping (/ready says 503, requests still served): " + line;
  return line;
}

namespace {

// The API's contract, docs/openapi.yaml, as built into this binary.
Response openapi() {
  Response res{Status::ok, kHttp11};
  res.set(field::content_type, "application/yaml");
  res.set(field::cache_control, "no-store");
  res.body() = std::string(openapi_document());
  res.prepare_payload();
  return res;
}

Response metrics(RouterContext& ctx) {
  Response res{Status::ok, kHttp11};
  res.set(field::content_type, "text/plain; version=0.0.4; charset=utf-8");
  res.set(field::cache_control, "no-store");
  const IdGenerator* generator = ctx.worker.current();
  const Lease::Status lease = ctx.lease.status();
  res.body() =
      ctx.metrics.render({generator ? generator->stats() : IdGenerator::Stats{}, lease.state,
                          generator ? std::optional(generator->worker_id()) : std::nullopt,
                          ready_to_issue(ctx), kVersion, source_revision(), ctx.info.service,
                          &ctx.coordination, lease.remaining, BootClock::now(), ctx.info.timings,
                          ctx.info.datacenter_id, ctx.sequences, is_stopping(ctx)}) +
      render_process_metrics();
  res.prepare_payload();
  return res;
}

// The code of one of our error bodies, {"error":"<code>",...}
// (error_response writes "error" first).
std::string_view error_code_of(std::string_view body) {
  constexpr std::string_view kPrefix = R"({"error":")";
  // CosId's routes word it as CosId does; its M-01 is our pool_exhausted.
  constexpr std::string_view kCosIdPrefix = R"({"code":")";
  if (body.starts_with(kCosIdPrefix)) {
    body.remove_prefix(kCosIdPrefix.size());
    const std::string_view code = body.substr(0, body.find('"'));
    return code == "M-01" ? std::string_view("pool_exhausted") : code;
  }
  if (!body.starts_with(kPrefix)) return {};
  body.remove_prefix(kPrefix.size());
  return body.substr(0, body.find('"'));
}

struct Routed {
  Route route;
  Answer answer;
};

// Which route a path is: the ID routes and /decode by prefix (a tag or ID
// with a slash is a bad one), the rest whole; Leaf's with leaf_compat only.
Route route_of(std::string_view path, const HttpSettings& settings) {
  if (path.starts_with("/id/")) return Route::id;
  if (path.starts_with("/seq/")) return Route::seq;
  if (path.starts_with("/decode/")) return Route::decode;
  if (path == "/health") return Route::health;
  if (path == "/ready") return Route::ready;
  if (path == "/status") return Route::status;
  if (path == "/metrics") return Route::metrics;
  if (path == "/openapi.yaml") return Route::openapi;
  if (path == "/v1/leases" || path.starts_with("/v1/leases/")) return Route::leases;
  if (path.starts_with("/machines/")) return Route::leases;  // CosId's proxy API
  if (path.starts_with("/segments/")) return Route::seq;     // CosId's segment distributor
  if (settings.leaf_compat) {
    if (path.starts_with("/api/snowflake/get/")) return Route::leaf_id;
    if (path == "/decodeSnowflakeId") return Route::leaf_decode;
    if (path.starts_with("/api/segment/get/")) return Route::leaf_segment;
  }
  return Route::other;
}

Routed route(const Request& req, RouterContext& ctx) {
  const std::string_view target = to_std(req.target());
  if (target.size() > kMaxTargetLength) {
    return {Route::other,
            error_response(Status::uri_too_long, "uri_too_long",
                           fmt::format("the request target is over {} bytes", kMaxTargetLength))};
  }
  if (!target.starts_with('/')) {
    return {Route::other, error_response(Status::bad_request, "bad_request",
                                         "the request target must be a path")};
  }
  const auto qmark = target.find('?');
  const std::string_view path = target.substr(0, qmark);
  const std::string_view query =
      qmark == std::string_view::npos ? std::string_view{} : target.substr(qmark + 1);

  const Route r = route_of(path, ctx.settings);
  if (r == Route::other) {
    return {r,
            error_response(Status::not_found, "not_found", fmt::format("no route for {}", path))};
  }

  // The lease routes take POST, PUT and DELETE, and CosId's segments PATCH
  // and POST, and say which (lease_routes.cpp, cosid_segments.cpp).
  const bool own_methods = r == Route::leases || path.starts_with("/segments/");
  if (!own_methods && req.method() != verb::get && req.method() != verb::head) {
    Response res = error_response(Status::method_not_allowed, "method_not_allowed",
                                  fmt::format("{} only answers GET and HEAD", path));
    res.set(field::allow, "GET, HEAD");
    return {r, std::move(res)};
  }
  // This listener's table: a route it does not serve (to this request) is
  // refused before the request is read any further.
  const RouteTable defaults = ctx.routes ? RouteTable{} : main_route_table(ctx.settings);
  const RouteTable& table = ctx.routes ? *ctx.routes : defaults;
  if (auto refused =
          check_access(table.routes[static_cast<std::size_t>(r)], req, ctx.settings, path)) {
    return {r, std::move(*refused)};
  }
  switch (r) {
    case Route::id:
      return {r, issue_ids(req, path.substr(4), query, ctx)};
    case Route::seq:
      if (path.starts_with("/segments/")) return {r, cosid_segment_route(req, path, query, ctx)};
      return {r, issue_sequence(req, path.substr(5), query, ctx)};
    case Route::decode:
      return {r, decode(req, path.substr(8), query, ctx)};
    case Route::health:
      return {r, health(ctx)};
    case Route::ready:
      return {r, ready(query, ctx)};
    case Route::status:
      return {r, status(ctx)};
    case Route::metrics:
      return {r, metrics(ctx)};
    case Route::openapi:
      return {r, openapi()};
    case Route::leaf_id:
      return {r, leaf_get(req, path.substr(19), ctx)};
    case Route::leaf_decode:
      return {r, leaf_decode(query, ctx)};
    case Route::leaf_segment:
      return {r, leaf_segment_get(req, path.substr(17), ctx)};
    case Route::leases:
      if (path.starts_with("/machines/")) return {r, cosid_machine_route(req, path, query, ctx)};
      return {r, lease_route(req, path, query, ctx)};
    case Route::other:
      break;
  }
  return {r, error_response(Status::not_found, "not_found", "no such route")};
}

}  // namespace

namespace {

// What every answer gets once it is there, now or after a wait: counted in
// the metrics (its duration from the request's arrival), in the request's
// HTTP version and keep-alive, and bodiless for HEAD.
struct Finish {
  Route route;
  unsigned version;
  bool keep_alive;
  bool head;
  BootClock::time_point started;
  RouterContext* ctx;

  void operator()(Response& res) const {
    ctx->metrics.count_request(route, res.result_int());
    if (res.result_int() == 503) ctx->metrics.count_refusal(route, error_code_of(res.body()));
    res.version(version);
    res.keep_alive(keep_alive);
    if (head) omit_body(res);
    ctx->metrics.observe_duration(route, BootClock::now() - started);
  }
};

}  // namespace

Answer handle_request(const Request& req, RouterContext& ctx) {
  const Finish finish{
      {}, req.version(), req.keep_alive(), req.method() == verb::head, BootClock::now(), &ctx};
  Routed routed = route(req, ctx);
  Finish done = finish;
  done.route = routed.route;
  if (auto* reply = std::get_if<Reply>(&routed.answer)) [[likely]] {
    done(reply->response);
    return std::move(routed.answer);
  }
  Wait wait = std::get<Wait>(std::move(routed.answer));
  wait.retry = [retry = std::move(wait.retry), done](bool last) -> std::optional<Reply> {
    auto reply = retry(last);
    if (reply) done(reply->response);
    return reply;
  };
  return wait;
}

Response answer_at_once(Answer answer) {
  if (auto* reply = std::get_if<Reply>(&answer)) return std::move(reply->response);
  auto last = std::get<Wait>(answer).retry(true);
  return std::move(last->response);
}

Response reject_request(Status status, std::string_view code, std::string_view message,
                        RouterContext& ctx) {
  Response res = error_response(status, code, message);
  ctx.metrics.count_request(Route::other, res.result_int());
  res.keep_alive(false);
  return res;
}

}  // namespace snowflake::http
