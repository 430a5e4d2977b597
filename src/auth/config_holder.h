// ConfigHolder: the dataplane configs kturn-auth currently serves from, one per gateway, by id.
// The config source (file watcher or CDS client thread) changes them; every change swaps in a
// new immutable set, and every request takes the set current when it starts, so it sees one
// consistent state of all gateways, and a rotated secret is used from the next request on,
// without a restart.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "config/stunner_config.h"

namespace kturn::auth {

// Configs by id: the CDS server's "<namespace>/<name>" (their admin.name), or admin.name for a
// config from a file. Iterated in id order, which is the order kturn-auth answers in.
using ConfigSet = std::map<std::string, std::shared_ptr<const config::StunnerConfig>>;

class ConfigHolder {
 public:
  // Serves `config` alone, under its admin.name (a file origin, or a CDS watch of one --id).
  void set(config::StunnerConfig config) {
    auto next = std::make_shared<ConfigSet>();
    std::string id = config.admin.name;
    next->emplace(std::move(id), std::make_shared<const config::StunnerConfig>(std::move(config)));
    std::lock_guard lock(mutex_);
    current_ = std::move(next);
  }
  // Adds or replaces the config of `id`, keeping the others (a CDS watch of every gateway).
  void upsert(const std::string& id, config::StunnerConfig config) {
    auto snapshot = std::make_shared<const config::StunnerConfig>(std::move(config));
    std::lock_guard lock(mutex_);
    auto next = std::make_shared<ConfigSet>(*current_);  // copies pointers, not configs
    (*next)[id] = std::move(snapshot);
    current_ = std::move(next);
  }
  // Drops the config of `id`. False if there was none.
  bool remove(const std::string& id) {
    std::lock_guard lock(mutex_);
    if (current_->count(id) == 0) return false;
    auto next = std::make_shared<ConfigSet>(*current_);
    next->erase(id);
    current_ = std::move(next);
    return true;
  }
  // Every config as of now; empty until the first one arrived.
  std::shared_ptr<const ConfigSet> get() const {
    std::lock_guard lock(mutex_);
    return current_;
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const ConfigSet> current_ = std::make_shared<const ConfigSet>();
};

}  // namespace kturn::auth
