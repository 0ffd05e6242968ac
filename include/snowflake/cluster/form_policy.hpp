#pragma once
// The cluster's form policy: the form each pinned tag goes out in, and the
// form of every other tag (a config's forms.tags and forms.default). One
// replica configured otherwise (its forms section left out) would hand out
// a tag meant to go out opaque in plain, revealing what the form hides. So
// the root records the policy, one more field of its data:
//
//   <root>  {..., "forms": {"default": "plain", "tags": {"order": "opaque"}}}
//
// written with a new cluster's root (RootForms in cluster_root.hpp), or by
// `snowflaked cluster forms --set`, which alone changes it. A daemon whose
// config says otherwise does not start (exit 3); a running one that reads a
// changed policy (the coordinator watches the root) refuses each tag whose
// form the two disagree on, and serves the rest, until it is restarted with
// the cluster's (ClusterForms in form_policy.hpp).

#include <optional>
#include <string>
#include <string_view>

#include "snowflake/base/result.hpp"
#include "snowflake/config/config.hpp"
#include "snowflake/ids/form_policy.hpp"

namespace snowflake::coord {

// What a config's forms section makes the policy.
FormPolicy form_policy_of(const FormSettings& forms);

// The policy `root_data` records: none (nullopt) when it records none; an
// error (saying what is wrong) when its "forms" field is not a policy, which
// a daemon must not read as none.
Result<std::optional<FormPolicy>, std::string> recorded_form_policy(std::string_view root_data);

// `root_data` with `policy` recorded (anything else it holds kept).
std::string with_form_policy(std::string_view root_data, const FormPolicy& policy);

}  // namespace snowflake::coord
