// ConfigHolder: the dataplane config kturn-auth currently serves from. The config source (file
// watcher or CDS client thread) replaces it; every request takes the snapshot current when it
// starts, so a rotated secret is used from the next request on, without a restart.
#pragma once

#include <memory>
#include <mutex>

#include "config/stunner_config.h"

namespace kturn::auth {

class ConfigHolder {
 public:
  void set(config::StunnerConfig config) {
    auto snapshot = std::make_shared<const config::StunnerConfig>(std::move(config));
    std::lock_guard lock(mutex_);
    current_ = std::move(snapshot);
  }
  // nullptr until the first config arrived.
  std::shared_ptr<const config::StunnerConfig> get() const {
    std::lock_guard lock(mutex_);
    return current_;
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const config::StunnerConfig> current_;
};

}  // namespace kturn::auth
