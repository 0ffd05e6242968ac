#include "snowflake/cluster/form_policy.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "snowflake/base/names.hpp"

namespace snowflake::coord {

namespace {

using nlohmann::json;

// More tags than a config names in practice; a root rewritten by hand with
// more is refused, not read.
constexpr std::size_t kMaxPolicyTags = 10'000;

json root_object(std::string_view root_data) {
  json j = json::parse(root_data, nullptr, false);
  return j.is_object() ? j : json::object();
}

std::optional<IdForm> form_in(const json& value) {
  if (!value.is_string()) return std::nullopt;
  return parse_id_form(value.get_ref<const std::string&>());
}

}  // namespace

FormPolicy form_policy_of(const FormSettings& forms) {
  FormPolicy p;
  p.default_form = forms.default_form;
  for (const auto& [tag, form] : forms.by_tag) p.tags.emplace(tag, form);
  return p;
}

Result<std::optional<FormPolicy>, std::string> recorded_form_policy(std::string_view root_data) {
  const json j = root_object(root_data);
  const auto it = j.find("forms");
  if (it == j.end()) return std::optional<FormPolicy>();
  const auto bad = [](std::string_view why) {
    return std::string("the root's \"forms\" record is not a form policy: ") + std::string(why);
  };
  if (!it->is_object()) return bad("not an object");
  FormPolicy p;
  const auto d = it->find("default");
  const auto default_form = d == it->end() ? std::nullopt : form_in(*d);
  if (!default_form) return bad("no default form (plain, opaque or uuid)");
  p.default_form = *default_form;
  const auto tags = it->find("tags");
  if (tags == it->end() || !tags->is_object()) return bad("no tags object");
  if (tags->size() > kMaxPolicyTags) return bad("more than 10000 tags");
  for (const auto& [tag, value] : tags->items()) {
    const auto form = form_in(value);
    if (!is_valid_name(tag) || !form) return bad(fmt::format("tag \"{}\"", tag));
    p.tags.emplace(tag, *form);
  }
  return std::optional(std::move(p));
}

std::string with_form_policy(std::string_view root_data, const FormPolicy& policy) {
  json j = root_object(root_data);
  json tags = json::object();
  for (const auto& [tag, form] : policy.tags) tags[tag] = to_string(form);
  j["forms"] = {{"default", to_string(policy.default_form)}, {"tags", std::move(tags)}};
  return j.dump();
}

}  // namespace snowflake::coord
