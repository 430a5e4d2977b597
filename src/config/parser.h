// Entry points that turn config text into a validated StunnerConfig.
#pragma once

#include <string_view>

#include "config/env_substitution.h"
#include "config/stunner_config.h"
#include "kturn/result.h"

namespace kturn::config {

// Reads a STUNner `version: v1` dataplane config, YAML or JSON, the way stunnerd does:
//   1. substitute $VAR / ${VAR} in the whole text (see env_substitution.h), with stunnerd's
//      STUNNER_PORT fallback;
//   2. decode (unknown fields ignored, keys matched case-insensitively);
//   3. put auth.credentials back as written before substitution: a '$' in a password or
//      secret is literal, and a secret never comes from the environment by accident;
//   4. validate(): fill defaults, normalize, check.
// Never throws. Errors name the field: `listeners[1].port: must be 1-65535`.
Result<StunnerConfig> parseConfig(std::string_view text);
Result<StunnerConfig> parseConfig(std::string_view text, const EnvLookup& env);

// Step 2 alone: no substitution, no defaults, no validation. For tools that show a config as
// written and for tests.
Result<StunnerConfig> decodeConfig(std::string_view text);

}  // namespace kturn::config
