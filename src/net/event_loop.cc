#include "net/event_loop.h"

#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

namespace kturn::net {
namespace {

// epoll data carries both the fd and the generation of its registration.
uint64_t packData(int fd, uint32_t generation) {
  return (static_cast<uint64_t>(generation) << 32) | static_cast<uint32_t>(fd);
}

// A loop that cannot get its kernel objects (fd or memory exhaustion at startup) cannot run a
// worker at all; there is no caller able to recover, so fail loudly and early.
[[noreturn]] void fatal(const char* what) {
  spdlog::critical("event loop: {} failed: {}", what, std::strerror(errno));
  std::abort();
}

Error errnoError(const char* what, int fd) {
  return makeError(Error::Code::kIo,
                   std::string(what) + " fd " + std::to_string(fd) + ": " + std::strerror(errno));
}

}  // namespace

EventLoop::EventLoop()
    : epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)),
      wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (!epoll_fd_.valid()) fatal("epoll_create1");
  if (!wake_fd_.valid()) fatal("eventfd");
  retired_.reserve(16);
  auto added = add(wake_fd_.get(), EPOLLIN, [this](uint32_t) { drainPosted(); });
  if (!added) fatal("epoll_ctl(eventfd)");
}

EventLoop::~EventLoop() = default;

Result<void> EventLoop::add(int fd, uint32_t events, Callback cb) {
  if (fd < 0) return makeError(Error::Code::kInvalidArgument, "epoll add: negative fd");
  if (static_cast<size_t>(fd) >= slots_.size()) slots_.resize(static_cast<size_t>(fd) + 1);
  Slot& slot = slots_[fd];
  if (slot.callback) {
    return makeError(Error::Code::kInvalidArgument,
                     "epoll add: fd " + std::to_string(fd) + " already registered");
  }
  const uint32_t generation = slot.generation + 1;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = packData(fd, generation);
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) return errnoError("epoll add", fd);
  slot.generation = generation;
  slot.callback = std::make_unique<Callback>(std::move(cb));
  return {};
}

Result<void> EventLoop::modify(int fd, uint32_t events) {
  if (fd < 0 || static_cast<size_t>(fd) >= slots_.size() || !slots_[fd].callback) {
    return makeError(Error::Code::kNotFound,
                     "epoll modify: fd " + std::to_string(fd) + " not registered");
  }
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = packData(fd, slots_[fd].generation);
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, fd, &ev) != 0) {
    return errnoError("epoll modify", fd);
  }
  return {};
}

void EventLoop::remove(int fd) {
  if (fd < 0 || static_cast<size_t>(fd) >= slots_.size() || !slots_[fd].callback) return;
  // Errors are ignored: the fd may already be gone from the interest list, and either way it
  // must stop being dispatched.
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
  Slot& slot = slots_[fd];
  // Bumping the generation makes events for this registration that are still in events_ stale.
  ++slot.generation;
  if (dispatching_) {
    retired_.push_back(std::move(slot.callback));
  } else {
    slot.callback.reset();
  }
}

void EventLoop::post(std::function<void()> task) {
  bool was_empty;
  {
    std::lock_guard lock(posted_mutex_);
    was_empty = posted_.empty();
    posted_.push_back(std::move(task));
  }
  // One wakeup per batch of posts: a non-empty queue already has a wakeup pending, because
  // drainPosted() reads the eventfd before it takes the queue.
  if (was_empty) wake();
}

void EventLoop::addTicker(std::chrono::milliseconds period, std::function<void()> cb) {
  FileDescriptor timer(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!timer.valid()) fatal("timerfd_create");
  const auto ms = std::max<int64_t>(period.count(), 1);
  itimerspec spec{};
  spec.it_interval.tv_sec = ms / 1000;
  spec.it_interval.tv_nsec = (ms % 1000) * 1000000;
  spec.it_value = spec.it_interval;
  if (::timerfd_settime(timer.get(), 0, &spec, nullptr) != 0) fatal("timerfd_settime");
  const int fd = timer.get();
  auto added = add(fd, EPOLLIN, [fd, cb = std::move(cb)](uint32_t) {
    uint64_t expirations = 0;
    // Reading resets the expiration count; EAGAIN means a spurious wakeup, so no tick.
    if (::read(fd, &expirations, sizeof expirations) == sizeof expirations) cb();
  });
  if (!added) fatal("epoll_ctl(timerfd)");
  tickers_.push_back(std::move(timer));
}

void EventLoop::run() {
  while (!stop_requested_.load(std::memory_order_acquire)) runOnce(std::chrono::milliseconds(-1));
  // Consumed, so that the loop can be run again.
  stop_requested_.store(false, std::memory_order_release);
}

void EventLoop::stop() {
  stop_requested_.store(true, std::memory_order_release);
  wake();
}

void EventLoop::runOnce(std::chrono::milliseconds timeout) {
  const int timeout_ms =
      timeout.count() < 0 ? -1 : static_cast<int>(std::min<int64_t>(timeout.count(), INT_MAX));
  const int n = ::epoll_wait(epoll_fd_.get(), events_.data(), kMaxEvents, timeout_ms);
  if (n <= 0) return;  // timeout, or EINTR: the caller loops
  dispatching_ = true;
  for (int i = 0; i < n; ++i) dispatch(events_[i]);
  dispatching_ = false;
  // Destroying a callback may run destructors that call remove(); clear outside the iteration.
  for (auto& callback : retired_) callback.reset();
  retired_.clear();
}

void EventLoop::dispatch(const epoll_event& event) {
  const int fd = static_cast<int>(static_cast<uint32_t>(event.data.u64));
  const auto generation = static_cast<uint32_t>(event.data.u64 >> 32);
  if (static_cast<size_t>(fd) >= slots_.size()) return;
  const Slot& slot = slots_[fd];
  if (!slot.callback || slot.generation != generation) return;  // removed earlier in this batch
  // Hold the pointer, not the slot: the callback may grow slots_ or remove itself.
  Callback* callback = slot.callback.get();
  (*callback)(event.events);
}

void EventLoop::drainPosted() {
  uint64_t count;
  // Read first, then take the queue: a post() that lands after the read either finds the queue
  // non-empty (and is taken below) or empty (and writes a new wakeup).
  (void)!::read(wake_fd_.get(), &count, sizeof count);
  std::vector<std::function<void()>> tasks;
  {
    std::lock_guard lock(posted_mutex_);
    tasks.swap(posted_);
  }
  // Tasks posted by these tasks wait for the next wakeup, so a task that re-posts itself cannot
  // starve I/O.
  for (auto& task : tasks) task();
}

void EventLoop::wake() {
  const uint64_t one = 1;
  // Can only fail with EAGAIN when the counter is near 2^64: a wakeup is pending anyway.
  (void)!::write(wake_fd_.get(), &one, sizeof one);
}

}  // namespace kturn::net
