// The router's forms (?form=, forms.default, forms.tags) and its access
// rules (route tables, the admin token): requests in, responses out.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include <set>

#include "router_fixture.hpp"
#include "snowflake/base/sha256.hpp"
#include "snowflake/forms/uuid_form.hpp"
#include "snowflake/http/router.hpp"

using namespace snowflake;
using namespace snowflake::http;
using boost::beast::http::field;
using boost::beast::http::verb;
using nlohmann::json;

namespace {

constexpr std::string_view kToken = "router-test-admin-token-0123456789abcdef";

FormSettings forms_with_key() {
  FormSettings f;
  forms::OpaqueKey key{};
  key.fill(0x5a);
  f.opaque = std::make_shared<const forms::OpaqueIds>(forms::OpaqueIds::create(key).value());
  f.by_tag = {{"secret", IdForm::opaque}, {"event", IdForm::uuid}};
  return f;
}

// A daemon's router with forms: `table` says which listener it is.
struct FormsFixture : test::RouterFixture {
  explicit FormsFixture(HttpSettings s = {}, std::optional<RouteTable> t = std::nullopt)
      : RouterFixture(std::move(s), t) {
    context.forms = &forms;
  }
  FormSettings forms = forms_with_key();
};

using test::body_json;
using test::check_error;
using test::to_id;

HttpSettings with_token(bool admin_listener = false) {
  HttpSettings s;
  s.admin_token_sha256 = sha256(kToken);
  if (admin_listener) s.admin_listen = "127.0.0.1:9090";
  return s;
}

std::pair<field, std::string> bearer(std::string_view token = kToken) {
  return {field::authorization, "Bearer " + std::string(token)};
}

}  // namespace

TEST_CASE("?form=opaque: a 63-bit number per ID, the tag's permutation, decoded back",
          "[router][forms]") {
  FormsFixture f(with_token());
  const auto batch = body_json(f.get("/id/order?form=opaque&count=100"));
  REQUIRE(batch["ids"].size() == 100);
  std::set<std::uint64_t> seen;
  for (const auto& v : batch["ids"]) {
    const std::uint64_t opaque = to_id(v);
    CHECK(opaque < (std::uint64_t{1} << 63));
    seen.insert(opaque);
    // With the token, /decode gives back an ID of this worker.
    const auto decoded =
        body_json(f.get("/decode/" + v.get<std::string>() + "?form=opaque&tag=order", {bearer()}));
    CHECK(decoded["worker_id"] == 9);
    CHECK(decoded["form"] == "opaque");
    CHECK(decoded["opaque"] == v);
  }
  CHECK(seen.size() == 100);
  // The same ID in another tag is another number: decoded with the wrong
  // tag, an opaque ID gives some other ID.
  const auto one = body_json(f.get("/id/order?form=opaque"))["id"].get<std::string>();
  const auto other = body_json(f.get("/decode/" + one + "?form=opaque&tag=user", {bearer()}))["id"];
  const auto right =
      body_json(f.get("/decode/" + one + "?form=opaque&tag=order", {bearer()}))["id"];
  CHECK(other != right);
  CHECK(f.layout.decompose(to_id(right)).value().worker_id == 9);
  CHECK(f.metrics.render({}).find("snowflake_form_ids_issued_total{form=\"opaque\"} 101") !=
        std::string::npos);
}

TEST_CASE("?form=uuid: version 7 UUIDs of the IDs, in the shapes of /id", "[router][forms]") {
  FormsFixture f;
  const auto one = body_json(f.get("/id/order?form=uuid"));
  const std::string u = one["id"];
  CHECK(forms::looks_like_uuid(u));
  CHECK(u[14] == '7');
  const auto decoded = body_json(f.get("/decode/" + u));
  CHECK(decoded["form"] == "uuid");
  CHECK(decoded["worker_id"] == 9);
  const auto text = f.get("/id/order?form=uuid&count=3&format=text").body();
  CHECK(std::count(text.begin(), text.end(), '\n') == 3);
  CHECK(text.size() == 3 * 37);
  // The tag's form: event is uuid; secret opaque; the rest plain.
  CHECK(forms::looks_like_uuid(body_json(f.get("/id/event"))["id"].get<std::string>()));
  CHECK(f.layout.decompose(to_id(body_json(f.get("/id/plainly"))["id"])).value().worker_id == 9);
}

TEST_CASE("a form the daemon cannot make, or a tag pinned to another, is 400 bad_form",
          "[router][forms]") {
  FormsFixture f;
  check_error(f.get("/id/order?form=fancy"), 400, "bad_form");
  check_error(f.get("/id/order?form=uuid&form=uuid"), 400, "bad_form");
  // forms.tags pins secret to opaque: a plain or UUID form of it would show
  // what the opaque one hides.
  check_error(f.get("/id/secret?form=plain"), 400, "bad_form");
  check_error(f.get("/id/secret?form=uuid"), 400, "bad_form");
  CHECK(f.get("/id/secret?form=opaque").result_int() == 200);
  // Without a key, no opaque form.
  f.forms.opaque.reset();
  f.forms.by_tag.clear();
  check_error(f.get("/id/order?form=opaque"), 400, "bad_form");
  // Sequences are handed out plain.
  check_error(f.get("/seq/order?form=opaque"), 400, "bad_form");
  // Nothing was issued by any refusal.
  CHECK(f.generator->high_water_mark_ms() == test::kRouterStart);
  CHECK(f.metrics.render({}).find("snowflake_form_ids_issued_total{form=\"plain\"} 0") !=
        std::string::npos);
}

TEST_CASE("opaque decoding: 403 with no token configured, 401 without it, 403 with another",
          "[router][forms][access]") {
  FormsFixture none;  // no admin listener, no token: served nowhere here
  const std::string opaque = body_json(none.get("/id/secret"))["id"];
  const std::string target = "/decode/" + opaque + "?form=opaque&tag=secret";
  check_error(none.get(target), 403, "forbidden");
  check_error(none.get(target, {bearer()}), 403, "forbidden");
  // Plain decoding is for anyone still.
  CHECK(none.get("/decode/123").result_int() == 200);

  FormsFixture token(with_token());
  const auto missing = token.get(target);
  check_error(missing, 401, "unauthorized");
  CHECK(std::string(to_std(missing[field::www_authenticate])) == R"(Bearer realm="snowflaked")");
  check_error(token.get(target, {bearer("not-the-token-0123456789abcdef0123456789")}), 403,
              "forbidden");
  check_error(token.get(target, {{field::authorization, "Basic dXNlcjpwYXNz"}}), 403, "forbidden");
  CHECK(token.get(target, {bearer()}).result_int() == 200);
  CHECK(token.get(target, {{field::authorization, "bearer " + std::string(kToken)}}).result_int() ==
        200);  // the scheme's name in any case
  // With the token but no tag, or no key: what is missing is said.
  check_error(token.get("/decode/" + opaque + "?form=opaque", {bearer()}), 400, "bad_tag");
  token.forms.opaque.reset();
  check_error(token.get(target, {bearer()}), 400, "bad_form");
}

TEST_CASE("with an admin listener, the operators' routes move there, and the token opens them here",
          "[router][access]") {
  FormsFixture main(with_token(true));
  for (const char* target : {"/metrics", "/status", "/decode/123", "/openapi.yaml"}) {
    INFO(target);
    check_error(main.get(target), 404, "not_found");
    CHECK(main.get(target, {bearer()}).result_int() == 200);
    check_error(main.get(target, {bearer("another-token-0123456789abcdef0123456789")}), 403,
                "forbidden");
  }
  // What clients use stays.
  for (const char* target : {"/id/order", "/health", "/ready"}) {
    CHECK(main.get(target).result_int() == 200);
  }

  FormsFixture admin(with_token(true), admin_route_table());
  for (const char* target : {"/metrics", "/status", "/decode/123", "/health", "/ready"}) {
    INFO(target);
    CHECK(admin.get(target).result_int() == 200);
  }
  // The admin listener issues nothing, and decodes opaque IDs without a token.
  check_error(admin.get("/id/order"), 404, "not_found");
  check_error(admin.get("/seq/order"), 404, "not_found");
  const std::string opaque = body_json(main.get("/id/secret"))["id"];
  const auto decoded = admin.get("/decode/" + opaque + "?form=opaque&tag=secret");
  CHECK(decoded.result_int() == 200);
  CHECK(body_json(decoded)["worker_id"] == 9);
  // A non-GET is 405 on every listener, before any access rule.
  Request post{verb::post, "/metrics", 11};
  CHECK(answer_at_once(handle_request(post, main.context)).result_int() == 405);
  Request post_id{verb::post, "/id/x", 11};
  CHECK(answer_at_once(handle_request(post_id, admin.context)).result_int() == 405);
}
