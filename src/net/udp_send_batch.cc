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
      fds_(msgs_.size(), -1) {
  for (size_t i = 0; i < msgs_.size(); ++i) {
    msghdr& h = msgs_[i].msg_hdr;
    h.msg_name = &names_[i];
    h.msg_iov = &iovecs_[i];
    h.msg_iovlen = 1;
  }
}

bool UdpSendBatch::queue(int fd, const TransportAddress& to, std::span<const uint8_t> data) {
  if (count_ == msgs_.size()) return false;
  const size_t i = count_++;
  fds_[i] = fd;
  msgs_[i].msg_hdr.msg_namelen = toSockaddr(to, names_[i]);
  // sendmsg never writes through iov_base; the const_cast only satisfies iovec's type.
  iovecs_[i].iov_base = const_cast<uint8_t*>(data.data());
  iovecs_[i].iov_len = data.size();
  return true;
}

void UdpSendBatch::flush() {
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
