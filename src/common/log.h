// Logging setup. kturn logs through spdlog; the hot path never logs.
//
// Every line goes through one sink that writes text or JSON (`--log-format`, as stunnerd) to
// stdout and rate-limits: at most kLinesPerSecond lines a second, the excess counted and
// reported in the next line that passes, so that a flood of bad input or a flapping upstream can
// never turn into a flood of log lines. Session records (scope "session", one per allocation
// end) are audit data and are never dropped.
//
// Scopes are named spdlog loggers sharing that sink: "kturnd" (the default logger), "config",
// "cds", "admin", "session". STUNner's level spec selects per scope: "all:INFO,cds:DEBUG".
#pragma once

#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>
#include <string_view>

#include "kturn/result.h"

namespace kturn::log {

enum class Format { kText, kJson };

inline constexpr size_t kLinesPerSecond = 200;
inline constexpr std::string_view kSessionScope = "session";

// "text" or "json".
Result<Format> parseFormat(std::string_view text);

// Installs the sink, writing to `out`, and the default logger ("kturnd"). Call once, early in
// main(); before it, spdlog's own default logger is used (tests rely on that).
void setup(Format format, std::FILE* out = stdout);

// The logger of one scope, created on first use with the default logger's sink and level.
std::shared_ptr<spdlog::logger> scope(std::string_view name);

// Applies a STUNner-style level spec, "all:INFO" or "all:WARN,cds:DEBUG": `all` (or a bare
// level) sets every scope; a named scope sets that one. Levels: TRACE, DEBUG, INFO, WARN, ERROR,
// DISABLE (case-insensitive). On error nothing changes.
Result<void> configure(std::string_view spec);

}  // namespace kturn::log
