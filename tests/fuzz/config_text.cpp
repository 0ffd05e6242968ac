// A config file's text, which an operator (or a careless template) writes:
// it loads to a Config that obeys every rule docs/configuration.md states for
// the config (restated here, independently of the loader), or to an error with a
// message that, whenever the text is a JSON object, names the key at fault.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "snowflake/base/listen_address.hpp"
#include "snowflake/base/names.hpp"
#include "snowflake/config/config.hpp"
#include "snowflake/sequences/buffer.hpp"
#include "snowflake/state/time_reservation.hpp"

namespace {

using namespace snowflake;
using std::chrono::milliseconds;

// Fixed, so that a finding replays: "the epoch must not be in the future".
constexpr std::int64_t kNow = 1'767'225'600'000;  // 2026-01-01T00:00:00Z

const std::set<std::string, std::less<>> kTopLevelKeys{"service",   "log_level",   "layout",
                                                       "generator", "coordinator", "zookeeper",
                                                       "http",      "sequences",   "forms"};

void check_rules(const Config& c, std::string_view text) {
  FUZZ_CHECK(is_valid_name(c.service), text);
  const auto layout = IdLayout::create(c.layout, kNow);
  FUZZ_CHECK(layout.has_value(), text);
  const IdLayout& l = layout.value();

  const GeneratorOptions& g = c.generator;
  FUZZ_CHECK(g.random_sequence_bound >= 1 && g.random_sequence_bound <= l.max_sequence() + 1ULL,
             text);
  FUZZ_CHECK(g.max_backward_wait >= milliseconds(0) && g.max_floor_wait >= milliseconds(0), text);

  const CoordinatorSettings& k = c.coordinator;
  FUZZ_CHECK(parse_coordinator_type(to_string(k.type)) == k.type, text);
  FUZZ_CHECK(k.static_worker_id <= l.max_worker_id(), text);
  // The datacenter ID fits its field and reaches every ID; without the field
  // it is 0. A preset is one system's whole layout, nothing else.
  FUZZ_CHECK(c.layout.datacenter_bits <= 31, text);
  FUZZ_CHECK(k.datacenter_id <= l.max_datacenter_id(), text);
  FUZZ_CHECK(c.layout.datacenter_bits != 0 || k.datacenter_id == 0, text);
  FUZZ_CHECK(g.datacenter_id == k.datacenter_id, text);
  // No chroot: the root is the cluster's path (libzookeeper_mt frees chroot paths twice).
  FUZZ_CHECK(c.zookeeper.hosts.find('/') == std::string::npos, text);
  // The migration floor of static mode; ZooKeeper clusters keep theirs in the root.
  FUZZ_CHECK(
      !k.min_id || (k.type == CoordinatorType::static_id && *k.min_id <= 0x7fff'ffff'ffff'ffffULL),
      text);
  const auto document = nlohmann::json::parse(text, nullptr, false);
  if (document.contains("layout") && document.at("layout").contains("preset")) {
    const auto& written = document.at("layout");
    const auto preset = find_layout_preset(written.at("preset").get<std::string>());
    FUZZ_CHECK(preset && *preset == c.layout && written.size() == 1, text);
  }
  // With datacenter bits the config must have named its datacenter.
  if (c.layout.datacenter_bits != 0) {
    FUZZ_CHECK(
        document.contains("coordinator") && document.at("coordinator").contains("datacenter_id"),
        text);
  }
  FUZZ_CHECK(k.type != CoordinatorType::recycle || c.layout.worker_bits <= 16, text);
  // The safety rules of the lease (docs/design.md, "Why two daemons never issue the same ID").
  FUZZ_CHECK(k.heartbeat_interval < k.lease_timeout, text);
  FUZZ_CHECK(k.lease_timeout + k.safety_margin <= k.reclaim_after, text);
  FUZZ_CHECK(k.persist_interval <= milliseconds(1'000), text);
  // A reconnection's grace leaves a running lease room for a heartbeat.
  FUZZ_CHECK(k.restore_grace >= milliseconds(0) &&
                 k.restore_grace + k.heartbeat_interval < k.lease_timeout,
             text);
  FUZZ_CHECK(state::kReserveIntervals * k.persist_interval <= k.max_boot_wait, text);
  FUZZ_CHECK(k.max_skew >= milliseconds(1) && k.safety_margin >= milliseconds(0), text);

  const ZooKeeperSettings& z = c.zookeeper;
  FUZZ_CHECK(!z.hosts.empty(), text);
  FUZZ_CHECK(z.root.size() >= 2 && z.root.front() == '/' && z.root.back() != '/' &&
                 z.root.find("//") == std::string::npos,
             text);
  FUZZ_CHECK(z.auth_file.empty() == z.digest_auth.empty(), text);

  const HttpSettings& h = c.http;
  FUZZ_CHECK(parse_listen_address(h.listen).has_value(), text);
  FUZZ_CHECK(h.max_batch >= 1 && h.max_connections >= 1, text);
  FUZZ_CHECK(h.idle_timeout >= milliseconds(1) && h.request_timeout >= milliseconds(1) &&
                 h.drain_timeout >= milliseconds(1),
             text);
  FUZZ_CHECK(h.shutdown_delay >= milliseconds(0) && h.shutdown_delay <= milliseconds(600'000),
             text);
  for (const auto& tag : h.tag_allowlist) FUZZ_CHECK(is_valid_name(tag), text);
  // A second listener is an address, not the first one's; a token file read
  // is a digest kept.
  FUZZ_CHECK(h.admin_listen.empty() || parse_listen_address(h.admin_listen).has_value(), text);
  FUZZ_CHECK(h.admin_listen.empty() || h.admin_listen != h.listen ||
                 parse_listen_address(h.admin_listen)->port() == 0,
             text);
  FUZZ_CHECK(h.admin_token_file.empty() == !h.admin_token_sha256, text);
  // TLS: a certificate and its key, both or neither, read and matched at
  // load; client certificates only with TLS and an admin listener.
  FUZZ_CHECK(h.tls_cert_file.empty() == h.tls_key_file.empty(), text);
  FUZZ_CHECK(h.tls_cert_file.empty() == !h.tls, text);
  FUZZ_CHECK(!h.tls || (!h.tls->chain_pem.empty() && !h.tls->key_pem.empty()), text);
  FUZZ_CHECK(h.admin_client_ca_file.empty() || (h.tls && !h.admin_listen.empty()), text);
  FUZZ_CHECK(h.admin_client_ca_file.empty() == (!h.tls || h.tls->client_ca_pem.empty()), text);
  FUZZ_CHECK(h.tls_reload_interval >= milliseconds(100) &&
                 h.tls_reload_interval <= milliseconds(3'600'000),
             text);

  // A form the daemon hands out, it can make: opaque with a key, every
  // tag's name a tag.
  const FormSettings& f = c.forms;
  FUZZ_CHECK(f.opaque_key_file.empty() == !f.opaque, text);
  FUZZ_CHECK(f.default_form != IdForm::opaque || f.opaque, text);
  for (const auto& [tag, form] : f.by_tag) {
    FUZZ_CHECK(is_valid_name(tag), text);
    FUZZ_CHECK(form != IdForm::opaque || f.opaque, text);
  }

  // A range fits the buffer's offset; a wait is bounded; a refill leaves room.
  const SequenceSettings& q = c.sequences;
  FUZZ_CHECK(q.max_step >= 1 && q.max_step <= kMaxSequenceRange, text);
  FUZZ_CHECK(q.segment_duration >= std::chrono::seconds(1), text);
  FUZZ_CHECK(q.refill_at_percent >= 1 && q.refill_at_percent <= 90, text);
  FUZZ_CHECK(q.max_wait >= milliseconds(0) && q.max_wait <= milliseconds(60'000), text);
  FUZZ_CHECK(q.max_tags >= 1, text);
}

// Whenever the text is a JSON object, the error names a key: one of ours,
// or one the text has (an unknown key, a typo).
void check_error(const ConfigError& e, std::string_view text) {
  FUZZ_CHECK(!e.message.empty(), text);
  const auto document = nlohmann::json::parse(text, nullptr, false);
  if (!document.is_object()) return;  // 1e309 too: the parser refuses it, the loader names its key
  FUZZ_CHECK(!e.key.empty(), text);
  // A key set from the environment is named with its variable: "service (SNOWFLAKED_SERVICE)".
  const std::string key = e.key.substr(0, e.key.find(" (SNOWFLAKED_"));
  const std::string top = key.substr(0, key.find('.'));
  // Theirs at any depth: a section's name they mistyped heads the path
  // ("zook.tag_allowlist" when what is under it is nested too deep).
  const auto heads = [&key](const std::string& name) {
    return key == name || key.starts_with(name + ".");
  };
  const bool names_theirs =
      std::any_of(document.items().begin(), document.items().end(), [&](const auto& item) {
        return heads(item.key()) || heads(nlohmann::json(item.key()).dump());
      });
  FUZZ_CHECK(kTopLevelKeys.contains(top) || names_theirs, text);
}

// After a NUL byte, one environment setting a line: its first byte picks the
// variable (SNOWFLAKED_*), the rest is the value.
ConfigOverrides overrides_of(std::string_view tail) {
  ConfigOverrides out;
  constexpr auto kCount = std::size(kOverridableKeys);
  while (!tail.empty()) {
    const auto end = std::min(tail.find('\n'), tail.size());
    const std::string_view line = tail.substr(0, end);
    if (!line.empty()) {
      const auto pick = static_cast<unsigned char>(line[0]) % kCount;
      out.push_back({kOverridableKeys[pick].variable, std::string(line.substr(1))});
    }
    tail.remove_prefix(std::min(end + 1, tail.size()));
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const auto input = as_text(data, size);
  // auth_file is read at load: a device could block the target.
  if (input.find("/dev") != input.npos || input.find("/proc") != input.npos) return 0;
  const auto nul = input.find('\0');
  const auto text = input.substr(0, nul);
  const auto overrides =
      nul == std::string_view::npos ? ConfigOverrides{} : overrides_of(input.substr(nul + 1));
  const auto loaded = load_config_text(text, kNow, overrides);
  if (loaded) {
    check_rules(loaded.value(), text);
  } else {
    check_error(loaded.error(), text);
  }
  return 0;
}
