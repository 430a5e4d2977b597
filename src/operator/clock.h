// The wall clock as the Kubernetes API writes it, for condition lastTransitionTime. Kept out of
// the renderer, which is pure and takes the time as an option.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kturn::op {

// RFC 3339, UTC, seconds: "2024-01-01T00:00:00Z".
std::string utcNowRfc3339();
std::string rfc3339(int64_t unixSeconds);
int64_t unixNow();
// "2024-01-01T00:00:00Z" (UTC, seconds, as rfc3339 writes it); nullopt for anything else.
std::optional<int64_t> parseRfc3339(const std::string& text);

}  // namespace kturn::op
