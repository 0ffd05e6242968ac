// The forms section and the admin keys of the config: what they read, and
// every way they are refused, naming the key (exit 2 in the daemon).

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "../support/child_process.hpp"
#include "snowflake/config/config.hpp"

using namespace snowflake;
using nlohmann::json;

namespace {

constexpr std::int64_t kFormsNow = 1'800'000'000'000;
const std::string kKeyHex(64, 'a');
const std::string kToken = "admin-token-for-the-config-test-0123456789";

ConfigError forms_error_of(const json& doc, const ConfigOverrides& overrides = {}) {
  auto r = parse_config(doc, kFormsNow, overrides);
  REQUIRE(r.has_error());
  return r.error();
}

}  // namespace

TEST_CASE("forms: the key, the default and each tag's form are read", "[config][forms]") {
  test::TempDir dir;
  const auto key = dir.write("opaque.key", kKeyHex + "\n");
  const Config c = parse_config(json{{"forms",
                                      {{"opaque_key_file", key.string()},
                                       {"default", "uuid"},
                                       {"tags", {{"order", "opaque"}, {"log.line", "plain"}}}}}},
                                kFormsNow)
                       .value();
  REQUIRE(c.forms.opaque);
  CHECK(c.forms.default_form == IdForm::uuid);
  CHECK(c.forms.form_of("order") == IdForm::opaque);
  CHECK(c.forms.form_of("log.line") == IdForm::plain);
  CHECK(c.forms.form_of("anything") == IdForm::uuid);
  CHECK(c.forms.pinned_form("anything") == std::nullopt);
  CHECK(c.forms.opaque->fingerprint().size() == 32);
  // The defaults: plain, no key, no tags.
  const Config d = parse_config(json::object(), kFormsNow).value();
  CHECK(d.forms.default_form == IdForm::plain);
  CHECK_FALSE(d.forms.opaque);
  CHECK(d.forms.by_tag.empty());
}

TEST_CASE("forms: a key that cannot be used is refused naming forms.opaque_key_file",
          "[config][forms]") {
  test::TempDir dir;
  const auto check = [](const json& forms, const std::string& key, const std::string& says) {
    INFO(forms.dump());
    const auto e = forms_error_of(json{{"forms", forms}});
    CHECK(e.key == key);
    CHECK_THAT(e.message, Catch::Contains(says));
  };
  check({{"opaque_key_file", "/nonexistent/key"}}, "forms.opaque_key_file", "cannot open");
  check({{"opaque_key_file", dir.write("short", std::string(40, 'a')).string()}},
        "forms.opaque_key_file", "40 characters, not the 64 hex digits");
  std::string not_hex(64, 'a');
  not_hex.back() = 'g';  // by hand: GCC 12 at -O1 misreads `std::string(n, c) + "g"`
  check({{"opaque_key_file", dir.write("nothex", not_hex).string()}}, "forms.opaque_key_file",
        "not a hex digit");
  check({{"opaque_key_file", "/dev/zero"}}, "forms.opaque_key_file", "over 4096 bytes");
  // A form that needs the key, without one.
  check({{"default", "opaque"}}, "forms.default", "needs a key");
  check({{"tags", {{"order", "opaque"}}}}, "forms.tags.order", "needs a key");
  check({{"default", "hashids"}}, "forms.default", "must be one of");
  check({{"tags", {{"bad tag", "plain"}}}}, R"(forms.tags."bad tag")", "is not a tag");
  check({{"tags", {{"order", "secret"}}}}, "forms.tags.order", "must be one of");
  check({{"tags", "opaque"}}, "forms.tags", "must be an object");
  check({{"key_file", "x"}}, "forms.key_file", "unknown key");
  // What the key file holds is never part of a message.
  const auto e = forms_error_of(
      json{{"forms", {{"opaque_key_file", dir.write("k", "secretsecret").string()}}}});
  CHECK(e.message.find("secretsecret") == std::string::npos);
}

TEST_CASE("forms: uuid in a layout whose times do not fit a UUIDv7 is refused", "[config][forms]") {
  // uid-generator's 28 bits of seconds from 2016 fit; a 1 s unit with 41
  // bits runs past year 10889.
  const auto e =
      forms_error_of(json{{"layout", {{"time_unit_ms", 1000}}}, {"forms", {{"default", "uuid"}}}});
  CHECK(e.key == "forms.default");
  CHECK_THAT(e.message, Catch::Contains("48 bits"));
}

TEST_CASE("forms: a relative key file is a systemd credential", "[config][forms][credentials]") {
  test::TempDir credentials;
  credentials.write("opaque-key", kKeyHex);
  const json doc = {{"forms", {{"opaque_key_file", "opaque-key"}}}};
  CHECK(parse_config(doc, kFormsNow, {{kCredentialsDirectory, credentials.path().string()}})
            .value()
            .forms.opaque);
  CHECK(forms_error_of(doc).key == "forms.opaque_key_file");
}

TEST_CASE("admin: a listener of its own and a token, or what is wrong with them",
          "[config][admin]") {
  test::TempDir dir;
  const auto token = dir.write("token", kToken + "\n");
  const Config c =
      parse_config(
          json{
              {"http", {{"admin_listen", "127.0.0.1:9090"}, {"admin_token_file", token.string()}}}},
          kFormsNow)
          .value();
  CHECK(c.http.admin_listen == "127.0.0.1:9090");
  REQUIRE(c.http.admin_token_sha256);
  CHECK(parse_config(json::object(), kFormsNow).value().http.admin_listen.empty());

  const auto check = [](const json& http, const std::string& key, const std::string& says) {
    INFO(http.dump());
    const auto e = forms_error_of(json{{"http", http}});
    CHECK(e.key == key);
    CHECK_THAT(e.message, Catch::Contains(says));
  };
  check({{"admin_listen", "localhost"}}, "http.admin_listen", "must be");
  check({{"admin_listen", "127.0.0.1:8080"}}, "http.admin_listen", "must differ from http.listen");
  check({{"admin_token_file", dir.write("short", "abc").string()}}, "http.admin_token_file",
        "at least 32");
  check({{"admin_token_file", "/nonexistent"}}, "http.admin_token_file", "cannot open");
  // The environment sets the listener too.
  const auto env =
      parse_config(json::object(), kFormsNow, {{"SNOWFLAKED_ADMIN_LISTEN", "127.0.0.1:7070"}});
  CHECK(env.value().http.admin_listen == "127.0.0.1:7070");
  CHECK(forms_error_of(json::object(), {{"SNOWFLAKED_ADMIN_LISTEN", "nope"}}).key ==
        "http.admin_listen (SNOWFLAKED_ADMIN_LISTEN)");
}
