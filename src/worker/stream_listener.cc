#include "worker/stream_listener.h"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "net/tcp_socket.h"
#include "stun/stream_framing.h"
#include "worker/connection_sweep.h"

namespace kturn::worker {
namespace {

// Read granularity; a frame larger than what is buffered grows the buffer up to kMaxFrame.
constexpr size_t kInitialInput = 4096;
// The largest frame: a STUN message or ChannelData with a 64 KiB length, padded.
constexpr size_t kMaxFrame = 20 + 65535 + 3;
// Bounded work per readiness event, so one busy connection cannot starve the others.
constexpr int kMaxReadsPerEvent = 16;
constexpr int kMaxAcceptsPerEvent = 64;

}  // namespace

StreamListener::StreamListener(net::EventLoop& loop, turn::ListenerId id,
                               net::FileDescriptor listening, const Limits& limits,
                               Callbacks callbacks, net::TlsContextPtr tls)
    : loop_(loop),
      id_(id),
      listening_(std::move(listening)),
      limits_(limits),
      callbacks_(std::move(callbacks)),
      tls_(std::move(tls)) {
  auto added = loop_.add(listening_.get(), EPOLLIN, [this](uint32_t) { onAcceptable(); });
  if (!added) spdlog::error("TCP listener {}: {}", id_, added.error().message);
}

StreamListener::~StreamListener() {
  loop_.remove(listening_.get());
  while (!connections_.empty()) close(connections_.begin()->first);
}

void StreamListener::onAcceptable() {
  for (int i = 0; i < kMaxAcceptsPerEvent; ++i) {
    auto accepted = net::acceptTcp(listening_.get());
    if (!accepted) {
      // Out of descriptors: say so; the backlog keeps the rest until some close.
      spdlog::warn("TCP listener {}: {}", id_, accepted.error().message);
      return;
    }
    if (!*accepted) return;
    net::Accepted& a = **accepted;
    if (connections_.size() >= limits_.max_connections) {
      ++stats_.refused;
      continue;  // `a.fd` closes here
    }
    auto c = std::make_unique<Connection>();
    c->tuple = FiveTuple{TransportProtocol::kTcp, a.remote, a.local};
    c->accepted = c->last_active = std::chrono::steady_clock::now();
    c->fd = std::move(a.fd);
    if (tls_) c->tls = std::make_unique<net::TlsStream>(*tls_, c->fd.get(), c->out);
    const TransportAddress client = a.remote;
    auto added = loop_.add(c->fd.get(), EPOLLIN | EPOLLRDHUP,
                           [this, client](uint32_t events) { onEvent(client, events); });
    if (!added) {
      spdlog::warn("TCP listener {}: {}", id_, added.error().message);
      continue;
    }
    ++stats_.accepted;
    connections_[client] = std::move(c);
  }
}

void StreamListener::onEvent(const TransportAddress& client, uint32_t events) {
  const auto it = connections_.find(client);
  if (it == connections_.end()) return;
  Connection& c = *it->second;
  bool open = true;
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) open = readFrames(c);
  if (open && (events & EPOLLOUT)) open = writeOut(c);
  // A TLS handshake flight queued by the read, with no frame (and so no batch end) after it.
  if (open && c.dirty) flush();
  if (!open) {
    close(client);
  } else if (c.detach_requested) {
    callbacks_.on_detached(detach(client));
  }
}

ssize_t StreamListener::readSome(Connection& c) {
  const std::span<uint8_t> room(c.in.data() + c.in_used, c.in.size() - c.in_used);
  if (c.tls) {
    const uint64_t before = c.tls->bytesRead();
    const size_t queued = c.out.size();
    const net::TlsStream::ReadResult r = c.tls->read(room);
    stats_.rx_bytes += c.tls->bytesRead() - before;
    // Handshake flights, session tickets and alerts: out with the next flush().
    if (c.out.size() != queued) markDirty(c.tuple.client, c);
    switch (r.status) {
      case net::TlsStream::Status::kData:
        return static_cast<ssize_t>(r.bytes);
      case net::TlsStream::Status::kWouldBlock:
        return -1;
      case net::TlsStream::Status::kClosed:
        return 0;
      case net::TlsStream::Status::kFailed:
        ++stats_.tls_failures;
        // Try to deliver the alert OpenSSL queued; the connection closes either way.
        (void)writeOut(c);
        return 0;
    }
  }
  for (;;) {
    const ssize_t n = ::read(c.fd.get(), room.data(), room.size());
    if (n > 0) {
      stats_.rx_bytes += static_cast<uint64_t>(n);
      return n;
    }
    if (n == 0) return 0;  // the client closed
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : 0;  // otherwise reset
  }
}

bool StreamListener::readFrames(Connection& c) {
  for (int round = 0; round < kMaxReadsPerEvent || (c.tls && c.tls->hasBuffered()); ++round) {
    if (c.in.size() < kInitialInput) c.in.resize(kInitialInput);
    // Full of an unfinished frame: grow towards the largest frame there is (frames never exceed
    // kMaxFrame, so a full kMaxFrame buffer always holds a whole one).
    if (c.in_used == c.in.size()) c.in.resize(std::min(kMaxFrame, c.in.size() * 2));
    const size_t room = c.in.size() - c.in_used;
    const ssize_t n = readSome(c);
    if (n == 0) return false;
    if (n < 0) return true;  // drained; epoll tells when there is more
    c.in_used += static_cast<size_t>(n);
    c.last_active = std::chrono::steady_clock::now();
    if (!deliverFrames(c)) return false;
    // Detaching: what follows the last frame is the next owner's to read.
    if (c.detach_requested) return true;
    // A short read drained the socket; TLS may still hold decrypted bytes (hasBuffered above).
    if (static_cast<size_t>(n) < room && !(c.tls && c.tls->hasBuffered())) return true;
  }
  return true;
}

bool StreamListener::deliverFrames(Connection& c) {
  size_t offset = 0;
  bool in_sync = true;
  while (offset < c.in_used && !c.detach_requested) {
    const std::span<const uint8_t> rest(c.in.data() + offset, c.in_used - offset);
    const stun::StreamFrame f = stun::nextStreamFrame(rest);
    if (f.kind == stun::StreamFrame::Kind::kInvalid) {
      in_sync = false;
      break;
    }
    if (f.kind == stun::StreamFrame::Kind::kIncomplete) break;
    callbacks_.on_frame(c.tuple, rest.first(f.frame_size));
    offset += f.frame_size;
  }
  // The core's output may point into the frames: send it before the buffer moves.
  callbacks_.on_batch_end();
  if (!in_sync) {
    ++stats_.closed_framing;
    return false;
  }
  if (offset > 0) {
    std::copy(c.in.begin() + static_cast<ptrdiff_t>(offset),
              c.in.begin() + static_cast<ptrdiff_t>(c.in_used), c.in.begin());
    c.in_used -= offset;
  }
  return true;
}

void StreamListener::requestDetach(const TransportAddress& client) {
  const auto it = connections_.find(client);
  if (it != connections_.end()) it->second->detach_requested = true;
}

std::unique_ptr<StreamListener::Connection> StreamListener::detach(const TransportAddress& client) {
  const auto it = connections_.find(client);
  if (it == connections_.end()) return nullptr;
  std::unique_ptr<Connection> c = std::move(it->second);
  connections_.erase(it);
  loop_.remove(c->fd.get());
  c->want_write = false;
  c->dirty = false;  // a stale entry in dirty_ finds no connection and is skipped
  c->detach_requested = false;
  return c;
}

void StreamListener::adopt(std::unique_ptr<Connection> connection) {
  const TransportAddress client = connection->tuple.client;
  if (connections_.contains(client) || connections_.size() >= limits_.max_connections) {
    ++stats_.refused;
    return;  // closes it
  }
  Connection& c = *connection;
  auto added = loop_.add(c.fd.get(), EPOLLIN | EPOLLRDHUP,
                         [this, client](uint32_t events) { onEvent(client, events); });
  if (!added) return;
  connections_[client] = std::move(connection);
  if (c.out_head < c.out.size()) markDirty(client, c);
  // Frames that came in behind the one that moved it here.
  const bool open = deliverFrames(c);
  if (open && c.dirty) flush();
  if (!open) {
    close(client);
  } else if (c.detach_requested) {
    callbacks_.on_detached(detach(client));
  }
}

bool StreamListener::send(const TransportAddress& client, std::span<const uint8_t> frame) {
  const auto it = connections_.find(client);
  if (it == connections_.end()) {
    ++stats_.frames_dropped;
    return false;
  }
  Connection& c = *it->second;
  if (c.out.size() - c.out_head + frame.size() > limits_.max_output_bytes) {
    ++stats_.frames_dropped;
    return false;
  }
  if (c.out_head == c.out.size()) {
    c.out.clear();
    c.out_head = 0;
  }
  if (c.tls) {
    if (!c.tls->established() || !c.tls->write(frame)) {
      ++stats_.frames_dropped;
      return false;
    }
  } else {
    c.out.insert(c.out.end(), frame.begin(), frame.end());
  }
  markDirty(client, c);
  return true;
}

void StreamListener::markDirty(const TransportAddress& client, Connection& c) {
  if (c.dirty) return;
  c.dirty = true;
  dirty_.push_back(client);
}

void StreamListener::flush() {
  for (const TransportAddress& client : dirty_) {
    const auto it = connections_.find(client);
    if (it == connections_.end()) continue;
    it->second->dirty = false;
    // flush() may run inside this connection's own read handler: do not destroy it here. A
    // shut-down socket reports EOF to that handler (or to the next event), which closes it.
    if (!writeOut(*it->second)) ::shutdown(it->second->fd.get(), SHUT_RDWR);
  }
  dirty_.clear();
}

bool StreamListener::writeOut(Connection& c) {
  while (c.out_head < c.out.size()) {
    const ssize_t n = ::send(c.fd.get(), c.out.data() + c.out_head, c.out.size() - c.out_head,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
      if (!c.want_write) {
        c.want_write = true;
        (void)loop_.modify(c.fd.get(), EPOLLIN | EPOLLRDHUP | EPOLLOUT);
      }
      return true;
    }
    c.out_head += static_cast<size_t>(n);
    stats_.tx_bytes += static_cast<uint64_t>(n);
  }
  c.out.clear();
  c.out_head = 0;
  if (c.want_write) {
    c.want_write = false;
    (void)loop_.modify(c.fd.get(), EPOLLIN | EPOLLRDHUP);
  }
  return true;
}

void StreamListener::sweep(turn::MonoTime now) {
  const auto verdict = [&](const Connection& c) {
    if (c.tls && !c.tls->established() && now - c.accepted >= limits_.handshake_timeout) {
      return SweepVerdict::kHandshakeTimedOut;
    }
    return now - c.last_active >= limits_.idle_timeout && !callbacks_.has_allocation(c.tuple)
               ? SweepVerdict::kIdle
               : SweepVerdict::kKeep;
  };
  sweepConnections(connections_, stats_, verdict,
                   [this](const TransportAddress& client) { close(client); });
}

void StreamListener::close(const TransportAddress& client) {
  const auto it = connections_.find(client);
  if (it == connections_.end()) return;
  std::unique_ptr<Connection> c = std::move(it->second);
  connections_.erase(it);
  loop_.remove(c->fd.get());
  callbacks_.on_closed(c->tuple);
  // `c` (and its fd) goes here, after the core has forgotten the 5-tuple.
}

}  // namespace kturn::worker
