#include "echo_peer.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

namespace kturn::bench {
namespace {

constexpr size_t kBatch = 64;
constexpr size_t kSlot = 2048;

Result<int> bindSocket(const TransportAddress& at, TransportAddress& bound) {
  const int family = at.ip.isV4() ? AF_INET : AF_INET6;
  const int fd = ::socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return makeError(Error::Code::kIo, std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  const int buf = 4 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (at.ip.isV4()) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(at.port);
    std::memcpy(&sin->sin_addr, at.ip.bytes().data(), 4);
    len = sizeof(sockaddr_in);
  } else {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(at.port);
    std::memcpy(&sin6->sin6_addr, at.ip.bytes().data(), 16);
    len = sizeof(sockaddr_in6);
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    const int err = errno;
    ::close(fd);
    return makeError(Error::Code::kIo, "bind " + at.toString() + ": " + std::strerror(err));
  }
  socklen_t got = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &got);
  bound = at;
  bound.port = ntohs(at.ip.isV4() ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                  : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return fd;
}

}  // namespace

EchoPeer::~EchoPeer() { stop(); }

Result<void> EchoPeer::start(const TransportAddress& bind, size_t threads,
                             const std::string& netns) {
  threads = std::max<size_t>(threads, 1);
  // Sockets belong to the namespace they are made in, whichever thread uses them later.
  int home = -1;
  if (!netns.empty()) {
    home = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    const int target = ::open(netns.c_str(), O_RDONLY | O_CLOEXEC);
    const bool entered = home >= 0 && target >= 0 && ::setns(target, CLONE_NEWNET) == 0;
    if (target >= 0) ::close(target);
    if (!entered) {
      if (home >= 0) ::close(home);
      return makeError(Error::Code::kIo,
                       "cannot enter network namespace " + netns + ": " + std::strerror(errno));
    }
  }
  auto leave = [&] {
    if (home < 0) return;
    (void)::setns(home, CLONE_NEWNET);
    ::close(home);
    home = -1;
  };
  TransportAddress at = bind;
  for (size_t i = 0; i < threads; ++i) {
    auto fd = bindSocket(at, address_);
    if (!fd) {
      leave();
      stop();
      return fd.error();
    }
    fds_.push_back(*fd);
    at.port = address_.port;  // the other sockets join the first one's port
  }
  leave();
  counters_ = std::vector<Counters>(threads);
  for (size_t i = 0; i < threads; ++i) {
    threads_.emplace_back([this, i] { serve(fds_[i], counters_[i]); });
  }
  return {};
}

void EchoPeer::stop() {
  stop_ = true;
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  for (int fd : fds_) ::close(fd);
  fds_.clear();
}

uint64_t EchoPeer::received() const {
  uint64_t n = 0;
  for (const auto& c : counters_) n += c.received.load(std::memory_order_relaxed);
  return n;
}

uint64_t EchoPeer::sent() const {
  uint64_t n = 0;
  for (const auto& c : counters_) n += c.sent.load(std::memory_order_relaxed);
  return n;
}

void EchoPeer::serve(int fd, Counters& counters) {
  auto buffer = std::make_unique<uint8_t[]>(kBatch * kSlot);
  mmsghdr msgs[kBatch];
  iovec iovs[kBatch];
  sockaddr_storage names[kBatch];
  pollfd pfd{fd, POLLIN, 0};
  while (!stop_.load(std::memory_order_relaxed)) {
    // The poll timeout bounds how long stop() waits; traffic never waits on it.
    if (::poll(&pfd, 1, 50) <= 0) continue;
    for (int round = 0; round < 64; ++round) {
      for (size_t i = 0; i < kBatch; ++i) {
        iovs[i] = {buffer.get() + i * kSlot, kSlot};
        msgs[i].msg_hdr = msghdr{};
        msgs[i].msg_hdr.msg_name = &names[i];
        msgs[i].msg_hdr.msg_namelen = sizeof names[i];
        msgs[i].msg_hdr.msg_iov = &iovs[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
      }
      const int n = ::recvmmsg(fd, msgs, kBatch, MSG_DONTWAIT, nullptr);
      if (n <= 0) break;
      counters.received.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
      for (int i = 0; i < n; ++i) iovs[i].iov_len = msgs[i].msg_len;
      int done = 0;
      while (done < n) {
        const int s = ::sendmmsg(fd, msgs + done, static_cast<unsigned>(n - done), MSG_DONTWAIT);
        if (s <= 0) {
          if (s < 0 && errno == EINTR) continue;
          ++done;  // skip the datagram that failed (full buffer, refused): UDP may drop
          continue;
        }
        counters.sent.fetch_add(static_cast<uint64_t>(s), std::memory_order_relaxed);
        done += s;
      }
      if (static_cast<size_t>(n) < kBatch) break;
    }
  }
}

}  // namespace kturn::bench
