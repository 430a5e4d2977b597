// The process-wide signal setup the kturn binaries share: SIGINT, SIGTERM (and SIGHUP where it
// means "reload") are blocked in every thread, so that the main thread alone takes them with
// sigwait(); SIGPIPE is ignored (a peer that closed its socket is an error return, not a death).
#pragma once

#include <signal.h>

namespace kturn::signals {

// Call before starting any thread: threads inherit the mask. Returns the blocked set.
sigset_t blockTermination(bool with_hangup = false);

}  // namespace kturn::signals
