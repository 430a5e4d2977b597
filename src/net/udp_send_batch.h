// UdpSendBatch: gathers outgoing datagrams and sends them with as few sendmmsg(2) calls, and as
// few messages through the kernel's UDP/IP output path, as possible.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kturn/transport_address.h"

namespace kturn::net {

// A worker queues what one loop iteration produces (relayed datagrams, responses), then flushes
// once. Nothing allocates after construction, nothing blocks, and a failed send is a counted
// drop, as UDP allows; the caller never handles a send error.
//
// With UDP GSO (UDP_SEGMENT, Linux 4.18+), a train of datagrams one fd sends to one destination,
// all of one size but the last (which may be shorter), leaves as one message: the kernel builds
// one packet, routes it once and cuts it into the datagrams at the device (or at the local
// receiver), each with its own UDP header, so what arrives is exactly what was queued. A train
// the kernel refuses (a device without checksum offload, a path MTU below the datagram size, a
// socket without checksums) is sent again datagram by datagram; a batch whose first 16 trains are
// all refused makes no more.
class UdpSendBatch {
 public:
  // A train is at most this many datagrams (the kernel's UDP_MAX_SEGMENTS), of at most
  // kMaxGsoSegment bytes each (so one fits a 1500-byte MTU), and kMaxGsoBytes in all (well
  // within a socket's send buffer).
  static constexpr size_t kMaxSegments = 64;
  static constexpr size_t kMaxGsoSegment = 1400;
  static constexpr size_t kMaxGsoBytes = 32 * 1024;

  // `gso`: send trains as one message where the kernel supports it.
  explicit UdpSendBatch(size_t max_messages, bool gso = true);
  // Whether this kernel takes UDP_SEGMENT (probed once per process).
  static bool gsoSupported();
  UdpSendBatch(const UdpSendBatch&) = delete;
  UdpSendBatch& operator=(const UdpSendBatch&) = delete;

  // Adds a datagram for `fd` to send to `to`. Only a pointer to `data` is kept: the bytes must
  // stay valid and unchanged until flush(). Returns false, queueing nothing, when the batch is
  // full; the caller flushes and queues again.
  //
  // `from`: the source address, for a socket bound to a wildcard address that must answer from
  // the address it was reached at (IP_PKTINFO / IPV6_PKTINFO, of `from`'s family, which must be
  // the socket's); unspecified (the default) lets the kernel choose by route. A `from` that is
  // not a local address (removed since) makes the datagram a counted drop.
  bool queue(int fd, const TransportAddress& to, std::span<const uint8_t> data,
             const IpAddress& from = IpAddress{});

  // Sends everything queued and empties the batch. The datagrams are first grouped by fd (order
  // kept within each fd), so each fd costs one sendmmsg per flush (more only after a partial
  // send) however its datagrams were interleaved with others'. When the socket's buffer is full
  // (EAGAIN, ENOBUFS) or the fd is not a socket, the rest of that run is dropped; any other error
  // (EMSGSIZE, ENETUNREACH, EPERM from a firewall, ...) drops only the datagram it concerns.
  void flush();

  size_t size() const { return count_; }
  size_t capacity() const { return msgs_.size(); }
  bool empty() const { return count_ == 0; }

  bool gso() const { return gso_; }

  // Cumulative since construction. sent() and dropped() count datagrams, however they left.
  uint64_t sent() const { return sent_; }
  uint64_t dropped() const { return dropped_; }
  uint64_t syscalls() const { return syscalls_; }
  // Trains sent as one GSO message, and trains the kernel refused that went datagram by datagram.
  uint64_t gsoMessages() const { return gso_messages_; }
  uint64_t gsoFallbacks() const { return gso_fallbacks_; }

 private:
  // A run of queued datagrams [first, first + count) sent as one message of `trains_msgs_`.
  struct Train {
    size_t first = 0;
    size_t count = 0;
  };
  // Room for one IP_PKTINFO or IPV6_PKTINFO message (in6_pktinfo is the larger: 20 bytes).
  static constexpr size_t kSourceControlSize = CMSG_SPACE(20);
  struct alignas(cmsghdr) SourceControl {
    uint8_t bytes[kSourceControlSize];
  };
  // A train's UDP_SEGMENT, then its datagrams' source address when they have one.
  struct alignas(cmsghdr) GsoControl {
    uint8_t bytes[CMSG_SPACE(sizeof(uint16_t)) + kSourceControlSize];
  };

  // Sends datagrams [begin, end) of one fd, each as its own message.
  void sendRun(int fd, size_t begin, size_t end);
  // The same, trains as one message each.
  void sendTrains(int fd, size_t begin, size_t end);
  // The datagrams after `first` that may join its train.
  size_t trainLength(size_t first, size_t end) const;
  size_t length(size_t i) const { return msgs_[i].msg_hdr.msg_iov[0].iov_len; }
  // Same destination and same source (control messages), so one train may carry both.
  bool sameDestination(size_t a, size_t b) const;
  // Reorders the queue so that each fd's datagrams are contiguous, keeping their order.
  void groupByFd();

  std::vector<mmsghdr> msgs_;
  std::vector<iovec> iovecs_;
  std::vector<sockaddr_storage> names_;
  std::vector<SourceControl> sources_;  // a datagram's source address, when queued with one
  std::vector<int> fds_;
  // groupByFd()'s scratch, sized once.
  std::vector<mmsghdr> grouped_msgs_;
  std::vector<int> grouped_fds_;
  std::vector<uint8_t> taken_;
  // sendTrains()' scratch, sized once: one message per train, the trains' iovecs side by side.
  std::vector<mmsghdr> train_msgs_;
  std::vector<Train> trains_;
  std::vector<iovec> train_iovecs_;
  std::vector<GsoControl> train_controls_;
  size_t count_ = 0;
  bool gso_;
  uint64_t sent_ = 0;
  uint64_t dropped_ = 0;
  uint64_t syscalls_ = 0;
  uint64_t gso_messages_ = 0;
  uint64_t gso_fallbacks_ = 0;
};

}  // namespace kturn::net
