// Told when an allocation ends, with everything a session record needs (session_log.h). The
// daemon writes the structured log line; the core stays free of I/O. Called once per allocation,
// never per packet.
#pragma once

#include <cstdint>
#include <string_view>

#include "turn/allocation.h"
#include "turn/time.h"

namespace kturn::turn {

enum class SessionEnd : uint8_t {
  kDeleted,           // Refresh with lifetime 0
  kExpired,           // lifetime ran out
  kListenerClosed,    // its listener was removed from the config (or moved to another address)
  kConnectionClosed,  // TURN over TCP/TLS: the client's connection closed (RFC 8656 §3.1)
};

constexpr std::string_view toString(SessionEnd e) {
  switch (e) {
    case SessionEnd::kDeleted:
      return "deleted";
    case SessionEnd::kExpired:
      return "expired";
    case SessionEnd::kListenerClosed:
      return "listener-closed";
    case SessionEnd::kConnectionClosed:
      return "connection-closed";
  }
  return "unknown";
}

class SessionObserver {
 public:
  virtual ~SessionObserver() = default;
  virtual void onAllocationEnd(const Allocation& allocation, SessionEnd reason, const Now& now) = 0;
};

}  // namespace kturn::turn
