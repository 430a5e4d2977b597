// `$VAR` / `${VAR}` substitution in config text, as stunnerd does it: Go's os.ExpandEnv over the
// whole file before parsing (pkg/config/client/config.go ParseConfig). The credential values under
// auth.credentials are then put back as written, so a '$' in a password or secret is literal;
// parseConfig() does that part.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace kturn::config {

// Returns the value of an environment variable, or nullopt when it is unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// getenv(3).
EnvLookup processEnvironment();

// Wraps lookup with stunnerd's STUNNER_PORT rule: when STUNNER_PORT is unset, empty or not all
// digits, it reads as STUNNER_PUBLIC_PORT if that is an integer, else as "3478". stunnerd does
// this with os.Setenv; kturn leaves the process environment alone.
EnvLookup withStunnerPortFallback(EnvLookup lookup);

// Go's os.Expand semantics, byte for byte:
//   $NAME     NAME is the longest run of [A-Za-z0-9_]
//   ${NAME}   NAME is everything up to the first '}'
//   $1 $$ $@ ... (and ${1} ...)  single-character shell specials, looked up by that name
//   ${} and an unclosed "${" are dropped; a '$' followed by anything else is kept.
// Unset variables expand to the empty string.
std::string expandEnv(std::string_view text, const EnvLookup& lookup);

}  // namespace kturn::config
