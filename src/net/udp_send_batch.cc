#include "net/udp_send_batch.h"

#include <algorithm>
#include <cerrno>

#include "net/sockaddr.h"

namespace kturn::net {
namespace {

// The kernel clamps one sendmmsg to UIO_MAXIOV messages; asking for no more keeps the partial
// send loop below for real partial sends.
constexpr size_t kMaxPerCall = 1024;

}  // namespace

UdpSendBatch::UdpSendBatch(size_t max_messages)
    : msgs_(std::max<size_t>(max_messages, 1)),
      iovecs_(msgs_.size()),
      names_(msgs_.size()),
      fds_(msgs_.size(), -1),
      grouped_msgs_(msgs_.size()),
      grouped_fds_(msgs_.size()),
      taken_(msgs_.size()) {}

bool UdpSendBatch::queue(int fd, const TransportAddress& to, std::span<const uint8_t> data) {
  if (count_ == msgs_.size()) return false;
  const size_t i = count_++;
  fds_[i] = fd;
  // Set on every queue: groupByFd() moves headers between slots, not the names and iovecs.
  msghdr& h = msgs_[i].msg_hdr;
  h = msghdr{};
  h.msg_name = &names_[i];
  h.msg_iov = &iovecs_[i];
  h.msg_iovlen = 1;
  h.msg_namelen = toSockaddr(to, names_[i]);
  // sendmsg never writes through iov_base; the const_cast only satisfies iovec's type.
  iovecs_[i].iov_base = const_cast<uint8_t*>(data.data());
  iovecs_[i].iov_len = data.size();
  return true;
}

void UdpSendBatch::groupByFd() {
  // O(n x distinct fds) over at most capacity() entries, no allocation; skipped when the queue is
  // already grouped (the common case of one fd, or of runs that never come back).
  bool grouped = true;
  for (size_t i = 1; i < count_ && grouped; ++i) {
    if (fds_[i] == fds_[i - 1]) continue;
    for (size_t j = 0; j + 1 < i; ++j) {
      if (fds_[j] == fds_[i]) {
        grouped = false;
        break;
      }
    }
  }
  if (grouped) return;
  std::fill(taken_.begin(), taken_.begin() + static_cast<ptrdiff_t>(count_), uint8_t{0});
  size_t out = 0;
  for (size_t i = 0; i < count_; ++i) {
    if (taken_[i]) continue;
    for (size_t j = i; j < count_; ++j) {
      if (taken_[j] || fds_[j] != fds_[i]) continue;
      taken_[j] = 1;
      grouped_msgs_[out] = msgs_[j];
      grouped_fds_[out] = fds_[j];
      ++out;
    }
  }
  std::copy(grouped_msgs_.begin(), grouped_msgs_.begin() + static_cast<ptrdiff_t>(count_),
            msgs_.begin());
  std::copy(grouped_fds_.begin(), grouped_fds_.begin() + static_cast<ptrdiff_t>(count_),
            fds_.begin());
}

void UdpSendBatch::flush() {
  groupByFd();
  size_t begin = 0;
  while (begin < count_) {
    size_t end = begin + 1;
    while (end < count_ && fds_[end] == fds_[begin]) ++end;
    sendRun(fds_[begin], begin, end);
    begin = end;
  }
  count_ = 0;
}

void UdpSendBatch::sendRun(int fd, size_t begin, size_t end) {
  // Every iteration either sends or drops at least one datagram (EINTR aside, retried once), so
  // the loop ends after at most end - begin + 1 calls.
  bool retried_eintr = false;
  while (begin < end) {
    const size_t want = std::min(end - begin, kMaxPerCall);
    const int n = ::sendmmsg(fd, &msgs_[begin], static_cast<unsigned>(want), MSG_DONTWAIT);
    ++syscalls_;
    if (n > 0) {
      // A short count means the next datagram failed, but sendmmsg does not say why: the next
      // call starts with it and either sends it (a transient error such as a pending
      // ECONNREFUSED, now consumed) or reports its error below.
      sent_ += static_cast<uint64_t>(n);
      begin += static_cast<size_t>(n);
      continue;
    }
    const int err = n < 0 ? errno : EIO;  // n == 0 should not happen; count it as one failure
    if (err == EINTR && !retried_eintr) {
      retried_eintr = true;
      continue;
    }
    if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
      // The buffer is full: the rest would fail the same way. Dropping is what a congested UDP
      // path does anyway, and blocking a worker would stall every other allocation on it.
      dropped_ += end - begin;
      return;
    }
    if (err == EBADF || err == ENOTSOCK) {
      // The socket itself is unusable (a caller bug, e.g. a relay closed with sends queued).
      dropped_ += end - begin;
      return;
    }
    // sendmmsg reports an error only for the first datagram it tried; skip that one and go on.
    ++dropped_;
    ++begin;
  }
}

}  // namespace kturn::net
