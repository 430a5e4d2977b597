#include "net/udp_send_batch.h"

#include <netinet/in.h>
#include <netinet/udp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/sockaddr.h"

namespace kturn::net {
namespace {

// The kernel clamps one sendmmsg to UIO_MAXIOV messages; asking for no more keeps the partial
// send loop below for real partial sends.
constexpr size_t kMaxPerCall = 1024;
constexpr uint64_t kRefusalsToGiveUp = 16;

// Writes one control message carrying `info` at `c` and returns the room it takes.
template <typename Info>
size_t putControl(cmsghdr* c, int level, int type, const Info& info) {
  c->cmsg_level = level;
  c->cmsg_type = type;
  c->cmsg_len = CMSG_LEN(sizeof info);
  std::memcpy(CMSG_DATA(c), &info, sizeof info);
  return CMSG_SPACE(sizeof info);
}

// Writes the IP_PKTINFO or IPV6_PKTINFO message that makes the kernel send from `from` into
// `control`, and returns its length.
size_t writeSource(const IpAddress& from, uint8_t* control, size_t room) {
  msghdr h{};
  h.msg_control = control;
  h.msg_controllen = room;
  cmsghdr* c = CMSG_FIRSTHDR(&h);
  if (from.isV4()) {
    in_pktinfo info{};
    std::memcpy(&info.ipi_spec_dst, from.bytes().data(), 4);
    return putControl(c, IPPROTO_IP, IP_PKTINFO, info);
  }
  in6_pktinfo info{};
  std::memcpy(&info.ipi6_addr, from.bytes().data(), 16);
  return putControl(c, IPPROTO_IPV6, IPV6_PKTINFO, info);
}

static_assert(sizeof(in6_pktinfo) <= 20 && sizeof(in_pktinfo) <= 20);

}  // namespace

UdpSendBatch::UdpSendBatch(size_t max_messages, bool gso)
    : msgs_(std::max<size_t>(max_messages, 1)),
      iovecs_(msgs_.size()),
      names_(msgs_.size()),
      sources_(msgs_.size()),
      fds_(msgs_.size(), -1),
      grouped_msgs_(msgs_.size()),
      grouped_fds_(msgs_.size()),
      taken_(msgs_.size()),
      gso_(gso && gsoSupported()) {
  if (gso_) {
    train_msgs_.resize(msgs_.size());
    trains_.resize(msgs_.size());
    train_iovecs_.resize(msgs_.size());
    train_controls_.resize(msgs_.size());
  }
}

bool UdpSendBatch::gsoSupported() {
  // Kernels without UDP GSO ignore a SOL_UDP control message and would send a train as one
  // datagram; they also refuse this option, which kernels with it answer.
  static const bool supported = [] {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    int size = 0;
    socklen_t len = sizeof size;
    const bool ok = ::getsockopt(fd, SOL_UDP, UDP_SEGMENT, &size, &len) == 0;
    ::close(fd);
    return ok;
  }();
  return supported;
}

bool UdpSendBatch::queue(int fd, const TransportAddress& to, std::span<const uint8_t> data,
                         const IpAddress& from) {
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
  if (!from.isUnspecified()) {
    h.msg_control = sources_[i].bytes;
    h.msg_controllen = writeSource(from, sources_[i].bytes, sizeof sources_[i].bytes);
  }
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
    if (gso_) {
      sendTrains(fds_[begin], begin, end);
    } else {
      sendRun(fds_[begin], begin, end);
    }
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

bool UdpSendBatch::sameDestination(size_t a, size_t b) const {
  const msghdr& x = msgs_[a].msg_hdr;
  const msghdr& y = msgs_[b].msg_hdr;
  if (x.msg_namelen != y.msg_namelen || x.msg_controllen != y.msg_controllen) return false;
  if (x.msg_controllen != 0 && std::memcmp(x.msg_control, y.msg_control, x.msg_controllen) != 0) {
    return false;
  }
  const auto* sx = static_cast<const sockaddr_storage*>(x.msg_name);
  const auto* sy = static_cast<const sockaddr_storage*>(y.msg_name);
  if (sx->ss_family != sy->ss_family) return false;
  if (sx->ss_family == AF_INET) {
    const auto* x4 = reinterpret_cast<const sockaddr_in*>(sx);
    const auto* y4 = reinterpret_cast<const sockaddr_in*>(sy);
    return x4->sin_port == y4->sin_port && x4->sin_addr.s_addr == y4->sin_addr.s_addr;
  }
  if (sx->ss_family == AF_INET6) {
    const auto* x6 = reinterpret_cast<const sockaddr_in6*>(sx);
    const auto* y6 = reinterpret_cast<const sockaddr_in6*>(sy);
    return x6->sin6_port == y6->sin6_port && x6->sin6_scope_id == y6->sin6_scope_id &&
           std::memcmp(&x6->sin6_addr, &y6->sin6_addr, sizeof x6->sin6_addr) == 0;
  }
  return false;
}

size_t UdpSendBatch::trainLength(size_t first, size_t end) const {
  const size_t size = length(first);
  if (size == 0 || size > kMaxGsoSegment) return 1;
  size_t bytes = size;
  size_t next = first + 1;
  while (next < end && next - first < kMaxSegments && sameDestination(first, next)) {
    const size_t len = length(next);
    if (len == 0 || len > size || bytes + len > kMaxGsoBytes) break;
    bytes += len;
    ++next;
    if (len < size) break;  // only the last datagram of a train may be shorter
  }
  return next - first;
}

void UdpSendBatch::sendTrains(int fd, size_t begin, size_t end) {
  // One message per train: a lone datagram as queued, a longer train with its datagrams' iovecs
  // side by side and the segment size in a UDP_SEGMENT control message.
  size_t count = 0;
  size_t iovecs = 0;
  for (size_t i = begin; i < end; ++count) {
    const size_t n = trainLength(i, end);
    trains_[count] = Train{i, n};
    mmsghdr& m = train_msgs_[count];
    m = msgs_[i];
    if (n > 1) {
      for (size_t k = 0; k < n; ++k) train_iovecs_[iovecs + k] = *msgs_[i + k].msg_hdr.msg_iov;
      m.msg_hdr.msg_iov = &train_iovecs_[iovecs];
      m.msg_hdr.msg_iovlen = n;
      // The train's datagrams share their source (sameDestination()): its control message
      // follows UDP_SEGMENT's.
      GsoControl& control = train_controls_[count];
      const size_t source = msgs_[i].msg_hdr.msg_controllen;
      if (source != 0) {
        std::memcpy(control.bytes + CMSG_SPACE(sizeof(uint16_t)), msgs_[i].msg_hdr.msg_control,
                    source);
      }
      m.msg_hdr.msg_control = control.bytes;
      m.msg_hdr.msg_controllen = CMSG_SPACE(sizeof(uint16_t)) + source;
      cmsghdr* c = CMSG_FIRSTHDR(&m.msg_hdr);
      c->cmsg_level = SOL_UDP;
      c->cmsg_type = UDP_SEGMENT;
      c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
      const auto segment = static_cast<uint16_t>(length(i));
      std::memcpy(CMSG_DATA(c), &segment, sizeof segment);
      iovecs += n;
    }
    i += n;
  }

  // As sendRun(), per train; a train the kernel refuses goes again datagram by datagram.
  bool retried_eintr = false;
  size_t next = 0;
  while (next < count) {
    const size_t want = std::min(count - next, kMaxPerCall);
    const int n = ::sendmmsg(fd, &train_msgs_[next], static_cast<unsigned>(want), MSG_DONTWAIT);
    ++syscalls_;
    if (n > 0) {
      for (size_t k = next; k < next + static_cast<size_t>(n); ++k) {
        sent_ += trains_[k].count;
        if (trains_[k].count > 1) ++gso_messages_;
      }
      next += static_cast<size_t>(n);
      continue;
    }
    const int err = n < 0 ? errno : EIO;
    if (err == EINTR && !retried_eintr) {
      retried_eintr = true;
      continue;
    }
    const Train& train = trains_[next];
    const bool full = err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS;
    const bool unusable = err == EBADF || err == ENOTSOCK;
    if (train.count > 1 && !unusable) {
      // A kernel or route that refuses every train (no device on the way offloads checksums)
      // would cost a failed call per train for good: after kRefusalsToGiveUp of them and not one
      // train accepted, this batch stops making trains.
      if (++gso_fallbacks_ >= kRefusalsToGiveUp && gso_messages_ == 0) gso_ = false;
      const uint64_t dropped = dropped_;
      sendRun(fd, train.first, train.first + train.count);
      ++next;
      if (!full || dropped_ == dropped) continue;
      // Still full one datagram at a time: the rest of the run is dropped below.
    } else if (!full && !unusable) {
      ++dropped_;  // sendRun()'s rule: the error concerns this datagram only
      ++next;
      continue;
    } else {
      ++next;
      dropped_ += train.count;
    }
    for (size_t k = next; k < count; ++k) dropped_ += trains_[k].count;
    return;
  }
}

}  // namespace kturn::net
