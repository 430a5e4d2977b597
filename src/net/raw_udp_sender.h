// RawUdpSender: sends UDP datagrams from any local transport address without a socket bound to
// it, for relay ports that have no socket of their own (shared relay sockets, RelayLookup). One
// IPPROTO_RAW socket per address family: the datagram's IP and UDP headers are written here,
// the UDP checksum included, and the kernel routes the packet as it is (IPv4: it fills in the
// header checksum and, left zero, the identification). IPPROTO_RAW sockets receive nothing, so
// they add no cost to the packets that arrive.
//
// The kernel does not fragment such a packet: one longer than the route's MTU is refused
// (EMSGSIZE) and counted as dropped, as for a socket with IP_PMTUDISC_DO. IPv4 datagrams carry
// DF, as those of kturnd's relay sockets do by default.
//
// Queue and flush as UdpSendBatch; nothing allocates after construction. Needs CAP_NET_RAW.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kturn/result.h"
#include "kturn/transport_address.h"
#include "net/file_descriptor.h"

namespace kturn::net {

// The Internet checksum (RFC 1071) of a UDP datagram: pseudo-header, header and payload, as it
// goes into the header (0 sent as 0xFFFF).
uint16_t udpChecksum(const TransportAddress& from, const TransportAddress& to,
                     std::span<const uint8_t> header, std::span<const uint8_t> payload);

class RawUdpSender {
 public:
  static constexpr size_t kIpv4Header = 20;
  static constexpr size_t kIpv6Header = 40;
  static constexpr size_t kUdpHeader = 8;

  // Opens the raw sockets (IPv4 and IPv6; a family the host lacks stays closed and its datagrams
  // are dropped). kUnsupported without CAP_NET_RAW.
  static Result<RawUdpSender> open(size_t max_messages);
  RawUdpSender(RawUdpSender&&) = default;
  RawUdpSender& operator=(RawUdpSender&&) = default;

  // Adds a datagram from `from` (a local address) to `to`. Only a pointer to `data` is kept, as
  // in UdpSendBatch. False, queueing nothing, when the batch is full (flush and queue again). One
  // that no datagram can carry (the families differ, longer than 65,507 bytes) is counted as
  // dropped, as a send error would be.
  bool queue(const TransportAddress& from, const TransportAddress& to,
             std::span<const uint8_t> data);
  // Sends what is queued, IPv4 and IPv6 each with one sendmmsg (more after a partial send).
  void flush();
  bool full() const { return count_ == msgs_.size(); }
  bool empty() const { return count_ == 0; }

  uint64_t sent() const { return sent_; }
  uint64_t dropped() const { return dropped_; }
  uint64_t syscalls() const { return syscalls_; }

 private:
  static constexpr size_t kHeaderSlot = kIpv6Header + kUdpHeader;
  explicit RawUdpSender(size_t max_messages);
  // Sends the queued messages of one family (gathered into batch_).
  void sendFamily(bool v4);

  FileDescriptor v4_;
  FileDescriptor v6_;
  // Per queued datagram: its message, destination, iovecs (headers, payload), header bytes and
  // family. flush() gathers each family's messages into batch_.
  std::vector<mmsghdr> msgs_;
  std::vector<sockaddr_storage> names_;
  std::vector<std::array<iovec, 2>> iovecs_;
  std::vector<std::array<uint8_t, kHeaderSlot>> headers_;
  std::vector<uint8_t> v4_slot_;
  std::vector<mmsghdr> batch_;
  size_t count_ = 0;
  uint64_t sent_ = 0;
  uint64_t dropped_ = 0;
  uint64_t syscalls_ = 0;
};

}  // namespace kturn::net
