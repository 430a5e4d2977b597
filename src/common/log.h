// Logging setup. kturn logs through spdlog; the hot path never logs (CONVENTIONS.md §9).
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

#include "kturn/result.h"

namespace kturn::log {

// Applies a STUNner-style level spec, "all:INFO" or "all:WARN,turn:DEBUG": `all` (or a bare
// level) sets the default; per-component levels name spdlog loggers. Levels: TRACE, DEBUG, INFO,
// WARN, ERROR, DISABLE.
Result<void> configure(std::string_view spec);

}  // namespace kturn::log
