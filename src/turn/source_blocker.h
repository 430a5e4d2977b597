// SourceBlocker: where the TURN core hands a source that keeps failing authentication, so that
// its datagrams are dropped before they reach the core (the kernel fast path's drop list,
// a fail2ban in the data path; docs/security.md). The core's own throttle (auth_throttle.h) still
// drops the source's requests unanswered meanwhile, with or without a blocker.
#pragma once

#include "kturn/transport_address.h"
#include "turn/ids.h"
#include "turn/time.h"

namespace kturn::turn {

class SourceBlocker {
 public:
  virtual ~SourceBlocker() = default;
  // The client address of `five_tuple` used up admin.limits.auth_failures on `listener`: drop
  // what it sends to the five-tuple's server port until `until`. Called once each time a source
  // crosses the limit, never per packet; the core has already left trusted sources out. Returns
  // whether the source is dropped now: false for a transport the blocker cannot see or a write
  // the kernel refused.
  virtual bool block(ListenerId listener, const FiveTuple& five_tuple, MonoTime until) = 0;
};

}  // namespace kturn::turn
