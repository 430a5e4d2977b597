// Drives the sans-I/O TURN core for micro-benchmarks the way tests/turn/turn_test_support.h does
// for tests (that header pulls in gtest; the fake relay allocator and the request builder are
// shared from tests/support/): a clock the benchmark advances, and clients that allocate, permit
// and bind.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
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

namespace kturn::bench::micro {

inline constexpr turn::ListenerId kListener = 1;
inline const TransportAddress kPeer = *TransportAddress::parse("10.2.0.9:5000");
inline const TransportAddress kServerAddress = *TransportAddress::parse("198.51.100.1:3478");

inline turn::ServerConfigPtr benchConfig() {
  turn::ServerConfig c;
  c.auth_mode = turn::AuthMode::kStatic;
  c.realm = "kturn.bench";
  c.static_username = "user1";
  c.static_password = "pass1";
  turn::ListenerPolicy l;
  l.id = kListener;
  l.name = "bench/gw/udp";
  l.peers.push_back(turn::PeerRange{*IpAddress::parse("10.2.0.0"), 16, 0, 65535});
  c.listeners.push_back(l);
  return std::make_shared<const turn::ServerConfig>(std::move(c));
}

inline FiveTuple clientTuple(uint32_t n) {
  return FiveTuple{TransportProtocol::kUdp,
                   TransportAddress{IpAddress::v4(0xC0000000 | (n >> 14)),
                                    static_cast<uint16_t>(1024 + (n & 0x3FFF))},
                   kServerAddress};
}

class Harness {
 public:
  Harness() {
    relays.record = false;  // the benchmarks open and close millions of relays
    turn::Server::Options options;
    for (size_t i = 0; i < options.nonce_key.size(); ++i) options.nonce_key[i] = uint8_t(i * 13);
    server = std::make_unique<turn::Server>(benchConfig(), relays, options);
    key = stun::longTermKey("user1", "kturn.bench", "pass1");
  }

  // A request from `tuple`; with credentials when `nonce` is set.
  std::vector<uint8_t> request(stun::Method method, const std::string& nonce,
                               const testing::Fill& fill) {
    stun::TransactionId txid{};
    ++txid_counter;
    for (size_t i = 0; i < 8; ++i) txid[i] = static_cast<uint8_t>(txid_counter >> (8 * i));
    testing::TurnRequest request{.method = method, .transaction_id = txid, .fill = fill};
    if (!nonce.empty()) {
      request.credentials = {
          .username = "user1", .realm = "kturn.bench", .nonce = nonce, .key = key.span()};
    }
    return *testing::buildRequest(request);
  }

  // Feeds one datagram from `tuple`; returns the first reply to the client, if any.
  std::optional<std::vector<uint8_t>> feed(const FiveTuple& tuple, std::span<const uint8_t> bytes) {
    actions.clear();
    server->onClientPacket(kListener, tuple, bytes, now, actions);
    if (actions.to_clients.empty()) return std::nullopt;
    const auto& d = actions.to_clients[0].data;
    return std::vector<uint8_t>(d.begin(), d.end());
  }

  static std::string nonceOf(const std::vector<uint8_t>& reply) {
    auto m = stun::MessageView::parse(reply);
    if (!m) return {};
    auto v = m->value(stun::attr::kNonce);
    return v ? std::string(stun::decodeString(*v)) : std::string();
  }

  static std::vector<uint8_t> allocateBody(stun::MessageBuilder& b) {
    const uint8_t udp[] = {17, 0, 0, 0};
    b.add(stun::attr::kRequestedTransport, udp);
    return {};
  }

  // Allocate (401 then authenticated), CreatePermission and ChannelBind for `tuple`.
  // Returns the nonce the client holds, empty on failure.
  std::string allocateAndBind(const FiveTuple& tuple, uint16_t channel, bool bind = true) {
    auto alloc = [](stun::MessageBuilder& b) { allocateBody(b); };
    auto probe = request(stun::Method::kAllocate, "", alloc);
    auto challenge = feed(tuple, probe);
    if (!challenge) return {};
    const std::string nonce = nonceOf(*challenge);
    auto ok = feed(tuple, request(stun::Method::kAllocate, nonce, alloc));
    if (!ok || !isSuccess(*ok)) return {};
    auto perm =
        feed(tuple, request(stun::Method::kCreatePermission, nonce, [](stun::MessageBuilder& b) {
               b.addXorAddress(stun::attr::kXorPeerAddress, kPeer);
             }));
    if (!perm || !isSuccess(*perm)) return {};
    if (bind) {
      auto cb = feed(tuple,
                     request(stun::Method::kChannelBind, nonce, [channel](stun::MessageBuilder& b) {
                       const uint8_t number[] = {uint8_t(channel >> 8), uint8_t(channel), 0, 0};
                       b.add(stun::attr::kChannelNumber, number);
                       b.addXorAddress(stun::attr::kXorPeerAddress, kPeer);
                     }));
      if (!cb || !isSuccess(*cb)) return {};
    }
    return nonce;
  }

  static bool isSuccess(const std::vector<uint8_t>& reply) {
    auto m = stun::MessageView::parse(reply);
    return m && m->messageClass() == stun::MessageClass::kSuccessResponse;
  }

  testing::FakeRelays relays;
  std::unique_ptr<turn::Server> server;
  turn::Actions actions;
  turn::Now now{turn::MonoTime(std::chrono::hours(1000)), 1'800'000'000};
  stun::IntegrityKey key;
  uint64_t txid_counter = 0;
};

}  // namespace kturn::bench::micro
