// The bytes of one HTTP connection, read as the server reads them (the
// parser with the server's limits fed by parse_buffered, request after
// request while the answers keep the connection alive, refusals from
// request_reading.hpp) and answered
// by the server's router. Whatever the bytes:
//  - every answer has a status the API documents, and every error is JSON
//    with one of docs/api.md's error codes and a message (a 503 says when to
//    retry);
//  - every ID a 200 of /id carries is a well-formed ID of this daemon's
//    worker, issued no earlier than the daemon started, and greater than
//    every ID issued before it on the connection (so never a duplicate).
//  - every opaque ID or UUID decodes (with the daemon's key) to such an ID;
//    a tag pinned to a form goes out in it only;
//  - the operators' routes and opaque decoding answer only where the
//    listener's route table and the admin token let them.
// The first byte picks the daemon's state (owner, no worker ID, lease not
// granted, lease revoked, clock skew), its layout, which listener it is
// (the main one alone, the main one beside an admin listener, the admin
// listener), whether it is stopping (SIGTERM came: /ready is 503 stopping,
// the rest still served) and how many bytes each read returns. "Authorization: Bearer
// fuzz-admin-token-0123456789abcdef0123" is the token.
#include <boost/asio/io_context.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "../support/manual_clock.hpp"
#include "fuzz_check.hpp"
#include "snowflake/base/sha256.hpp"
#include "snowflake/forms/uuid_form.hpp"
#include "snowflake/http/request_reading.hpp"
#include "snowflake/http/router.hpp"
#include "snowflake/ids/json.hpp"
#include "snowflake/ids/text.hpp"
#include "snowflake/sequences/periodic.hpp"

namespace {

using namespace snowflake;
using namespace snowflake::http;
namespace beast = boost::beast;
using beast::http::field;
using beast::http::verb;

constexpr std::int64_t kStart = kDefaultEpochMs + 5'000'000;
constexpr std::uint32_t kWorker = 9;

// docs/api.md's error table.
const std::set<std::string, std::less<>> kDocumentedCodes{"bad_tag",
                                                          "bad_count",
                                                          "bad_format",
                                                          "unknown_parameter",
                                                          "bad_id",
                                                          "bad_request",
                                                          "not_found",
                                                          "unknown_tag",
                                                          "unknown_sequence",
                                                          "sequence_unavailable",
                                                          "sequence_exhausted",
                                                          "period_exhausted",
                                                          "period_closed",
                                                          "not_owner",
                                                          "method_not_allowed",
                                                          "request_timeout",
                                                          "body_not_allowed",
                                                          "uri_too_long",
                                                          "headers_too_large",
                                                          "not_ready",
                                                          "lease_expired",
                                                          "clock_skew",
                                                          "clock_moved_backwards",
                                                          "clock_before_epoch",
                                                          "time_exhausted",
                                                          "time_not_reserved",
                                                          "floor_ahead",
                                                          "bad_form",
                                                          "bad_for",
                                                          "stopping",
                                                          "form_policy_changed",
                                                          "unauthorized",
                                                          "forbidden",
                                                          "bad_holder",
                                                          "bad_duration",
                                                          "bad_token",
                                                          "bad_timestamp",
                                                          "lease_lost",
                                                          "pool_exhausted",
                                                          "lease_unavailable",
                                                          "leases_disabled",
                                                          "bad_pool",
                                                          "no_such_pool",
                                                          "pool_conflict",
                                                          "sequence_frozen",
                                                          "sequences_disabled"};
// CosId's proxy API's own codes (docs/api.md, "CosId's proxy API").
const std::set<std::string, std::less<>> kCosIdCodes{
    "400", "M-01", "M-02", "M-03", "no_such_sequence", "not_segmentable"};
const std::set<unsigned> kDocumentedStatuses{200, 400, 401, 403, 404, 405, 408,
                                             409, 410, 413, 414, 431, 503};
constexpr std::string_view kToken = "fuzz-admin-token-0123456789abcdef0123";
// The one worker-ID lease the desk knows: renewed and given back by this token.
constexpr std::string_view kLeaseToken = "0123456789abcdef0123456789abcdef";
constexpr std::uint32_t kLeasedWorker = 6;
const LeaseLimits kLeaseLimits{std::chrono::milliseconds(1'000), std::chrono::milliseconds(60'000)};

// The lease thread's side, answered at once (the router's part is fuzzed,
// not ZooKeeper's: lease_pool_test.cpp and leases_test.cpp have that).
std::shared_ptr<LeaseCall> answer_lease(LeaseRequest request) {
  auto call = std::make_shared<LeaseCall>(request);
  // Named pools: "sony" exists with 16 bits; any other is refused as not
  // there, and other bits as a conflict.
  if (!request.pool.empty() && request.pool != "sony") {
    call->finish(LeaseRefusal{LeaseRefusal::Why::no_pool, "no lease pool"});
    return call;
  }
  if (request.worker_bits && *request.worker_bits != 16) {
    call->finish(LeaseRefusal{LeaseRefusal::Why::pool_conflict, "16-bit worker IDs"});
    return call;
  }
  // A CosId machine: its instance "10.0.0.7:8080" holds worker ID 6.
  if (!request.instance.empty() && request.kind != LeaseRequest::Kind::take &&
      request.instance != "10.0.0.7:8080") {
    call->finish(LeaseRefusal{LeaseRefusal::Why::no_lease, "holds none"});
    return call;
  }
  const bool ours = request.kind == LeaseRequest::Kind::take || !request.instance.empty() ||
                    (request.token == kLeaseToken && request.worker_id == kLeasedWorker);
  if (ours) {
    // A renewal that asks no duration keeps the lease's own (here the longest).
    const auto duration =
        request.duration.count() > 0 ? request.duration : kLeaseLimits.max_duration;
    call->finish(LeaseGrant{
        kLeasedWorker, duration, 1, kStart + duration.count(),
        request.kind == LeaseRequest::Kind::take ? std::string(kLeaseToken) : std::string(),
        request.pool.empty() ? 0 : 16});
  } else {
    call->finish(LeaseRefusal{LeaseRefusal::Why::lost, "lease lost: not this token's"});
  }
  return call;
}

// Opaque IDs under a fixed key; "secret" is pinned to opaque, "event" to uuid.
FormSettings fuzz_forms() {
  FormSettings f;
  forms::OpaqueKey key{};
  key.fill(0x42);
  f.opaque = std::make_shared<const forms::OpaqueIds>(forms::OpaqueIds::create(key).value());
  f.by_tag = {{"secret", IdForm::opaque}, {"event", IdForm::uuid}};
  return f;
}

enum class Listener { main_alone, main_beside_admin, admin };

// The layouts a daemon may have: the default, one with a datacenter field,
// one with the sequence above the worker (sonyflake's order).
LayoutSettings layout_variant(unsigned variant) {
  LayoutSettings s;
  if (variant == 1)
    s = {.time_bits = 41, .datacenter_bits = 5, .worker_bits = 5, .sequence_bits = 12};
  if (variant == 2) s.order = FieldOrder::sequence_high;
  return s;
}
constexpr std::uint32_t kDatacenter = 17;
constexpr std::int64_t kSequenceStart = 1000;
constexpr std::int64_t kPeriodNumbers = 100'000;  // each period's range: [1, kPeriodNumbers]

// A tag that restarts each day in UTC, the day the real clock is in (the
// router reads it) and the next installed, each with `numbers` buffered
// (none: the period's numbers are used up, 503 period_exhausted).
void add_daily(SequenceRegistry& sequences, const std::string& tag, std::int64_t numbers) {
  SequenceEntry* entry = sequences.add(tag);
  entry->set_periodic(std::make_unique<PeriodicSequence>(
      tag, PeriodRule::make(PeriodReset::daily, "UTC").value(),
      NumberTemplate::parse("INV-{yyyy}{MM}{dd}-{n:06}", PeriodReset::daily).value()));
  PeriodicSequence& periodic = *entry->periodic.load();
  const Period today =
      periodic.rule().period_at(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count());
  for (const Period& p : {today, periodic.rule().next_after(today)}) {
    PeriodSlot* slot = periodic.install(p);
    if (numbers > 0) slot->entry.buffer.add({1, 1 + numbers});
    slot->entry.exhausted = numbers == 0;
  }
}

struct Daemon {
  // `stopping`: SIGTERM came (/ready says 503 stopping, the rest is served).
  Daemon(unsigned state, unsigned variant, Listener which, bool stopping)
      : layout(IdLayout::create(layout_variant(variant), kStart).value()),
        datacenter(variant == 1 ? kDatacenter : 0),
        listener(which),
        stopped(stopping) {
    context.stopping = &stopped;
    GeneratorOptions g;
    g.datacenter_id = datacenter;
    settings.leaf_compat = variant != 0;  // Leaf's routes answer, or are no routes
    if (which != Listener::main_alone) {
      settings.admin_listen = "127.0.0.1:9090";
      settings.admin_token_sha256 = sha256(kToken);
    }
    routes = which == Listener::admin ? admin_route_table() : main_route_table(settings);
    if (state != 1) worker.install(IdGenerator::create(layout, kWorker, g, clock).value());
    if (state != 2) lease.grant_indefinitely();
    if (state == 3) lease.revoke();
    if (state == 4) lease.hold_for_clock_skew(true);
    // A sequence with a range to hand out, one with none (503 at once), and
    // one with none left to take (410 at once).
    sequences.add("order")->buffer.add({kSequenceStart, kSequenceStart + 100'000});
    sequences.add("dry");
    sequences.add("gone")->exhausted = true;
    // A tag that restarts each day, and one whose day has no number left.
    add_daily(sequences, "invoice", kPeriodNumbers);
    add_daily(sequences, "tiny", 0);
    // Strict: one owned here in the lease's run (served while the lease
    // is), one another daemon owns (503 not_owner naming it), one owned by
    // a daemon serving TLS (named by its https URL).
    SequenceEntry* chat = sequences.add("chat");
    chat->strict.set_strict();
    chat->strict.own(lease.generation());
    chat->buffer.add({1, 100'000});
    SequenceEntry* note = sequences.add("note");
    note->strict.set_strict();
    note->strict.set_owner_address("10.0.0.5:8080");
    SequenceEntry* memo = sequences.add("memo");
    memo->strict.set_strict();
    memo->strict.set_owner_address("10.0.0.6:8443", /*tls=*/true);
    sequences.add("cosid.orders");  // CosId's segments (granted by grant_segments)
    sequences.listed = true;        // the tags read: another tag is unknown (404)
    // Leases granted beside Leaf's routes; without them, leases_disabled.
    if (variant != 0) {
      context.leases = &lease_desk;
      context.lease_limits = kLeaseLimits;
    }
  }
  test::ManualClock clock{kStart};
  IdLayout layout;
  std::uint32_t datacenter;
  WorkerSlot worker;
  Lease lease{clock};
  CoordinationGauges gauges;
  Liveness liveness;
  Metrics metrics{1};
  HttpSettings settings;
  SequenceRegistry sequences{9};
  Listener listener;
  std::atomic<bool> stopped;
  RouteTable routes;
  FormSettings forms = fuzz_forms();
  LeaseDesk lease_desk = answer_lease;
  RouterContext context{layout,
                        worker,
                        lease,
                        gauges,
                        liveness,
                        metrics,
                        settings,
                        {"svc", CoordinatorType::recycle, clock.monotonic(), 1,
                         ConfiguredTimings{std::chrono::seconds(180), std::chrono::seconds(540),
                                           std::chrono::seconds(900), std::chrono::seconds(2),
                                           std::chrono::seconds(2)},
                         datacenter},
                        &sequences,
                        std::chrono::milliseconds(0),
                        &forms,
                        &routes};
  std::uint64_t last_id = 0;
  std::int64_t last_number = kSequenceStart - 1;
  std::int64_t last_invoice = 0;
  std::int64_t last_chat = 0;  // the strict tag owned here
  // CosId's segments, as the supplier grants them: each from the next number on.
  std::int64_t next_segment = 1;
  std::int64_t last_segment_max = 0;
  void grant_segments() {
    for (const auto& call : sequences.segments.take_all()) {
      const SequenceEntry* e = sequences.find(call->tag());
      if (!e || e->strict.strict() || e->periodic.load()) {
        call->finish(SegmentRefusal{
            e ? SegmentRefusal::Why::not_plain : SegmentRefusal::Why::no_sequence, "refused"});
        continue;
      }
      last_segment_max = next_segment + call->step() - 1;
      call->finish(SegmentGrant{next_segment, last_segment_max});
      next_segment = last_segment_max + 1;
    }
  }
};

void check_error(const Response& res, bool head, bool cosid, std::string_view input) {
  FUZZ_CHECK(res[field::content_type] == "application/json", input);
  if (res.result_int() == 503) {
    unsigned seconds = 0;
    const auto retry = to_std(res[field::retry_after]);
    const auto [end, ec] = std::from_chars(retry.data(), retry.data() + retry.size(), seconds);
    FUZZ_CHECK(ec == std::errc() && end == retry.data() + retry.size() && seconds >= 1, input);
  }
  if (head) return;
  const auto body = nlohmann::json::parse(res.body(), nullptr, false);
  // CosId's routes answer in CosId's words (a listener that does not serve
  // them, in ours).
  if (cosid && body.is_object() && body.contains("code")) {
    FUZZ_CHECK(body["code"].is_string() && body.contains("msg") && body["msg"].is_string(), input);
    const std::string code = body["code"].get<std::string>();
    FUZZ_CHECK(kCosIdCodes.contains(code) || kDocumentedCodes.contains(code), input);
    return;
  }
  FUZZ_CHECK(body.is_object() && body.contains("error") && body["error"].is_string(), input);
  FUZZ_CHECK(kDocumentedCodes.contains(body["error"].get<std::string>()), input);
  FUZZ_CHECK(body.contains("message") && body["message"].is_string() &&
                 !body["message"].get<std::string>().empty(),
             input);
}

void check_id(Daemon& d, std::string_view text, std::string_view input) {
  const auto id = parse_id(text);
  FUZZ_CHECK(id.has_value(), input);
  const auto fields = d.layout.decompose(*id);
  FUZZ_CHECK(fields.has_value(), input);
  FUZZ_CHECK(fields.value().worker_id == kWorker, input);
  FUZZ_CHECK(fields.value().datacenter_id == d.datacenter, input);
  const std::int64_t ms = fields.value().timestamp_ms;
  FUZZ_CHECK(ms >= kStart && ms <= d.clock.wall_ns() / 1'000'000, input);
  FUZZ_CHECK(*id > d.last_id, input);
  d.last_id = *id;
}

// The numbers of an /id or /seq answer, one line each as text, or
// {"id","tag"} / {"tag","ids"} as JSON, each handed to `check`.
template <class Check>
void check_numbers_body(const Response& res, std::string_view tag, std::string_view input,
                        Check check) {
  if (to_std(res[field::content_type]).starts_with("text/plain")) {
    std::string_view body = res.body();
    FUZZ_CHECK(!body.empty() && body.back() == '\n', input);
    while (!body.empty()) {
      const auto eol = body.find('\n');
      check(body.substr(0, eol));
      body.remove_prefix(eol + 1);
    }
    return;
  }
  const auto body = nlohmann::json::parse(res.body(), nullptr, false);
  FUZZ_CHECK(body.is_object() && body.value("tag", "") == tag, input);
  if (body.contains("id")) {
    FUZZ_CHECK(body["id"].is_string(), input);
    return check(body["id"].get<std::string>());
  }
  FUZZ_CHECK(body.contains("ids") && body["ids"].is_array() && !body["ids"].empty(), input);
  for (const auto& id : body["ids"]) {
    FUZZ_CHECK(id.is_string(), input);
    check(id.get<std::string>());
  }
}

// The form a 200 of the tag carries: the one asked (?form=), else the tag's.
IdForm form_of(const Daemon& d, std::string_view target, std::string_view tag) {
  const auto query = target.substr(std::min(target.find('?'), target.size()));
  for (const IdForm f : {IdForm::plain, IdForm::opaque, IdForm::uuid}) {
    const std::string asked = "form=" + std::string(to_string(f));
    const auto at = query.find(asked);
    if (at != std::string_view::npos && (at == 1 || query[at - 1] == '&') &&
        (at + asked.size() == query.size() || query[at + asked.size()] == '&')) {
      return f;
    }
  }
  return d.forms.form_of(tag);
}

// An ID in its form: decoded to the ID (with the daemon's key), then checked.
void check_formed_id(Daemon& d, std::string_view text, IdForm form, std::string_view tag,
                     std::string_view input) {
  if (form == IdForm::uuid) {
    const auto id = forms::id_of_uuid(text, d.layout);
    FUZZ_CHECK(id.has_value(), input);
    return check_id(d, std::to_string(id.value()), input);
  }
  if (form == IdForm::opaque) {
    const auto opaque = parse_id(text);
    FUZZ_CHECK(opaque.has_value(), input);
    return check_id(d, std::to_string(d.forms.opaque->decode(*opaque, tag)), input);
  }
  check_id(d, text, input);
}

void check_ids(Daemon& d, const Request& req, const Response& res, std::string_view input) {
  FUZZ_CHECK(d.listener != Listener::admin, input);  // the admin listener issues nothing
  const std::string_view target = to_std(req.target());
  const std::string_view tag = target.substr(4, target.find('?') - 4);
  const IdForm form = form_of(d, target, tag);
  // A tag pinned to a form goes out in it only.
  if (const auto pinned = d.forms.pinned_form(tag)) FUZZ_CHECK(form == *pinned, input);
  check_numbers_body(res, tag, input,
                     [&](std::string_view text) { check_formed_id(d, text, form, tag, input); });
}

// A sequence's number: from the range given, increasing, never twice.
void check_number(Daemon& d, std::string_view text, std::string_view input) {
  const auto n = parse_id(text);
  FUZZ_CHECK(n.has_value(), input);
  const auto number = static_cast<std::int64_t>(*n);
  FUZZ_CHECK(number > d.last_number && number < kSequenceStart + 100'000, input);
  d.last_number = number;
}

// A number of the strict "chat", owned here: increasing, from its range.
// ("note", owned elsewhere, never answers one.)
void check_chat_number(Daemon& d, std::string_view text, std::string_view input) {
  const auto n = parse_id(text);
  FUZZ_CHECK(n.has_value(), input);
  const auto number = static_cast<std::int64_t>(*n);
  FUZZ_CHECK(number > d.last_chat && number < 100'000, input);
  d.last_chat = number;
}

// A number of the daily "invoice": its own, increasing, at most its period's.
void check_invoice_number(Daemon& d, std::int64_t n, std::string_view input) {
  FUZZ_CHECK(n > d.last_invoice && n <= kPeriodNumbers, input);
  d.last_invoice = n;
}

// "invoice"'s printed form: INV-<the day's 8 digits>-<the number in 6>.
void check_invoice(Daemon& d, std::string_view text, std::string_view input) {
  FUZZ_CHECK(text.size() == 19 && text.starts_with("INV-") && text[12] == '-', input);
  std::int64_t n = 0;
  const auto digits = text.substr(13);
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  FUZZ_CHECK(ec == std::errc() && end == digits.data() + digits.size(), input);
  check_invoice_number(d, n, input);
}

void check_numbers(Daemon& d, const Request& req, const Response& res, std::string_view input) {
  const std::string_view target = to_std(req.target());
  if (target.starts_with("/api/segment/get/")) {
    FUZZ_CHECK(d.settings.leaf_compat, input);
    FUZZ_CHECK(to_std(res[field::content_type]).starts_with("text/plain"), input);
    if (target.substr(17).starts_with("chat")) return check_chat_number(d, res.body(), input);
    if (target.substr(17).starts_with("invoice")) {
      const auto n = parse_id(res.body());
      FUZZ_CHECK(n.has_value(), input);
      return check_invoice_number(d, static_cast<std::int64_t>(*n), input);
    }
    return check_number(d, res.body(), input);
  }
  const std::string_view tag = target.substr(5, target.find('?') - 5);
  if (tag == "invoice") {
    // Printed, with the period named once and the numbers as they are.
    if (!to_std(res[field::content_type]).starts_with("text/plain")) {
      const auto body = nlohmann::json::parse(res.body(), nullptr, false);
      FUZZ_CHECK(body.is_object() && body.value("period", "").size() == 10, input);
    }
    return check_numbers_body(res, tag, input,
                              [&](std::string_view text) { check_invoice(d, text, input); });
  }
  if (tag == "chat") {
    return check_numbers_body(res, tag, input,
                              [&](std::string_view text) { check_chat_number(d, text, input); });
  }
  FUZZ_CHECK(tag == "order", input);
  check_numbers_body(res, tag, input, [&](std::string_view text) { check_number(d, text, input); });
}

// Leaf's routes: the bare ID as text, and Leaf's decode fields as strings.
void check_leaf(Daemon& d, const Request& req, const Response& res, std::string_view input) {
  const std::string_view target = to_std(req.target());
  if (target.starts_with("/api/snowflake/get/")) {
    FUZZ_CHECK(to_std(res[field::content_type]).starts_with("text/plain"), input);
    const std::string_view tag = target.substr(19);
    return check_formed_id(d, res.body(), d.forms.form_of(tag), tag, input);
  }
  const auto body = nlohmann::json::parse(res.body(), nullptr, false);
  FUZZ_CHECK(body.is_object(), input);
  for (const char* key : {"timestamp", "workerId", "sequenceId"}) {
    FUZZ_CHECK(body.contains(key) && body[key].is_string(), input);
  }
  // "<ms>(yyyy-MM-dd HH:mm:ss.SSS)": digits, then 23 characters in parentheses.
  const std::string ts = body["timestamp"].get<std::string>();
  const auto open = ts.find_first_not_of("0123456789");
  FUZZ_CHECK(open > 0 && open != std::string::npos && ts[open] == '(' && ts.size() == open + 25 &&
                 ts.back() == ')' && ts[open + 11] == ' ' && ts[open + 20] == '.',
             input);
}

// A lease answered: only by the main listener, only where leases are on,
// a take with its token, a renewal without, the duration within the limits.
void check_lease(Daemon& d, const Request& req, const Response& res, std::string_view input) {
  FUZZ_CHECK(d.listener != Listener::admin && d.context.leases != nullptr, input);
  const auto body = nlohmann::json::parse(res.body(), nullptr, false);
  FUZZ_CHECK(body.is_object() && body.value("worker_id", -1) == kLeasedWorker, input);
  if (req.method() == verb::delete_) {
    FUZZ_CHECK(body.value("given_back", false), input);
    return;
  }
  FUZZ_CHECK(body.contains("token") == (req.method() == verb::post), input);
  const auto lease_ms = body.value("lease_ms", std::int64_t{-1});
  FUZZ_CHECK(lease_ms >= kLeaseLimits.min_duration.count() &&
                 lease_ms <= kLeaseLimits.max_duration.count(),
             input);
  FUZZ_CHECK(body.value("renew_after_ms", std::int64_t{-1}) == lease_ms / 3, input);
  // The cluster's pool spells its layout out; a named pool says its bits.
  const bool named = body.value("pool", std::string()) != "cluster";
  FUZZ_CHECK(body.contains("layout") == !named && body.contains("worker_bits") == named, input);
}

// CosId's machine state: its machine ID, and but for a revert the instant
// CosId waits its clock past.
void check_machine(const Request& req, const Response& res, std::string_view input) {
  const auto body = nlohmann::json::parse(res.body(), nullptr, false);
  FUZZ_CHECK(body.is_object() && body.value("machineId", -1) == kLeasedWorker, input);
  FUZZ_CHECK(body.contains("lastTimeStamp") == (req.method() != verb::delete_), input);
}

// CosId's segments: the maximum granted, as text; the factory's call, JSON.
void check_segment(const Daemon& d, const Request& req, const Response& res,
                   std::string_view input) {
  FUZZ_CHECK(d.listener != Listener::admin, input);
  if (req.method() == verb::post) {
    const auto body = nlohmann::json::parse(res.body(), nullptr, false);
    FUZZ_CHECK(body.is_object() && body.value("sequence", "") == "cosid.orders", input);
    return;
  }
  FUZZ_CHECK(req.method() == verb::patch, input);
  FUZZ_CHECK(to_std(res[field::content_type]).starts_with("text/plain"), input);
  FUZZ_CHECK(res.body() == std::to_string(d.last_segment_max), input);
}

void check_answer(Daemon& d, const Request& req, const Response& res, std::string_view input) {
  FUZZ_CHECK(kDocumentedStatuses.contains(res.result_int()), input);
  const bool head = req.method() == verb::head;
  if (head) FUZZ_CHECK(res.body().empty(), input);
  if (res.result_int() >= 400) {
    const std::string_view target = to_std(req.target());
    return check_error(res, head,
                       target.starts_with("/machines/") || target.starts_with("/segments/"), input);
  }
  if (head || res.result_int() != 200) return;
  const std::string_view target = to_std(req.target());
  // The operators' routes beside an admin listener, and opaque decoding on
  // the main listener, answer only to the token.
  const bool operators = target.starts_with("/decode") || target.starts_with("/status") ||
                         target.starts_with("/metrics") || target.starts_with("/openapi.yaml");
  const bool bearer = to_std(req[field::authorization]).find(kToken) != std::string_view::npos;
  if (operators && d.listener == Listener::main_beside_admin) FUZZ_CHECK(bearer, input);
  if (target.starts_with("/decode/") && target.find("form=opaque") != std::string_view::npos &&
      d.listener != Listener::admin) {
    FUZZ_CHECK(bearer, input);
  }
  if (target.starts_with("/ready")) {
    FUZZ_CHECK(!d.stopped.load(), input);  // stopping: 503 for every probe
    const auto body = nlohmann::json::parse(res.body(), nullptr, false);
    FUZZ_CHECK(body.is_object() && body.value("ready", false), input);
    // A sequence probe is answered as one: never the IDs' readiness.
    FUZZ_CHECK(body.contains("for") == (target.find("for=seq") != std::string_view::npos), input);
    return;
  }
  if (target.starts_with("/v1/leases")) return check_lease(d, req, res, input);
  if (target.starts_with("/machines/")) return check_machine(req, res, input);
  if (target.starts_with("/segments/")) return check_segment(d, req, res, input);
  if (target.starts_with("/id/")) return check_ids(d, req, res, input);
  if (target.starts_with("/seq/") || target.starts_with("/api/segment/get/"))
    return check_numbers(d, req, res, input);
  if (target.starts_with("/api/snowflake/get/") || target.starts_with("/decodeSnowflakeId")) {
    FUZZ_CHECK(d.settings.leaf_compat, input);
    check_leaf(d, req, res, input);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  if (size == 0) return 0;
  const auto input = as_text(data, size);
  // The layout and the listener vary with the read size, so every seed
  // keeps its state.
  Daemon daemon(data[0] % 5, data[0] / 5 % 3, static_cast<Listener>(data[0] / 15 % 3),
                data[0] / 45 % 2 == 1);
  const RequestLimits limits;

  boost::asio::io_context io;
  beast::test::stream connection(io, to_beast(as_text(data + 1, size - 1)));
  connection.read_size(1 + data[0] / 5 * 47);  // 1 to 2,351 bytes a read
  connection.close_remote();                   // the peer sends no more than this
  beast::flat_buffer buffer;
  for (;;) {
    RequestParser parser;
    apply_limits(parser, limits);
    // As the server's Session reads: the buffered bytes first, then reads.
    beast::error_code ec = parse_buffered(parser, buffer);
    while (ec == beast::http::error::need_more) {
      beast::error_code read_error;
      buffer.commit(
          connection.read_some(buffer.prepare(beast::read_size(buffer, 65536)), read_error));
      if (read_error == boost::asio::error::eof) {
        ec = parse_end(parser);
      } else if (read_error) {
        return 0;
      } else {
        ec = parse_buffered(parser, buffer);
      }
    }
    const Request& request = parser.get();  // as far as it was read
    // A refusal, as the server's Session::reject makes it.
    const auto refuse = [&](const Refusal& refusal) {
      Response response =
          reject_request(refusal.status, refusal.code, refusal.message, daemon.context);
      if (request.method() == verb::head) omit_body(response);
      check_answer(daemon, request, response, input);
    };
    if (ec) {
      if (const auto refusal = refusal_for_read_error(ec, limits)) refuse(*refusal);
      return 0;
    }
    if (const auto refusal = refusal_for_request(request, limits)) {
      refuse(*refusal);
      return 0;
    }
    Answer answer = handle_request(request, daemon.context);
    daemon.grant_segments();  // the supplier's part, before the wait's last try
    const Response response = answer_at_once(std::move(answer));
    check_answer(daemon, request, response, input);
    if (!response.keep_alive()) return 0;
  }
}
