// Writes a config back out in stunnerd's wire format: the same keys in the same order, with the
// same omissions (Go's `omitempty`), so stunnerctl and dashboards read kturn's output unchanged.
#pragma once

#include <string>

#include "config/stunner_config.h"

namespace kturn::config {

// Compact JSON, as the config discovery service sends it. indent >= 0 pretty-prints.
std::string toJson(const StunnerConfig& config, int indent = -1);
// Block-style YAML. Every string is double-quoted so no reader takes "yes", "1.0" or "~" for
// anything but a string.
std::string toYaml(const StunnerConfig& config);

}  // namespace kturn::config
