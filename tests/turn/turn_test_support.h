// Test support for the sans-I/O TURN core: a fake relay allocator, a simulated clock and a
// minimal long-term-credential client that builds requests and reads responses.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stun/attributes.h"
#include "stun/integrity.h"
#include "stun/message.h"
#include "stun/message_builder.h"
#include "turn/server.h"

namespace kturn::turn::testing {

// Hands out 10.1.0.1:<49152+n> (IPv4 only, like a listener without IPv6; with `ipv6`, also
// fd00::1:<49152+n>), remembers what it was asked and what was closed.
class FakeRelays : public RelayAllocator {
 public:
  Result<RelayGrant> open(const RelayRequest& request) override {
    requests.push_back(request);
    if (exhausted) return makeError(Error::Code::kExhausted, "no ports");
    if (request.family != AddressFamily::kIPv4 && !ipv6) {
      return makeError(Error::Code::kUnsupported, "IPv4 only");
    }
    if (request.reservation_token && *request.reservation_token != 0xABCD) {
      return makeError(Error::Code::kNotFound, "unknown token");
    }
    RelayGrant grant;
    grant.relayed = next(request.family);
    if (request.reserve_next) grant.reservation_token = 0xABCD;
    if (request.additional_ipv6) {
      if (!ipv6) {
        grant.additional_error = Error::Code::kUnsupported;
      } else if (ipv6_exhausted) {
        grant.additional_error = Error::Code::kExhausted;
      } else {
        grant.additional = next(AddressFamily::kIPv6);
      }
    }
    open_relays[request.allocation.index] = grant.relayed;
    return grant;
  }
  void close(AllocationId id) override {
    closed.push_back(id);
    open_relays.erase(id.index);
  }
  void closeFamily(AllocationId id, AddressFamily family) override {
    closed_families.push_back({id, family});
  }
  // RFC 8016: the relay travels with its address; `moves` records (from, to).
  struct Handle : RelayHandle {
    AllocationId from;
    TransportAddress relayed;
  };
  std::unique_ptr<RelayHandle> detach(AllocationId id) override {
    const auto it = open_relays.find(id.index);
    if (it == open_relays.end()) return nullptr;
    auto handle = std::make_unique<Handle>();
    handle->from = id;
    handle->relayed = it->second;
    open_relays.erase(it);
    return handle;
  }
  void attach(AllocationId id, std::unique_ptr<RelayHandle> relay) override {
    auto* handle = dynamic_cast<Handle*>(relay.get());
    if (handle == nullptr) return;
    open_relays[id.index] = handle->relayed;
    moves.push_back({handle->from, id});
  }
  std::vector<std::pair<AllocationId, AllocationId>> moves;
  bool connectPeer(AllocationId allocation, ConnectionId id,
                   const TransportAddress& peer) override {
    if (refuse_connect) return false;
    connecting.push_back({allocation, id, peer});
    return true;
  }
  void bindConnection(ConnectionId id, const FiveTuple& data) override {
    bound.push_back({id, data});
  }
  void closeConnection(ConnectionId id) override { closed_connections.push_back(id); }
  ConnectionTraffic takeConnectionTraffic(ConnectionId id) override {
    return std::exchange(traffic[id], {});
  }

  struct Connecting {
    AllocationId allocation;
    ConnectionId id;
    TransportAddress peer;
  };

  bool exhausted = false;
  bool refuse_connect = false;  // connectPeer() fails at once
  std::vector<Connecting> connecting;
  std::vector<std::pair<ConnectionId, FiveTuple>> bound;
  std::vector<ConnectionId> closed_connections;
  std::map<ConnectionId, ConnectionTraffic> traffic;  // what "the links" relayed, not yet taken
  bool ipv6 = false;
  bool ipv6_exhausted = false;
  uint16_t next_port = 49152;
  std::vector<RelayRequest> requests;
  std::vector<AllocationId> closed;
  std::vector<std::pair<AllocationId, AddressFamily>> closed_families;
  std::map<uint32_t, TransportAddress> open_relays;

 private:
  TransportAddress next(AddressFamily family) {
    const IpAddress ip =
        family == AddressFamily::kIPv4 ? IpAddress::v4(0x0A010001) : *IpAddress::parse("fd00::1");
    return TransportAddress{ip, next_port++};
  }
};

// A response or indication the server produced, parsed.
struct Reply {
  std::vector<uint8_t> bytes;
  stun::MessageView view() const { return *stun::MessageView::parse(bytes); }
  stun::MessageClass cls() const { return view().messageClass(); }
  int errorCode() const {
    const auto v = view().value(stun::attr::kErrorCode);
    return v ? stun::decodeErrorCode(*v)->code : 0;
  }
  std::optional<TransportAddress> xorAddress(uint16_t type) const {
    auto m = view();
    const auto v = m.value(type);
    return v ? stun::decodeXorAddress(*v, m.xorPad()) : std::nullopt;
  }
  std::optional<uint32_t> uint32(uint16_t type) const {
    const auto v = view().value(type);
    return v ? stun::decodeUint32(*v) : std::nullopt;
  }
  std::string string(uint16_t type) const {
    const auto v = view().value(type);
    return v ? std::string(stun::decodeString(*v)) : std::string();
  }
};

class TurnTest : public ::testing::Test {
 protected:
  static constexpr ListenerId kListener = 7;

  TurnTest() { reset(staticConfig()); }

  static ServerConfig staticConfig() {
    ServerConfig c;
    c.auth_mode = AuthMode::kStatic;
    c.realm = "kturn.test";
    c.static_username = "user1";
    c.static_password = "pass1";
    c.shared_secret = "s3cret";
    ListenerPolicy l;
    l.id = kListener;
    l.name = "default/gw/udp";
    // Pods on 10.2.0.0/16, any port; one media server restricted to ports 10000-20000.
    l.peers.push_back(PeerRange{*IpAddress::parse("10.2.0.0"), 16, 0, 65535});
    l.peers.push_back(PeerRange{*IpAddress::parse("10.3.0.5"), 32, 10000, 20000});
    c.listeners.push_back(l);
    return c;
  }

  // `user_quota`: shared with other cores (as the daemon's workers share one); null: the core's
  // own.
  void reset(ServerConfig config, UserQuota* user_quota = nullptr) {
    Server::Options options;
    options.user_quota = user_quota;
    for (size_t i = 0; i < options.nonce_key.size(); ++i) options.nonce_key[i] = uint8_t(i * 7);
    options.connection_id_prefix = connection_prefix_;
    server_ = std::make_unique<Server>(std::make_shared<const ServerConfig>(std::move(config)),
                                       relays_, options);
    nonce_.clear();
  }

  void applyConfig(ServerConfig config) {
    server_->applyConfig(std::make_shared<const ServerConfig>(std::move(config)));
  }

  // The simulated clock.
  void advance(Seconds s) {
    now_.mono += s;
    now_.unix_seconds += s.count();
    server_->onTick(now_);
  }

  using Fill = std::function<void(stun::MessageBuilder&)>;

  // Builds a request; `auth` adds USERNAME/REALM/NONCE/MESSAGE-INTEGRITY with the current
  // credentials and nonce. A new transaction ID unless `txid` is given.
  std::vector<uint8_t> buildRequest(stun::Method method, const Fill& fill, bool auth = true,
                                    stun::MessageClass cls = stun::MessageClass::kRequest,
                                    std::optional<stun::TransactionId> reuse = std::nullopt) {
    uint8_t buf[1500];
    stun::TransactionId txid{};
    txid[0] = static_cast<uint8_t>(++txid_counter_);
    txid[1] = static_cast<uint8_t>(txid_counter_ >> 8);
    if (reuse) txid = *reuse;
    last_txid_ = txid;
    stun::MessageBuilder b(buf, method, cls, txid);
    if (fill) fill(b);
    if (auth) {
      b.addString(stun::attr::kUsername, username_)
          .addString(stun::attr::kRealm, realm_)
          .addString(stun::attr::kNonce, nonce_)
          .addMessageIntegrity(stun::longTermKey(username_, realm_, password_).span());
    }
    b.addFingerprint();
    auto out = *b.finish();
    return {out.begin(), out.end()};
  }

  // Feeds bytes from the client and returns what was sent back to it (at most one reply).
  std::optional<Reply> fromClient(const std::vector<uint8_t>& bytes) {
    input_ = bytes;  // relayed data points into the input until the next call, as in a worker
    actions_.clear();
    server_->onClientPacket(kListener, tuple_, input_, now_, actions_);
    EXPECT_LE(actions_.to_clients.size(), 1u);
    if (actions_.to_clients.empty()) return std::nullopt;
    const auto& s = actions_.to_clients[0];
    EXPECT_EQ(s.client, tuple_.client);
    EXPECT_EQ(s.listener, kListener);
    return Reply{{s.data.begin(), s.data.end()}};
  }

  // Sends a request; on 401/438 with a nonce, remembers it and retries once, as clients do.
  Reply request(stun::Method method, const Fill& fill = {}) {
    auto reply = fromClient(buildRequest(method, fill));
    EXPECT_TRUE(reply);
    if (reply && (reply->errorCode() == 401 || reply->errorCode() == 438) &&
        reply->view().has(stun::attr::kNonce)) {
      nonce_ = reply->string(stun::attr::kNonce);
      reply = fromClient(buildRequest(method, fill));
      EXPECT_TRUE(reply);
    }
    return reply ? *reply : Reply{};
  }

  Reply allocate(const Fill& extra = {}) {
    return request(stun::Method::kAllocate, allocateFill(extra));
  }
  // The last Allocate again, same transaction ID: a retransmission (RFC 8656 §7.2).
  std::optional<Reply> retransmitAllocate(const Fill& extra = {}) {
    return fromClient(buildRequest(stun::Method::kAllocate, allocateFill(extra), true,
                                   stun::MessageClass::kRequest, last_txid_));
  }
  static Fill allocateFill(const Fill& extra) {
    return [extra](stun::MessageBuilder& b) {
      const uint8_t udp[] = {17, 0, 0, 0};
      b.add(stun::attr::kRequestedTransport, udp);
      if (extra) extra(b);
    };
  }

  Reply createPermission(const std::vector<TransportAddress>& peers) {
    return request(stun::Method::kCreatePermission, [&](stun::MessageBuilder& b) {
      for (const auto& p : peers) b.addXorAddress(stun::attr::kXorPeerAddress, p);
    });
  }

  Reply channelBind(uint16_t channel, const TransportAddress& peer) {
    return request(stun::Method::kChannelBind, [&](stun::MessageBuilder& b) {
      const uint8_t number[] = {static_cast<uint8_t>(channel >> 8), static_cast<uint8_t>(channel),
                                0, 0};
      b.add(stun::attr::kChannelNumber, number).addXorAddress(stun::attr::kXorPeerAddress, peer);
    });
  }

  Reply refresh(std::optional<uint32_t> lifetime) {
    return request(stun::Method::kRefresh, [&](stun::MessageBuilder& b) {
      if (lifetime) b.addUint32(stun::attr::kLifetime, *lifetime);
    });
  }

  // A datagram from a peer to the relay of the current client's allocation. Returns what the
  // server sends to the client, if anything.
  std::optional<std::vector<uint8_t>> fromPeer(const TransportAddress& peer,
                                               const std::vector<uint8_t>& payload) {
    Allocation* a = server_->findAllocation(tuple_);
    if (a == nullptr) return std::nullopt;
    std::vector<uint8_t> buffer(PeerPacket::kHeadroom + payload.size() + PeerPacket::kTailroom);
    std::copy(payload.begin(), payload.end(), buffer.begin() + PeerPacket::kHeadroom);
    actions_.clear();
    server_->onPeerPacket(a->id, peer, {buffer, PeerPacket::kHeadroom, payload.size()}, now_,
                          actions_);
    if (actions_.to_clients.empty()) return std::nullopt;
    EXPECT_EQ(actions_.to_clients[0].client, tuple_.client);
    return std::vector<uint8_t>(actions_.to_clients[0].data.begin(),
                                actions_.to_clients[0].data.end());
  }

  // Data the server relayed to peers while handling the last input.
  std::vector<std::pair<TransportAddress, std::vector<uint8_t>>> sentToPeers() const {
    std::vector<std::pair<TransportAddress, std::vector<uint8_t>>> out;
    for (const auto& s : actions_.to_peers) out.push_back({s.peer, {s.data.begin(), s.data.end()}});
    return out;
  }

  FakeRelays relays_;
  std::unique_ptr<Server> server_;
  Actions actions_;
  Now now_{MonoTime(std::chrono::hours(1000)), 1'800'000'000};
  FiveTuple tuple_{TransportProtocol::kUdp, *TransportAddress::parse("192.0.2.10:40000"),
                   *TransportAddress::parse("198.51.100.1:3478")};
  std::string username_ = "user1";
  std::string password_ = "pass1";
  std::string realm_ = "kturn.test";
  std::string nonce_;
  int txid_counter_ = 0;
  stun::TransactionId last_txid_{};
  uint8_t connection_prefix_ = 0;  // Server::Options::connection_id_prefix at reset()
  std::vector<uint8_t> input_;
};

inline TransportAddress addr(const char* text) { return *TransportAddress::parse(text); }

}  // namespace kturn::turn::testing
