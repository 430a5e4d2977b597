// A hashed timer wheel with one-second slots (Varghese & Lauck), for TURN lifetimes.
//
// Entries are (handle, deadline) pairs that never move: a handler whose deadline was extended
// finds the entry early and re-arms it, so refreshing an allocation costs nothing here. Deadlines
// beyond the wheel's span land in their slot modulo the span and are re-armed when they fire
// early. Insertion is O(1) amortised; advancing is O(elapsed slots + fired entries).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace kturn::turn {

template <class Handle>
class TimerWheel {
 public:
  explicit TimerWheel(size_t slots = 4096) : slots_(slots) {}

  TimerWheel(const TimerWheel&) = delete;
  TimerWheel& operator=(const TimerWheel&) = delete;

  // Arms `handle` to fire at second `deadline` (or at the next advance if it is already past).
  void schedule(Handle handle, int64_t deadline) {
    if (deadline <= now_) deadline = now_ + 1;
    slots_[static_cast<size_t>(deadline) % slots_.size()].push_back({handle, deadline});
    ++size_;
  }

  // Fires every entry whose deadline is at or before `now`, in deadline order per slot.
  // `fire(handle, deadline)` may schedule new entries.
  template <class Fire>
  void advance(int64_t now, Fire&& fire) {
    // On the first call, or after a long pause (a suspended process), one lap visits every slot;
    // more laps would only repeat it.
    const int64_t from = std::max(now_ + 1, now - static_cast<int64_t>(slots_.size()) + 1);
    for (int64_t t = from; t <= now; ++t) {
      auto& slot = slots_[static_cast<size_t>(t) % slots_.size()];
      if (slot.empty()) continue;
      due_.clear();
      // Split the slot into due and not-yet-due entries; firing may append to this slot.
      size_t keep = 0;
      for (auto& e : slot) {
        if (e.deadline <= now) {
          due_.push_back(e);
        } else {
          slot[keep++] = e;
        }
      }
      slot.resize(keep);
      size_ -= due_.size();
      for (const auto& e : due_) fire(e.handle, e.deadline);
    }
    now_ = std::max(now_, now);
  }

  // Drops every entry for which `keep(handle, deadline)` is false: the owner's way to shed
  // entries of handles that went away before their deadline. O(entries + slots).
  template <class Keep>
  void compact(Keep&& keep) {
    for (auto& slot : slots_) {
      const auto end = std::remove_if(slot.begin(), slot.end(),
                                      [&](const Entry& e) { return !keep(e.handle, e.deadline); });
      size_ -= static_cast<size_t>(slot.end() - end);
      slot.erase(end, slot.end());
    }
  }

  int64_t now() const { return now_; }
  size_t size() const { return size_; }

 private:
  struct Entry {
    Handle handle;
    int64_t deadline;
  };
  std::vector<std::vector<Entry>> slots_;
  std::vector<Entry> due_;
  int64_t now_ = 0;
  size_t size_ = 0;
};

}  // namespace kturn::turn
