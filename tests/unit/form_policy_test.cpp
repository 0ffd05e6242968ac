// The cluster's form policy: as the root records it, and as the router
// checks a tag against it once it differs from the daemon's own.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "snowflake/cluster/form_policy.hpp"
#include "snowflake/ids/form_policy.hpp"

using namespace snowflake;
using nlohmann::json;

namespace {

FormPolicy policy(IdForm default_form, std::map<std::string, IdForm, std::less<>> tags) {
  return {default_form, std::move(tags)};
}

}  // namespace

TEST_CASE("form policy: recorded beside what the root holds, read back the same", "[forms]") {
  const std::string root = R"({"time_bits":41,"strategy":"recycle","opaque_key":"ab12"})";
  CHECK(coord::recorded_form_policy(root).value() == std::nullopt);  // none recorded yet
  const auto p = policy(IdForm::plain, {{"order", IdForm::opaque}, {"event", IdForm::uuid}});
  const std::string with = coord::with_form_policy(root, p);
  CHECK(coord::recorded_form_policy(with).value() == p);
  const json j = json::parse(with);
  CHECK(j["opaque_key"] == "ab12");  // the rest kept
  CHECK(j["forms"] ==
        json::parse(R"({"default":"plain","tags":{"event":"uuid","order":"opaque"}})"));
  CHECK(describe(p) == "default plain; tags: event uuid, order opaque");
  CHECK(describe(FormPolicy{}) == "default plain, no tag pinned");
}

TEST_CASE("form policy: a record that is not one is an error, never read as none", "[forms]") {
  for (const char* bad :
       {R"({"forms":"plain"})", R"({"forms":{}})", R"({"forms":{"default":"fancy","tags":{}}})",
        R"({"forms":{"default":"plain"}})",
        R"({"forms":{"default":"plain","tags":{"a b":"opaque"}}})",
        R"({"forms":{"default":"plain","tags":{"order":"sealed"}}})",
        R"({"forms":{"default":"plain","tags":{"..":"opaque"}}})"}) {
    INFO(bad);
    const auto read = coord::recorded_form_policy(bad);
    REQUIRE_FALSE(read);
    CHECK_THAT(read.error(), Catch::Contains("not a form policy"));
  }
  // Not JSON, or no object: nothing recorded (the root check says what it is).
  CHECK(coord::recorded_form_policy("").value() == std::nullopt);
  CHECK(coord::recorded_form_policy("[1]").value() == std::nullopt);
}

TEST_CASE("form policy: a tag agrees when pinned alike, or pinned by neither with one default",
          "[forms]") {
  const auto cluster = policy(IdForm::plain, {{"order", IdForm::opaque}});
  CHECK(cluster.agrees_on("order", IdForm::opaque, IdForm::plain));
  CHECK(cluster.agrees_on("order", IdForm::opaque, IdForm::uuid));  // pinned: default moot
  CHECK(cluster.agrees_on("user", std::nullopt, IdForm::plain));
  // The replica without the forms section: order would go out plain.
  CHECK_FALSE(cluster.agrees_on("order", std::nullopt, IdForm::plain));
  // Pinned to opaque here too but by default only: ?form=plain would pass.
  CHECK_FALSE(cluster.agrees_on("order", std::nullopt, IdForm::opaque));
  CHECK_FALSE(cluster.agrees_on("user", std::nullopt, IdForm::opaque));
  CHECK_FALSE(cluster.agrees_on("user", IdForm::plain, IdForm::plain));
}

TEST_CASE("cluster forms: every tag allowed while the cluster agrees, then only those alike",
          "[forms]") {
  ClusterForms forms;
  const auto mine = policy(IdForm::plain, {});
  CHECK_FALSE(forms.disagrees());
  forms.record(mine, mine);
  CHECK_FALSE(forms.disagrees());
  CHECK(forms.allows("order", std::nullopt, IdForm::plain));

  // cluster forms --set pinned order to opaque; this daemon's config did not.
  forms.record(policy(IdForm::plain, {{"order", IdForm::opaque}}), mine);
  CHECK(forms.disagrees());
  CHECK_FALSE(forms.allows("order", std::nullopt, IdForm::plain));
  CHECK(forms.allows("user", std::nullopt, IdForm::plain));
  REQUIRE(forms.disagreeing());
  CHECK(forms.disagreeing()->tags.size() == 1);

  // A record that is no policy: no tag's form can be vouched for.
  forms.record(std::nullopt, mine);
  CHECK(forms.disagrees());
  CHECK_FALSE(forms.allows("user", std::nullopt, IdForm::plain));
  CHECK_FALSE(forms.disagreeing());

  forms.record(mine, mine);  // set back
  CHECK_FALSE(forms.disagrees());
  CHECK(forms.allows("order", std::nullopt, IdForm::plain));
}
