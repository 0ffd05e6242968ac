// snowflaked decode ID [--config FILE] [--form opaque --tag TAG]: an ID's
// fields as JSON, in the config's layout (the default layout without one).
// A UUID of ours decodes too; an opaque ID needs its tag and the config's
// key (forms.opaque_key_file): this command runs where that key is.

#include <fmt/format.h>

#include <iostream>

#include "snowflake/base/names.hpp"
#include "snowflake/commands/commands.hpp"
#include "snowflake/commands/common.hpp"
#include "snowflake/forms/uuid_form.hpp"
#include "snowflake/ids/json.hpp"
#include "snowflake/ids/text.hpp"

namespace snowflake::commands {

namespace {

struct DecodeRequest {
  std::optional<std::string> config_file;
  std::string text;
  std::optional<IdForm> form;  // none: a UUID if it looks like one, else plain
  std::optional<std::string> tag;
};

int decode(const DecodeRequest& r) {
  const auto config = load_config(r.config_file);
  if (!config) return kExitUsage;
  const IdLayout layout = layout_of(*config);
  const IdForm form =
      r.form.value_or(forms::looks_like_uuid(r.text) ? IdForm::uuid : IdForm::plain);
  std::uint64_t id = 0;
  if (form == IdForm::uuid) {
    const auto from_uuid = forms::id_of_uuid(r.text, layout);
    if (!from_uuid) return fail(kExitUsage, "decode: not a UUID of ours: " + from_uuid.error());
    id = from_uuid.value();
  } else {
    const auto number = parse_id(r.text);
    if (!number) return fail(kExitUsage, "decode: " + not_an_id(r.text));
    id = *number;
    if (form == IdForm::opaque) {
      if (!config->forms.opaque) {
        return fail(kExitUsage, "decode --form opaque: the config has no forms.opaque_key_file");
      }
      id = config->forms.opaque->decode(id, *r.tag);
    }
  }
  auto body = decoded_id_to_json(layout.decompose(id).value());
  if (form != IdForm::plain) {
    body["form"] = to_string(form);
    body[std::string(to_string(form))] = r.text;
  }
  std::cout << body.dump() << '\n';
  return kExitOk;
}

}  // namespace

Parsed decode_command(const Options& options, const Arguments& args) {
  if (args.size() != 1) return std::string("decode takes exactly one ID");
  DecodeRequest r{config_path(options), args[0], std::nullopt, std::nullopt};
  if (options.count("form")) {
    const auto text = options["form"].as<std::string>();
    r.form = parse_id_form(text);
    if (!r.form)
      return fmt::format("decode: --form must be plain, opaque or uuid, got \"{}\"", text);
  }
  if (options.count("tag")) r.tag = options["tag"].as<std::string>();
  if (r.form == IdForm::opaque && (!r.tag || !is_valid_name(*r.tag))) {
    return std::string("decode --form opaque needs --tag TAG, the tag the ID was issued for");
  }
  if (r.tag && r.form != IdForm::opaque)
    return std::string("decode: --tag goes with --form opaque");
  return Action([r] { return decode(r); });
}

}  // namespace snowflake::commands
