// UdpReceiveBatch: receives up to N datagrams with one recvmmsg(2), into one preallocated buffer.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "kturn/result.h"
#include "kturn/transport_address.h"

namespace kturn::net {

// Each of the batch's slots is laid out as
//
//   | headroom | payload (up to max_payload) | tailroom (kTailroom) |
//   ^ slot start, 8-byte aligned
//
// so the TURN core can relay a datagram without copying it: it writes a ChannelData header
// (4 bytes) or a Data indication's header and attributes (at most 48 bytes: 20-byte STUN header,
// XOR-PEER-ADDRESS for IPv6, DATA attribute header) in front of the payload, and the DATA
// attribute's padding (at most 3 bytes, RFC 8489 §14) after it, then sends the expanded span.
//
// Receiving again overwrites every slot, so spans taken from one receive() are valid until the
// next. Nothing here allocates after construction.
class UdpReceiveBatch {
 public:
  // Headroom for the largest TURN framing of a relayed datagram (see above).
  static constexpr size_t kMinHeadroom = 48;
  // Room after the payload for STUN attribute padding to a 4-byte boundary.
  static constexpr size_t kTailroom = 8;

  // `headroom` is raised to at least kMinHeadroom and rounded up to a multiple of 8, keeping
  // payloads 8-byte aligned; headroom() tells the value used. A datagram longer than
  // `max_payload` is cut short and flagged truncated().
  UdpReceiveBatch(size_t max_messages, size_t max_payload, size_t headroom = kMinHeadroom);
  UdpReceiveBatch(const UdpReceiveBatch&) = delete;
  UdpReceiveBatch& operator=(const UdpReceiveBatch&) = delete;

  // One recvmmsg(MSG_DONTWAIT) on `fd`. Returns how many datagrams arrived: 0 when none was
  // waiting (EAGAIN, or EINTR: the level-triggered loop will call again). Other errors are kIo.
  Result<size_t> receive(int fd);

  // Datagrams filled by the last receive().
  size_t size() const { return count_; }
  size_t capacity() const { return msgs_.size(); }
  size_t maxPayload() const { return max_payload_; }
  size_t headroom() const { return headroom_; }

  // The datagram's bytes, exactly as long as what was received (at most maxPayload()).
  std::span<uint8_t> payload(size_t i);
  // The headroom followed by the payload: the payload starts at withHeadroom(i).data() +
  // headroom().
  std::span<uint8_t> withHeadroom(size_t i);
  // The payload grown by `front` bytes before it and `back` bytes after it, for framing in place.
  // Requires front <= headroom() and back <= kTailroom. The added bytes hold garbage.
  std::span<uint8_t> expand(size_t i, size_t front, size_t back);
  // The sender (RFC 8656's "source transport address" of the datagram).
  TransportAddress source(size_t i) const;
  // The local address the datagram was sent to, when the socket has packet_info enabled.
  // On a dual-stack socket, IPv4 destinations are IPv4-mapped IPv6 addresses, like source().
  std::optional<IpAddress> destination(size_t i) const;
  // The transport address the datagram was sent to, on a socket with original_destination.
  std::optional<TransportAddress> originalDestination(size_t i) const;
  // The datagram was longer than maxPayload() and payload(i) holds only its start. The caller
  // drops it and counts it.
  bool truncated(size_t i) const;
  // On a socket with UDP_GRO (UdpSocketOptions::gro): the size of each of the datagrams that
  // payload(i) holds back to back (the last may be shorter), or 0 when it holds one datagram.
  // Those datagrams have no headroom of their own: expand() is for whole payloads only.
  size_t segmentSize(size_t i) const;

 private:
  // Big enough for IP_PKTINFO or IPV6_PKTINFO plus UDP_GRO's segment size, or for
  // IPV6_ORIGDSTADDR (a sockaddr_in6).
  static constexpr size_t kControlSize = 64;
  struct alignas(cmsghdr) ControlBuffer {
    uint8_t bytes[kControlSize];
  };
  struct AlignedFree {
    void operator()(uint8_t* p) const;
  };

  uint8_t* slotStart(size_t i) const { return buffer_.get() + i * stride_; }
  size_t length(size_t i) const;
  void resetHeaders(size_t n);

  size_t max_payload_;
  size_t headroom_;
  size_t stride_;
  size_t count_ = 0;
  std::unique_ptr<uint8_t[], AlignedFree> buffer_;
  std::vector<mmsghdr> msgs_;
  std::vector<iovec> iovecs_;
  std::vector<sockaddr_storage> names_;
  std::vector<ControlBuffer> controls_;
};

}  // namespace kturn::net
