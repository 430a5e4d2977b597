// Where kturnd's configuration comes from (stunnerd's `-c` origin, or its positional TURN URI):
//   ""                     kturn's embedded default (loopback, ephemeral auth, generated secret)
//   file://PATH or PATH    a STUNner dataplane config file, YAML or JSON
//   turn://, turns://      a one-shot default config with static credentials from the URI
// Config discovery origins (http(s)://, ws(s)://) are not loaded here: the Daemon runs a CDS
// client for them (cds/cds_client.h), and loadConfig refuses them with a clear error.
#pragma once

#include <string>

#include "config/stunner_config.h"
#include "kturn/result.h"

namespace kturn::config {

struct LoadedConfig {
  config::StunnerConfig config;
  std::string description;  // for logs: "file /etc/kturn.yaml", "embedded default", ...
  bool generated_secret = false;
};

// Loads and validates the config at `origin`. Errors name the origin and the field.
Result<LoadedConfig> loadConfig(const std::string& origin);

// stunnerd also takes a bare "IP:port" (or "host:port") as a config discovery server: that
// becomes "http://IP:port". Anything else is returned as it is (a path, a URL, a TURN URI such as
// "turn:127.0.0.1:3478", "").
std::string normalizeOrigin(const std::string& origin);

// Whether `origin` is a file that can be re-read on SIGHUP.
bool isReloadable(const std::string& origin);

}  // namespace kturn::config
