#include "net/file_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace kturn::net {

FileWatcher::FileWatcher(std::string path, std::function<void()> on_change,
                         std::chrono::milliseconds debounce)
    : path_(std::move(path)), on_change_(std::move(on_change)), debounce_(debounce) {
  const std::filesystem::path p(path_);
  directory_ = p.has_parent_path() ? p.parent_path().string() : ".";
  name_ = p.filename().string();
}

FileWatcher::~FileWatcher() { stop(); }

Result<void> FileWatcher::start() {
  inotify_ = net::FileDescriptor(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  stop_event_ = net::FileDescriptor(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!inotify_ || !stop_event_) {
    return makeError(Error::Code::kIo, std::string("inotify: ") + std::strerror(errno));
  }
  const uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ATTRIB;
  if (::inotify_add_watch(inotify_.get(), directory_.c_str(), mask) < 0) {
    return makeError(Error::Code::kIo, "cannot watch " + directory_ + ": " + std::strerror(errno));
  }
  thread_ = std::thread([this] { run(); });
  return {};
}

void FileWatcher::stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  (void)!::write(stop_event_.get(), &one, sizeof one);
  thread_.join();
}

void FileWatcher::run() {
  alignas(inotify_event) char buf[4096];
  bool pending = false;
  for (;;) {
    pollfd fds[2] = {{inotify_.get(), POLLIN, 0}, {stop_event_.get(), POLLIN, 0}};
    // While a change is pending, wait out the debounce window; otherwise wait for events.
    const int timeout = pending ? static_cast<int>(debounce_.count()) : -1;
    const int n = ::poll(fds, 2, timeout);
    if (n < 0 && errno != EINTR) return;
    if (fds[1].revents & POLLIN) return;
    if (n == 0 && pending) {
      pending = false;
      on_change_();
      continue;
    }
    if (!(fds[0].revents & POLLIN)) continue;
    const ssize_t len = ::read(inotify_.get(), buf, sizeof buf);
    for (ssize_t off = 0; off < len;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + off);
      // ConfigMap volumes swap a "..data" symlink; any event on it or on the file counts.
      const std::string_view name = e->len > 0 ? std::string_view(e->name) : std::string_view();
      if (name == name_ || name == "..data") pending = true;
      off += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
}

}  // namespace kturn::net
