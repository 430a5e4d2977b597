#include "worker/peer_links.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "net/tcp_socket.h"

namespace kturn::worker {
namespace {

// Bounded work per readiness event, so one busy link cannot starve the others.
constexpr int kMaxRoundsPerEvent = 16;

// Reads into `into`: the count, 0 at EOF or on an error, -1 when there is nothing more for now.
ssize_t readSocket(int fd, std::span<uint8_t> into) {
  for (;;) {
    const ssize_t n = ::read(fd, into.data(), into.size());
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : 0;
  }
}

// Writes from `bytes`: the count (possibly 0), or -1 on an error.
ssize_t writeSocket(int fd, std::span<const uint8_t> bytes) {
  for (;;) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  }
}

size_t backlog(const StreamListener::Connection& c) { return c.out.size() - c.out_head; }

// Reads plaintext from the client, like readSocket().
ssize_t readClient(StreamListener::Connection& c, std::span<uint8_t> into) {
  if (!c.tls) return readSocket(c.fd.get(), into);
  const net::TlsStream::ReadResult r = c.tls->read(into);
  switch (r.status) {
    case net::TlsStream::Status::kData:
      return static_cast<ssize_t>(r.bytes);
    case net::TlsStream::Status::kWouldBlock:
      return -1;
    case net::TlsStream::Status::kClosed:
    case net::TlsStream::Status::kFailed:
      return 0;
  }
  return 0;
}

// Queues bytes for the client: encrypted for TLS, as they are for TCP.
bool queueForClient(StreamListener::Connection& c, std::span<const uint8_t> bytes) {
  if (c.out_head == c.out.size()) {
    c.out.clear();
    c.out_head = 0;
  }
  if (c.tls) return c.tls->write(bytes);
  c.out.insert(c.out.end(), bytes.begin(), bytes.end());
  return true;
}

// Writes the client's queued output; false on an error.
bool flushClient(StreamListener::Connection& c, uint64_t& counted) {
  while (c.out_head < c.out.size()) {
    const ssize_t n = writeSocket(c.fd.get(), {c.out.data() + c.out_head, backlog(c)});
    if (n < 0) return false;
    if (n == 0) return true;
    c.out_head += static_cast<size_t>(n);
    counted += static_cast<uint64_t>(n);
  }
  return true;
}

}  // namespace

std::span<uint8_t> PeerLinks::Link::Queue::room() {
  if (head == tail) {
    head = tail = 0;
  } else if (head > 0 && tail == bytes.size()) {
    std::copy(bytes.begin() + static_cast<ptrdiff_t>(head),
              bytes.begin() + static_cast<ptrdiff_t>(tail), bytes.begin());
    tail -= head;
    head = 0;
  }
  return {bytes.data() + tail, bytes.size() - tail};
}

PeerLinks::PeerLinks(net::EventLoop& loop, Callbacks callbacks)
    : loop_(loop), callbacks_(std::move(callbacks)) {}

PeerLinks::~PeerLinks() {
  for (auto& [id, link] : links_) {
    loop_.remove(link->peer.get());
    if (link->client) loop_.remove(link->client->fd.get());
  }
}

bool PeerLinks::connect(turn::AllocationId allocation, turn::ConnectionId id,
                        const TransportAddress& local, const TransportAddress& peer,
                        turn::MonoTime now) {
  if (links_.contains(id)) return false;
  auto fd = net::connectTcpFrom(local, peer);
  if (!fd) return false;
  auto link = std::make_unique<Link>();
  link->id = id;
  link->allocation = allocation;
  link->started = now;
  link->peer = std::move(*fd);
  link->peer_events = EPOLLOUT;
  if (!loop_.add(link->peer.get(), EPOLLOUT,
                 [this, id](uint32_t events) { onPeerEvent(id, events); })) {
    return false;
  }
  links_.emplace(id, std::move(link));
  return true;
}

void PeerLinks::adopt(turn::AllocationId allocation, turn::ConnectionId id,
                      net::FileDescriptor fd) {
  if (links_.contains(id)) return;
  auto link = std::make_unique<Link>();
  link->id = id;
  link->allocation = allocation;
  link->state = Link::State::kPending;
  link->peer = std::move(fd);
  link->peer_events = EPOLLIN;
  if (!loop_.add(link->peer.get(), EPOLLIN,
                 [this, id](uint32_t events) { onPeerEvent(id, events); })) {
    return;
  }
  links_.emplace(id, std::move(link));
}

void PeerLinks::join(turn::ConnectionId id, turn::ListenerId listener,
                     std::unique_ptr<StreamListener::Connection> client) {
  const auto it = links_.find(id);
  if (it == links_.end() || it->second->state != Link::State::kPending) return;  // closes it
  Link& l = *it->second;
  StreamListener::Connection& c = *client;
  l.listener = listener;
  // Neither these bytes nor the early ones were framed, so the listener has not counted them.
  traffic(listener).rx_bytes += c.in_used;
  traffic(listener).tx_bytes += l.early.size();
  spend(l, true, c.in_used);
  spend(l, false, l.early.size());
  // Client bytes that came in behind the ConnectionBind, and peer bytes that came before it.
  l.to_peer.bytes.resize(std::max(kMaxBuffered, c.in_used));
  std::copy_n(c.in.begin(), c.in_used, l.to_peer.bytes.begin());
  l.to_peer.tail = c.in_used;
  c.in = {};
  c.in_used = 0;
  if (!l.early.empty() && !queueForClient(c, l.early)) return drop(id, true);
  l.uncounted.to_client += l.early.size();
  l.early = {};
  if (!loop_.add(c.fd.get(), EPOLLIN, [this, id](uint32_t events) { onClientEvent(id, events); })) {
    return drop(id, true);  // `client` closes here, the peer connection in drop()
  }
  l.client_events = EPOLLIN;
  l.client = std::move(client);
  l.state = Link::State::kJoined;
  // Both sockets are readable or not as epoll will tell; this writes what is queued.
  if (!pump(l, false, false)) return drop(id, true);
  arm(l);
}

void PeerLinks::onPeerEvent(turn::ConnectionId id, uint32_t events) {
  const auto it = links_.find(id);
  if (it == links_.end()) return;
  Link& l = *it->second;
  switch (l.state) {
    case Link::State::kConnecting: {
      const bool up = net::connectResult(l.peer.get()) == 0;
      if (!up) {
        drop(id, false);
        callbacks_.on_connected(id, false);
        return;
      }
      l.state = Link::State::kPending;
      l.peer_events = EPOLLIN;
      (void)loop_.modify(l.peer.get(), EPOLLIN);
      callbacks_.on_connected(id, true);
      return;
    }
    case Link::State::kPending: {
      // Buffer what the peer sends before the client binds; a full buffer stops reading.
      if (scratch_.size() < kMaxBuffered) scratch_.resize(kMaxBuffered);
      const ssize_t n = readSocket(l.peer.get(), {scratch_.data(), kMaxBuffered - l.early.size()});
      if (n == 0) return drop(id, true);
      if (n > 0) l.early.insert(l.early.end(), scratch_.begin(), scratch_.begin() + n);
      if (l.early.size() >= kMaxBuffered) {
        l.peer_events = EPOLLET;  // as arm() does for a side that may not be read
        (void)loop_.modify(l.peer.get(), EPOLLET);
      }
      return;
    }
    case Link::State::kJoined:
      if (!pump(l, false, (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0)) return drop(id, true);
      arm(l);
      return;
  }
}

void PeerLinks::onClientEvent(turn::ConnectionId id, uint32_t events) {
  const auto it = links_.find(id);
  if (it == links_.end()) return;
  Link& l = *it->second;
  if (!pump(l, (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0, false)) return drop(id, true);
  arm(l);
}

bool PeerLinks::pump(Link& l, bool client_readable, bool peer_readable) {
  StreamListener::Connection& c = *l.client;
  if (scratch_.size() < kMaxBuffered) scratch_.resize(kMaxBuffered);
  bool open = true;
  for (int round = 0;; ++round) {
    // Decrypted bytes OpenSSL holds show up on no socket: read them as if readable.
    client_readable = client_readable || (c.tls && c.tls->hasBuffered());
    // Client to peer, read in place into the peer's queue.
    size_t client_room = 0;
    ssize_t from_client = -1;
    if (client_readable && !l.client_held) {
      const std::span<uint8_t> room = l.to_peer.room();
      client_room = allowed(l, true, room.size());
      if (client_room > 0) from_client = readClient(c, room.first(client_room));
      if (from_client == 0) open = false;
      if (from_client > 0) {
        const auto n = static_cast<size_t>(from_client);
        l.to_peer.tail += n;
        spend(l, true, n);
        traffic(l.listener).rx_bytes += n;
      }
    }
    // Peer to client, through the client's output (encrypted there for TLS).
    size_t peer_room = 0;
    ssize_t from_peer = -1;
    if (peer_readable && !l.peer_held) {
      peer_room = allowed(l, false, kMaxBuffered - std::min(kMaxBuffered, backlog(c)));
      if (peer_room > 0) from_peer = readSocket(l.peer.get(), {scratch_.data(), peer_room});
      if (from_peer == 0) open = false;
      if (from_peer > 0) {
        const auto n = static_cast<size_t>(from_peer);
        if (!queueForClient(c, {scratch_.data(), n})) return false;
        l.uncounted.to_client += n;
        spend(l, false, n);
        traffic(l.listener).tx_bytes += n;
      }
    }
    // Write both ways (also the last bytes before a close).
    while (l.to_peer.size() > 0) {
      const ssize_t n =
          writeSocket(l.peer.get(), {l.to_peer.bytes.data() + l.to_peer.head, l.to_peer.size()});
      if (n < 0) return false;
      if (n == 0) break;
      l.to_peer.head += static_cast<size_t>(n);
      stats_.to_peer_bytes += static_cast<uint64_t>(n);
      l.uncounted.to_peer += static_cast<uint64_t>(n);
    }
    if (!flushClient(c, stats_.to_client_bytes)) return false;
    // A read that filled its room may have left more behind; a short one drained the socket.
    client_readable = from_client > 0 && static_cast<size_t>(from_client) == client_room;
    peer_readable = from_peer > 0 && static_cast<size_t>(from_peer) == peer_room;
    const bool tls_more = c.tls && c.tls->hasBuffered() && !l.client_held &&
                          l.to_peer.size() < l.to_peer.bytes.size();
    if (!open || round + 1 >= kMaxRoundsPerEvent ||
        !(client_readable || peer_readable || tls_more)) {
      return open;
    }
  }
}

void PeerLinks::arm(Link& l) {
  const StreamListener::Connection& c = *l.client;
  // A side that may not be read (the other side's buffer is full) is watched edge-triggered:
  // epoll reports an error or hang-up whatever the mask, and level-triggered it would report a
  // reset peer's again and again until the buffer drains. Writes always run until EAGAIN, so an
  // edge-triggered EPOLLOUT still fires when the socket can take more.
  const auto mask = [](bool readable, bool writable) {
    return readable ? EPOLLIN | (writable ? EPOLLOUT : 0u) : EPOLLET | (writable ? EPOLLOUT : 0u);
  };
  const uint32_t peer = mask(backlog(c) < kMaxBuffered && !l.peer_held, l.to_peer.size() > 0);
  const uint32_t client =
      mask(l.to_peer.size() < l.to_peer.bytes.size() && !l.client_held, backlog(c) > 0);
  if (peer != l.peer_events) {
    l.peer_events = peer;
    (void)loop_.modify(l.peer.get(), peer);
  }
  if (client != l.client_events) {
    l.client_events = client;
    (void)loop_.modify(c.fd.get(), client);
  }
}

void PeerLinks::close(turn::ConnectionId id) { drop(id, false); }

void PeerLinks::closeAllocation(turn::AllocationId allocation) {
  std::vector<turn::ConnectionId> doomed;
  for (const auto& [id, link] : links_) {
    if (link->allocation == allocation) doomed.push_back(id);
  }
  for (turn::ConnectionId id : doomed) drop(id, false);
}

void PeerLinks::sweep(turn::MonoTime now) {
  std::vector<turn::ConnectionId> late;
  std::vector<turn::ConnectionId> held;
  for (const auto& [id, link] : links_) {
    if (link->state == Link::State::kConnecting && now - link->started >= kConnectTimeout) {
      late.push_back(id);
    } else if (link->client_held || link->peer_held) {
      held.push_back(id);
    }
  }
  for (turn::ConnectionId id : late) {
    ++stats_.connect_timeouts;
    drop(id, false);
    callbacks_.on_connected(id, false);
  }
  // A held side may have had bytes waiting all along (or, for TLS, inside OpenSSL, where epoll
  // cannot see them): read it as if readable.
  for (turn::ConnectionId id : held) {
    const auto it = links_.find(id);
    if (it == links_.end()) continue;
    Link& l = *it->second;
    const bool client = std::exchange(l.client_held, false);
    const bool peer = std::exchange(l.peer_held, false);
    if (!pump(l, client, peer)) {
      drop(id, true);
      continue;
    }
    arm(l);
  }
}

size_t PeerLinks::allowed(Link& l, bool to_peer, size_t room) {
  if (room == 0 || !callbacks_.allowance) return room;
  const uint64_t allowance = callbacks_.allowance(l.allocation, to_peer);
  if (allowance == 0) (to_peer ? l.client_held : l.peer_held) = true;
  return static_cast<size_t>(std::min<uint64_t>(room, allowance));
}

void PeerLinks::spend(const Link& l, bool to_peer, size_t bytes) {
  if (bytes > 0 && callbacks_.spend) callbacks_.spend(l.allocation, to_peer, bytes);
}

turn::TrafficCounters& PeerLinks::traffic(turn::ListenerId id) {
  if (id >= traffic_.size()) traffic_.resize(id + 1);
  return traffic_[id];
}

void PeerLinks::drop(turn::ConnectionId id, bool notify) {
  const auto it = links_.find(id);
  if (it == links_.end()) return;
  loop_.remove(it->second->peer.get());
  if (it->second->client) loop_.remove(it->second->client->fd.get());
  // Told while the link is still here, so the core can take() its last counts.
  if (notify) callbacks_.on_closed(id);
  links_.erase(id);  // both sockets close here
}

turn::ConnectionTraffic PeerLinks::take(turn::ConnectionId id) {
  const auto it = links_.find(id);
  return it == links_.end() ? turn::ConnectionTraffic{} : std::exchange(it->second->uncounted, {});
}

}  // namespace kturn::worker
