#include "worker/relay_sockets.h"

#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <span>

#include "net/sockaddr.h"
#include "net/tcp_socket.h"

namespace kturn::worker {
namespace {

// Binding a kernel-chosen port until one is even: each try has even odds, so 32 tries fail with
// probability 2^-32.
constexpr int kEvenPortTries = 32;

int64_t unixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

RelaySockets::RelaySockets(net::EventLoop& loop, ReservationPool& reservations,
                           OnReadable on_readable, OnReadable on_acceptable,
                           PeerLinks::Callbacks links, uint32_t port_hint_seed)
    : loop_(loop),
      reservations_(reservations),
      on_readable_(std::move(on_readable)),
      on_acceptable_(std::move(on_acceptable)),
      links_(loop, std::move(links)),
      next_hint_(port_hint_seed) {}

RelaySockets::~RelaySockets() {
  for (Slot& slot : slots_) {
    if (slot.shared.port != 0) releaseShared(slot);
    if (slot.socket.fd() >= 0) loop_.remove(slot.socket.fd());
    if (slot.additional.fd() >= 0) loop_.remove(slot.additional.fd());
    if (slot.tcp.valid()) loop_.remove(slot.tcp.get());
  }
}

Result<net::UdpSocket> RelaySockets::bindRelay(const ListenerSpec* listener, const IpAddress& ip,
                                               bool even, bool dont_fragment,
                                               net::UdpSocket* next) {
  net::UdpSocketOptions options;
  options.gro = gro_;
  even = even || next != nullptr;
  // In a relay port range each try scans on from where the last one stopped, even ports only
  // when asked: the whole window is searched once at most (a pair's successor taken moves the
  // search past it). The kernel's choice, without a range, is retried until it is even.
  const bool ranged = listener != nullptr && listener->min_relay_port != 0;
  const uint32_t span = ranged ? listener->max_relay_port - listener->min_relay_port + 1u : 0;
  const uint32_t tries = ranged ? span / 2 + 1 : kEvenPortTries;
  uint32_t hint = next_hint_++;
  for (uint32_t attempt = 0; attempt < tries; ++attempt) {
    Result<net::UdpSocket> socket =
        ranged ? net::UdpSocket::bindInRange(ip, listener->min_relay_port, listener->max_relay_port,
                                             options, hint, even)
               : net::UdpSocket::bind(TransportAddress{ip, 0}, options);
    if (!socket) return socket;
    const uint16_t port = socket->localAddress().port;
    if (even && port % 2 != 0) continue;
    if (next != nullptr) {
      // EVEN-PORT with R: the port after must be free too (held for the RESERVATION-TOKEN), and
      // in the range. If it is not (say, reserved for another client) try the next even port.
      if (ranged) hint = port - listener->min_relay_port + 2u;
      if (port == 65535 || (ranged && port == listener->max_relay_port)) continue;
      auto reserved = net::UdpSocket::bind(TransportAddress{ip, uint16_t(port + 1)}, {});
      if (!reserved) continue;
      *next = std::move(*reserved);
    }
    if (dont_fragment && ip.isV4()) {
      const int pmtu = IP_PMTUDISC_DO;
      ::setsockopt(socket->fd(), IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu);
    }
    return socket;
  }
  return makeError(Error::Code::kExhausted, next != nullptr ? "no free even/odd relay port pair"
                                                            : "no even relay port found");
}

Result<turn::RelayGrant> RelaySockets::open(const turn::RelayRequest& request) {
  const ListenerSpec* listener = nullptr;
  if (dataplane_) {
    for (const ListenerSpec& l : dataplane_->listeners) {
      if (l.id == request.listener) listener = &l;
    }
  }
  // Relay on the listener's relay address when it is the host's; otherwise (none configured,
  // or a 1:1 NAT's public address, named in XOR-RELAYED-ADDRESS) on the address the client
  // reached, so that the relay is one the client can route to.
  IpAddress ip = request.five_tuple.server.ip;
  std::optional<IpAddress> public_ip;
  if (listener != nullptr && !listener->relay_ip.isUnspecified()) {
    if (listener->relay_ip_local) {
      ip = listener->relay_ip;
    } else {
      public_ip = listener->relay_ip;
    }
  }
  if (public_ip && public_ip->family() != request.family) public_ip.reset();
  if (ip.family() != request.family) {
    // REQUESTED-ADDRESS-FAMILY of the other family: an address of that family on the same
    // interface (IPv4 127.0.0.1 for a listener on ::1, say).
    const auto other =
        dataplane_ ? dataplane_->interfaces.sibling(ip, request.family) : std::nullopt;
    if (!other) {
      return makeError(Error::Code::kUnsupported, "no relay address of the requested family");
    }
    ip = *other;
  }
  if (request.protocol == TransportProtocol::kTcp) {
    auto grant = openTcp(request.allocation, listener, ip);
    if (grant) grant->relayed_public_ip = public_ip;
    return grant;
  }

  const int64_t now = unixNow();
  net::UdpSocket socket;
  std::optional<uint64_t> token;
  if (request.reservation_token) {
    auto reserved = reservations_.take(*request.reservation_token, now);
    if (!reserved) return makeError(Error::Code::kNotFound, "unknown or expired token");
    if (reserved->socket.fd() < 0) {  // a shared port, reserved by this worker or another
      if (shared_ == nullptr || !shared_->deliverTo(reserved->address, worker_)) {
        if (shared_ != nullptr) shared_->release(reserved->address);
        return makeError(Error::Code::kExhausted, "the reserved relay port cannot be served");
      }
      return adoptShared(request.allocation, reserved->address, public_ip);
    }
    socket = std::move(reserved->socket);
  } else if (shared_ != nullptr && listener != nullptr && listener->min_relay_port != 0) {
    return openShared(request, *listener, ip, public_ip);
  } else {
    net::UdpSocket next;
    auto bound = bindRelay(listener, ip, request.even_port, request.dont_fragment,
                           request.reserve_next ? &next : nullptr);
    if (!bound) return bound.error();
    socket = std::move(*bound);
    if (request.reserve_next) {
      const TransportAddress address = next.localAddress();
      token = reservations_.reserve({std::move(next), address}, now);
    }
  }

  const turn::AllocationId id = request.allocation;
  if (auto watched = watch(id, socket); !watched) return watched.error();
  if (slots_.size() <= id.index) slots_.resize(id.index + 1);
  turn::RelayGrant grant;
  grant.relayed = socket.localAddress();
  grant.relayed_public_ip = public_ip;
  grant.reservation_token = token;
  slots_[id.index] = Slot{id, std::move(socket), {}, {}, {}, {}, {}};

  if (request.additional_ipv6) {
    // The IPv6 half of a dual allocation, on the same interface. Failing it keeps the IPv4 half.
    const auto v6 =
        dataplane_ ? dataplane_->interfaces.sibling(ip, AddressFamily::kIPv6) : std::nullopt;
    Result<net::UdpSocket> additional =
        v6 ? bindRelay(listener, *v6, false, false, nullptr)
           : Result<net::UdpSocket>(makeError(Error::Code::kUnsupported, "no IPv6 address"));
    if (additional) {
      if (auto watched = watch(id, *additional); watched) {
        grant.additional = additional->localAddress();
        slots_[id.index].additional = std::move(*additional);
      } else {
        grant.additional_error = watched.error().code;
      }
    } else {
      grant.additional_error = additional.error().code;
    }
  }
  return grant;
}

Result<turn::RelayGrant> RelaySockets::openShared(const turn::RelayRequest& request,
                                                  const ListenerSpec& listener, const IpAddress& ip,
                                                  const std::optional<IpAddress>& public_ip) {
  // The ports of the UDP-based listeners bound to an address or to every address.
  auto exclude = [&](const IpAddress& on) {
    excluded_ports_.clear();
    for (const ListenerSpec& l : dataplane_->listeners) {
      if (l.protocol == TransportProtocol::kUdp && (l.bind.ip.isUnspecified() || l.bind.ip == on))
        excluded_ports_.push_back(l.bind.port);
    }
    return std::span<const uint16_t>(excluded_ports_);
  };
  TransportAddress next;
  auto taken =
      shared_->take(ip, listener.min_relay_port, listener.max_relay_port, request.even_port,
                    next_hint_++, worker_, exclude(ip), request.reserve_next ? &next : nullptr);
  if (!taken) return taken.error();
  auto grant = adoptShared(request.allocation, *taken, public_ip);
  if (!grant) return grant;
  if (request.reserve_next) grant->reservation_token = reservations_.reserve({{}, next}, unixNow());
  if (request.additional_ipv6) {
    // The IPv6 half of a dual allocation, on the same interface. Failing it keeps the IPv4 half.
    const auto v6 =
        dataplane_ ? dataplane_->interfaces.sibling(ip, AddressFamily::kIPv6) : std::nullopt;
    auto additional =
        v6 ? shared_->take(*v6, listener.min_relay_port, listener.max_relay_port, false,
                           next_hint_++, worker_, exclude(*v6))
           : Result<TransportAddress>(makeError(Error::Code::kUnsupported, "no IPv6 address"));
    if (additional) {
      slots_[request.allocation.index].shared_additional = *additional;
      by_address_[*additional] = request.allocation;
      grant->additional = *additional;
    } else {
      grant->additional_error = additional.error().code;
    }
  }
  return grant;
}

Result<turn::RelayGrant> RelaySockets::adoptShared(turn::AllocationId id,
                                                   const TransportAddress& relayed,
                                                   const std::optional<IpAddress>& public_ip) {
  if (slots_.size() <= id.index) slots_.resize(id.index + 1);
  Slot& slot = slots_[id.index];
  slot = Slot{};
  slot.id = id;
  slot.shared = relayed;
  by_address_[relayed] = id;
  turn::RelayGrant grant;
  grant.relayed = relayed;
  grant.relayed_public_ip = public_ip;
  return grant;
}

void RelaySockets::releaseShared(Slot& slot) {
  for (const TransportAddress* a : {&slot.shared, &slot.shared_additional}) {
    if (a->port == 0) continue;
    by_address_.erase(*a);
    shared_->release(*a);
  }
}

Result<turn::RelayGrant> RelaySockets::openTcp(turn::AllocationId id, const ListenerSpec* listener,
                                               const IpAddress& ip) {
  // The listener's relay port range, from a per-worker hint, as for UDP relays; without a range
  // the kernel picks.
  const bool ranged = listener != nullptr && listener->min_relay_port != 0;
  const uint32_t span = ranged ? listener->max_relay_port - listener->min_relay_port + 1u : 1u;
  const uint32_t tries = std::min<uint32_t>(span, 64);
  Result<net::FileDescriptor> listening = makeError(Error::Code::kExhausted, "no free relay port");
  for (uint32_t attempt = 0; attempt < tries; ++attempt) {
    const uint16_t port =
        ranged ? static_cast<uint16_t>(listener->min_relay_port + next_hint_++ % span) : 0;
    listening = net::listenTcp(TransportAddress{ip, port}, {.reuse_port = true, .backlog = 64});
    if (listening) break;
  }
  if (!listening) return makeError(Error::Code::kExhausted, listening.error().message);
  const int fd = listening->get();
  auto added = loop_.add(fd, EPOLLIN, [this, id, fd](uint32_t) { on_acceptable_(id, fd); });
  if (!added) return added.error();
  if (slots_.size() <= id.index) slots_.resize(id.index + 1);
  Slot& slot = slots_[id.index];
  slot = Slot{};
  slot.id = id;
  slot.tcp_address = *net::localAddress(fd);
  slot.tcp = std::move(*listening);
  turn::RelayGrant grant;
  grant.relayed = slot.tcp_address;
  return grant;
}

bool RelaySockets::connectPeer(turn::AllocationId allocation, turn::ConnectionId id,
                               const TransportAddress& peer) {
  const Slot* slot = slotOf(allocation);
  if (slot == nullptr || !slot->tcp.valid()) return false;
  return links_.connect(allocation, id, slot->tcp_address, peer, std::chrono::steady_clock::now());
}

Result<void> RelaySockets::watch(turn::AllocationId id, const net::UdpSocket& socket) {
  const int fd = socket.fd();
  return loop_.add(fd, EPOLLIN, [this, id, fd](uint32_t) { on_readable_(id, fd); });
}

void RelaySockets::close(turn::AllocationId allocation) {
  Slot* slot = slotOf(allocation);
  if (slot == nullptr) return;
  if (slot->shared.port != 0) {
    releaseShared(*slot);
    *slot = Slot{};
    return;
  }
  if (slot->tcp.valid()) {
    loop_.remove(slot->tcp.get());
    links_.closeAllocation(allocation);  // its peer connections and their data connections
  } else {
    loop_.remove(slot->socket.fd());
  }
  if (slot->additional.fd() >= 0) {
    loop_.remove(slot->additional.fd());
  }
  *slot = Slot{};
}

namespace {

// A relay between two workers. Closes what it holds if it is never attached.
struct MovingRelay : turn::RelayHandle {
  net::UdpSocket socket;
  net::UdpSocket additional;
  TransportAddress shared;
  TransportAddress shared_additional;
  SharedRelayPorts* ports = nullptr;
  ~MovingRelay() override {
    for (const TransportAddress* a : {&shared, &shared_additional}) {
      if (a->port != 0 && ports != nullptr) ports->release(*a);
    }
  }
};

}  // namespace

std::unique_ptr<turn::RelayHandle> RelaySockets::detach(turn::AllocationId allocation) {
  Slot* slot = slotOf(allocation);
  if (slot == nullptr || slot->tcp.valid()) return nullptr;
  auto relay = std::make_unique<MovingRelay>();
  if (slot->shared.port != 0) {
    relay->shared = slot->shared;
    relay->shared_additional = slot->shared_additional;
    relay->ports = shared_;
    by_address_.erase(slot->shared);
    if (slot->shared_additional.port != 0) by_address_.erase(slot->shared_additional);
  }
  if (slot->socket.fd() >= 0) loop_.remove(slot->socket.fd());
  if (slot->additional.fd() >= 0) loop_.remove(slot->additional.fd());
  relay->socket = std::move(slot->socket);
  relay->additional = std::move(slot->additional);
  *slot = Slot{};
  return relay;
}

void RelaySockets::attach(turn::AllocationId allocation, std::unique_ptr<turn::RelayHandle> relay) {
  auto* moving = dynamic_cast<MovingRelay*>(relay.get());
  if (moving == nullptr) return;
  if (slots_.size() <= allocation.index) slots_.resize(allocation.index + 1);
  Slot& slot = slots_[allocation.index];
  slot = Slot{};
  slot.id = allocation;
  for (net::UdpSocket* s : {&moving->socket, &moving->additional}) {
    if (s->fd() < 0) continue;
    if (auto watched = watch(allocation, *s); !watched) {
      spdlog::warn("a moved allocation's relay socket: {}", watched.error().message);
    }
  }
  slot.socket = std::move(moving->socket);
  slot.additional = std::move(moving->additional);
  for (const auto& [from, to] : {std::pair{&moving->shared, &slot.shared},
                                 std::pair{&moving->shared_additional, &slot.shared_additional}}) {
    if (from->port == 0 || shared_ == nullptr) continue;
    *to = *from;
    by_address_[*to] = allocation;
    shared_->deliverTo(*to, worker_);
    *from = {};  // the slot holds it now
  }
}

void RelaySockets::closeFamily(turn::AllocationId allocation, AddressFamily family) {
  Slot* found = slotOf(allocation);
  if (found == nullptr) return;
  Slot& slot = *found;
  if (slot.shared.port != 0) {
    if (slot.shared_additional.port == 0) return;  // not a dual allocation: close() ends it
    TransportAddress& gone =
        slot.shared.ip.family() == family ? slot.shared : slot.shared_additional;
    if (gone.ip.family() != family) return;
    by_address_.erase(gone);
    shared_->release(gone);
    if (&gone == &slot.shared) slot.shared = slot.shared_additional;
    slot.shared_additional = {};
    return;
  }
  if (slot.additional.fd() < 0) return;  // not a dual allocation: close() ends it
  if (slot.socket.localAddress().ip.family() == family) {
    loop_.remove(slot.socket.fd());
    slot.socket = std::move(slot.additional);
  } else if (slot.additional.localAddress().ip.family() == family) {
    loop_.remove(slot.additional.fd());
  } else {
    return;
  }
  slot.additional = net::UdpSocket{};
}

}  // namespace kturn::worker
