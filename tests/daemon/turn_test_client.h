// A minimal blocking TURN client over a real loopback UDP socket, for in-process daemon tests:
// Binding, Allocate (dual too) with the long-term credential handshake (401 → retry with
// NONCE), Refresh, CreatePermission, Send and Data indications.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

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
#include "support/turn_request.h"

namespace kturn::daemon::testing {

inline uint16_t freeUdpPort() {
  auto s = net::UdpSocket::bind(*TransportAddress::parse("127.0.0.1:0"), {});
  return s ? s->localAddress().port : 0;
}

// A loopback port free for TCP (and for UDP) right now: what a TCP listener of a test binds. A
// port only known free for UDP may be some concurrent test's ephemeral TCP port.
inline uint16_t freeTcpPort() {
  for (int attempt = 0; attempt < 64; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sin;
    const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&sin), sizeof sin) == 0 &&
                       ::getsockname(fd, reinterpret_cast<sockaddr*>(&sin), &len) == 0;
    ::close(fd);
    if (!bound) return 0;
    const uint16_t port = ntohs(sin.sin_port);
    if (net::UdpSocket::bind(TransportAddress{IpAddress::v4(0x7F000001), port}, {})) return port;
  }
  return 0;
}

// A UDP peer on loopback: what it received and from where.
struct UdpPeer {
  explicit UdpPeer(const char* ip)
      : socket(net::UdpSocket::bind({*IpAddress::parse(ip), 0}, {}).value()) {}
  TransportAddress address() const { return socket.localAddress(); }

  std::optional<std::pair<TransportAddress, std::string>> receive(
      std::chrono::milliseconds timeout) {
    pollfd p{socket.fd(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
    char in[2048];
    sockaddr_storage from;
    socklen_t from_len = sizeof from;
    const ssize_t got =
        ::recvfrom(socket.fd(), in, sizeof in, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
    if (got < 0) return std::nullopt;
    return std::pair{net::fromSockaddr(reinterpret_cast<const sockaddr*>(&from)),
                     std::string(in, static_cast<size_t>(got))};
  }
  void sendTo(const TransportAddress& to, std::string_view data) {
    sockaddr_storage ss;
    const socklen_t len = net::toSockaddr(to, ss);
    ::sendto(socket.fd(), data.data(), data.size(), 0, reinterpret_cast<sockaddr*>(&ss), len);
  }

  net::UdpSocket socket;
};

class TurnTestClient {
 public:
  // Outcome of a request: a response class and error code, or no answer in time.
  struct Outcome {
    bool answered = false;
    bool success = false;
    int error = 0;
    std::optional<TransportAddress> mapped;     // XOR-MAPPED-ADDRESS
    std::optional<TransportAddress> relayed;    // XOR-RELAYED-ADDRESS, the first
    std::vector<TransportAddress> relayed_all;  // every XOR-RELAYED-ADDRESS (dual allocation)
    int address_error = 0;                      // ADDRESS-ERROR-CODE's code
  };

  TurnTestClient(TransportAddress server, std::string username, std::string password)
      : server_(server), username_(std::move(username)), password_(std::move(password)) {
    // A loopback socket of the server's family.
    auto bound = net::UdpSocket::bind(
        *TransportAddress::parse(server.ip.isV4() ? "127.0.0.1:0" : "[::1]:0"), {});
    if (bound) socket_ = std::move(*bound);
  }

  TransportAddress local() const { return socket_.localAddress(); }
  int fd() const { return socket_.fd(); }

  Outcome binding() { return transact(stun::Method::kBinding, false, Extra{}); }

  // Allocate (UDP), answering the 401 challenge once as clients do.
  Outcome allocate() { return allocateWith(Extra{}); }
  // A dual allocation: ADDITIONAL-ADDRESS-FAMILY IPv6 (RFC 8656 §7.2).
  Outcome allocateDual() {
    Extra extra;
    extra.additional_family = AddressFamily::kIPv6;
    return allocateWith(extra);
  }

  Outcome refresh(uint32_t lifetime) {
    Extra extra;
    extra.lifetime = lifetime;
    return authenticated(stun::Method::kRefresh, extra);
  }
  // Refresh with REQUESTED-ADDRESS-FAMILY: with lifetime 0, releases that half of a dual
  // allocation.
  Outcome refreshFamily(uint32_t lifetime, AddressFamily family) {
    Extra extra;
    extra.lifetime = lifetime;
    extra.requested_family = family;
    return authenticated(stun::Method::kRefresh, extra);
  }

  // CreatePermission for `peer`'s address, after allocate().
  Outcome createPermission(const TransportAddress& peer) {
    Extra extra;
    extra.peer = peer;
    return authenticated(stun::Method::kCreatePermission, extra);
  }

  // The next Data indication (RFC 8656 §11.4) within `timeout`: the peer and its data.
  std::optional<std::pair<TransportAddress, std::vector<uint8_t>>> receiveData(
      std::chrono::milliseconds timeout) {
    const auto m = receive(timeout, [](const stun::MessageView& m) {
      return m.isIndication() && m.method() == stun::Method::kData &&
             m.has(stun::attr::kXorPeerAddress) && m.has(stun::attr::kData);
    });
    if (!m) return std::nullopt;
    const auto from = stun::decodeXorAddress(*m->value(stun::attr::kXorPeerAddress), m->xorPad());
    if (!from) return std::nullopt;
    const auto data = *m->value(stun::attr::kData);
    return std::pair{*from, std::vector<uint8_t>(data.begin(), data.end())};
  }

  // A Send indication relaying `data` to `peer` (RFC 8656 §11.1); nothing answers it.
  void sendIndication(const TransportAddress& peer, std::span<const uint8_t> data) {
    stun::TransactionId txid{};
    txid[0] = static_cast<uint8_t>(++txid_counter_);
    const auto bytes = *::kturn::testing::buildRequest(
        {.method = stun::Method::kSend,
         .cls = stun::MessageClass::kIndication,
         .transaction_id = txid,
         .fill = [&](stun::MessageBuilder& b) {
           b.addXorAddress(stun::attr::kXorPeerAddress, peer).add(stun::attr::kData, data);
         }});
    sockaddr_storage ss;
    const socklen_t len = net::toSockaddr(server_, ss);
    ::sendto(socket_.fd(), bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&ss), len);
  }

 private:
  // Attributes a request carries besides the credentials.
  struct Extra {
    std::optional<uint32_t> lifetime;
    std::optional<TransportAddress> peer;
    std::optional<AddressFamily> additional_family;  // ADDITIONAL-ADDRESS-FAMILY
    std::optional<AddressFamily> requested_family;   // REQUESTED-ADDRESS-FAMILY
  };

  Outcome allocateWith(const Extra& extra) {
    const Outcome first = transact(stun::Method::kAllocate, !nonce_.empty(), extra);
    if (!first.answered || first.error != 401) return first;
    return transact(stun::Method::kAllocate, true, extra);
  }

  // A request with credentials, retried once on a stale nonce.
  Outcome authenticated(stun::Method method, const Extra& extra) {
    Outcome o = transact(method, true, extra);
    if (o.error == 438) o = transact(method, true, extra);
    return o;
  }

  static void addAttributes(stun::MessageBuilder& b, stun::Method method, const Extra& extra) {
    if (method == stun::Method::kAllocate) {
      const uint8_t udp[] = {17, 0, 0, 0};
      b.add(stun::attr::kRequestedTransport, udp);
    }
    if (extra.lifetime) b.addUint32(stun::attr::kLifetime, *extra.lifetime);
    if (extra.peer) b.addXorAddress(stun::attr::kXorPeerAddress, *extra.peer);
    if (extra.additional_family) {
      const uint8_t value[] = {static_cast<uint8_t>(*extra.additional_family), 0, 0, 0};
      b.add(stun::attr::kAdditionalAddressFamily, value);
    }
    if (extra.requested_family) {
      const uint8_t value[] = {static_cast<uint8_t>(*extra.requested_family), 0, 0, 0};
      b.add(stun::attr::kRequestedAddressFamily, value);
    }
  }

  Outcome transact(stun::Method method, bool auth, const Extra& extra) {
    stun::TransactionId txid{};
    const uint32_t n = ++txid_counter_;
    for (size_t i = 0; i < 4; ++i) txid[i] = static_cast<uint8_t>(n >> (8 * i));
    const auto key = stun::longTermKey(username_, realm_, password_);
    ::kturn::testing::TurnRequest request{
        .method = method, .transaction_id = txid, .fill = [&](stun::MessageBuilder& b) {
          addAttributes(b, method, extra);
        }};
    if (auth) {
      request.credentials = {
          .username = username_, .realm = realm_, .nonce = nonce_, .key = key.span()};
    }
    const auto bytes = *::kturn::testing::buildRequest(request);
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

  // The next message `wanted` accepts within `timeout`, others skipped; it points into in_.
  template <class Wanted>
  std::optional<stun::MessageView> receive(std::chrono::milliseconds timeout, Wanted wanted) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{socket_.fd(), POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const ssize_t got = ::recv(socket_.fd(), in_, sizeof in_, 0);
      if (got <= 0) continue;
      auto m = stun::MessageView::parse({in_, static_cast<size_t>(got)});
      if (m && wanted(*m)) return *m;
    }
    return std::nullopt;
  }

  Outcome await(const stun::TransactionId& txid, std::chrono::milliseconds timeout) {
    const auto m = receive(timeout, [&](const stun::MessageView& m) {
      return std::equal(txid.begin(), txid.end(), m.transactionId().begin());
    });
    if (!m) return {};
    Outcome o;
    o.answered = true;
    o.success = m->messageClass() == stun::MessageClass::kSuccessResponse;
    if (const auto a = m->value(stun::attr::kXorMappedAddress))
      o.mapped = stun::decodeXorAddress(*a, m->xorPad());
    for (const stun::Attribute& a : m->attributes()) {
      if (a.type != stun::attr::kXorRelayedAddress) continue;
      if (auto relayed = stun::decodeXorAddress(a.value, m->xorPad())) {
        o.relayed_all.push_back(*relayed);
      }
    }
    if (!o.relayed_all.empty()) o.relayed = o.relayed_all.front();
    if (const auto e = m->value(stun::attr::kErrorCode)) o.error = stun::decodeErrorCode(*e)->code;
    if (const auto e = m->value(stun::attr::kAddressErrorCode); e && e->size() >= 4) {
      o.address_error = (*e)[2] % 8 * 100 + (*e)[3];
    }
    if (const auto nonce = m->value(stun::attr::kNonce)) nonce_ = stun::decodeString(*nonce);
    if (const auto realm = m->value(stun::attr::kRealm)) realm_ = stun::decodeString(*realm);
    return o;
  }

  TransportAddress server_;
  std::string username_;
  std::string password_;
  std::string realm_;
  std::string nonce_;
  uint32_t txid_counter_ = 0;
  net::UdpSocket socket_;
  uint8_t in_[2048];  // the last message receive() returned points here
};

}  // namespace kturn::daemon::testing
