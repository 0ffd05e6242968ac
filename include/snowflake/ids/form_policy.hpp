#pragma once
// The cluster's form policy, as the root records it (cluster/form_policy.hpp)
// and the router checks it: the form each pinned tag goes out in, and the
// form of every other tag (a config's forms.tags and forms.default).
//
// ClusterForms is what the router checks per request: nothing while the
// cluster's policy is this daemon's own (one relaxed load); once the
// coordinator reads a changed one (`snowflaked cluster forms --set`), a tag
// whose form the two disagree on is refused until the daemon is restarted
// with the cluster's forms, and the rest are served as before.

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "snowflake/ids/form.hpp"

namespace snowflake {

struct FormPolicy {
  IdForm default_form = IdForm::plain;
  std::map<std::string, IdForm, std::less<>> tags;  // pinned: this form only
  bool operator==(const FormPolicy&) const = default;

  std::optional<IdForm> pinned(std::string_view tag) const {
    const auto it = tags.find(tag);
    return it == tags.end() ? std::nullopt : std::optional(it->second);
  }
  // Whether `tag` goes out alike under this policy and one that pins it to
  // `pin` (or not) with `default_form`: pinned to the same form, or pinned
  // by neither with the same default (a tag pinned by one only may be asked
  // for in any form by ?form= under the other). Alike, not merely no looser:
  // a replica stricter than the cluster also refuses the tag, so that every
  // replica answers a tag's requests one way.
  bool agrees_on(std::string_view tag, std::optional<IdForm> pin, IdForm other_default) const {
    const auto mine = pinned(tag);
    if (mine != pin) return false;
    return mine.has_value() || default_form == other_default;
  }
};

// "default plain; tags: event uuid, order opaque" (tags in name order).
std::string describe(const FormPolicy& policy);

class ClusterForms {
 public:
  // The coordinator, each time it reads the root: the cluster's policy
  // (nullopt: the record is not readable, and every tag's form in doubt),
  // and this daemon's.
  void record(const std::optional<FormPolicy>& cluster, const FormPolicy& mine);
  // One relaxed load: false in the usual case, and then every tag may go out.
  bool disagrees() const noexcept { return disagrees_.load(std::memory_order_relaxed); }
  // Under a lock: may `tag` go out here, pinned to `pin` (or not) with
  // `default_form` by this daemon's config?
  bool allows(std::string_view tag, std::optional<IdForm> pin, IdForm default_form) const;
  // The cluster's policy while it disagrees with this daemon's (nullopt
  // when it agrees, or is not readable).
  std::optional<FormPolicy> disagreeing() const;

 private:
  std::atomic<bool> disagrees_{false};
  mutable std::mutex mutex_;
  std::optional<FormPolicy> cluster_;  // while it disagrees; none: unreadable
};

}  // namespace snowflake
