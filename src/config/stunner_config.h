// The STUNner dataplane config, `version: v1` (github.com/l7mp/stunner pkg/apis/v1/stunner.go):
// what stunnerd reads from a file or the config discovery service, and what kturnd reads too.
//
// Field names follow the wire names (snake_case) so the model reads like the YAML. String-typed
// enums (auth.type, listeners[].protocol, ...) stay strings as written until validate()
// normalizes them; the typed accessors (authType(), protocolType(), ...) parse them.
#pragma once

#include <string>
#include <vector>

#include "config/admin.h"
#include "config/auth.h"
#include "config/cluster.h"
#include "config/listener.h"

namespace kturn::config {

struct StunnerConfig {
  std::string version{};  // must be "v1"
  Admin admin{};
  Auth auth{};
  std::vector<Listener> listeners{};
  std::vector<Cluster> clusters{};

  const Listener* findListener(std::string_view name) const;
  const Cluster* findCluster(std::string_view name) const;

  friend bool operator==(const StunnerConfig&, const StunnerConfig&) = default;
};

}  // namespace kturn::config
