// StopLatch: how a long-running command (`kturnctl config --watch`) learns that it should end.
// main() trips it from a thread that waits for SIGINT/SIGTERM; tests trip it themselves; the
// command trips it when its own output breaks. Thread-safe; once tripped it stays tripped.
#pragma once

#include <condition_variable>
#include <mutex>

namespace kturn::cli {

class StopLatch {
 public:
  void requestStop() {
    // Notified under the lock: a waiter cannot see `stopped_` (and go on to destroy the latch,
    // as main() does at exit) while this thread is still inside notify_all().
    std::lock_guard lock(mutex_);
    stopped_ = true;
    cv_.notify_all();
  }
  // Blocks until requestStop() has been called (returns at once if it has).
  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return stopped_; });
  }
  bool stopRequested() const {
    std::lock_guard lock(mutex_);
    return stopped_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool stopped_ = false;
};

}  // namespace kturn::cli
