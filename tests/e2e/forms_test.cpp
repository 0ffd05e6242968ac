// The ID forms through the real snowflaked: a key that cannot be used exits
// 2 naming it; a daemon with another key than its cluster's exits 3; the
// command line hands out and decodes every form.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sstream>

#include "../support/child_process.hpp"
#include "../support/daemon.hpp"
#include "../support/http_client.hpp"
#include "../support/polling.hpp"
#include "../support/zookeeper_server.hpp"
#include "cluster.hpp"

using namespace snowflake;
using namespace snowflake::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

const std::string kKeyA(64, 'a');
const std::string kKeyB(64, 'b');

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("forms: a key that is missing, short or not hex exits 2 naming forms.opaque_key_file",
          "[forms][cli]") {
  TempDir dir;
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"short.key", std::string(63, 'a')}, {"nothex.key", std::string(64, 'x')}}) {
    const auto key = dir.write(name, text);
    const auto config =
        dir.write(name + ".json", json{{"forms", {{"opaque_key_file", key}}}}.dump());
    const auto r =
        run_process({snowflaked_binary(), "--config", config.string(), "--listen", "127.0.0.1:0"});
    INFO(r.err);
    CHECK(r.status.code == 2);
    CHECK_THAT(r.err, Catch::Contains("forms.opaque_key_file"));
    CHECK(r.err.find(text) == std::string::npos);  // the key never shows
  }
  const auto missing =
      dir.write("missing.json", R"({"forms": {"opaque_key_file": "/nonexistent/key"}})");
  const auto r = run_process({snowflaked_binary(), "check-config", missing.string()});
  CHECK(r.status.code == 2);
  CHECK_THAT(r.err, Catch::Contains("missing.json: forms.opaque_key_file: cannot open"));
  // A form that needs a key, without one.
  const auto keyless = dir.write("keyless.json", R"({"forms": {"tags": {"order": "opaque"}}})");
  const auto k = run_process({snowflaked_binary(), "check-config", keyless.string()});
  CHECK(k.status.code == 2);
  CHECK_THAT(k.err, Catch::Contains("forms.tags.order"));
}

TEST_CASE(
    "forms: a daemon whose key is not its cluster's exits 3 naming both fingerprints, and one with "
    "the same key, or none, joins",
    "[forms][coord]") {
  ZooKeeperServer zk;
  TempDir dir, s1, s2, s3, s4;
  const auto key_a = dir.write("a.key", kKeyA);
  const auto key_b = dir.write("b.key", kKeyB);
  const auto with_key = [&](const std::filesystem::path& state, const std::filesystem::path& key) {
    return cluster_config(zk.hosts(), "recycle", state,
                          json{{"forms", {{"opaque_key_file", key.string()}}}})
        .dump();
  };
  Daemon first(with_key(s1.path(), key_a));
  wait_ready(first);
  Daemon other(with_key(s2.path(), key_b));
  const auto status = other.process().wait_for_exit(20s);
  REQUIRE(status);
  CHECK(status->code == 3);
  CHECK_THAT(other.process().stderr_text(),
             Catch::Contains("another key") && Catch::Contains("forms.opaque_key_file"));
  CHECK(other.process().stderr_text().find(kKeyB) == std::string::npos);
  Daemon same(with_key(s3.path(), key_a));
  wait_ready(same);
  Daemon keyless(cluster_config(zk.hosts(), "recycle", s4.path()).dump());
  wait_ready(keyless);
  stop(first);
  stop(same);
  stop(keyless);
}

TEST_CASE(
    "forms: the cluster's form policy: a replica without the forms section exits 3, cluster "
    "forms --set changes it, and a running daemon of the old forms refuses only the tag whose "
    "form changed",
    "[forms][coord]") {
  ZooKeeperServer zk;
  TempDir dir, s1, s2, s3;
  const auto key = dir.write("a.key", kKeyA);
  const json keyed = {{"forms", {{"opaque_key_file", key.string()}}}};
  json pinned = keyed;
  pinned["forms"]["tags"] = {{"order", "opaque"}};
  pinned["http"] = {{"io_threads", 1}, {"leaf_compat", true}};
  const auto config = [&](const std::filesystem::path& state, const json& patch) {
    return cluster_config(zk.hosts(), "recycle", state, patch);
  };
  // The first daemon records its forms: order only opaque.
  Daemon first(config(s1.path(), pinned).dump());
  wait_ready(first);
  // A replica deployed without the forms section would hand order out plain.
  Daemon bare(config(s2.path(), json::object()).dump());
  const auto refused = bare.process().wait_for_exit(20s);
  REQUIRE(refused);
  CHECK(refused->code == 3);
  CHECK_THAT(bare.process().stderr_text(),
             Catch::Contains("order opaque") && Catch::Contains("cluster forms --set"));
  const auto bare_file = dir.write("bare.json", config(s2.path(), json::object()).dump());
  const auto shown =
      run_process({snowflaked_binary(), "cluster", "forms", "--config", bare_file.string()});
  CHECK(shown.status.code == 3);
  CHECK_THAT(shown.out, Catch::Contains("order opaque") && Catch::Contains("they differ"));

  // The operator pins user to uuid too; the running daemon's config does not.
  json wider = pinned;
  wider["forms"]["tags"]["user"] = "uuid";
  const auto wider_file = dir.write("wider.json", config(s3.path(), wider).dump());
  const auto set = run_process(
      {snowflaked_binary(), "cluster", "forms", "--set", "--config", wider_file.string()});
  INFO(set.out << set.err);
  REQUIRE(set.status.code == 0);
  CHECK_THAT(set.out, Catch::Contains("user uuid"));
  const auto status_of = [&](const Daemon& d, const std::string& target) {
    const auto r = http_get(d.port(), target);
    return r ? r->status : 0u;
  };
  REQUIRE(eventually([&] { return status_of(first, "/id/user") == 503; }, 10s));
  const auto changed = http_get(first.port(), "/id/user");
  REQUIRE(changed);
  CHECK(json::parse(changed->body)["error"] == "form_policy_changed");
  // Every way of asking for user: a batch, another form, Leaf's route.
  CHECK(status_of(first, "/id/user?count=5") == 503);
  CHECK(status_of(first, "/id/user?form=uuid") == 503);
  CHECK(status_of(first, "/api/snowflake/get/user") == 503);
  CHECK(status_of(first, "/id/order") == 200);    // pinned alike under both
  CHECK(status_of(first, "/id/invoice") == 200);  // pinned by neither, one default
  CHECK(status_of(first, "/ready") == 200);       // it serves the rest
  CHECK(json::parse(http_get(first.port(), "/status")->body)["cluster"]["form_policy_differs"]
            .get<std::string>()
            .find("user uuid") != std::string::npos);
  CHECK(http_get(first.port(), "/metrics")->body.find("snowflake_form_policy_disagrees 1") !=
        std::string::npos);
  // A daemon of the new forms joins; one of the old ones no more.
  Daemon wide(config(s3.path(), wider).dump());
  wait_ready(wide);
  CHECK(json::parse(http_get(wide.port(), "/id/user")->body)["id"].get<std::string>().size() == 36);
  CHECK(run_process({snowflaked_binary(), "cluster", "forms", "--config", wider_file.string()})
            .status.code == 0);
  // A record that is not a policy: no tag's form can be vouched for, and the
  // daemons say they are not ready; --set records one again.
  auto session = connect(zk);
  auto root = json::parse(session->get("/snowflake/e2e").value().data);
  root["forms"] = "opaque";
  REQUIRE(session->set("/snowflake/e2e", root.dump(), -1));
  REQUIRE(eventually([&] { return status_of(wide, "/ready") == 503; }, 10s));
  CHECK(status_of(wide, "/id/invoice") == 503);
  REQUIRE(run_process(
              {snowflaked_binary(), "cluster", "forms", "--set", "--config", wider_file.string()})
              .status.code == 0);
  REQUIRE(eventually([&] { return status_of(wide, "/ready") == 200; }, 10s));
  CHECK(status_of(wide, "/id/user") == 200);
  stop(first);
  stop(wide);
}

TEST_CASE("forms: snowflaked get --form and snowflaked decode, every form", "[forms][cli]") {
  TempDir dir;
  const auto key = dir.write("opaque.key", kKeyA + "\n");
  Daemon d(json{{"coordinator", {{"type", "static"}, {"static_worker_id", 12}}},
                {"forms", {{"opaque_key_file", key.string()}}}}
               .dump());
  const std::string servers = "--servers=http://127.0.0.1:" + std::to_string(d.port());
  const auto opaque = run_process(
      {snowflaked_binary(), "get", "order", "--form", "opaque", "--count", "3", servers});
  REQUIRE(opaque.status.code == 0);
  const auto numbers = lines_of(opaque.out);
  REQUIRE(numbers.size() == 3);
  for (const auto& n : numbers) {
    const auto decoded = run_process({snowflaked_binary(), "decode", n, "--form", "opaque", "--tag",
                                      "order", "--config", d.config_path().string()});
    INFO(decoded.err);
    REQUIRE(decoded.status.code == 0);
    const auto fields = json::parse(decoded.out);
    CHECK(fields["worker_id"] == 12);
    CHECK(fields["opaque"] == n);
    CHECK(fields["id"] != n);
  }
  const auto uuids = run_process({snowflaked_binary(), "get", "event", "--form", "uuid", servers});
  REQUIRE(uuids.status.code == 0);
  const auto u = lines_of(uuids.out).at(0);
  CHECK(u.size() == 36);
  const auto from_uuid =
      run_process({snowflaked_binary(), "decode", u});  // no config: the default layout
  REQUIRE(from_uuid.status.code == 0);
  CHECK(json::parse(from_uuid.out)["worker_id"] == 12);
  // What cannot be: a form that is none, an opaque ID without its tag, or
  // without a key in the config.
  CHECK(run_process({snowflaked_binary(), "get", "x", "--form", "hashids", servers}).status.code ==
        2);
  CHECK(run_process({snowflaked_binary(), "decode", numbers[0], "--form", "opaque"}).status.code ==
        2);
  const auto keyless = run_process(
      {snowflaked_binary(), "decode", numbers[0], "--form", "opaque", "--tag", "order"});
  CHECK(keyless.status.code == 2);
  CHECK_THAT(keyless.err, Catch::Contains("forms.opaque_key_file"));
  stop(d);
}
