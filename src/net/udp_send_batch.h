// UdpSendBatch: gathers outgoing datagrams and sends them with as few sendmmsg(2) calls as
// possible.
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
class UdpSendBatch {
 public:
  explicit UdpSendBatch(size_t max_messages);
  UdpSendBatch(const UdpSendBatch&) = delete;
  UdpSendBatch& operator=(const UdpSendBatch&) = delete;

  // Adds a datagram for `fd` to send to `to`. Only a pointer to `data` is kept: the bytes must
  // stay valid and unchanged until flush(). Returns false, queueing nothing, when the batch is
  // full; the caller flushes and queues again.
  bool queue(int fd, const TransportAddress& to, std::span<const uint8_t> data);

  // Sends everything queued and empties the batch. The datagrams are first grouped by fd (order
  // kept within each fd), so each fd costs one sendmmsg per flush (more only after a partial
  // send) however its datagrams were interleaved with others'. When the socket's buffer is full
  // (EAGAIN, ENOBUFS) or the fd is not a socket, the rest of that run is dropped; any other error
  // (EMSGSIZE, ENETUNREACH, EPERM from a firewall, ...) drops only the datagram it concerns.
  void flush();

  size_t size() const { return count_; }
  size_t capacity() const { return msgs_.size(); }
  bool empty() const { return count_ == 0; }

  // Cumulative since construction.
  uint64_t sent() const { return sent_; }
  uint64_t dropped() const { return dropped_; }
  uint64_t syscalls() const { return syscalls_; }

 private:
  void sendRun(int fd, size_t begin, size_t end);
  // Reorders the queue so that each fd's datagrams are contiguous, keeping their order.
  void groupByFd();

  std::vector<mmsghdr> msgs_;
  std::vector<iovec> iovecs_;
  std::vector<sockaddr_storage> names_;
  std::vector<int> fds_;
  // groupByFd()'s scratch, sized once.
  std::vector<mmsghdr> grouped_msgs_;
  std::vector<int> grouped_fds_;
  std::vector<uint8_t> taken_;
  size_t count_ = 0;
  uint64_t sent_ = 0;
  uint64_t dropped_ = 0;
  uint64_t syscalls_ = 0;
};

}  // namespace kturn::net
