#include "snowflake/ids/form_policy.hpp"

#include <fmt/format.h>

namespace snowflake {

std::string describe(const FormPolicy& policy) {
  std::string out = fmt::format("default {}", to_string(policy.default_form));
  if (policy.tags.empty()) return out + ", no tag pinned";
  out += "; tags:";
  bool first = true;
  for (const auto& [tag, form] : policy.tags) {
    out += fmt::format("{} {} {}", first ? "" : ",", tag, to_string(form));
    first = false;
  }
  return out;
}

void ClusterForms::record(const std::optional<FormPolicy>& cluster, const FormPolicy& mine) {
  std::lock_guard lock(mutex_);
  if (cluster == mine) {
    cluster_.reset();
    disagrees_.store(false, std::memory_order_relaxed);
    return;
  }
  cluster_ = cluster;
  disagrees_.store(true, std::memory_order_relaxed);
}

bool ClusterForms::allows(std::string_view tag, std::optional<IdForm> pin,
                          IdForm default_form) const {
  std::lock_guard lock(mutex_);
  if (!disagrees_.load(std::memory_order_relaxed)) return true;
  return cluster_ && cluster_->agrees_on(tag, pin, default_form);
}

std::optional<FormPolicy> ClusterForms::disagreeing() const {
  std::lock_guard lock(mutex_);
  return cluster_;
}

}  // namespace snowflake
