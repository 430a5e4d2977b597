// EventLoop: the epoll loop that drives one worker thread (docs/architecture.md §3).
#pragma once

#include <sys/epoll.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "kturn/result.h"
#include "net/file_descriptor.h"

namespace kturn::net {

// One per worker thread; everything registered on a loop runs on that loop's thread.
//
// Threading: post() and stop() may be called from any thread. Every other method — add(),
// modify(), remove(), addTicker(), run(), runOnce() — belongs to the loop thread (or to setup code
// before run() starts); another thread reaches the loop by posting a task.
//
// Dispatch does not allocate: handlers live in slots indexed by fd, and each registration carries
// a generation number in its epoll data, so an event that was queued for a registration that has
// since been removed (or removed and re-added on a reused fd number) is recognised and skipped.
class EventLoop {
 public:
  // Receives the epoll event mask (EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP, ...).
  using Callback = std::function<void(uint32_t epoll_events)>;

  // Creates the epoll instance and the wakeup eventfd. Like addTicker(), aborts if the kernel
  // refuses them: a worker cannot run without its loop, and no caller could recover.
  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;
  EventLoop(EventLoop&&) = delete;
  EventLoop& operator=(EventLoop&&) = delete;

  // Watches `fd` for `events` (level-triggered unless EPOLLET is passed). The loop does not own
  // the fd. Fails if the fd is already registered or epoll refuses it.
  Result<void> add(int fd, uint32_t events, Callback cb);
  // Changes the event mask of a registered fd; the callback stays.
  Result<void> modify(int fd, uint32_t events);
  // Stops watching `fd`; its callback is never called again, including for events already fetched
  // in the batch being dispatched. Safe from inside any callback, the fd's own included (the
  // callback object is kept alive until the batch ends). Call it before closing the fd. Removing
  // an fd that is not registered does nothing.
  void remove(int fd);

  // Runs `task` on the loop thread, in posting order, at the loop's next wakeup. Thread-safe.
  // Not for the per-packet path: it takes a mutex and may allocate. Tasks still queued when the
  // loop is destroyed are destroyed without running.
  void post(std::function<void()> task);

  // Calls `cb` every `period` (first call one period from now), e.g. to advance the TURN core's
  // timer wheel. If the loop was late, `cb` is called once, not once per missed period: callers
  // read the clock themselves. There is no way to cancel a ticker; it lives as long as the loop.
  // A worker without its clock cannot expire allocations, so failing to create the timer (fd
  // exhaustion at startup) aborts the process rather than limping on.
  void addTicker(std::chrono::milliseconds period, std::function<void()> cb);

  // Dispatches events until stop() is called. If stop() was called before run(), returns at once.
  void run();
  // Requests run() to return after the current batch. Thread-safe and async-signal-safe (an
  // atomic store and a write(2) to an eventfd), so a signal handler may call it.
  void stop();
  // Waits at most `timeout` (negative: forever) for events and dispatches one batch. Tests drive
  // the loop with this.
  void runOnce(std::chrono::milliseconds timeout);

 private:
  // The largest batch one epoll_wait returns; more ready fds are picked up by the next call.
  static constexpr int kMaxEvents = 256;

  struct Slot {
    // Heap-allocated so that the callable never moves while it runs, even when it removes itself
    // and the slot table grows inside the callback.
    std::unique_ptr<Callback> callback;
    uint32_t generation = 0;
  };

  void dispatch(const epoll_event& event);
  void drainPosted();
  void wake();

  FileDescriptor epoll_fd_;
  FileDescriptor wake_fd_;   // eventfd: post() and stop() write to it.
  std::vector<Slot> slots_;  // indexed by fd
  // Callbacks removed during dispatch; destroyed after the batch so that a running callback is
  // never destroyed under itself.
  std::vector<std::unique_ptr<Callback>> retired_;
  std::vector<FileDescriptor> tickers_;
  std::array<epoll_event, kMaxEvents> events_{};
  bool dispatching_ = false;

  std::atomic<bool> stop_requested_{false};
  static_assert(std::atomic<bool>::is_always_lock_free, "stop() must be async-signal-safe");

  std::mutex posted_mutex_;
  std::vector<std::function<void()>> posted_;  // guarded by posted_mutex_
};

}  // namespace kturn::net
