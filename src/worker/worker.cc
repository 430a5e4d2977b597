#include "worker/worker.h"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/crypto.h"
#include "common/log.h"
#include "net/tcp_socket.h"

namespace kturn::worker {
namespace {

// Bounded work per readiness event, so one busy socket cannot starve the others on the loop.
constexpr int kMaxBatchesPerEvent = 16;

turn::Server::Options serverOptions(const Worker::Options& options) {
  turn::Server::Options o;
  o.connection_id_prefix = static_cast<uint8_t>(options.index);
  o.user_quota = options.user_quota;
  o.over_capacity = options.over_capacity;
  o.nonce_key = options.nonce_key;
  o.mobility_key = options.mobility_key;
  constexpr std::array<uint8_t, 32> kUnset{};
  if (o.nonce_key == kUnset) crypto::randomBytes(o.nonce_key);
  if (o.mobility_key == kUnset) crypto::randomBytes(o.mobility_key);
  uint8_t seed[8];
  crypto::randomBytes(seed);
  for (uint8_t b : seed) o.seed = (o.seed << 8) | b;
  return o;
}

StreamListener::Limits streamLimits(const ConnectionLimits& c) {
  StreamListener::Limits limits;
  limits.max_connections = c.max_connections;
  limits.idle_timeout = c.idle_timeout;
  limits.handshake_timeout = c.handshake_timeout;
  return limits;
}

DtlsListener::Limits dtlsLimits(const ConnectionLimits& c) {
  DtlsListener::Limits limits;
  limits.max_sessions = c.max_connections;
  limits.idle_timeout = c.idle_timeout;
  limits.handshake_timeout = c.handshake_timeout;
  return limits;
}

}  // namespace

Worker::Worker(const Options& options, ConfigSnapshotPtr dataplane, ReservationPool& reservations)
    : options_(options),
      dataplane_(std::move(dataplane)),
      relays_(
          loop_, reservations, [this](turn::AllocationId id, int fd) { onRelayReadable(id, fd); },
          [this](turn::AllocationId id, int fd) { onRelayAcceptable(id, fd); },
          PeerLinks::Callbacks{
              .on_connected =
                  [this](turn::ConnectionId id, bool up) {
                    server_->onPeerConnected(id, up, now(), actions_);
                    flush();
                  },
              .on_closed = [this](turn::ConnectionId id) { server_->onConnectionClosed(id); },
              .allowance =
                  [this](turn::AllocationId allocation, bool to_peer) {
                    return server_->connectionAllowance(allocation, to_peer,
                                                        std::chrono::steady_clock::now());
                  },
              .spend =
                  [this](turn::AllocationId allocation, bool to_peer, uint64_t bytes) {
                    server_->spendConnectionAllowance(allocation, to_peer, bytes);
                  }},
          static_cast<uint32_t>(options.index * 7919)),
      session_log_(options.session_log, options.index),
      rx_(options.batch_size, options.max_datagram),
      tx_(options.batch_size * 2, options.udp_segmentation) {
  relays_.setDataplane(dataplane_);
  relays_.setGro(options.udp_segmentation);
  if (options.shared_relays != nullptr && openSharedRelays(*options.shared_relays)) {
    relays_.setShared(options.shared_relays, options.index);
  }
  session_log_.setDataplane(dataplane_);
  server_ = std::make_unique<turn::Server>(dataplane_->turn, relays_, serverOptions(options));
  server_->setSessionObserver(&session_log_);
  server_->setMobilityRouter(this);
  loop_.addTicker(std::chrono::milliseconds(250), [this] {
    const turn::Now t = now();
    collectOffloaded();
    server_->countConnectionTraffic();
    server_->onTick(t);
    relays_.links().sweep(t.mono);
    for (const auto& l : listeners_) {
      if (l->stream) l->stream->sweep(t.mono);
      if (l->dtls) l->dtls->sweep(t.mono);  // may queue handshake retransmissions
    }
    flush();
  });
}

Worker::~Worker() {
  stop();
  // Closing a stream listener calls back into the core and flush(): do it while every member
  // is alive (members are destroyed in reverse order, tx_ and actions_ before listeners_).
  while (!listeners_.empty()) removeListener(listeners_.back()->id);
}

Result<Worker::BoundListener> Worker::bindListener(const ListenerSpec& spec, int socket_buffer,
                                                   bool gro) {
  if (spec.protocol == TransportProtocol::kTcp) {
    auto listening = net::listenTcp(spec.bind, {.reuse_port = true});
    if (!listening) {
      return makeError(listening.error().code, "listener " + spec.name + " on " +
                                                   spec.bind.toString() +
                                                   "/tcp: " + listening.error().message);
    }
    return BoundListener{spec, net::UdpSocket(), net::UdpSocket(), std::move(*listening)};
  }
  net::UdpSocketOptions opts;
  opts.reuse_port = true;
  opts.packet_info = true;
  opts.recv_buffer = socket_buffer;
  opts.send_buffer = socket_buffer;
  opts.gro = gro && !spec.tls;  // TURN-UDP: ChannelData trains split in place; not DTLS records
  auto bind = [&](const TransportAddress& address) -> Result<net::UdpSocket> {
    auto socket = net::UdpSocket::bind(address, opts);
    if (!socket) {
      return makeError(socket.error().code, "listener " + spec.name + " on " + address.toString() +
                                                ": " + socket.error().message);
    }
    return socket;
  };
  auto socket = bind(spec.bind);
  if (!socket) return socket.error();
  BoundListener bound{spec, std::move(*socket), net::UdpSocket(), net::FileDescriptor()};
  // "::" is dual stack: an IPv6-only socket and an IPv4 one on the same port, rather than one
  // dual-stack socket whose IPv4 clients would need IPv4-mapped addresses on every send.
  if (!spec.bind.ip.isV4() && spec.bind.ip.isUnspecified()) {
    auto v4 = bind(TransportAddress{IpAddress{}, spec.bind.port});
    if (!v4) return v4.error();
    bound.socket_v4 = std::move(*v4);
  }
  return bound;
}

void Worker::start() {
  thread_ = std::thread([this] { loop_.run(); });
}

void Worker::stop() {
  loop_.stop();
  if (thread_.joinable()) thread_.join();
}

void Worker::reconfigure(ConfigSnapshotPtr dataplane, std::vector<BoundListener> added,
                         std::vector<turn::ListenerId> removed) {
  // std::function needs a copyable callable; the sockets travel in a shared vector.
  auto sockets = std::make_shared<std::vector<BoundListener>>(std::move(added));
  post([this, dataplane = std::move(dataplane), sockets, removed = std::move(removed)]() mutable {
    for (turn::ListenerId id : removed) removeListener(id);
    for (BoundListener& bound : *sockets) addListener(std::move(bound), dataplane->connections);
    // A rotated certificate: the listener's next connections use the new context. New limits
    // apply to every stream and DTLS listener.
    for (const auto& l : listeners_) {
      if (l->stream) l->stream->setLimits(streamLimits(dataplane->connections));
      if (l->dtls) l->dtls->setLimits(dtlsLimits(dataplane->connections));
    }
    for (const ListenerSpec& spec : dataplane->listeners) {
      const Listener* listener = findListener(spec.id);
      if (spec.tls && listener != nullptr && listener->stream) {
        listener->stream->setTlsContext(spec.tls);
      }
      if (spec.tls && listener != nullptr && listener->dtls)
        listener->dtls->setTlsContext(spec.tls);
    }
    dataplane_ = std::move(dataplane);
    relays_.setDataplane(dataplane_);
    session_log_.setDataplane(dataplane_);
    server_->applyConfig(dataplane_->turn);
  });
}

void Worker::addListener(BoundListener bound, const ConnectionLimits& limits) {
  if (bound.spec.protocol == TransportProtocol::kTcp) {
    const turn::ListenerId id = bound.spec.id;
    StreamListener::Callbacks callbacks;
    callbacks.on_frame = [this, id](const FiveTuple& tuple, std::span<const uint8_t> frame) {
      onStreamFrame(id, tuple, frame);
    };
    callbacks.on_batch_end = [this] { flush(); };
    callbacks.on_closed = [this](const FiveTuple& tuple) {
      // A data connection that closed before it could be detached: its peer connection goes
      // too (RFC 6062), and the core forgets it.
      handoffs_.erase(tuple.client);
      if (const auto bind = binds_.find(tuple.client); bind != binds_.end()) {
        relays_.links().close(bind->second);
        server_->onConnectionClosed(bind->second);
        binds_.erase(bind);
      }
      server_->onClientClosed(tuple, now());
      flush();
    };
    callbacks.has_allocation = [this](const FiveTuple& tuple) {
      return server_->findAllocation(tuple) != nullptr;
    };
    callbacks.on_detached = [this, id](std::unique_ptr<StreamListener::Connection> c) {
      onDetached(id, std::move(c));
    };
    auto listener = std::make_unique<Listener>(
        Listener{id, bound.spec.bind, net::UdpSocket(), net::UdpSocket(), nullptr, nullptr});
    listener->stream = std::make_unique<StreamListener>(
        loop_, id, std::move(bound.tcp), streamLimits(limits), callbacks, bound.spec.tls);
    keepListener(std::move(listener));
    return;
  }
  auto listener =
      std::make_unique<Listener>(Listener{bound.spec.id, bound.spec.bind, std::move(bound.socket),
                                          std::move(bound.socket_v4), nullptr, nullptr});
  if (bound.spec.tls) {
    DtlsListener::Callbacks callbacks;
    callbacks.on_closed = [this](const FiveTuple& tuple) {
      server_->onClientClosed(tuple, now());
      flush();
    };
    callbacks.has_allocation = [this](const FiveTuple& tuple) {
      return server_->findAllocation(tuple) != nullptr;
    };
    listener->dtls = std::make_unique<DtlsListener>(bound.spec.tls, dtlsLimits(limits), callbacks);
  }
  const Listener* self = listener.get();
  for (const int fd : {self->socket.fd(), self->socket_v4.fd()}) {
    if (fd < 0) continue;
    auto added =
        loop_.add(fd, EPOLLIN, [this, self, fd](uint32_t) { onListenerReadable(*self, fd); });
    if (!added) {
      // epoll refusing a fresh socket means the process is out of memory or descriptors.
      spdlog::error("worker {}: listener {}: {}", options_.index, bound.spec.name,
                    added.error().message);
      if (fd != self->socket.fd()) loop_.remove(self->socket.fd());
      return;
    }
  }
  keepListener(std::move(listener));
}

void Worker::keepListener(std::unique_ptr<Listener> listener) {
  if (listener->id >= listener_by_id_.size()) listener_by_id_.resize(listener->id + 1, nullptr);
  listener_by_id_[listener->id] = listener.get();
  listeners_.push_back(std::move(listener));
}

void Worker::removeListener(turn::ListenerId id) {
  for (auto it = listeners_.begin(); it != listeners_.end(); ++it) {
    if ((*it)->id != id) continue;
    std::unique_ptr<Listener> doomed = std::move(*it);
    listeners_.erase(it);
    listener_by_id_[id] = nullptr;
    if (!doomed->stream) loop_.remove(doomed->socket.fd());
    if (doomed->socket_v4.fd() >= 0) loop_.remove(doomed->socket_v4.fd());
    // A stream listener closes its connections (and ends their allocations) here, with
    // listeners_ already consistent for the flush() its callbacks run.
    doomed.reset();
    break;
  }
  // Its clients can no longer reach their allocations: end them now rather than at expiry.
  server_->closeListener(id, now());
}

void Worker::setOffload(xdp::OffloadMaps* maps, uint32_t first_slot, uint32_t slots) {
  post([this, maps, first_slot, slots] {
    if (offloader_) {
      collectOffloaded();
      // Keep what the kernel relayed on the listeners' counters.
      const auto& relayed = offloader_->listenerTraffic();
      server_->setChannelOffload(nullptr);  // withdraws every channel: their last counts
      server_->setSourceBlocker(nullptr);
      for (size_t id = 0; id < relayed.size(); ++id) {
        static_cast<turn::TrafficCounters&>(traffic(static_cast<turn::ListenerId>(id))) +=
            relayed[id];
      }
      offloader_.reset();
      blocker_.reset();
    }
    if (maps == nullptr) return;
    offloader_ = std::make_unique<ChannelOffloader>(*maps, first_slot, slots);
    server_->setChannelOffload(offloader_.get());
    blocker_ = std::make_unique<SourceBlockList>(*maps);
    server_->setSourceBlocker(blocker_.get());
  });
}

void Worker::collectOffloaded() {
  if (!offloader_) return;
  offloader_->collect(
      [this](const FiveTuple& five_tuple, uint16_t channel, const turn::OffloadedTraffic& t) {
        server_->onOffloadedTraffic(five_tuple, channel, t);
      });
}

void Worker::collectStats(std::function<void(const WorkerStats&)> done) {
  post([this, done = std::move(done)] {
    collectOffloaded();
    server_->countConnectionTraffic();
    WorkerStats s = io_stats_;
    s.turn = server_->stats();
    s.turn_by_listener = server_->statsByListener();
    s.clusters = server_->statsByCluster();
    for (const auto& l : listeners_) {
      if (!l->stream) continue;
      ListenerTraffic& t = traffic(l->id);
      const StreamListenerStats& ls = l->stream->stats();
      t.connections = l->stream->connectionCount();
      t.connections_total = ls.accepted;
      t.closed_limit = ls.refused;
      t.closed_idle = ls.closed_idle;
      t.closed_handshake = ls.closed_handshake;
      t.closed_tls = ls.tls_failures;
      t.closed_framing = ls.closed_framing;
    }
    s.traffic = traffic_;
    // The client-side traffic kturnd's listeners did not see: RFC 6062 data connections' and
    // the kernel fast path's.
    const auto add = [&s](const std::vector<turn::TrafficCounters>& by_listener) {
      if (s.traffic.size() < by_listener.size()) s.traffic.resize(by_listener.size());
      for (size_t id = 0; id < by_listener.size(); ++id) {
        static_cast<turn::TrafficCounters&>(s.traffic[id]) += by_listener[id];
      }
    };
    add(relays_.links().listenerTraffic());
    if (offloader_) {
      add(offloader_->listenerTraffic());
      s.offload_channels = offloader_->size();
    }
    s.allocations = server_->allocationCount();
    s.datagrams_sent = tx_.sent() + (raw_ ? raw_->sent() : 0);
    s.send_dropped = tx_.dropped() + (raw_ ? raw_->dropped() : 0);
    s.send_syscalls = tx_.syscalls() + (raw_ ? raw_->syscalls() : 0);
    s.send_gso_trains = tx_.gsoMessages();
    s.send_gso_fallbacks = tx_.gsoFallbacks();
    done(s);
  });
}

turn::Now Worker::now() const {
  return turn::Now{std::chrono::steady_clock::now(),
                   std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count()};
}

const Worker::Listener* Worker::findListener(turn::ListenerId id) const {
  return id < listener_by_id_.size() ? listener_by_id_[id] : nullptr;
}

void Worker::onStreamFrame(turn::ListenerId id, const FiveTuple& tuple,
                           std::span<const uint8_t> frame) {
  ListenerTraffic& counters = traffic(id);
  ++counters.rx_packets;
  counters.rx_bytes += frame.size();
  // RFC 6062: a ConnectionBind for a connection another worker's core owns goes there, with
  // the data connection it came on.
  if (const auto owner = connectionBindOwner(frame);
      owner && *owner != options_.index && *owner < siblings_.size()) {
    if (const Listener* listener = findListener(id); listener != nullptr) {
      ++counters.handed_over;
      handoffs_[tuple.client] = std::vector<uint8_t>(frame.begin(), frame.end());
      listener->stream->requestDetach(tuple.client);
      return;
    }
  }
  server_->onClientPacket(id, tuple, frame, now(), actions_);
  // A ConnectionBind succeeded: once its answer is out, the connection carries the peer's bytes.
  if (relays_.hasBinds()) {
    const Listener* listener = findListener(id);
    for (const auto& [connection, data] : relays_.takeBinds()) {
      if (listener == nullptr) continue;
      binds_[data.client] = connection;
      listener->stream->requestDetach(data.client);
    }
  }
  if (actions_.arenaUsed() > turn::Actions::kArenaSize / 2) flush();
}

void Worker::onRelayAcceptable(turn::AllocationId allocation, int fd) {
  for (int round = 0; round < kMaxBatchesPerEvent; ++round) {
    auto accepted = net::acceptTcp(fd);
    if (!accepted || !*accepted) break;
    net::Accepted& a = **accepted;
    const turn::ConnectionId id =
        server_->onPeerConnectionAccepted(allocation, a.remote, now(), actions_);
    if (id != 0) relays_.links().adopt(allocation, id, std::move(a.fd));
  }
  flush();
}

void Worker::onListenerReadable(const Listener& listener, int fd) {
  for (int round = 0; round < kMaxBatchesPerEvent; ++round) {
    auto received = rx_.receive(fd);
    ++io_stats_.receive_syscalls;
    if (!received || *received == 0) return;
    const turn::Now t = now();
    if (listener.dtls) {
      onDtlsDatagrams(listener, *received, t);
      flush();
      if (*received < rx_.capacity()) return;
      continue;
    }
    for (size_t i = 0; i < *received; ++i) {
      const auto payload = rx_.payload(i);
      if (rx_.truncated(i)) {
        ++io_stats_.datagrams_received;
        ++io_stats_.datagrams_truncated;
        ListenerTraffic& counters = traffic(listener.id);
        ++counters.rx_packets;
        counters.rx_bytes += payload.size();
        continue;
      }
      FiveTuple tuple{TransportProtocol::kUdp, rx_.source(i), listener.address};
      if (const auto dst = rx_.destination(i)) tuple.server.ip = *dst;
      // UDP GRO: a train of one client's datagrams, back to back, each relayed where it lies.
      const size_t segment = rx_.segmentSize(i);
      if (segment == 0) {
        onClientDatagram(listener, tuple, payload, t);
        continue;
      }
      ++io_stats_.receive_gro_trains;
      for (size_t at = 0; at < payload.size(); at += segment) {
        onClientDatagram(listener, tuple,
                         payload.subspan(at, std::min(segment, payload.size() - at)), t);
      }
    }
    flush();
    if (*received < rx_.capacity()) return;
  }
}

void Worker::onClientDatagram(const Listener& listener, const FiveTuple& tuple,
                              std::span<const uint8_t> payload, const turn::Now& t) {
  ++io_stats_.datagrams_received;
  ListenerTraffic& counters = traffic(listener.id);  // not held across flush(), which may grow it
  ++counters.rx_packets;
  counters.rx_bytes += payload.size();
  if (!moving_.empty()) [[unlikely]] {
    if (const auto held = moving_.find(tuple); held != moving_.end()) {
      if (held->second.size() < kMaxHeld) held->second.emplace_back(payload.begin(), payload.end());
      return;
    }
  }
  // Time requests (STUN, RFC 7983 first byte 0-3), never relayed data.
  const bool stun = !payload.empty() && payload[0] < 4;
  const auto started =
      stun ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  server_->onClientPacket(listener.id, tuple, payload, t, actions_);
  if (stun) {
    io_stats_.request_times.record(server_->lastRequestMethod(),
                                   std::chrono::steady_clock::now() - started);
  }
  if (actions_.arenaUsed() > turn::Actions::kArenaSize / 2) flush();
}

void Worker::onDtlsDatagrams(const Listener& listener, size_t count, const turn::Now& t) {
  for (size_t i = 0; i < count; ++i) {
    ++io_stats_.datagrams_received;
    // Wire bytes, as for TURN-TLS: records and handshake included.
    ListenerTraffic& counters = traffic(listener.id);
    ++counters.rx_packets;
    counters.rx_bytes += rx_.payload(i).size();
    if (rx_.truncated(i)) {
      ++io_stats_.datagrams_truncated;
      continue;
    }
    FiveTuple tuple{TransportProtocol::kUdp, rx_.source(i), listener.address};
    if (const auto dst = rx_.destination(i)) tuple.server.ip = *dst;
    const std::span<uint8_t> buffer = rx_.payload(i);
    // Decrypted in place: the ciphertext is inside OpenSSL by then, and the plaintext stays
    // valid for the actions that point into it until the next flush().
    size_t length = listener.dtls->receive(tuple, buffer, buffer.size(), t.mono);
    while (length > 0) {
      server_->onClientPacket(listener.id, tuple, buffer.first(length), t, actions_);
      if (!listener.dtls->more()) break;
      flush();  // the next record of this datagram goes to the same buffer
      length = listener.dtls->next(buffer);
    }
    if (actions_.arenaUsed() > turn::Actions::kArenaSize / 2) flush();
  }
}

void Worker::sendDtls(const Listener& listener, const TransportAddress& client,
                      std::span<const uint8_t> data) {
  if (listener.dtls->send(client, data)) return;
  if (!listener.dtls->full()) return;  // no session (anymore): dropped, like UDP
  queueDtlsOutput(listener);
  tx_.flush();
  listener.dtls->clearOutput();
  (void)listener.dtls->send(client, data);
}

void Worker::queueDtlsOutput(const Listener& listener) {
  listener.dtls->forEachOutput([&](const FiveTuple& tuple, std::span<const uint8_t> bytes) {
    const int fd = listener.fdFor(tuple.client);
    const IpAddress from = listener.sourceFor(tuple.server.ip);
    if (!tx_.queue(fd, tuple.client, bytes, from)) {
      tx_.flush();
      tx_.queue(fd, tuple.client, bytes, from);
    }
  });
}

void Worker::onRelayReadable(turn::AllocationId allocation, int fd) {
  for (int round = 0; round < kMaxBatchesPerEvent; ++round) {
    auto received = rx_.receive(fd);
    ++io_stats_.receive_syscalls;
    if (!received || *received == 0) return;
    const turn::Now t = now();
    for (size_t i = 0; i < *received; ++i) onPeerDatagram(allocation, i, t);
    // The allocation may have ended while handling the batch (it cannot here, but flush() must
    // not assume the relay socket still exists).
    flush();
    if (*received < rx_.capacity()) return;
  }
}

void Worker::onSharedRelayReadable(int fd) {
  for (int round = 0; round < kMaxBatchesPerEvent; ++round) {
    auto received = rx_.receive(fd);
    ++io_stats_.receive_syscalls;
    if (!received || *received == 0) return;
    const turn::Now t = now();
    for (size_t i = 0; i < *received; ++i) {
      const auto to = rx_.originalDestination(i);
      const auto allocation = to ? relays_.allocationAt(*to) : std::nullopt;
      if (!allocation) {  // released since the kernel delivered it: as to a closed socket
        ++io_stats_.datagrams_received;
        continue;
      }
      onPeerDatagram(*allocation, i, t);
    }
    flush();
    if (*received < rx_.capacity()) return;
  }
}

void Worker::onPeerDatagram(turn::AllocationId allocation, size_t i, const turn::Now& t) {
  if (rx_.truncated(i)) {
    ++io_stats_.datagrams_received;
    ++io_stats_.datagrams_truncated;
    return;
  }
  if (const size_t segment = rx_.segmentSize(i); segment != 0) {
    // Each datagram of the train counts, as for a client's (onClientDatagram).
    io_stats_.datagrams_received += (rx_.payload(i).size() + segment - 1) / segment;
    ++io_stats_.receive_gro_trains;
    relayTrain(allocation, rx_.source(i), rx_.payload(i), segment, t);
    return;
  }
  ++io_stats_.datagrams_received;
  const size_t length = rx_.payload(i).size();
  const auto buffer = rx_.expand(i, rx_.headroom(), net::UdpReceiveBatch::kTailroom);
  server_->onPeerPacket(allocation, rx_.source(i), {buffer, rx_.headroom(), length}, t, actions_);
  if (actions_.arenaUsed() > turn::Actions::kArenaSize / 2) flush();
}

bool Worker::openSharedRelays(SharedRelayPorts& ports) {
  net::UdpSocketOptions options;
  options.recv_buffer = options_.socket_buffer;
  options.original_destination = true;
  auto v4 = net::UdpSocket::bind({IpAddress::v4(0u), 0}, options);
  auto v6 = net::UdpSocket::bind({IpAddress::v6({}), 0}, options);  // none on an IPv4-only host
  auto raw = net::RawUdpSender::open(options_.batch_size * 2);
  if (!v4 || !raw) {
    spdlog::warn("worker {}: shared relay sockets: {}; a socket per allocation", options_.index,
                 !v4 ? v4.error().message : raw.error().message);
    return false;
  }
  if (auto set = ports.setSockets(options_.index, v4->fd(), v6 ? v6->fd() : -1); !set) {
    spdlog::warn("worker {}: shared relay sockets: {}; a socket per allocation", options_.index,
                 set.error().message);
    return false;
  }
  shared_v4_ = std::move(*v4);
  if (v6) shared_v6_ = std::move(*v6);
  raw_.emplace(std::move(*raw));
  for (const net::UdpSocket* socket : {&shared_v4_, &shared_v6_}) {
    const int fd = socket->fd();
    if (fd < 0) continue;
    if (auto added = loop_.add(fd, EPOLLIN, [this, fd](uint32_t) { onSharedRelayReadable(fd); });
        !added) {
      spdlog::warn("worker {}: shared relay sockets: {}; a socket per allocation", options_.index,
                   added.error().message);
      raw_.reset();  // this worker takes no shared address: nothing is delivered to it
      return false;
    }
  }
  return true;
}

void Worker::relayTrain(turn::AllocationId allocation, const TransportAddress& peer,
                        std::span<const uint8_t> train, size_t segment, const turn::Now& t) {
  // Framing a datagram in place writes in front of it and after it, into its neighbours, which
  // the send batch may still point at: each gets a slot of its own, with the receive batch's
  // headroom and tailroom. The buffer grows to the largest train seen (at most 64 KiB of
  // datagrams) and is reused.
  const size_t headroom = rx_.headroom();
  const size_t stride = (headroom + segment + net::UdpReceiveBatch::kTailroom + 7) / 8 * 8;
  const size_t count = (train.size() + segment - 1) / segment;
  if (train_slots_.size() < count * stride) train_slots_.resize(count * stride);
  for (size_t k = 0; k < count; ++k) {
    const size_t length = std::min(segment, train.size() - k * segment);
    uint8_t* slot = train_slots_.data() + k * stride;
    std::memcpy(slot + headroom, train.data() + k * segment, length);
    server_->onPeerPacket(allocation, peer, {{slot, stride}, headroom, length}, t, actions_);
  }
  flush();  // before the slots are reused
}

void Worker::flush() {
  for (const turn::SendToPeer& s : actions_.to_peers) {
    const int fd = relays_.fd(s.allocation, s.peer.ip);
    if (fd < 0) {
      const TransportAddress* from = raw_ ? relays_.sharedSource(s.allocation, s.peer.ip) : nullptr;
      if (from != nullptr && !raw_->queue(*from, s.peer, s.data)) {
        raw_->flush();
        raw_->queue(*from, s.peer, s.data);
      }
      continue;
    }
    if (!tx_.queue(fd, s.peer, s.data)) {
      tx_.flush();
      tx_.queue(fd, s.peer, s.data);
    }
  }
  if (raw_ && !raw_->empty()) raw_->flush();
  bool streams = false;
  for (const turn::SendToClient& s : actions_.to_clients) {
    const Listener* listener = findListener(s.listener);
    if (listener == nullptr) continue;
    ListenerTraffic& counters = traffic(s.listener);
    ++counters.tx_packets;
    counters.tx_bytes += s.data.size();
    if (listener->stream) {
      listener->stream->send(s.client, s.data);
      streams = true;
      continue;
    }
    if (listener->dtls) {
      sendDtls(*listener, s.client, s.data);
      continue;
    }
    const int fd = listener->fdFor(s.client);
    const IpAddress from = listener->sourceFor(s.local);
    if (!tx_.queue(fd, s.client, s.data, from)) {
      tx_.flush();
      tx_.queue(fd, s.client, s.data, from);
    }
  }
  // Encrypted answers and handshake flights join the same batch.
  for (const auto& l : listeners_) {
    if (l->dtls && l->dtls->hasOutput()) queueDtlsOutput(*l);
  }
  tx_.flush();
  for (const auto& l : listeners_) {
    if (l->dtls) l->dtls->clearOutput();
  }
  if (streams) {
    for (const auto& l : listeners_) {
      if (l->stream) l->stream->flush();
    }
  }
  actions_.clear();
}

}  // namespace kturn::worker
