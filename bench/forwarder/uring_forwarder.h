// The udp-forwarder's UDP path on io_uring instead of epoll + recvmmsg/sendmmsg (--io-uring):
// what the kernel-limit reference costs when a wake-up is one io_uring_enter(2) that both submits
// the sends of the last batch and collects the next datagrams, instead of epoll_wait, one
// recvmmsg per readable socket and a sendmmsg.
//
// Same forwarding as the epoll worker (one relay socket per client flow, ChannelData header
// stripped towards the peer and written in front of the payload, in the receive buffer, towards
// the client), with io_uring's own means: multishot recvmsg on every socket into a ring of
// provided buffers, a sendmsg per datagram straight from the buffer it arrived in, and the
// buffer handed back to the kernel when that send completes. The ring defers its task work to
// the worker's own io_uring_enter (IORING_SETUP_DEFER_TASKRUN), so the kernel does the receive
// work in the worker's context, as recvmmsg would, not on whichever CPU delivered the datagram.
#pragma once

#include <memory>

#include "kturn/result.h"
#include "kturn/transport_address.h"

namespace kturn::bench {

struct UringForwarderOptions {
  TransportAddress listen;
  TransportAddress peer;
  int socket_buffer = 4 << 20;  // SO_RCVBUF/SO_SNDBUF of the listener socket
  int idle_seconds = 30;        // a flow without traffic this long is closed
  unsigned buffers = 4096;      // provided receive buffers (a power of two), 2 KiB each
};

// One worker thread with its own ring and SO_REUSEPORT listener socket. IPv4 only, datagrams of
// up to 2 KiB less the headers io_uring puts in front (larger ones are counted and dropped).
class UringForwarder {
 public:
  explicit UringForwarder(const UringForwarderOptions& options);
  ~UringForwarder();
  UringForwarder(const UringForwarder&) = delete;
  UringForwarder& operator=(const UringForwarder&) = delete;

  // Binds the listener socket, then starts the thread, which sets up its ring (a ring that
  // defers task work belongs to the thread that creates it) and reports whether it could.
  Result<void> start();
  void stop();  // joins
  uint64_t flows() const;
  uint64_t dropped() const;  // truncated, malformed or unsendable datagrams

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether this build has the io_uring path (liburing was found at configure time).
bool uringForwarderBuilt();

}  // namespace kturn::bench
