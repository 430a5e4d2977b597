#include "config/stunner_config.h"

namespace kturn::config {

const Listener* StunnerConfig::findListener(std::string_view name) const {
  for (const Listener& l : listeners) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

const Cluster* StunnerConfig::findCluster(std::string_view name) const {
  for (const Cluster& c : clusters) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace kturn::config
