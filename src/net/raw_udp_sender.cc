#include "net/raw_udp_sender.h"

#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/sockaddr.h"

#ifndef IPV6_HDRINCL
#define IPV6_HDRINCL 36  // linux/in6.h; glibc's netinet/in.h lacks it
#endif

namespace kturn::net {
namespace {

constexpr size_t kMaxPerCall = 1024;  // UIO_MAXIOV, as UdpSendBatch
constexpr uint8_t kTtl = 64;          // as the kernel's default for kturnd's own sockets
constexpr uint16_t kDontFragment = 0x4000;

void store16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

// One's complement sum of `bytes` as big-endian 16-bit words (an odd last byte padded with
// zero), added to `sum` unfolded. Reads 32 bits at a time; the carries pile up in the upper half
// of the 64-bit sum and are folded once at the end.
uint64_t addBytes(uint64_t sum, std::span<const uint8_t> bytes) {
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  while (n >= 4) {
    sum += (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
           (static_cast<uint32_t>(p[2]) << 8) | p[3];
    p += 4;
    n -= 4;
  }
  if (n >= 2) {
    sum += (static_cast<uint32_t>(p[0]) << 8) | p[1];
    p += 2;
    n -= 2;
  }
  if (n == 1) sum += static_cast<uint32_t>(p[0]) << 8;
  return sum;
}

uint16_t fold(uint64_t sum) {
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

int rawSocket(int family) {
  return ::socket(family, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_RAW);
}

}  // namespace

uint16_t udpChecksum(const TransportAddress& from, const TransportAddress& to,
                     std::span<const uint8_t> header, std::span<const uint8_t> payload) {
  uint64_t sum = 0;
  sum = addBytes(sum, from.ip.bytes());
  sum = addBytes(sum, to.ip.bytes());
  sum += IPPROTO_UDP;
  sum += header.size() + payload.size();  // the UDP length (IPv6: the upper-layer length)
  sum = addBytes(sum, header);
  sum = addBytes(sum, payload);
  const uint16_t checksum = static_cast<uint16_t>(~fold(sum));
  return checksum == 0 ? 0xFFFF : checksum;
}

Result<RawUdpSender> RawUdpSender::open(size_t max_messages) {
  RawUdpSender sender(max_messages);
  sender.v4_ = FileDescriptor(rawSocket(AF_INET));  // IPPROTO_RAW implies IP_HDRINCL
  if (!sender.v4_) {
    const int err = errno;
    return makeError(err == EPERM || err == EACCES ? Error::Code::kUnsupported : Error::Code::kIo,
                     std::string("raw socket: ") + std::strerror(err) +
                         (err == EPERM ? " (needs CAP_NET_RAW)" : ""));
  }
  sender.v6_ = FileDescriptor(rawSocket(AF_INET6));
  if (sender.v6_) {
    const int one = 1;
    ::setsockopt(sender.v6_.get(), IPPROTO_IPV6, IPV6_HDRINCL, &one, sizeof(one));
  }
  return sender;
}

RawUdpSender::RawUdpSender(size_t max_messages)
    : msgs_(std::max<size_t>(max_messages, 1)),
      names_(msgs_.size()),
      iovecs_(msgs_.size()),
      headers_(msgs_.size()),
      v4_slot_(msgs_.size()),
      batch_(msgs_.size()) {}

bool RawUdpSender::queue(const TransportAddress& from, const TransportAddress& to,
                         std::span<const uint8_t> data) {
  if (count_ == msgs_.size()) return false;
  const bool v4 = from.ip.isV4();
  const size_t ip_header = v4 ? kIpv4Header : kIpv6Header;
  if (v4 != to.ip.isV4() || data.size() > 0xFFFF - kUdpHeader - (v4 ? ip_header : 0)) {
    ++dropped_;  // no datagram can carry it: a counted drop, as a send error would be
    return true;
  }
  const size_t i = count_++;
  uint8_t* h = headers_[i].data();
  uint8_t* udp = h + ip_header;
  const auto udp_length = static_cast<uint16_t>(kUdpHeader + data.size());
  store16(udp, from.port);
  store16(udp + 2, to.port);
  store16(udp + 4, udp_length);
  store16(udp + 6, 0);
  store16(udp + 6, udpChecksum(from, to, {udp, kUdpHeader}, data));
  if (v4) {
    h[0] = 0x45;  // version 4, 5 words
    h[1] = 0;     // DSCP/ECN
    store16(h + 2, static_cast<uint16_t>(kIpv4Header + udp_length));
    store16(h + 4, 0);  // identification: the kernel's
    store16(h + 6, kDontFragment);
    h[8] = kTtl;
    h[9] = IPPROTO_UDP;
    store16(h + 10, 0);  // header checksum: the kernel's
    std::memcpy(h + 12, from.ip.bytes().data(), 4);
    std::memcpy(h + 16, to.ip.bytes().data(), 4);
  } else {
    h[0] = 0x60;  // version 6, traffic class and flow label 0
    h[1] = h[2] = h[3] = 0;
    store16(h + 4, udp_length);
    h[6] = IPPROTO_UDP;
    h[7] = kTtl;
    std::memcpy(h + 8, from.ip.bytes().data(), 16);
    std::memcpy(h + 24, to.ip.bytes().data(), 16);
  }
  // The kernel routes on the destination in the message name; the port there is unused.
  msghdr& m = msgs_[i].msg_hdr;
  m = msghdr{};
  m.msg_name = &names_[i];
  m.msg_namelen = toSockaddr(TransportAddress{to.ip, 0}, names_[i]);
  iovecs_[i][0] = {h, ip_header + kUdpHeader};
  iovecs_[i][1] = {const_cast<uint8_t*>(data.data()), data.size()};
  m.msg_iov = iovecs_[i].data();
  m.msg_iovlen = 2;
  v4_slot_[i] = v4 ? 1 : 0;
  return true;
}

void RawUdpSender::sendFamily(bool v4) {
  size_t n = 0;
  for (size_t i = 0; i < count_; ++i) {
    if ((v4_slot_[i] != 0) == v4) batch_[n++] = msgs_[i];
  }
  if (n == 0) return;
  const int fd = v4 ? v4_.get() : v6_.get();
  if (fd < 0) {
    dropped_ += n;
    return;
  }
  size_t done = 0;
  while (done < n) {
    const auto want = static_cast<unsigned>(std::min(n - done, kMaxPerCall));
    const int sent = ::sendmmsg(fd, batch_.data() + done, want, MSG_DONTWAIT);
    ++syscalls_;
    if (sent > 0) {
      sent_ += static_cast<uint64_t>(sent);
      done += static_cast<size_t>(sent);
      continue;
    }
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && (errno == EAGAIN || errno == ENOBUFS)) {
      dropped_ += n - done;  // the socket's buffer is full: the rest of the run is lost
      return;
    }
    ++dropped_;  // EMSGSIZE, ENETUNREACH, EPERM, ...: only this datagram
    ++done;
  }
}

void RawUdpSender::flush() {
  sendFamily(true);
  sendFamily(false);
  count_ = 0;
}

}  // namespace kturn::net
