#include "turn/server.h"

#include <algorithm>

#include "stun/attributes.h"
#include "stun/byte_order.h"
#include "stun/channel_data.h"
#include "stun/demux.h"
#include "stun/integrity.h"
#include "stun/message_builder.h"

namespace kturn::turn {
namespace {

constexpr size_t kMaxResponseSize = 512;

int64_t secondsCeil(MonoTime t) {
  const auto ns = t.time_since_epoch();
  const int64_t s = std::chrono::duration_cast<Seconds>(ns).count();
  return std::chrono::duration_cast<Seconds>(ns) < ns ? s + 1 : s;
}

// Attributes kturn understands; any other comprehension-required one draws 420 (RFC 8489 §6.3.1).
bool isKnownAttribute(uint16_t type) {
  using namespace stun::attr;
  switch (type) {
    case kMappedAddress:
    case kUsername:
    case kMessageIntegrity:
    case kErrorCode:
    case kUnknownAttributes:
    case kChannelNumber:
    case kLifetime:
    case kXorPeerAddress:
    case kData:
    case kRealm:
    case kNonce:
    case kXorRelayedAddress:
    case kRequestedAddressFamily:
    case kEvenPort:
    case kRequestedTransport:
    case kDontFragment:
    case kMessageIntegritySha256:
    case kPasswordAlgorithm:
    case kUserhash:
    case kXorMappedAddress:
    case kReservationToken:
    case kPriority:
    case kUseCandidate:
    case kConnectionId:
      return true;
    default:
      return !isComprehensionRequired(type);
  }
}

// Options::over_capacity when there is none.
const std::atomic<bool> kNeverOverCapacity{false};

}  // namespace

Server::Server(ServerConfigPtr config, RelayAllocator& relays, const Options& options)
    : config_(std::move(config)),
      policy_(*config_),
      caps_(*config_),
      relays_(relays),
      auth_(options.nonce_key),
      tickets_(options.mobility_key),
      rng_state_(options.seed == 0 ? 0x9E3779B97F4A7C15ULL : options.seed),
      own_user_quota_(options.user_quota == nullptr ? std::make_unique<UserQuota>() : nullptr),
      user_quota_(options.user_quota != nullptr ? *options.user_quota : *own_user_quota_),
      over_capacity_(options.over_capacity != nullptr ? *options.over_capacity
                                                      : kNeverOverCapacity),
      connections_(options.connection_id_prefix),
      worker_index_(options.connection_id_prefix),
      stats_(1) {}

ServerStats& Server::statsFor(ListenerId listener) {
  if (listener >= stats_.size()) stats_.resize(listener + 1);
  return stats_[listener];
}

ServerStats Server::stats() const {
  ServerStats total;
  for (const ServerStats& s : stats_) total += s;
  return total;
}

void Server::applyConfig(ServerConfigPtr config) {
  config_ = std::move(config);
  policy_.apply(*config_);
  caps_.apply(*config_);
  // The kernel does not ask the config: every offloaded channel is checked now, not lazily, and
  // a channel a removed cap kept in user space may go to the kernel.
  if (offload_ != nullptr) allocations_.forEach([&](Allocation& a) { offerChannels(a); });
}

void Server::closeListener(ListenerId listener, const Now& now) {
  std::vector<AllocationId> doomed;
  allocations_.forEach([&](const Allocation& a) {
    if (a.listener == listener) doomed.push_back(a.id);
  });
  ServerStats& stats = statsFor(listener);
  for (AllocationId id : doomed) {
    ++stats.allocations_closed;
    deleteAllocation(*allocations_.find(id), SessionEnd::kListenerClosed, now);
  }
}

void Server::onClientClosed(const FiveTuple& five_tuple, const Now& now) {
  Allocation* a = allocations_.find(five_tuple);
  if (a == nullptr) return;
  ++statsOf(*a).allocations_disconnected;
  deleteAllocation(*a, SessionEnd::kConnectionClosed, now);
}

void Server::onClientPacket(ListenerId listener, const FiveTuple& five_tuple,
                            std::span<const uint8_t> packet, const Now& now, Actions& out) {
  ServerStats& stats = statsFor(listener);
  last_request_method_ = 0;
  if (packet.empty()) {
    ++stats.drop_malformed;
    return;
  }
  if (stun::isChannelDataByte(packet[0])) {
    onChannelData(stats, five_tuple, packet, now, out);
  } else if (stun::classifyPacket(packet[0]) == stun::PacketKind::kStun) {
    onStun(stats, listener, five_tuple, packet, now, out);
  } else {
    ++stats.drop_not_turn;
  }
}

void Server::onStun(ServerStats& stats, ListenerId listener, const FiveTuple& five_tuple,
                    std::span<const uint8_t> packet, const Now& now, Actions& out) {
  auto parsed = stun::MessageView::parse(packet);
  if (!parsed) {
    onMalformedStun(stats, listener, five_tuple, packet, out);
    return;
  }
  const stun::MessageView& m = *parsed;
  if (stun::checkFingerprint(m) == stun::IntegrityCheck::kInvalid) {
    // A bad FINGERPRINT means this is not STUN at all (RFC 8489 §7.3): drop silently.
    ++stats.drop_malformed;
    return;
  }
  if (m.messageClass() == stun::MessageClass::kIndication) {
    if (m.method() == stun::Method::kSend) {
      handleSend(stats, five_tuple, m, now, out);
    } else {
      ++stats.drop_ignored;
    }
    return;
  }
  if (!m.isRequest()) {
    ++stats.drop_ignored;  // responses: the server sends no requests over UDP
    return;
  }
  last_request_method_ = static_cast<uint16_t>(m.method());
  Request req{listener, stats, five_tuple, m, now, out};
  const bool tcp_only =
      m.method() == stun::Method::kConnect || m.method() == stun::Method::kConnectionBind;
  if (tcp_only && five_tuple.protocol != TransportProtocol::kTcp) {
    // RFC 6062 methods over UDP or DTLS, where no TCP allocation or data connection can be.
    return respondError(req, stun::error::kBadRequest);
  }
  switch (m.method()) {
    case stun::Method::kBinding:
      return handleBinding(req);
    case stun::Method::kAllocate:
      return handleAllocate(req);
    case stun::Method::kRefresh:
      return handleRefresh(req);
    case stun::Method::kCreatePermission:
      return handleCreatePermission(req);
    case stun::Method::kChannelBind:
      return handleChannelBind(req);
    case stun::Method::kConnect:
      return handleConnect(req);
    case stun::Method::kConnectionBind:
      return handleConnectionBind(req);
    default:
      return respondError(req, stun::error::kBadRequest);
  }
}

void Server::onMalformedStun(ServerStats& stats, ListenerId listener, const FiveTuple& five_tuple,
                             std::span<const uint8_t> packet, Actions& out) {
  ++stats.drop_malformed;
  // A request with a sound header but broken attributes gets 400 (RFC 8489 §6.3); anything less
  // recognisable is dropped, so garbage never draws a response.
  if (!stun::looksLikeStun(packet) ||
      stun::decodeClass(stun::load16(packet.data())) != stun::MessageClass::kRequest) {
    return;
  }
  auto buf = out.scratch(kMaxResponseSize);
  if (buf.empty()) return;
  const std::span<const uint8_t, stun::kTransactionIdSize> txid{packet.data() + 8,
                                                                stun::kTransactionIdSize};
  stun::MessageBuilder b(buf, stun::decodeMethod(stun::load16(packet.data())),
                         stun::MessageClass::kErrorResponse, txid);
  b.addErrorCode(stun::error::kBadRequest);
  if (auto msg = b.finish()) {
    out.commit(msg->size());
    out.to_clients.push_back({listener, five_tuple.client, five_tuple.server.ip, *msg});
    ++stats.error_responses;
  }
}

bool Server::rejectUnknownAttributes(Request& req) {
  uint16_t unknown[16];
  size_t n = 0;
  for (const stun::Attribute& a : req.message.attributes()) {
    // ACCESS-TOKEN is understood only where OAuth is configured (RFC 7635 §4).
    const bool known = isKnownAttribute(a.type) ||
                       (a.type == stun::attr::kAccessToken && !config_->oauth_keys.empty());
    if (!known && n < std::size(unknown)) unknown[n++] = a.type;
  }
  if (n == 0) return false;
  respond(req, stun::MessageClass::kErrorResponse, [&](stun::MessageBuilder& b) {
    b.addErrorCode(stun::error::kUnknownAttribute).addUnknownAttributes({unknown, n});
  });
  ++req.stats.error_responses;
  return true;
}

bool Server::authenticate(Request& req, Allocation* allocation) {
  const RequestAuth::Decision decision = auth_.check(
      *config_, {req.message, req.listener, req.five_tuple, req.now, allocation}, req.stats);
  switch (decision.kind) {
    case RequestAuth::Decision::Kind::kAccepted:
      break;
    case RequestAuth::Decision::Kind::kChallenge:
      respondChallenge(req, decision.code);
      return false;
    case RequestAuth::Decision::Kind::kRefused:
      respondError(req, decision.code);
      return false;
    case RequestAuth::Decision::Kind::kDropped:
      return false;
  }
  req.key_storage = decision.key;
  req.key = &req.key_storage;
  req.oauth = decision.oauth;
  // A new token replaces the allocation's mac-key (RFC 7635 §8: the session key of the token).
  if (req.oauth && allocation != nullptr && allocation->oauth) allocation->key = decision.key;
  return true;
}

void Server::send(const Reply& reply, ServerStats& stats, Actions& out,
                  FunctionRef<void(stun::MessageBuilder&)> fill) {
  auto buf = out.scratch(kMaxResponseSize);
  if (buf.empty()) {
    ++stats.drop_no_buffer;
    return;
  }
  stun::MessageBuilder b(buf, reply.method_bits, reply.cls, reply.transaction);
  fill(b);
  if (!config_->software.empty()) b.addString(stun::attr::kSoftware, config_->software);
  if (reply.key != nullptr) {
    if (reply.sha256) {
      b.addMessageIntegritySha256(reply.key->span());
    } else {
      b.addMessageIntegrity(reply.key->span());
    }
  }
  if (reply.fingerprint) b.addFingerprint();
  auto msg = b.finish();
  if (!msg) {
    ++stats.drop_no_buffer;
    return;
  }
  out.commit(msg->size());
  out.to_clients.push_back(
      {reply.listener, reply.five_tuple.client, reply.five_tuple.server.ip, *msg});
}

void Server::respond(Request& req, stun::MessageClass cls,
                     FunctionRef<void(stun::MessageBuilder&)> fill) {
  const stun::MessageView& m = req.message;
  send({.listener = req.listener,
        .five_tuple = req.five_tuple,
        .method_bits = m.methodBits(),
        .cls = cls,
        .transaction = m.transactionId(),
        .key = req.key,
        .sha256 =
            m.has(stun::attr::kMessageIntegritySha256) && !m.has(stun::attr::kMessageIntegrity),
        .fingerprint = m.has(stun::attr::kFingerprint)},
       req.stats, req.out, fill);
}

void Server::respondSuccess(Request& req) {
  respond(req, stun::MessageClass::kSuccessResponse, [](stun::MessageBuilder&) {});
}

void Server::respondError(Request& req, int code) {
  ++req.stats.error_responses;
  respond(req, stun::MessageClass::kErrorResponse,
          [code](stun::MessageBuilder& b) { b.addErrorCode(code); });
}

void Server::respondChallenge(Request& req, int code) {
  ++req.stats.error_responses;
  req.key = nullptr;
  const auto nonce = auth_.nonceFor(*config_, req.five_tuple.client, req.now.unix_seconds);
  respond(req, stun::MessageClass::kErrorResponse, [&](stun::MessageBuilder& b) {
    b.addErrorCode(code)
        .addString(stun::attr::kRealm, config_->realm)
        .addString(stun::attr::kNonce, {nonce.data(), nonce.size()});
    // RFC 7635 §4: the server name tells the client to use its OAuth access token.
    if (!config_->oauth_keys.empty()) {
      b.addString(stun::attr::kThirdPartyAuthorization, config_->oauth_server_name);
    }
  });
}

Seconds Server::grantedLifetime(const stun::MessageView& message) const {
  const Lifetimes& l = config_->lifetimes;
  const auto value = message.value(stun::attr::kLifetime);
  const auto requested = value ? stun::decodeUint32(*value) : std::nullopt;
  if (!requested) return l.allocation_default;
  // RFC 8656 §7.2: min(requested, maximum), but never below the default.
  return std::max(l.allocation_default, std::min(Seconds(*requested), l.allocation_max));
}

void Server::deleteAllocation(Allocation& allocation, SessionEnd reason, const Now& now) {
  // First, so that the session record counts them: what the kernel relayed for its channels,
  // and what its peer connections (RFC 6062) relayed since last counted.
  withdrawChannels(allocation);
  for (const PeerConnection& c : allocation.connections) countConnection(allocation, c);
  if (observer_ != nullptr) observer_->onAllocationEnd(allocation, reason, now);
  relays_.close(allocation.id);  // with the allocation's peer connections
  connections_.forgetAll(allocation);
  user_quota_.release(allocation.username);
  if (allocation.mobility_id != 0) by_mobility_.erase(allocation.mobility_id);
  allocations_.erase(allocation.id);
  // A deleted allocation leaves its timer entry behind until that deadline (up to an hour).
  // Under churn those would pile up, so shed them once they outnumber the live ones: each
  // compaction follows at least kTimerSlack deletions, keeping the cost O(1) per deletion.
  constexpr size_t kTimerSlack = 4096;
  if (timers_.size() > 2 * allocations_.size() + kTimerSlack) {
    timers_.compact([this](AllocationId id, int64_t deadline) {
      const Allocation* a = allocations_.find(id);
      return a != nullptr && a->armed_at == deadline;
    });
  }
}

void Server::releaseFamily(Allocation& allocation, AddressFamily family) {
  relays_.closeFamily(allocation.id, family);
  if (allocation.relayed.family() == family) {
    allocation.relayed = *allocation.relayed_additional;
    allocation.relayed_public_ip.reset();  // it named the released (IPv4) half
  }
  allocation.relayed_additional.reset();
  // Peers of the released family are out of reach now.
  for (ChannelBinding& c : allocation.channels) {
    if (c.peer.family() == family) withdrawChannel(allocation, c);
  }
  std::erase_if(allocation.permissions,
                [&](const Permission& p) { return p.peer.family() == family; });
  std::erase_if(allocation.channels,
                [&](const ChannelBinding& c) { return c.peer.family() == family; });
}

void Server::rearm(Allocation& allocation) {
  const int64_t deadline = secondsCeil(allocation.nextDeadline());
  if (allocation.armed_at == 0 || deadline < allocation.armed_at) {
    allocation.armed_at = deadline;
    timers_.schedule(allocation.id, deadline);
  }
}

void Server::onTick(const Now& now) {
  timers_.advance(monoSeconds(now.mono),
                  [&](AllocationId id, int64_t deadline) { onAllocationTimer(id, deadline, now); });
}

void Server::onAllocationTimer(AllocationId id, int64_t deadline, const Now& now) {
  Allocation* a = allocations_.find(id);
  // Entries superseded by an earlier re-arm are stale: only the armed one acts.
  if (a == nullptr || a->armed_at != deadline) return;
  if (a->expires <= now.mono) {
    ++statsOf(*a).allocations_expired;
    deleteAllocation(*a, SessionEnd::kExpired, now);
    return;
  }
  a->armed_at = 0;
  statsOf(*a).peer_connections_unbound += connections_.expire(*a, now.mono, relays_);
  for (ChannelBinding& c : a->channels) {
    if (c.expires <= now.mono) withdrawChannel(*a, c);  // before the sweep drops it
  }
  a->sweep(now.mono);
  rearm(*a);
}

uint64_t Server::nextRandom() {
  // xorshift64*: transaction IDs of Data indications and mobility ids need only be unpredictable
  // enough not to collide (a MOBILITY-TICKET's MAC is what makes it unforgeable), and the core
  // draws no system randomness per packet.
  rng_state_ ^= rng_state_ >> 12;
  rng_state_ ^= rng_state_ << 25;
  rng_state_ ^= rng_state_ >> 27;
  return rng_state_ * 0x2545F4914F6CDD1DULL;
}

stun::TransactionId Server::nextTransactionId() {
  stun::TransactionId id;
  for (size_t i = 0; i < id.size(); i += 4) {
    stun::store32(id.data() + i, static_cast<uint32_t>(nextRandom() >> 32));
  }
  return id;
}

}  // namespace kturn::turn
