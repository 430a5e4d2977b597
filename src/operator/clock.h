// The wall clock as the Kubernetes API writes it, for condition lastTransitionTime. Kept out of
// the renderer, which is pure and takes the time as an option.
#pragma once

#include <string>

namespace kturn::op {

// RFC 3339, UTC, seconds: "2024-01-01T00:00:00Z".
std::string utcNowRfc3339();

}  // namespace kturn::op
