// turn_server_fuzz's world: the listeners, peers and configs the fuzzed TURN core runs under, and
// the fake I/O layer (FakeRelays) that holds its relays and RFC 6062 peer connections the way
// the daemon's RelaySockets and PeerLinks would, checking every call the core makes into it.
#pragma once

#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "fuzz_check.h"
#include "turn/server.h"

namespace kturn::turn::fuzzing {

inline TransportAddress addr(const char* text) { return *TransportAddress::parse(text); }

constexpr ListenerId kListener4 = 7;
constexpr ListenerId kListener6 = 9;
constexpr ListenerId kListenerTcp = 11;  // TURN-TCP: 10.2.0.0/16 is a TCP cluster there

inline const std::array<TransportAddress, 8>& peers() {
  static const std::array<TransportAddress, 8> p = {
      addr("10.2.0.9:5000"),         // routed, any port
      addr("10.2.7.7:6000"),         // routed in configs 0/1, withdrawn in config 2
      addr("10.3.0.5:15000"),        // routed, inside the port range
      addr("10.3.0.5:80"),           // IP routed, port outside the range
      addr("192.0.2.99:1234"),       // not routed
      addr("127.0.0.1:9"),           // not routed (loopback)
      addr("[2001:db8:2::5]:7000"),  // routed IPv6
      addr("[2001:db8:3::5]:7000"),  // not routed IPv6
  };
  return p;
}

inline ListenerPolicy policy(ListenerId id, bool withdrawn) {
  ListenerPolicy l;
  l.id = id;
  l.name = id == kListener4 ? "default/gw/udp" : id == kListener6 ? "default/gw/udp6" : "gw/tcp";
  if (id == kListenerTcp) {
    l.peers.push_back(
        PeerRange{*IpAddress::parse("10.2.0.0"), 16, 0, 65535, 1, TransportProtocol::kTcp});
    l.peers.push_back(PeerRange{*IpAddress::parse("10.3.0.5"), 32, 10000, 20000});
    return l;
  }
  if (withdrawn) {
    l.peers.push_back(PeerRange{*IpAddress::parse("10.2.0.0"), 24, 0, 65535});
    return l;
  }
  l.peers.push_back(PeerRange{*IpAddress::parse("10.2.0.0"), 16, 0, 65535});
  l.peers.push_back(PeerRange{*IpAddress::parse("10.3.0.5"), 32, 10000, 20000});
  l.peers.push_back(PeerRange{*IpAddress::parse("2001:db8:2::"), 48, 0, 65535});
  return l;
}

inline const std::array<ServerConfigPtr, 4>& configs() {
  static const std::array<ServerConfigPtr, 4> c = [] {
    ServerConfig base;
    base.auth_mode = AuthMode::kStatic;
    base.realm = "kturn.test";
    base.static_username = "user1";
    base.static_password = "pass1";
    base.shared_secret = "s3cret";
    base.listeners = {policy(kListener4, false), policy(kListener6, false),
                      policy(kListenerTcp, false)};

    ServerConfig ephemeral = base;
    ephemeral.auth_mode = AuthMode::kEphemeral;
    ephemeral.max_allocations_per_user = 2;
    ephemeral.max_allocations = 3;
    ephemeral.software = "";
    ephemeral.lifetimes = {Seconds(30), Seconds(120), Seconds(20), Seconds(40), Seconds(15)};
    ephemeral.allocation_bytes_per_second = 4000;
    ephemeral.listener_bytes_per_second = 40000;

    ServerConfig withdrawn = base;
    withdrawn.listeners = {policy(kListener4, true)};

    ServerConfig none = base;
    none.auth_mode = AuthMode::kNone;
    return std::array<ServerConfigPtr, 4>{
        std::make_shared<const ServerConfig>(base),
        std::make_shared<const ServerConfig>(ephemeral),
        std::make_shared<const ServerConfig>(withdrawn),
        std::make_shared<const ServerConfig>(none),
    };
  }();
  return c;
}

// Hands out 10.1.0.1:<port> or [2001:db8:ffff::1]:<port>, at most kMaxOpen at a time.
// Not tests/support/fake_relays.h: this one is a model that checks each call (FUZZ_CHECK) against
// the relays and connections it holds and the server's config, where that one records calls.
class FakeRelays : public RelayAllocator {
 public:
  static constexpr size_t kMaxOpen = 6;
  static constexpr uint64_t kToken = 0xABCD;
  struct Open {
    AllocationId id;
    FiveTuple five_tuple;
    ListenerId listener;
    TransportAddress relayed;
    std::optional<TransportAddress> additional;  // a dual allocation's IPv6 relay
    bool tcp = false;                            // RFC 6062
  };
  // A peer connection as the daemon's PeerLinks holds it.
  struct Connection {
    AllocationId allocation;
    TransportAddress peer;
    PeerConnection::State state = PeerConnection::State::kConnecting;
    ConnectionTraffic uncounted;  // relayed, not yet taken by the core
  };
  // The config the server runs, for checking connects against its TCP clusters.
  const ServerConfig* config = nullptr;

  Result<RelayGrant> open(const RelayRequest& request) override {
    FUZZ_CHECK(!open_.contains(request.allocation.index));
    if (open_.size() >= kMaxOpen) return makeError(Error::Code::kExhausted, "no ports");
    if (request.reservation_token && *request.reservation_token != kToken) {
      return makeError(Error::Code::kNotFound, "unknown token");
    }
    RelayGrant grant;
    grant.relayed = next(request.family);
    if (request.reserve_next) grant.reservation_token = kToken;
    // Every other dual allocation finds no IPv6 port.
    if (request.additional_ipv6 && (dual_requests_++ % 2) == 0) {
      grant.additional = next(AddressFamily::kIPv6);
    } else if (request.additional_ipv6) {
      grant.additional_error = Error::Code::kExhausted;
    }
    open_[request.allocation.index] =
        Open{request.allocation, request.five_tuple, request.listener,
             grant.relayed,      grant.additional,   request.protocol == TransportProtocol::kTcp};
    return grant;
  }
  void close(AllocationId id) override {
    const auto it = open_.find(id.index);
    if (it != open_.end() && it->second.id == id) open_.erase(it);
    std::erase_if(connections_, [id](const auto& c) { return c.second.allocation == id; });
  }
  // RFC 8016 moves within the one core the fuzzer drives: the relay keeps its addresses.
  struct Handle : RelayHandle {
    Open open;
  };
  std::unique_ptr<RelayHandle> detach(AllocationId id) override {
    const auto it = open_.find(id.index);
    FUZZ_CHECK(it != open_.end() && it->second.id == id && !it->second.tcp);
    auto handle = std::make_unique<Handle>();
    handle->open = it->second;
    open_.erase(it);
    return handle;
  }
  void attach(AllocationId id, std::unique_ptr<RelayHandle> relay) override {
    auto* handle = dynamic_cast<Handle*>(relay.get());
    FUZZ_CHECK(handle != nullptr && !open_.contains(id.index));
    handle->open.id = id;
    open_[id.index] = handle->open;
  }
  void closeFamily(AllocationId id, AddressFamily family) override {
    const auto it = open_.find(id.index);
    FUZZ_CHECK(it != open_.end() && it->second.id == id && it->second.additional);
    Open& o = it->second;
    if (o.relayed.family() == family) o.relayed = *o.additional;
    o.additional.reset();
  }
  // RFC 6062. A connect starts only for a TCP allocation, toward a peer one of the TCP clusters
  // of its listener admits; one to port 6000 fails at once.
  bool connectPeer(AllocationId allocation, ConnectionId id,
                   const TransportAddress& peer) override {
    const Open* o = find(allocation);
    FUZZ_CHECK(o != nullptr && o->tcp);
    FUZZ_CHECK(id != 0 && !connections_.contains(id));
    const ListenerPolicy* policy = config->listener(o->listener);
    FUZZ_CHECK(policy != nullptr && policy->admittingTcp(peer) != nullptr);
    if (peer.port == 6000) return false;
    connections_[id] = Connection{allocation, peer, PeerConnection::State::kConnecting, {}};
    return true;
  }
  void bindConnection(ConnectionId id, const FiveTuple& data) override {
    const auto it = connections_.find(id);
    FUZZ_CHECK(it != connections_.end());
    FUZZ_CHECK(it->second.state == PeerConnection::State::kPendingBind);
    it->second.state = PeerConnection::State::kBound;
    last_bind_ = data;
    ++binds_;
  }
  void closeConnection(ConnectionId id) override { connections_.erase(id); }
  ConnectionTraffic takeConnectionTraffic(ConnectionId id) override {
    const auto it = connections_.find(id);
    return it == connections_.end() ? ConnectionTraffic{} : std::exchange(it->second.uncounted, {});
  }

  // The harness plays the I/O layer's part: what the sockets did.
  std::map<ConnectionId, Connection>& connections() { return connections_; }
  Connection* connection(ConnectionId id) {
    const auto it = connections_.find(id);
    return it != connections_.end() ? &it->second : nullptr;
  }
  // The `sel`-th connection (wrapping), or nothing when there are none.
  std::optional<ConnectionId> pickConnection(uint8_t sel) const {
    if (connections_.empty()) return std::nullopt;
    auto it = connections_.begin();
    std::advance(it, sel % connections_.size());
    return it->first;
  }
  uint32_t binds() const { return binds_; }
  const FiveTuple& lastBind() const { return last_bind_; }

  const std::map<uint32_t, Open>& open() const { return open_; }
  const Open* find(AllocationId id) const {
    const auto it = open_.find(id.index);
    return it != open_.end() && it->second.id == id ? &it->second : nullptr;
  }

 private:
  TransportAddress next(AddressFamily family) {
    const IpAddress ip = family == AddressFamily::kIPv4 ? IpAddress::v4(0x0A010001)
                                                        : *IpAddress::parse("2001:db8:ffff::1");
    const TransportAddress relayed{ip, next_port_};
    next_port_ = static_cast<uint16_t>(next_port_ + 2);
    return relayed;
  }

  std::map<uint32_t, Open> open_;
  std::map<ConnectionId, Connection> connections_;
  FiveTuple last_bind_{};
  uint32_t binds_ = 0;
  uint16_t next_port_ = 49152;
  uint32_t dual_requests_ = 0;
};

}  // namespace kturn::turn::fuzzing
