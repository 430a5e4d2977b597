// The ICE server entry a WebRTC client needs to use kturnd (an RTCIceServer dictionary), minted
// from the running config: what `make run` prints so a developer can paste it into a page.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "config/stunner_config.h"

namespace kturn::daemon {

// JSON `{"urls":[...],"username":...,"credential":...}` with a URI per TURN-UDP, TURN-TCP,
// TURN-TLS and TURN-DTLS listener (in that order), or nullopt when there is none or auth is "none".
// Ephemeral credentials are minted valid for `ttl`.
std::optional<std::string> iceServerEntry(const config::StunnerConfig& config,
                                          std::chrono::system_clock::time_point now,
                                          std::chrono::seconds ttl = std::chrono::hours(24));

}  // namespace kturn::daemon
