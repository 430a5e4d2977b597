// Fuzz target: the sans-I/O TURN core (src/turn/server.h) driven through a session decoded from
// the input. Each step is one of:
//   - a raw datagram from one of five clients (two IPv4 on listener 7, one IPv6 on listener 9, and
//     on TURN-TCP listener 11 a control connection and a data connection, RFC 6062);
//   - a request the harness builds and, unless the input says otherwise, authenticates properly
//     (static user1/pass1 or a TURN REST credential for secret s3cret, realm kturn.test, the
//     nonce from that client's last 401/438), with attributes and values the input chooses, so
//     the fuzzer reaches allocations, permissions, channels and relaying without forging HMACs;
//   - ChannelData or a Send indication from a client;
//   - a datagram from a peer to a relayed address, in a buffer with headroom (PeerPacket);
//   - the simulated clock moving on, with or without onTick();
//   - applyConfig() with one of four configs (static, ephemeral with quotas and bandwidth caps,
//     withdrawn routes, auth none);
//   - an RFC 6062 event from the I/O layer: a Connect's connection up or failed, a peer
//     connecting to a TCP relay, a peer connection closing, its bytes counted, a cap's allowance
//     asked and spent, or the control connection closing.
// Invariants checked after every step:
//   - every SendToClient/SendToPeer span lies inside the input datagram, the peer buffer or the
//     Actions arena, and is sent to the client the step concerns;
//   - every peer send is from an allocation the server has, to a peer with an unexpired
//     permission that the current config's listener policy admits (port included), and a peer
//     datagram reaches the client only under the same conditions;
//   - every response parses as STUN, answers the request's transaction, and carries a valid
//     MESSAGE-INTEGRITY under the request's key when it carries one;
//   - the relays the fake allocator holds open are exactly the server's allocations;
//   - the peer connections the fake allocator holds are exactly the server's, in the same state,
//     each of a TCP allocation, made (Connect) or accepted only toward a peer a TCP cluster of the
//     allocation's listener admits, accepted only under a permission, bound only once and only
//     by a ConnectionBind from a connection holding no allocation; a Connect is answered (with
//     its CONNECTION-ID, signed) and a ConnectionAttempt sent only to the allocation's client;
//   - a connection's bytes reach its allocation's counters exactly once;
//   - without caps the allowance is unlimited, with caps it never exceeds the burst;
//   - after onTick(now) no allocation whose lifetime ended by the last whole second survives.
//
// Input format (all reads past the end yield zeros; see tests/fuzz/gen_seeds.py for seeds):
//   step := op:u8 args...   (op % 16 selects the step, see LLVMFuzzerTestOneInput)
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_check.h"
#include "stun/attributes.h"
#include "stun/byte_order.h"
#include "stun/channel_data.h"
#include "stun/integrity.h"
#include "stun/message.h"
#include "stun/message_builder.h"
#include "support/turn_request.h"
#include "turn/authenticator.h"
#include "turn/server.h"
#include "turn/token_bucket.h"
#include "turn_server_fuzz_world.h"

namespace {

using namespace kturn;
using namespace kturn::turn;
using namespace kturn::turn::fuzzing;
namespace attr = kturn::stun::attr;

// Reads the input front to back; past the end every read yields zero.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  bool done() const { return pos_ >= n_; }
  uint8_t u8() { return pos_ < n_ ? p_[pos_++] : 0; }
  uint16_t u16() {
    const uint16_t hi = u8();
    return static_cast<uint16_t>(hi << 8 | u8());
  }
  uint32_t u32() {
    const uint32_t hi = u16();
    return hi << 16 | u16();
  }
  // Up to `n` bytes, fewer at the end of the input.
  std::span<const uint8_t> bytes(size_t n) {
    n = std::min(n, n_ - std::min(pos_, n_));
    const std::span<const uint8_t> out{p_ + pos_, n};
    pos_ += n;
    return out;
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

struct Client {
  FiveTuple tuple;
  ListenerId listener = 0;
  std::string nonce{};              // from the last 401/438 this client got
  stun::TransactionId last_txid{};  // for retransmissions
};

bool inside(std::span<const uint8_t> inner, const uint8_t* base, size_t size) {
  if (inner.empty()) return true;
  const auto b = reinterpret_cast<uintptr_t>(base);
  const auto p = reinterpret_cast<uintptr_t>(inner.data());
  return p >= b && p - b <= size && inner.size() <= size - (p - b);
}

int64_t secondsCeil(MonoTime t) {
  const auto ns = t.time_since_epoch();
  const int64_t s = std::chrono::duration_cast<Seconds>(ns).count();
  return std::chrono::duration_cast<Seconds>(ns) < ns ? s + 1 : s;
}

class Session {
 public:
  explicit Session(Actions& actions)
      : server_(configs()[0], relays_, options()), actions_(actions) {
    const TransportAddress server4 = addr("198.51.100.1:3478");
    const TransportAddress server6 = addr("[2001:db8::1]:3478");
    clients_[0] = Client{.tuple = {TransportProtocol::kUdp, addr("192.0.2.10:40000"), server4},
                         .listener = kListener4};
    clients_[1] = Client{.tuple = {TransportProtocol::kUdp, addr("192.0.2.11:40001"), server4},
                         .listener = kListener4};
    clients_[2] = Client{.tuple = {TransportProtocol::kUdp, addr("[2001:db8::10]:40002"), server6},
                         .listener = kListener6};
    // RFC 6062: a control connection and a data connection from the same host.
    clients_[kControl] =
        Client{.tuple = {TransportProtocol::kTcp, addr("192.0.2.12:41000"), server4},
               .listener = kListenerTcp};
    clients_[kData] = Client{.tuple = {TransportProtocol::kTcp, addr("192.0.2.12:42000"), server4},
                             .listener = kListenerTcp};
    relays_.config = configs()[0].get();
  }

  void run(Reader& in) {
    for (int steps = 0; !in.done() && steps < 256; ++steps) {
      const uint8_t op = in.u8();
      switch (op % 16) {
        case 0:
        case 1:
          rawDatagram(in);
          break;
        case 2:
        case 3:
        case 4:
        case 5:
        case 6:
        case 7:
          request(in);
          break;
        case 8:
        case 9:
          channelData(in);
          break;
        case 10:
          sendIndication(in);
          break;
        case 11:
        case 12:
          peerDatagram(in);
          break;
        case 13:
          advance(in);
          break;
        case 14:
          config_ = in.u8() % configs().size();
          relays_.config = configs()[config_].get();
          server_.applyConfig(configs()[config_]);
          checkTable();
          break;
        case 15:
          connectionEvent(in);
          break;
      }
    }
  }

 private:
  static Server::Options options() {
    Server::Options o;
    for (size_t i = 0; i < o.nonce_key.size(); ++i) o.nonce_key[i] = static_cast<uint8_t>(i * 7);
    o.seed = 42;
    return o;
  }

  const ServerConfig& config() const { return *configs()[config_]; }

  // --- steps ---------------------------------------------------------------------------------

  void rawDatagram(Reader& in) {
    Client& c = clients_[in.u8() % clients_.size()];
    const auto bytes = in.bytes(in.u16() % 1501);
    input_.assign(bytes.begin(), bytes.end());
    fromClient(c, nullptr);
  }

  void channelData(Reader& in) {
    Client& c = clients_[in.u8() % clients_.size()];
    const uint8_t sel = in.u8();
    const uint16_t channel =
        sel < 200 ? static_cast<uint16_t>(stun::kMinChannelNumber + sel % 4) : in.u16();
    const auto payload = in.bytes(in.u16() % 1301);
    const uint8_t pad = in.u8() % 5;
    input_.assign(4 + payload.size() + pad, 0);
    stun::writeChannelDataHeader(input_.data(), channel, static_cast<uint16_t>(payload.size()));
    std::copy(payload.begin(), payload.end(), input_.begin() + 4);
    fromClient(c, nullptr);
  }

  void sendIndication(Reader& in) {
    Client& c = clients_[in.u8() % clients_.size()];
    const uint8_t flags = in.u8();
    const TransportAddress& peer = peers()[in.u8() % peers().size()];
    const auto payload = in.bytes(in.u16() % 1201);
    const auto attributes = [&](stun::MessageBuilder& b) {
      if (!(flags & 1)) b.addXorAddress(attr::kXorPeerAddress, peer);
      if (!(flags & 2)) b.add(attr::kData, payload);
    };
    auto msg = testing::buildRequest({.method = stun::Method::kSend,
                                      .cls = stun::MessageClass::kIndication,
                                      .transaction_id = nextTxid(),
                                      .fill = attributes,
                                      .fingerprint = (flags & 4) != 0});
    FUZZ_CHECK(msg.has_value());
    input_.assign(msg->begin(), msg->end());
    fromClient(c, nullptr);
  }

  void request(Reader& in) {
    Client& c = clients_[in.u8() % clients_.size()];
    static constexpr uint16_t kMethods[] = {0x003, 0x003, 0x008, 0x009, 0x004,
                                            0x001, 0x00b, 0x0ff, 0x00a};
    const uint16_t method = kMethods[in.u8() % std::size(kMethods)];
    const uint8_t flags = in.u8();
    const bool defaults = !(flags & 0x01);
    const bool authenticated = !(flags & 0x02);
    const bool sha256 = flags & 0x04;
    const bool fingerprint = flags & 0x08;
    const bool wrong_password = flags & 0x10;
    const bool retransmit = flags & 0x20;
    const bool other_user = flags & 0x40;
    const bool corrupt = flags & 0x80;

    const stun::TransactionId txid = retransmit ? c.last_txid : nextTxid();
    c.last_txid = txid;
    const auto attributes = [&](stun::MessageBuilder& b) {
      if (defaults) addDefaults(b, method, c, in);
      const int extra = in.u8() % 8;
      for (int i = 0; i < extra; ++i) addAttribute(b, in);
    };
    testing::TurnRequest request{.method = static_cast<stun::Method>(method),
                                 .transaction_id = txid,
                                 .fill = attributes,
                                 .fingerprint = fingerprint};

    std::optional<stun::IntegrityKey> key;  // what the request is signed with
    std::string username;
    if (authenticated) {
      username = userName(other_user);
      std::string password = passwordFor(username);
      if (wrong_password) password += "x";
      const auto algorithm =
          sha256 ? stun::PasswordAlgorithm::kSha256 : stun::PasswordAlgorithm::kMd5;
      key = stun::longTermKey(username, config().realm, password, algorithm);
      request.credentials = {.username = username,
                             .realm = config().realm,
                             .nonce = c.nonce,
                             .key = key->span(),
                             .password_algorithm = sha256 ? std::optional(algorithm) : std::nullopt,
                             .sha256_integrity = sha256 && (flags & 0x01)};
    }
    auto msg = testing::buildRequest(request);
    if (!msg) return;  // too many attributes for the buffer
    input_.assign(msg->begin(), msg->end());
    if (corrupt) {
      const size_t at = in.u16() % input_.size();
      // Still signed with `key`: a corrupted byte after MESSAGE-INTEGRITY (or a lucky one) leaves
      // the request authentic, and a signed response must then verify under the same key.
      input_[at] ^= static_cast<uint8_t>(in.u8() | 1);
    }
    fromClient(c, key ? &*key : nullptr);
  }

  void addDefaults(stun::MessageBuilder& b, uint16_t method, const Client& c, Reader& in) {
    switch (method) {
      case 0x003: {
        // Over TCP, half the Allocates ask for a TCP relay (RFC 6062).
        const bool tcp = c.tuple.protocol == TransportProtocol::kTcp && (in.u8() & 1) != 0;
        const uint8_t transport[] = {static_cast<uint8_t>(tcp ? 6 : 17), 0, 0, 0};
        b.add(attr::kRequestedTransport, transport);
        break;
      }
      case 0x008:
      case 0x00a:  // Connect
        b.addXorAddress(attr::kXorPeerAddress, peers()[in.u8() % peers().size()]);
        break;
      case 0x00b: {  // ConnectionBind: mostly a connection the server offered
        const uint8_t sel = in.u8();
        const auto known = relays_.pickConnection(sel);
        b.addUint32(attr::kConnectionId, sel < 200 && known ? *known : in.u32());
        break;
      }
      case 0x009: {
        const uint16_t channel = static_cast<uint16_t>(stun::kMinChannelNumber + in.u8() % 4);
        const uint8_t number[] = {static_cast<uint8_t>(channel >> 8), static_cast<uint8_t>(channel),
                                  0, 0};
        b.add(attr::kChannelNumber, number);
        b.addXorAddress(attr::kXorPeerAddress, peers()[in.u8() % peers().size()]);
        break;
      }
      default:
        break;
    }
  }

  void addAttribute(stun::MessageBuilder& b, Reader& in) {
    switch (in.u8() % 12) {
      case 0: {
        const uint8_t p = in.u8();
        const uint8_t value[] = {static_cast<uint8_t>(p < 200 ? 17 : p), 0, 0, 0};
        b.add(attr::kRequestedTransport, value);
        break;
      }
      case 1: {
        static constexpr uint32_t kLifetimes[] = {0, 1, 30, 600, 3600, 86400, 0xFFFFFFFF};
        const uint8_t sel = in.u8();
        b.addUint32(attr::kLifetime,
                    sel < 200 ? kLifetimes[sel % std::size(kLifetimes)] : in.u32());
        break;
      }
      case 2:
        b.addXorAddress(attr::kXorPeerAddress, peers()[in.u8() % peers().size()]);
        break;
      case 3: {
        const uint8_t sel = in.u8();
        const uint16_t channel =
            sel < 200 ? static_cast<uint16_t>(stun::kMinChannelNumber + sel % 4) : in.u16();
        const uint8_t value[] = {static_cast<uint8_t>(channel >> 8), static_cast<uint8_t>(channel),
                                 0, 0};
        b.add(attr::kChannelNumber, value);
        break;
      }
      case 4: {
        const uint8_t value[] = {in.u8()};
        b.add(attr::kEvenPort, value);
        break;
      }
      case 5: {
        uint8_t token[8] = {0, 0, 0, 0, 0, 0, 0xAB, 0xCD};
        if (in.u8() >= 200) stun::store32(token + 4, in.u32());
        b.add(attr::kReservationToken, token);
        break;
      }
      case 6:
      case 7: {
        const uint8_t f = in.u8();
        const uint8_t value[] = {static_cast<uint8_t>(f < 100 ? 1 : f < 200 ? 2 : f), 0, 0, 0};
        b.add(in.u8() & 1 ? attr::kAdditionalAddressFamily : attr::kRequestedAddressFamily, value);
        break;
      }
      case 8:
        b.add(attr::kDontFragment, {});
        break;
      case 9:
        b.add(attr::kData, in.bytes(in.u8()));
        break;
      case 10: {
        const uint16_t type = in.u16();
        b.add(type, in.bytes(in.u8()));
        break;
      }
      default: {
        // XOR-PEER-ADDRESS with an address from the input.
        uint8_t ip[16] = {};
        const bool v6 = in.u8() & 1;
        const auto raw = in.bytes(v6 ? 16 : 4);
        std::copy(raw.begin(), raw.end(), ip);
        const TransportAddress a{
            IpAddress::fromBytes(v6 ? AddressFamily::kIPv6 : AddressFamily::kIPv4,
                                 {ip, v6 ? 16u : 4u}),
            in.u16()};
        b.addXorAddress(attr::kXorPeerAddress, a);
        break;
      }
    }
  }

  std::string userName(bool other) const {
    if (config().auth_mode == AuthMode::kEphemeral) {
      // Valid for an hour, or expired a minute ago.
      const int64_t expiry = other ? now_.unix_seconds - 60 : now_.unix_seconds + 3600;
      return std::to_string(expiry) + ":user1";
    }
    return other ? "user2" : "user1";
  }

  std::string passwordFor(const std::string& username) const {
    if (config().auth_mode == AuthMode::kEphemeral) {
      return restPassword(config().shared_secret, username);
    }
    return config().static_password;
  }

  // The `sel`-th open allocation (wrapping), or, for sel >= 240 or when none is open, an id the
  // server may not know.
  AllocationId pickAllocation(uint8_t sel) const {
    const auto& open = relays_.open();
    if (open.empty() || sel >= 240) return AllocationId{sel, 1};
    auto it = open.begin();
    std::advance(it, sel % open.size());
    return it->second.id;
  }

  void peerDatagram(Reader& in) {
    const AllocationId id = pickAllocation(in.u8());
    const TransportAddress& peer = peers()[in.u8() % peers().size()];
    const uint8_t layout = in.u8();
    const auto payload = in.bytes(in.u16() % 1301);
    size_t offset = PeerPacket::kHeadroom + layout % 8;
    size_t tail = PeerPacket::kTailroom + (layout >> 3) % 4;
    if (layout == 0xFF) offset = 8;  // a driver bug the core must refuse, not write before
    if (layout == 0xFE) tail = 0;
    peer_buffer_.assign(offset + payload.size() + tail, 0xEE);
    std::copy(payload.begin(), payload.end(), peer_buffer_.begin() + offset);
    const std::vector<uint8_t> sent(payload.begin(), payload.end());

    actions_.clear();
    const uint8_t* arena = actions_.scratch(0).data();
    server_.onPeerPacket(id, peer, PeerPacket{peer_buffer_, offset, payload.size()}, now_,
                         actions_);
    FUZZ_CHECK(actions_.to_peers.empty());
    FUZZ_CHECK(actions_.to_clients.size() <= 1);
    for (const SendToClient& s : actions_.to_clients) {
      FUZZ_CHECK(!s.data.empty());
      FUZZ_CHECK(inside(s.data, peer_buffer_.data(), peer_buffer_.size()) ||
                 inside(s.data, arena, Actions::kArenaSize));
      const FakeRelays::Open* o = relays_.find(id);
      FUZZ_CHECK(o != nullptr);
      FUZZ_CHECK(s.client == o->five_tuple.client && s.listener == o->listener);
      FUZZ_CHECK(layout != 0xFF && layout != 0xFE);
      Allocation* a = server_.findAllocation(o->five_tuple);
      FUZZ_CHECK(a != nullptr && a->id == id);
      checkRelayAllowed(*a, peer);
      checkRelayedToClient(s.data, peer, sent);
    }
    checkTable();
  }

  // RFC 6062: what the I/O layer reports about peer connections.
  void connectionEvent(Reader& in) {
    const uint8_t what = in.u8();
    const uint8_t sel = in.u8();
    actions_.clear();
    switch (what % 6) {
      case 0:
        connectOutcome(sel, in.u8() & 1);
        break;
      case 1:
        peerConnects(sel, peers()[in.u8() % peers().size()]);
        break;
      case 2:
        if (const auto id = relays_.pickConnection(sel)) {
          // The link tells the core while it is still there (its last bytes), then goes.
          const uint64_t before = allocationBytes(relays_.connection(*id)->allocation);
          const ConnectionTraffic left = relays_.connection(*id)->uncounted;
          server_.onConnectionClosed(*id);
          FUZZ_CHECK(allocationBytes(relays_.connection(*id)->allocation) ==
                     before + left.to_peer + left.to_client);
          relays_.connections().erase(*id);
        }
        break;
      case 3:
        relayBytes(sel, in);
        break;
      case 4:
        allowance(sel, in);
        break;
      case 5: {
        // The control connection closes: its allocation ends (RFC 6062 §3), and a new one opens.
        Client& control = clients_[kControl];
        server_.onClientClosed(control.tuple, now_);
        FUZZ_CHECK(server_.findAllocation(control.tuple) == nullptr);
        control.tuple.client.port = static_cast<uint16_t>(control.tuple.client.port + 1);
        break;
      }
    }
    checkTable();
  }

  // A connecting link came up or failed: the Connect is answered, to the allocation's client.
  void connectOutcome(uint8_t sel, bool up) {
    const auto id = relays_.pickConnection(sel);
    if (!id || relays_.connection(*id)->state != PeerConnection::State::kConnecting) return;
    const FakeRelays::Open* o = relays_.find(relays_.connection(*id)->allocation);
    FUZZ_CHECK(o != nullptr);
    Allocation* a = server_.findAllocation(o->five_tuple);
    FUZZ_CHECK(a != nullptr);
    const stun::IntegrityKey key = a->key;
    if (up) {
      relays_.connection(*id)->state = PeerConnection::State::kPendingBind;
    } else {
      relays_.connections().erase(*id);  // the daemon drops a failed link before telling
    }
    server_.onPeerConnected(*id, up, now_, actions_);
    FUZZ_CHECK(actions_.to_clients.size() == 1 && actions_.to_peers.empty());
    const SendToClient& s = actions_.to_clients[0];
    FUZZ_CHECK(s.client == o->five_tuple.client && s.listener == o->listener);
    const auto reply = stun::MessageView::parse(s.data);
    FUZZ_CHECK(reply && reply->method() == stun::Method::kConnect);
    FUZZ_CHECK(reply->messageClass() ==
               (up ? stun::MessageClass::kSuccessResponse : stun::MessageClass::kErrorResponse));
    FUZZ_CHECK(stun::checkMessageIntegrity(*reply, key.span()) == stun::IntegrityCheck::kValid);
    if (up) {
      const auto cid = reply->value(attr::kConnectionId);
      FUZZ_CHECK(cid && stun::decodeUint32(*cid) == *id);
    }
  }

  // A peer connects to the relayed address of an open allocation: offered to the client with a
  // ConnectionAttempt only under a permission, from a TCP cluster the listener admits.
  void peerConnects(uint8_t sel, const TransportAddress& peer) {
    const AllocationId allocation = pickAllocation(sel);
    const ConnectionId id = server_.onPeerConnectionAccepted(allocation, peer, now_, actions_);
    if (id == 0) {
      FUZZ_CHECK(actions_.to_clients.empty());
      return;
    }
    const FakeRelays::Open* o = relays_.find(allocation);
    FUZZ_CHECK(o != nullptr && o->tcp);
    Allocation* a = server_.findAllocation(o->five_tuple);
    FUZZ_CHECK(a != nullptr);
    const Permission* permission = a->findPermission(peer.ip);
    FUZZ_CHECK(permission != nullptr && permission->expires > now_.mono);
    const ListenerPolicy* policy = config().listener(a->listener);
    FUZZ_CHECK(policy != nullptr && policy->admittingTcp(peer, true) != nullptr);
    FUZZ_CHECK(relays_.connection(id) == nullptr);
    relays_.connections()[id] =
        FakeRelays::Connection{allocation, peer, PeerConnection::State::kPendingBind, {}};
    FUZZ_CHECK(actions_.to_clients.size() == 1);
    const SendToClient& s = actions_.to_clients[0];
    FUZZ_CHECK(s.client == o->five_tuple.client && s.listener == o->listener);
    const auto m = stun::MessageView::parse(s.data);
    FUZZ_CHECK(m && m->isIndication() && m->method() == stun::Method::kConnectionAttempt);
    const auto cid = m->value(attr::kConnectionId);
    FUZZ_CHECK(cid && stun::decodeUint32(*cid) == id);
    const auto p = m->value(attr::kXorPeerAddress);
    FUZZ_CHECK(p && stun::decodeXorAddress(*p, m->xorPad()) == peer);
  }

  // A bound connection relays bytes; counted now or later (on close or the allocation's end).
  void relayBytes(uint8_t sel, Reader& in) {
    const auto id = relays_.pickConnection(sel);
    const uint16_t to_peer = in.u16();
    const uint16_t to_client = in.u16();
    const bool count_now = in.u8() & 1;
    if (!id || relays_.connection(*id)->state != PeerConnection::State::kBound) return;
    FakeRelays::Connection& c = *relays_.connection(*id);
    c.uncounted.to_peer += to_peer;
    c.uncounted.to_client += to_client;
    if (!count_now) return;
    // countConnectionTraffic() takes every bound connection's bytes: those of c's allocation
    // must land in its counters, exactly.
    uint64_t pending = 0;
    for (const auto& [other, o] : relays_.connections()) {
      if (o.allocation == c.allocation) pending += o.uncounted.to_peer + o.uncounted.to_client;
    }
    const uint64_t before = allocationBytes(c.allocation);
    server_.countConnectionTraffic();
    FUZZ_CHECK(allocationBytes(c.allocation) == before + pending);
    for (const auto& [other, o] : relays_.connections()) {
      FUZZ_CHECK(o.uncounted.to_peer == 0 && o.uncounted.to_client == 0);
    }
  }

  // A link asks what a cap lets it read, and reads it: then nothing is left at that instant.
  void allowance(uint8_t sel, Reader& in) {
    const AllocationId allocation = pickAllocation(sel);
    const bool to_peer = in.u8() & 1;
    const uint64_t allowed = server_.connectionAllowance(allocation, to_peer, now_.mono);
    const ServerConfig& c = config();
    const bool capped = c.allocation_bytes_per_second != 0 || c.listener_bytes_per_second != 0;
    if (!capped || relays_.find(allocation) == nullptr) {
      FUZZ_CHECK(allowed == UINT64_MAX);
      return;
    }
    if (c.allocation_bytes_per_second != 0) {
      FUZZ_CHECK(allowed <= TokenBucket::burstFor(c.allocation_bytes_per_second));
    }
    server_.spendConnectionAllowance(allocation, to_peer, allowed);
    FUZZ_CHECK(server_.connectionAllowance(allocation, to_peer, now_.mono) == 0);
  }

  uint64_t allocationBytes(AllocationId id) {
    const FakeRelays::Open* o = relays_.find(id);
    FUZZ_CHECK(o != nullptr);
    const Allocation* a = server_.findAllocation(o->five_tuple);
    FUZZ_CHECK(a != nullptr);
    return a->bytes_to_peers + a->bytes_to_client;
  }

  void advance(Reader& in) {
    const uint8_t sel = in.u8();
    const uint8_t flags = in.u8();
    // Mostly whole seconds, sometimes fractions (the daemon's clock has nanoseconds), sometimes
    // past every lifetime.
    std::chrono::nanoseconds step = Seconds(sel < 200 ? sel % 16 : (sel - 199) * 67);
    if (flags & 1) step += std::chrono::milliseconds(in.u8() * 4);
    now_.mono += step;
    now_.unix_seconds = kUnixStart + monoSeconds(now_.mono) - kMonoStartSeconds;
    if (flags & 2) return;  // packets between ticks see a clock ahead of the wheel
    server_.onTick(now_);
    const int64_t tick = monoSeconds(now_.mono);
    for (const auto& [index, o] : relays_.open()) {
      Allocation* a = server_.findAllocation(o.five_tuple);
      FUZZ_CHECK(a != nullptr);
      if (secondsCeil(a->expires) <= tick) {
        std::fprintf(stderr, "allocation %u expired at %lld s, still there at tick %lld s\n", index,
                     static_cast<long long>(secondsCeil(a->expires)), static_cast<long long>(tick));
      }
      FUZZ_CHECK(secondsCeil(a->expires) > tick);
    }
    checkTable();
  }

  // --- checks --------------------------------------------------------------------------------

  // Feeds input_ from `c` and checks what comes out. `key`: the request was signed with it.
  void fromClient(Client& c, const stun::IntegrityKey* key) {
    actions_.clear();
    const uint8_t* arena = actions_.scratch(0).data();
    const uint32_t binds = relays_.binds();
    server_.onClientPacket(c.listener, c.tuple, input_, now_, actions_);
    const bool bound = relays_.binds() != binds;
    if (bound) {
      // A ConnectionBind joined this connection to a peer's: only from a TCP connection that
      // holds no allocation.
      FUZZ_CHECK(relays_.binds() == binds + 1 && relays_.lastBind() == c.tuple);
      FUZZ_CHECK(c.tuple.protocol == TransportProtocol::kTcp);
      FUZZ_CHECK(server_.findAllocation(c.tuple) == nullptr);
    }
    const auto in_view = stun::MessageView::parse(input_);
    FUZZ_CHECK(actions_.to_clients.size() <= 1);
    for (const SendToClient& s : actions_.to_clients) {
      FUZZ_CHECK(!s.data.empty());
      FUZZ_CHECK(inside(s.data, input_.data(), input_.size()) ||
                 inside(s.data, arena, Actions::kArenaSize));
      FUZZ_CHECK(s.client == c.tuple.client && s.listener == c.listener);
      auto reply = stun::MessageView::parse(s.data);
      FUZZ_CHECK(reply.has_value());
      FUZZ_CHECK(!reply->isRequest() && !reply->isIndication());
      FUZZ_CHECK(stun::checkFingerprint(*reply) != stun::IntegrityCheck::kInvalid);
      FUZZ_CHECK(input_.size() >= stun::kHeaderSize);
      FUZZ_CHECK(std::equal(reply->transactionId().begin(), reply->transactionId().end(),
                            input_.begin() + 8));
      if (reply->has(attr::kMessageIntegrity) || reply->has(attr::kMessageIntegritySha256)) {
        if (key == nullptr) dump("signed response to a request the harness did not sign", s.data);
        FUZZ_CHECK(key != nullptr);
        FUZZ_CHECK(stun::checkMessageIntegrity(*reply, key->span()) ==
                   stun::IntegrityCheck::kValid);
      }
      if (const auto e = reply->value(attr::kErrorCode)) {
        const auto code = stun::decodeErrorCode(*e);
        FUZZ_CHECK(code.has_value());
        const auto nonce = reply->value(attr::kNonce);
        if ((code->code == 401 || code->code == 438) && nonce) {
          c.nonce = std::string(stun::decodeString(*nonce));
        }
      }
      if (in_view && reply->messageClass() == stun::MessageClass::kSuccessResponse) {
        FUZZ_CHECK(reply->methodBits() == in_view->methodBits());
      }
    }
    for (const SendToPeer& s : actions_.to_peers) {
      FUZZ_CHECK(inside(s.data, input_.data(), input_.size()));
      const FakeRelays::Open* o = relays_.find(s.allocation);
      FUZZ_CHECK(o != nullptr);
      FUZZ_CHECK(o->five_tuple == c.tuple);
      Allocation* a = server_.findAllocation(c.tuple);
      FUZZ_CHECK(a != nullptr && a->id == s.allocation);
      checkRelayAllowed(*a, s.peer);
    }
    checkTable();
    // From now on a bound connection carries the peer's bytes, never frames: the next data
    // connection comes from another port.
    if (bound) c.tuple.client.port = static_cast<uint16_t>(c.tuple.client.port + 1);
  }

  // Prints the current input datagram and an output, for a failing check.
  void dump(const char* what, std::span<const uint8_t> out) const {
    std::fprintf(stderr, "%s\ninput  (%zu):", what, input_.size());
    for (uint8_t b : input_) std::fprintf(stderr, " %02x", b);
    std::fprintf(stderr, "\noutput (%zu):", out.size());
    for (uint8_t b : out) std::fprintf(stderr, " %02x", b);
    std::fprintf(stderr, "\n");
  }

  // The server relays between an allocation and `peer` only under an unexpired permission for
  // the peer's IP that the current config's policy admits, port included (docs/security.md, "Who
  // may be a peer").
  void checkRelayAllowed(Allocation& a, const TransportAddress& peer) {
    const Permission* p = a.findPermission(peer.ip);
    FUZZ_CHECK(p != nullptr);
    FUZZ_CHECK(p->expires > now_.mono);
    FUZZ_CHECK(a.relays(peer.family()));
    const ListenerPolicy* policy = config().listener(a.listener);
    if (policy == nullptr || !policy->allows(peer)) {
      std::fprintf(stderr, "relayed to/from %s on listener %u, which config %zu does not admit\n",
                   peer.toString().c_str(), a.listener, config_);
    }
    FUZZ_CHECK(policy != nullptr && policy->allows(peer));
  }

  // A peer datagram reaches the client as ChannelData or a Data indication holding the payload.
  void checkRelayedToClient(std::span<const uint8_t> out, const TransportAddress& peer,
                            const std::vector<uint8_t>& payload) {
    if (stun::isChannelDataByte(out[0])) {
      auto cd = stun::parseChannelData(out);
      FUZZ_CHECK(cd.has_value());
      FUZZ_CHECK(std::equal(cd->data.begin(), cd->data.end(), payload.begin(), payload.end()));
      return;
    }
    auto m = stun::MessageView::parse(out);
    FUZZ_CHECK(m.has_value());
    FUZZ_CHECK(m->isIndication() && m->method() == stun::Method::kData);
    const auto p = m->value(attr::kXorPeerAddress);
    FUZZ_CHECK(p.has_value());
    FUZZ_CHECK(stun::decodeXorAddress(*p, m->xorPad()) == peer);
    const auto d = m->value(attr::kData);
    FUZZ_CHECK(d.has_value());
    FUZZ_CHECK(std::equal(d->begin(), d->end(), payload.begin(), payload.end()));
  }

  // The fake allocator's open relays are exactly the server's allocations, and its peer
  // connections exactly theirs, in the same state.
  void checkTable() {
    FUZZ_CHECK(relays_.open().size() == server_.allocationCount());
    size_t connections = 0;
    for (const auto& [index, o] : relays_.open()) {
      Allocation* a = server_.findAllocation(o.five_tuple);
      FUZZ_CHECK(a != nullptr && a->id == o.id && a->relayed == o.relayed &&
                 a->relayed_additional == o.additional);
      FUZZ_CHECK(a->connections.empty() || a->relay_protocol == TransportProtocol::kTcp);
      for (const PeerConnection& pc : a->connections) {
        const FakeRelays::Connection* c = relays_.connection(pc.id);
        FUZZ_CHECK(c != nullptr && c->allocation == a->id && c->peer == pc.peer &&
                   c->state == pc.state);
        ++connections;
      }
    }
    FUZZ_CHECK(connections == relays_.connections().size());
  }

  stun::TransactionId nextTxid() {
    stun::TransactionId t{};
    ++txid_counter_;
    stun::store32(t.data(), txid_counter_);
    return t;
  }

  static constexpr int64_t kMonoStartSeconds = 3'600'000;
  static constexpr int64_t kUnixStart = 1'800'000'000;

  FakeRelays relays_;
  Server server_;
  size_t config_ = 0;
  Actions& actions_;
  Now now_{MonoTime(Seconds(kMonoStartSeconds)), kUnixStart};
  static constexpr size_t kControl = 3;  // RFC 6062 control connection
  static constexpr size_t kData = 4;     // RFC 6062 data connection
  std::array<Client, 5> clients_;
  std::vector<uint8_t> input_;
  std::vector<uint8_t> peer_buffer_;
  uint32_t txid_counter_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Each input starts from a fresh server. The Actions (a 64 KiB arena, cleared before every
  // step) is reused: allocating it per input made page faults a third of the run time.
  static Actions actions;
  auto session = std::make_unique<Session>(actions);
  Reader in(data, size);
  session->run(in);
  return 0;
}
