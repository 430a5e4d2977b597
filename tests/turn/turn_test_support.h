// Test support for the sans-I/O TURN core: the fake relay allocator (tests/support/), a
// simulated clock and a minimal long-term-credential client that builds requests and reads
// responses.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "stun/attributes.h"
#include "stun/integrity.h"
#include "stun/message.h"
#include "stun/message_builder.h"
#include "support/fake_relays.h"
#include "support/turn_request.h"
#include "turn/server.h"

namespace kturn::turn::testing {

using ::kturn::testing::FakeRelays;

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
  // own. `over_capacity`: the process's over-the-marks flag (the daemon's HealthState); null:
  // never over.
  void reset(ServerConfig config, UserQuota* user_quota = nullptr,
             const std::atomic<bool>* over_capacity = nullptr) {
    Server::Options options;
    options.user_quota = user_quota;
    options.over_capacity = over_capacity;
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

  using Fill = ::kturn::testing::Fill;

  // Builds a request; `auth` adds USERNAME/REALM/NONCE/MESSAGE-INTEGRITY with the current
  // credentials and nonce. A new transaction ID unless `txid` is given.
  std::vector<uint8_t> buildRequest(stun::Method method, const Fill& fill, bool auth = true,
                                    stun::MessageClass cls = stun::MessageClass::kRequest,
                                    std::optional<stun::TransactionId> reuse = std::nullopt) {
    stun::TransactionId txid{};
    txid[0] = static_cast<uint8_t>(++txid_counter_);
    txid[1] = static_cast<uint8_t>(txid_counter_ >> 8);
    if (reuse) txid = *reuse;
    last_txid_ = txid;
    const auto key = stun::longTermKey(username_, realm_, password_);
    ::kturn::testing::TurnRequest request{
        .method = method, .cls = cls, .transaction_id = txid, .fill = fill};
    if (auth) {
      request.credentials = {
          .username = username_, .realm = realm_, .nonce = nonce_, .key = key.span()};
    }
    return *::kturn::testing::buildRequest(request);
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
