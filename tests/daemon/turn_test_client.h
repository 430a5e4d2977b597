// A minimal blocking TURN client over a real loopback UDP socket, for in-process daemon tests:
// Binding, Allocate with the long-term credential handshake (401 → retry with NONCE), Refresh,
// CreatePermission and Send indications.
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "net/sockaddr.h"
#include "net/udp_socket.h"
#include "stun/attributes.h"
#include "stun/integrity.h"
#include "stun/message.h"
#include "stun/message_builder.h"

namespace kturn::daemon::testing {

inline uint16_t freeUdpPort() {
  auto s = net::UdpSocket::bind(*TransportAddress::parse("127.0.0.1:0"), {});
  return s ? s->localAddress().port : 0;
}

class TurnTestClient {
 public:
  // Outcome of a request: a response class and error code, or no answer in time.
  struct Outcome {
    bool answered = false;
    bool success = false;
    int error = 0;
    std::optional<TransportAddress> mapped;   // XOR-MAPPED-ADDRESS
    std::optional<TransportAddress> relayed;  // XOR-RELAYED-ADDRESS
  };

  TurnTestClient(TransportAddress server, std::string username, std::string password)
      : server_(server), username_(std::move(username)), password_(std::move(password)) {
    // A loopback socket of the server's family.
    auto bound = net::UdpSocket::bind(
        *TransportAddress::parse(server.ip.isV4() ? "127.0.0.1:0" : "[::1]:0"), {});
    if (bound) socket_ = std::move(*bound);
  }

  TransportAddress local() const { return socket_.localAddress(); }

  Outcome binding() { return transact(stun::Method::kBinding, false, {}); }

  // Allocate (UDP), answering the 401 challenge once as clients do.
  Outcome allocate() {
    const Outcome first = transact(stun::Method::kAllocate, !nonce_.empty(), {});
    if (!first.answered || first.error != 401) return first;
    return transact(stun::Method::kAllocate, true, {});
  }

  Outcome refresh(uint32_t lifetime) {
    Outcome o = transact(stun::Method::kRefresh, true, lifetime);
    if (o.error == 438) o = transact(stun::Method::kRefresh, true, lifetime);  // stale nonce
    return o;
  }

  // CreatePermission for `peer`'s address, after allocate().
  Outcome createPermission(const TransportAddress& peer) {
    Outcome o = transact(stun::Method::kCreatePermission, true, {}, peer);
    if (o.error == 438) o = transact(stun::Method::kCreatePermission, true, {}, peer);
    return o;
  }

  // A Send indication relaying `data` to `peer` (RFC 8656 §11.1); nothing answers it.
  void sendIndication(const TransportAddress& peer, std::span<const uint8_t> data) {
    stun::TransactionId txid{};
    txid[0] = static_cast<uint8_t>(++txid_counter_);
    uint8_t buf[1500];
    stun::MessageBuilder b(buf, stun::Method::kSend, stun::MessageClass::kIndication, txid);
    b.addXorAddress(stun::attr::kXorPeerAddress, peer).add(stun::attr::kData, data);
    b.addFingerprint();
    const auto bytes = *b.finish();
    sockaddr_storage ss;
    const socklen_t len = net::toSockaddr(server_, ss);
    ::sendto(socket_.fd(), bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&ss), len);
  }

 private:
  Outcome transact(stun::Method method, bool auth, std::optional<uint32_t> lifetime,
                   std::optional<TransportAddress> peer = std::nullopt) {
    stun::TransactionId txid{};
    const uint32_t n = ++txid_counter_;
    for (size_t i = 0; i < 4; ++i) txid[i] = static_cast<uint8_t>(n >> (8 * i));
    uint8_t buf[512];
    stun::MessageBuilder b(buf, method, stun::MessageClass::kRequest, txid);
    if (method == stun::Method::kAllocate) {
      const uint8_t udp[] = {17, 0, 0, 0};
      b.add(stun::attr::kRequestedTransport, udp);
    }
    if (lifetime) b.addUint32(stun::attr::kLifetime, *lifetime);
    if (peer) b.addXorAddress(stun::attr::kXorPeerAddress, *peer);
    if (auth) {
      b.addString(stun::attr::kUsername, username_)
          .addString(stun::attr::kRealm, realm_)
          .addString(stun::attr::kNonce, nonce_)
          .addMessageIntegrity(stun::longTermKey(username_, realm_, password_).span());
    }
    b.addFingerprint();
    const auto bytes = *b.finish();
    sockaddr_storage ss;
    const socklen_t len = net::toSockaddr(server_, ss);
    Outcome outcome;
    // Three tries, 300 ms apart (UDP: a reconfiguring server may miss one).
    for (int attempt = 0; attempt < 3 && !outcome.answered; ++attempt) {
      ::sendto(socket_.fd(), bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&ss), len);
      outcome = await(txid, std::chrono::milliseconds(300));
    }
    return outcome;
  }

  Outcome await(const stun::TransactionId& txid, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{socket_.fd(), POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      uint8_t in[2048];
      const ssize_t got = ::recv(socket_.fd(), in, sizeof in, 0);
      if (got <= 0) continue;
      auto m = stun::MessageView::parse({in, static_cast<size_t>(got)});
      if (!m || !std::equal(txid.begin(), txid.end(), m->transactionId().begin())) continue;
      Outcome o{true, m->messageClass() == stun::MessageClass::kSuccessResponse, 0, {}, {}};
      if (const auto a = m->value(stun::attr::kXorMappedAddress))
        o.mapped = stun::decodeXorAddress(*a, m->xorPad());
      if (const auto a = m->value(stun::attr::kXorRelayedAddress))
        o.relayed = stun::decodeXorAddress(*a, m->xorPad());
      if (const auto e = m->value(stun::attr::kErrorCode))
        o.error = stun::decodeErrorCode(*e)->code;
      if (const auto nonce = m->value(stun::attr::kNonce)) nonce_ = stun::decodeString(*nonce);
      if (const auto realm = m->value(stun::attr::kRealm)) realm_ = stun::decodeString(*realm);
      return o;
    }
    return {};
  }

  TransportAddress server_;
  std::string username_;
  std::string password_;
  std::string realm_;
  std::string nonce_;
  uint32_t txid_counter_ = 0;
  net::UdpSocket socket_;
};

}  // namespace kturn::daemon::testing
