// Helpers for the kturnctl tests: an output stream that a command may write from another thread
// while the test waits for text on it, temporary files, and a kturnctl child process with its
// output captured and every wait bounded.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <ostream>
#include <streambuf>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace kturn::cli::testing {

using namespace std::chrono_literals;

// An std::ostream whose text can be read, and waited for, from another thread.
class SyncOutput {
 public:
  SyncOutput() : stream_(&buffer_) {}
  std::ostream& stream() { return stream_; }
  std::string text() const {
    std::lock_guard lock(buffer_.mutex);
    return buffer_.text;
  }
  // Waits until `pred(text)` holds; false after `timeout`.
  bool waitFor(const std::function<bool(const std::string&)>& pred,
               std::chrono::milliseconds timeout = 5s) {
    std::unique_lock lock(buffer_.mutex);
    return buffer_.cv.wait_for(lock, timeout, [&] { return pred(buffer_.text); });
  }
  // Waits until `needle` occurs `count` times.
  bool waitForCount(const std::string& needle, size_t count,
                    std::chrono::milliseconds timeout = 5s) {
    return waitFor([&](const std::string& t) { return occurrences(t, needle) >= count; }, timeout);
  }
  static size_t occurrences(const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
      ++n;
    }
    return n;
  }

 private:
  struct Buffer : std::streambuf {
    mutable std::mutex mutex;
    std::condition_variable cv;
    std::string text;

    int_type overflow(int_type c) override {
      if (c == traits_type::eof()) return traits_type::not_eof(c);
      const char ch = traits_type::to_char_type(c);
      xsputn(&ch, 1);
      return c;
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
      {
        std::lock_guard lock(mutex);
        text.append(s, static_cast<size_t>(n));
      }
      cv.notify_all();
      return n;
    }
  };
  Buffer buffer_;
  std::ostream stream_;
};

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    path_ = std::filesystem::temp_directory_path() /
            ("kturnctl-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

// The kturnctl binary (KTURNCTL_BINARY, set by tests/CMakeLists.txt) run with `args`; stdout and
// stderr captured through pipes. `env` entries ("NAME=value") are added to the test's own
// environment.
class Kturnctl {
 public:
  explicit Kturnctl(const std::vector<std::string>& args,
                    const std::vector<std::string>& env = {}) {
    int out[2];
    int err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    std::vector<std::string> argv_text{KTURNCTL_BINARY};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_text;
    for (char** e = environ; *e != nullptr; ++e) env_text.emplace_back(*e);
    env_text.insert(env_text.end(), env.begin(), env.end());
    std::vector<char*> envp;
    for (std::string& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    // The child starts with no signal blocked, whatever threads of the test block.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    if (::posix_spawn(&pid_, KTURNCTL_BINARY, &actions, &attr, argv.data(), envp.data()) != 0) {
      pid_ = -1;
    }
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    ::close(err[1]);
    out_fd_ = out[0];
    err_fd_ = err[0];
  }
  ~Kturnctl() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      int ignored = 0;
      ::waitpid(pid_, &ignored, 0);
    }
    if (out_fd_ >= 0) ::close(out_fd_);
    if (err_fd_ >= 0) ::close(err_fd_);
  }
  Kturnctl(const Kturnctl&) = delete;
  Kturnctl& operator=(const Kturnctl&) = delete;

  bool started() const { return pid_ > 0; }
  void signal(int number) const { ::kill(pid_, number); }

  // Reads output until `pred(stdout)` holds; false after `timeout` or when both pipes closed
  // first.
  bool waitForStdout(const std::function<bool(const std::string&)>& pred,
                     std::chrono::milliseconds timeout = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred(out_)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left <= 0ms || !pump(left)) return false;
    }
    return true;
  }

  // Waits for the exit (reading all output); the exit status, or -1 after `timeout` or when
  // killed by a signal.
  int wait(std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (out_fd_ >= 0 || err_fd_ >= 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left <= 0ms || !pump(left)) break;
    }
    while (!status_ && std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        status_ = status;
        break;
      }
      std::this_thread::sleep_for(5ms);
    }
    if (!status_ || !WIFEXITED(*status_)) return -1;
    return WEXITSTATUS(*status_);
  }

  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  // Reads what is there within `timeout`; false when nothing more can come (both pipes closed)
  // or nothing came in time.
  bool pump(std::chrono::milliseconds timeout) {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    if (out_fd_ < 0 && err_fd_ < 0) return false;
    const int ready = ::poll(fds, 2, static_cast<int>(timeout.count()));
    if (ready <= 0) return false;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      int& fd = i == 0 ? out_fd_ : err_fd_;
      if (n <= 0) {
        ::close(fd);
        fd = -1;
        continue;
      }
      (i == 0 ? out_ : err_).append(buffer, static_cast<size_t>(n));
    }
    return true;
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_;
  std::string err_;
  std::optional<int> status_;
};

}  // namespace kturn::cli::testing
