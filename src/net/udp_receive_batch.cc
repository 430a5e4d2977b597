#include "net/udp_receive_batch.h"

#include <netinet/in.h>
#include <netinet/udp.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "net/sockaddr.h"

namespace kturn::net {
namespace {

constexpr size_t kAlignment = 64;  // a cache line, which is also a multiple of the 8 promised

constexpr size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

void UdpReceiveBatch::AlignedFree::operator()(uint8_t* p) const {
  ::operator delete[](p, std::align_val_t{kAlignment});
}

UdpReceiveBatch::UdpReceiveBatch(size_t max_messages, size_t max_payload, size_t headroom)
    : max_payload_(max_payload),
      headroom_(roundUp(std::max(headroom, kMinHeadroom), 8)),
      stride_(roundUp(headroom_ + max_payload + kTailroom, 8)),
      msgs_(std::max<size_t>(max_messages, 1)),
      iovecs_(msgs_.size()),
      names_(msgs_.size()),
      controls_(msgs_.size()) {
  const size_t bytes = stride_ * msgs_.size();
  buffer_.reset(static_cast<uint8_t*>(::operator new[](bytes, std::align_val_t{kAlignment})));
  std::memset(buffer_.get(), 0, bytes);
  for (size_t i = 0; i < msgs_.size(); ++i) {
    iovecs_[i].iov_base = slotStart(i) + headroom_;
    iovecs_[i].iov_len = max_payload_;
    msghdr& h = msgs_[i].msg_hdr;
    h.msg_name = &names_[i];
    h.msg_iov = &iovecs_[i];
    h.msg_iovlen = 1;
    h.msg_control = controls_[i].bytes;
  }
  resetHeaders(msgs_.size());
}

// recvmmsg overwrites the in/out lengths of the headers it fills; restore them before reuse.
void UdpReceiveBatch::resetHeaders(size_t n) {
  for (size_t i = 0; i < n; ++i) {
    msghdr& h = msgs_[i].msg_hdr;
    h.msg_namelen = sizeof(sockaddr_storage);
    h.msg_controllen = kControlSize;
    h.msg_flags = 0;
    msgs_[i].msg_len = 0;
  }
}

Result<size_t> UdpReceiveBatch::receive(int fd) {
  resetHeaders(count_);
  count_ = 0;
  const int n =
      ::recvmmsg(fd, msgs_.data(), static_cast<unsigned>(msgs_.size()), MSG_DONTWAIT, nullptr);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return size_t{0};
    return makeError(Error::Code::kIo, std::string("recvmmsg: ") + std::strerror(errno));
  }
  count_ = static_cast<size_t>(n);
  return count_;
}

size_t UdpReceiveBatch::length(size_t i) const {
  assert(i < count_);
  return std::min<size_t>(msgs_[i].msg_len, max_payload_);
}

std::span<uint8_t> UdpReceiveBatch::payload(size_t i) {
  return {slotStart(i) + headroom_, length(i)};
}

std::span<uint8_t> UdpReceiveBatch::withHeadroom(size_t i) {
  return {slotStart(i), headroom_ + length(i)};
}

std::span<uint8_t> UdpReceiveBatch::expand(size_t i, size_t front, size_t back) {
  assert(front <= headroom_ && back <= kTailroom);
  return {slotStart(i) + headroom_ - front, front + length(i) + back};
}

TransportAddress UdpReceiveBatch::source(size_t i) const {
  assert(i < count_);
  return fromSockaddr(reinterpret_cast<const sockaddr*>(&names_[i]));
}

std::optional<IpAddress> UdpReceiveBatch::destination(size_t i) const {
  assert(i < count_);
  // CMSG_NXTHDR takes a non-const msghdr in glibc; nothing is written through it.
  auto* h = const_cast<msghdr*>(&msgs_[i].msg_hdr);
  for (cmsghdr* c = CMSG_FIRSTHDR(h); c != nullptr; c = CMSG_NXTHDR(h, c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
      in_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof info);
      std::array<uint8_t, 4> ip;
      // ipi_addr is the header's destination; ipi_spec_dst is a routing guess, not wanted here.
      std::memcpy(ip.data(), &info.ipi_addr, 4);
      return IpAddress::v4(ip);
    }
    if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
      in6_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof info);
      std::array<uint8_t, 16> ip;
      std::memcpy(ip.data(), &info.ipi6_addr, 16);
      return IpAddress::v6(ip);
    }
  }
  return std::nullopt;
}

std::optional<TransportAddress> UdpReceiveBatch::originalDestination(size_t i) const {
  assert(i < count_);
  auto* h = const_cast<msghdr*>(&msgs_[i].msg_hdr);  // as in destination()
  for (cmsghdr* c = CMSG_FIRSTHDR(h); c != nullptr; c = CMSG_NXTHDR(h, c)) {
    if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_ORIGDSTADDR) ||
        (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_ORIGDSTADDR)) {
      sockaddr_storage ss{};
      std::memcpy(&ss, CMSG_DATA(c),
                  std::min<size_t>(c->cmsg_len - CMSG_LEN(0), sizeof(sockaddr_storage)));
      return fromSockaddr(reinterpret_cast<const sockaddr*>(&ss));
    }
  }
  return std::nullopt;
}

size_t UdpReceiveBatch::segmentSize(size_t i) const {
  assert(i < count_);
  auto* h = const_cast<msghdr*>(&msgs_[i].msg_hdr);  // as in destination()
  for (cmsghdr* c = CMSG_FIRSTHDR(h); c != nullptr; c = CMSG_NXTHDR(h, c)) {
    if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
      int size = 0;
      std::memcpy(&size, CMSG_DATA(c), sizeof size);
      return size > 0 && static_cast<size_t>(size) < length(i) ? static_cast<size_t>(size) : 0;
    }
  }
  return 0;
}

bool UdpReceiveBatch::truncated(size_t i) const {
  assert(i < count_);
  return (msgs_[i].msg_hdr.msg_flags & MSG_TRUNC) != 0;
}

}  // namespace kturn::net
