// The forms section of the config: what GET /id/<tag> hands out.
//
//   "forms": {"opaque_key_file": "opaque.key",      (64 hex digits)
//             "default": "plain",                    plain | opaque | uuid
//             "tags": {"order": "opaque", "event": "uuid"}}
//
// A form the daemon could not make is refused at load, naming the key that
// asks for it: "opaque" without a key, "uuid" in a layout whose times do not
// fit a UUIDv7.

#include <fmt/format.h>

#include "config_parts.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/base/secret_wipe.hpp"
#include "snowflake/forms/uuid_form.hpp"

namespace snowflake {

namespace {

// The form `key` of `section` asks for, checked against what can be made.
IdForm read_form(JsonSection& section, std::string_view key, const FormSettings& f,
                 const IdLayout& layout) {
  const IdForm form = *parse_id_form(
      section.choice(key, std::string(to_string(f.default_form)), {"plain", "opaque", "uuid"}));
  if (form == IdForm::opaque && !f.opaque) {
    section.fail(key, "\"opaque\" needs a key: set forms.opaque_key_file");
  }
  if (form == IdForm::uuid) {
    if (auto fits = forms::check_uuid_layout(layout); !fits) {
      section.fail(key, "\"uuid\" does not fit this layout: " + fits.error());
    }
  }
  return form;
}

}  // namespace

FormSettings read_forms(JsonSection forms, const IdLayout& layout,
                        const std::string& credentials_directory) {
  FormSettings f;
  f.opaque_key_file = forms.string("opaque_key_file", "");
  if (!f.opaque_key_file.empty()) {
    const std::string path = secret_path(f.opaque_key_file, credentials_directory);
    std::string text = read_secret_line(forms, "opaque_key_file", path);
    auto key = forms::parse_opaque_key(text);
    wipe(text);
    if (!key) forms.fail("opaque_key_file", fmt::format("\"{}\" {}", path, key.error()));
    auto opaque = forms::OpaqueIds::create(key.value());
    wipe(key.value());
    if (!opaque) forms.fail("opaque_key_file", opaque.error());
    f.opaque = std::make_shared<const forms::OpaqueIds>(std::move(opaque).value());
  }
  f.default_form = read_form(forms, "default", f, layout);
  const auto& tags = forms.raw("tags");
  if (!tags.is_null() && !tags.is_object()) {
    forms.fail("tags", "must be an object of tag: form (plain, opaque or uuid)");
  }
  JsonSection by_tag = forms.section("tags");
  if (tags.is_object()) {
    for (const auto& [tag, value] : tags.items()) {
      if (!is_valid_name(tag)) by_tag.fail(tag, "is not a tag ([A-Za-z0-9._-]{1,64}, not . or ..)");
      f.by_tag[tag] = read_form(by_tag, tag, f, layout);
    }
  }
  by_tag.finish();
  forms.finish();
  return f;
}

}  // namespace snowflake
