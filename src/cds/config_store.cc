#include "cds/config_store.h"

#include "config/serializer.h"

namespace kturn::cds {

bool Topic::matches(const ConfigId& config) const {
  switch (kind) {
    case Kind::kAll:
      return true;
    case Kind::kNamespace:
      return config.namespace_ == id.namespace_;
    case Kind::kConfig:
      return config == id;
  }
  return false;
}

std::string ConfigStore::render(const config::StunnerConfig& config,
                                const std::string& node) const {
  if (patcher_ && !node.empty()) return config::toJson(patcher_(config, node));
  return config::toJson(config);
}

bool ConfigStore::upsert(const ConfigId& id, config::StunnerConfig config) {
  std::lock_guard lock(mutex_);
  auto it = configs_.find(id);
  if (it != configs_.end() && it->second == config) return false;
  const config::StunnerConfig& stored =
      configs_.insert_or_assign(id, std::move(config)).first->second;
  for (auto& [handle, sub] : subscriptions_) {
    if (sub.topic.matches(id)) sub.subscriber->deliver(id, render(stored, sub.node));
  }
  return true;
}

bool ConfigStore::remove(const ConfigId& id, const config::StunnerConfig* tombstone) {
  std::lock_guard lock(mutex_);
  if (configs_.erase(id) == 0) return false;
  if (tombstone != nullptr) {
    // STUNner sends the zero config unpatched.
    const std::string json = config::toJson(*tombstone);
    for (auto& [handle, sub] : subscriptions_) {
      if (sub.topic.matches(id)) sub.subscriber->deliver(id, json);
    }
  }
  return true;
}

void ConfigStore::pushNode(std::string_view node) {
  std::lock_guard lock(mutex_);
  if (!patcher_) return;  // STUNner: only subscriptions with a node filter, i.e. a patcher
  for (auto& [handle, sub] : subscriptions_) {
    if (sub.node.empty() || sub.node != node) continue;
    for (const auto& [id, config] : configs_) {
      if (sub.topic.matches(id)) sub.subscriber->deliver(id, render(config, sub.node));
    }
  }
}

std::optional<config::StunnerConfig> ConfigStore::get(const ConfigId& id) const {
  std::lock_guard lock(mutex_);
  auto it = configs_.find(id);
  if (it == configs_.end()) return std::nullopt;
  return it->second;
}

std::vector<config::StunnerConfig> ConfigStore::list(
    std::optional<std::string_view> namespace_) const {
  std::lock_guard lock(mutex_);
  std::vector<config::StunnerConfig> out;
  for (const auto& [id, config] : configs_) {
    if (!namespace_ || id.namespace_ == *namespace_) out.push_back(config);
  }
  return out;
}

std::vector<ConfigId> ConfigStore::ids() const {
  std::lock_guard lock(mutex_);
  std::vector<ConfigId> out;
  for (const auto& [id, config] : configs_) out.push_back(id);
  return out;
}

uint64_t ConfigStore::subscribe(Topic topic, std::string node, Subscriber& subscriber) {
  std::lock_guard lock(mutex_);
  const uint64_t handle = next_handle_++;
  for (const auto& [id, config] : configs_) {
    if (topic.matches(id)) subscriber.deliver(id, render(config, node));
  }
  subscriptions_.emplace(handle, Subscription{std::move(topic), std::move(node), &subscriber});
  return handle;
}

void ConfigStore::unsubscribe(uint64_t handle) {
  std::lock_guard lock(mutex_);
  subscriptions_.erase(handle);
}

void ConfigStore::unsubscribeAll() {
  std::lock_guard lock(mutex_);
  subscriptions_.clear();
}

size_t ConfigStore::subscriberCount() const {
  std::lock_guard lock(mutex_);
  return subscriptions_.size();
}

}  // namespace kturn::cds
