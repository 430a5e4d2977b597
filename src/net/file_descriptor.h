// FileDescriptor: sole owner of a kernel file descriptor.
#pragma once

#include <unistd.h>

#include <utility>

namespace kturn::net {

// Closes the descriptor when destroyed. Move-only: exactly one object owns a given fd, so it is
// closed exactly once. -1 means "owns nothing".
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() { reset(); }

  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }

  // Gives up ownership without closing; the caller now owns the returned fd.
  [[nodiscard]] int release() { return std::exchange(fd_, -1); }

  // Closes the current fd (if any) and takes ownership of `fd`. close() errors are ignored: on
  // Linux the fd is released even when close() reports EINTR or EIO, and retrying could close a
  // descriptor another thread has just been given.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace kturn::net
