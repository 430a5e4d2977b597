// WatcherSlot: the CDS watcher a client runs, if any. start(), stop() and running() may be
// called from any thread, a callback of the running watcher included: the watcher thread can
// deliver its first config (and the callback call stop()) before start() has returned, so the
// slot is guarded by a mutex that start() holds until the watcher is in place.
#pragma once

#include <memory>
#include <mutex>
#include <string_view>

#include "kturn/function_ref.h"
#include "kturn/result.h"

namespace kturn::cds {

class Watcher;

class WatcherSlot {
 public:
  WatcherSlot() = default;
  ~WatcherSlot() { stop(); }
  WatcherSlot(const WatcherSlot&) = delete;
  WatcherSlot& operator=(const WatcherSlot&) = delete;

  // Starts a watcher with `start_watcher` unless one is running (then kInvalidArgument,
  // "<what>: already watching").
  Result<void> start(FunctionRef<Result<std::shared_ptr<Watcher>>()> start_watcher,
                     std::string_view what);
  // Stops the running watcher, if any: joins its thread, or from one of its callbacks only
  // signals it (the thread ends when the callback returns).
  void stop();
  bool running() const;

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<Watcher> watcher_;  // null unless running
};

}  // namespace kturn::cds
