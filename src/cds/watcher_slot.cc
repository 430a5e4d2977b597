#include "cds/watcher_slot.h"

#include <string>

#include "cds/watcher.h"

namespace kturn::cds {

Result<void> WatcherSlot::start(FunctionRef<Result<std::shared_ptr<Watcher>>()> start_watcher,
                                std::string_view what) {
  std::lock_guard lock(mutex_);
  if (watcher_)
    return makeError(Error::Code::kInvalidArgument, std::string(what) + ": already watching");
  Result<std::shared_ptr<Watcher>> watcher = start_watcher();
  if (!watcher) return watcher.error();
  watcher_ = std::move(watcher).value();
  return {};
}

void WatcherSlot::stop() {
  std::shared_ptr<Watcher> watcher;
  {
    std::lock_guard lock(mutex_);
    watcher = std::move(watcher_);
  }
  // Outside the lock: joining waits for a callback that may itself call stop() or running().
  if (watcher) watcher->stop();
}

bool WatcherSlot::running() const {
  std::lock_guard lock(mutex_);
  return watcher_ != nullptr;
}

}  // namespace kturn::cds
