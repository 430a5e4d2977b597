// Defaults and checks for a decoded config: the rules of stunnerd's Validate()
// (pkg/apis/v1/*.go) plus the checks stunnerd makes later when it opens listeners (TLS material
// must base64-decode) or that it leaves to luck (duplicate names).
#pragma once

#include <string>
#include <vector>

#include "config/stunner_config.h"
#include "kturn/result.h"

namespace kturn::config {

// Fills defaults and normalizes in place, then checks; stops at the first error, whose message
// starts with the field path (`clusters[0].endpoints[2]: invalid address "10.0.0.300"`).
//
// Defaults (STUNner's): admin.name "default-stunnerd", admin.loglevel "all:INFO",
// admin.healthcheck_endpoint "http://:8086" when absent, admin.offload_engine "None",
// auth.type "static", auth.realm "stunner.l7mp.io", listener protocol "TURN-UDP", address
// "0.0.0.0", port 3478, cluster type "STATIC", protocol "UDP".
// Normalization (STUNner's): enum strings to their canonical spelling; listeners[].routes,
// clusters[].endpoints and admin.offload_interfaces sorted, as stunnerd reports them.
//
// Routes naming no cluster are accepted, as stunnerd does (they admit nothing); see
// danglingRoutes() to warn about them.
Result<void> validate(StunnerConfig& config);

// A listener or cluster that validateIsolating() took out of a config, and why.
struct ConfigFault {
  std::string kind;   // "listener" or "cluster"
  std::string name;   // as the config names it ("" when it has no name)
  std::string error;  // the field and what is wrong with it: listeners[2].cert: not valid base64
};

// validate(), isolating each listener and cluster: one that fails its own checks, or repeats an
// earlier one's name, is taken out of `config` and returned; the others stay, checked and
// normalized. Fails only for what is wrong for the whole config (version, admin, auth), at the
// first such error. kturnd applies configs this way, so that one bad listener costs only itself.
Result<std::vector<ConfigFault>> validateIsolating(StunnerConfig& config);

// "listeners[0].routes[1]: no cluster named \"media\"" for every route that names no cluster.
std::vector<std::string> danglingRoutes(const StunnerConfig& config);

}  // namespace kturn::config
