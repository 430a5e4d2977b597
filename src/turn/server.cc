#include "turn/server.h"

#include <algorithm>

#include "stun/attributes.h"
#include "stun/byte_order.h"
#include "stun/channel_data.h"
#include "stun/demux.h"
#include "stun/integrity.h"
#include "stun/message_builder.h"
#include "turn/access_token.h"

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

}  // namespace

Server::Server(ServerConfigPtr config, RelayAllocator& relays, const Options& options)
    : config_(std::move(config)),
      relays_(relays),
      nonces_(options.nonce_key),
      tickets_(options.mobility_key),
      rng_state_(options.seed == 0 ? 0x9E3779B97F4A7C15ULL : options.seed),
      own_user_quota_(options.user_quota == nullptr ? std::make_unique<UserQuota>() : nullptr),
      user_quota_(options.user_quota != nullptr ? *options.user_quota : *own_user_quota_),
      connection_prefix_(uint32_t{options.connection_id_prefix} << 24),
      stats_(1) {
  cur_ = &stats_[0];
}

void Server::countFor(ListenerId listener) {
  if (listener >= stats_.size()) {
    stats_.resize(listener + 1);
    listener_budget_.resize(listener + 1);
  }
  cur_ = &stats_[listener];
}

bool Server::underCaps(Allocation& a, bool to_peers, size_t bytes, MonoTime now) {
  const ServerConfig& c = *config_;
  if (c.allocation_bytes_per_second != 0 && !(to_peers ? a.budget_to_peers : a.budget_to_client)
                                                 .take(bytes, now, c.allocation_bytes_per_second)) {
    ++cur_->drop_over_bandwidth;
    return false;
  }
  if (c.listener_bytes_per_second != 0 && a.listener < listener_budget_.size() &&
      !listener_budget_[a.listener][to_peers ? 0 : 1].take(bytes, now,
                                                           c.listener_bytes_per_second)) {
    ++cur_->drop_over_bandwidth;
    return false;
  }
  return true;
}

ServerStats Server::stats() const {
  ServerStats total;
  for (const ServerStats& s : stats_) total += s;
  return total;
}

void Server::applyConfig(ServerConfigPtr config) {
  config_ = std::move(config);
  ++epoch_;
  // The kernel does not ask the config: every offloaded channel is checked now, not lazily, and
  // a channel a removed cap kept in user space may go to the kernel.
  if (offload_ != nullptr) {
    allocations_.forEach([&](Allocation& a) {
      countFor(a.listener);
      offerChannels(a);
    });
  }
}

void Server::closeListener(ListenerId listener, const Now& now) {
  std::vector<AllocationId> doomed;
  allocations_.forEach([&](const Allocation& a) {
    if (a.listener == listener) doomed.push_back(a.id);
  });
  countFor(listener);
  for (AllocationId id : doomed) {
    ++cur_->allocations_closed;
    deleteAllocation(*allocations_.find(id), SessionEnd::kListenerClosed, now);
  }
}

void Server::onClientClosed(const FiveTuple& five_tuple, const Now& now) {
  Allocation* a = allocations_.find(five_tuple);
  if (a == nullptr) return;
  countFor(a->listener);
  ++cur_->allocations_disconnected;
  deleteAllocation(*a, SessionEnd::kConnectionClosed, now);
}

void Server::onClientPacket(ListenerId listener, const FiveTuple& five_tuple,
                            std::span<const uint8_t> packet, const Now& now, Actions& out) {
  countFor(listener);
  last_request_method_ = 0;
  if (packet.empty()) {
    ++cur_->drop_malformed;
    return;
  }
  if (stun::isChannelDataByte(packet[0])) {
    onChannelData(five_tuple, packet, now, out);
  } else if (stun::classifyPacket(packet[0]) == stun::PacketKind::kStun) {
    onStun(listener, five_tuple, packet, now, out);
  } else {
    ++cur_->drop_not_turn;
  }
}

void Server::onStun(ListenerId listener, const FiveTuple& five_tuple,
                    std::span<const uint8_t> packet, const Now& now, Actions& out) {
  auto parsed = stun::MessageView::parse(packet);
  if (!parsed) {
    onMalformedStun(listener, five_tuple, packet, out);
    return;
  }
  const stun::MessageView& m = *parsed;
  if (stun::checkFingerprint(m) == stun::IntegrityCheck::kInvalid) {
    // A bad FINGERPRINT means this is not STUN at all (RFC 8489 §7.3): drop silently.
    ++cur_->drop_malformed;
    return;
  }
  if (m.messageClass() == stun::MessageClass::kIndication) {
    if (m.method() == stun::Method::kSend) {
      handleSend(five_tuple, m, now, out);
    } else {
      ++cur_->drop_ignored;
    }
    return;
  }
  if (!m.isRequest()) {
    ++cur_->drop_ignored;  // responses: the server sends no requests over UDP
    return;
  }
  last_request_method_ = static_cast<uint16_t>(m.method());
  Request req{listener, five_tuple, m, now, out, nullptr, {}};
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

void Server::onMalformedStun(ListenerId listener, const FiveTuple& five_tuple,
                             std::span<const uint8_t> packet, Actions& out) {
  ++cur_->drop_malformed;
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
    out.to_clients.push_back({listener, five_tuple.client, *msg});
    ++cur_->error_responses;
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
  ++cur_->error_responses;
  return true;
}

bool Server::authenticate(Request& req, Allocation* allocation) {
  const ServerConfig& cfg = *config_;
  if (cfg.auth_mode == AuthMode::kNone) {
    // auth type "none" serves STUN only.
    respondError(req, stun::error::kForbidden);
    return false;
  }
  const stun::MessageView& m = req.message;
  if (!m.has(stun::attr::kMessageIntegrity) && !m.has(stun::attr::kMessageIntegritySha256)) {
    ++cur_->auth_missing;
    respondChallenge(req, stun::error::kUnauthorized);
    return false;
  }
  const AuthThrottle::Limits limits{cfg.auth_failures_per_window, cfg.auth_failure_window_seconds};
  if (!auth_throttle_.allows(req.five_tuple.client.ip, req.now.unix_seconds, limits) &&
      !cfg.trusted(req.five_tuple.client.ip)) {
    ++cur_->auth_throttled;  // dropped unanswered, before any HMAC work
    return false;
  }
  const auto username = m.value(stun::attr::kUsername);
  const auto realm = m.value(stun::attr::kRealm);
  const auto nonce = m.value(stun::attr::kNonce);
  if (!username || !realm || !nonce) {
    respondError(req, stun::error::kBadRequest);
    return false;
  }
  const std::string_view user = stun::decodeString(*username);
  auto algorithm = stun::PasswordAlgorithm::kMd5;
  if (const auto pa = m.value(stun::attr::kPasswordAlgorithm)) {
    const auto v = stun::decodePasswordAlgorithm(*pa);
    if (!v || (v->algorithm != 1 && v->algorithm != 2)) {
      respondError(req, stun::error::kBadRequest);
      return false;
    }
    algorithm = static_cast<stun::PasswordAlgorithm>(v->algorithm);
  }

  // An OAuth request's USERNAME is a key id; its token carries its own lifetime.
  const bool oauth = m.has(stun::attr::kAccessToken) && !cfg.oauth_keys.empty();
  const bool oauth_allocation = allocation != nullptr && allocation->oauth;
  // An ephemeral credential stops working at its embedded expiry, also for an allocation that it
  // created (seed 000: existing allocations live until the expiry in their username).
  if (cfg.auth_mode == AuthMode::kEphemeral && !oauth && !oauth_allocation) {
    const auto expiry = restUsernameExpiry(user);
    if (!expiry || *expiry < req.now.unix_seconds) {
      ++(expiry ? cur_->auth_expired : cur_->auth_unknown_user);
      rejectCredentials(req, stun::error::kUnauthorized);
      return false;
    }
  }
  stun::IntegrityKey key;
  if (oauth && allocation != nullptr && !oauth_allocation) {
    // An allocation made with long-term credentials stays theirs (RFC 8656 §5).
    rejectCredentials(req, stun::error::kWrongCredentials);
    return false;
  }
  if (oauth) {
    auto token_key = tokenKey(req, user);
    if (!token_key) return false;
    key = *token_key;
    req.oauth = true;
  } else if (allocation != nullptr) {
    // An OAuth allocation's later requests may name any shared key (a Refresh brings a new
    // token, under any kid); the mac-key it holds decides.
    if (!oauth_allocation && user != allocation->username) {
      rejectCredentials(req, stun::error::kWrongCredentials);
      return false;
    }
    key = allocation->key;
  } else {
    auto outcome = Authenticator::lookup(cfg, user, req.now.unix_seconds, algorithm);
    if (!outcome.key) {
      ++(outcome.failure == AuthFailure::kExpired ? cur_->auth_expired : cur_->auth_unknown_user);
      rejectCredentials(req, stun::error::kUnauthorized);
      return false;
    }
    key = *outcome.key;
  }
  bool valid = stun::checkMessageIntegrity(m, key.span()) == stun::IntegrityCheck::kValid;
  if (!valid && req.oauth && key.size == 20) {
    // coturn's clients key MESSAGE-INTEGRITY (HMAC-SHA1) with the first 16 bytes of a 20-byte
    // mac-key, their HMAC key size for long-term credentials; responses are signed likewise.
    key.size = 16;
    valid = stun::checkMessageIntegrity(m, key.span()) == stun::IntegrityCheck::kValid;
  }
  if (!valid && allocation == nullptr && !oauth && cfg.auth_mode == AuthMode::kEphemeral) {
    // A credential minted with a secret that is being rotated out (checked only after the
    // current secret failed, so steady state costs nothing extra).
    for (const auto& previous : cfg.previous_secrets) {
      if (previous.valid_until <= req.now.unix_seconds) continue;
      key = stun::longTermKey(user, cfg.realm, restPassword(previous.secret, user), algorithm);
      valid = stun::checkMessageIntegrity(m, key.span()) == stun::IntegrityCheck::kValid;
      if (valid) break;
    }
  }
  if (!valid) {
    ++cur_->auth_bad_integrity;
    rejectCredentials(req, stun::error::kUnauthorized);
    return false;
  }
  if (nonces_.check(stun::decodeString(*nonce), req.five_tuple.client, req.now.unix_seconds) !=
      NonceGenerator::Check::kValid) {
    ++cur_->auth_stale_nonce;
    respondChallenge(req, stun::error::kStaleNonce);
    return false;
  }
  req.key_storage = key;
  req.key = &req.key_storage;
  // A new token replaces the allocation's mac-key (RFC 7635 §8: the session key of the token).
  if (req.oauth && allocation != nullptr && allocation->oauth) allocation->key = key;
  return true;
}

std::optional<stun::IntegrityKey> Server::tokenKey(Request& req, std::string_view kid) {
  const ServerConfig& cfg = *config_;
  const ServerConfig::OAuthKey* shared = nullptr;
  for (const auto& k : cfg.oauth_keys) {
    if (k.kid == kid) shared = &k;
  }
  if (shared == nullptr) {
    ++cur_->auth_unknown_user;
    rejectCredentials(req, stun::error::kUnauthorized);
    return std::nullopt;
  }
  const auto token = decodeAccessToken(*req.message.value(stun::attr::kAccessToken),
                                       cfg.oauth_server_name, shared->key);
  if (!token) {  // forged, or encrypted for another server or key
    ++cur_->auth_bad_integrity;
    rejectCredentials(req, stun::error::kUnauthorized);
    return std::nullopt;
  }
  // Within its lifetime, and not issued in the future (a minute of clock skew allowed).
  const int64_t now = req.now.unix_seconds;
  if (now > token->issued_unix + token->lifetime || token->issued_unix > now + 60) {
    ++cur_->auth_expired;
    rejectCredentials(req, stun::error::kUnauthorized);
    return std::nullopt;
  }
  stun::IntegrityKey key;
  std::copy_n(token->mac_key.begin(), token->mac_key_size, key.bytes.begin());
  key.size = token->mac_key_size;
  return key;
}

void Server::send(const Reply& reply, Actions& out, FunctionRef<void(stun::MessageBuilder&)> fill) {
  auto buf = out.scratch(kMaxResponseSize);
  if (buf.empty()) {
    ++cur_->drop_no_buffer;
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
    ++cur_->drop_no_buffer;
    return;
  }
  out.commit(msg->size());
  out.to_clients.push_back({reply.listener, reply.client, *msg});
}

void Server::respond(Request& req, stun::MessageClass cls,
                     FunctionRef<void(stun::MessageBuilder&)> fill) {
  const stun::MessageView& m = req.message;
  send({.listener = req.listener,
        .client = req.five_tuple.client,
        .method_bits = m.methodBits(),
        .cls = cls,
        .transaction = m.transactionId(),
        .key = req.key,
        .sha256 =
            m.has(stun::attr::kMessageIntegritySha256) && !m.has(stun::attr::kMessageIntegrity),
        .fingerprint = m.has(stun::attr::kFingerprint)},
       req.out, fill);
}

void Server::respondSuccess(Request& req) {
  respond(req, stun::MessageClass::kSuccessResponse, [](stun::MessageBuilder&) {});
}

void Server::respondError(Request& req, int code) {
  ++cur_->error_responses;
  respond(req, stun::MessageClass::kErrorResponse,
          [code](stun::MessageBuilder& b) { b.addErrorCode(code); });
}

void Server::rejectCredentials(Request& req, int code) {
  const ServerConfig& cfg = *config_;
  const IpAddress& source = req.five_tuple.client.ip;
  if (auth_throttle_.recordFailure(
          source, req.now.unix_seconds,
          {cfg.auth_failures_per_window, cfg.auth_failure_window_seconds}) &&
      blocker_ != nullptr && cfg.block_seconds > 0 && !cfg.trusted(source) &&
      blocker_->block(req.listener, req.five_tuple, req.now.mono + Seconds(cfg.block_seconds))) {
    ++cur_->sources_blocked;
  }
  if (code == stun::error::kWrongCredentials) {
    respondError(req, code);
  } else {
    respondChallenge(req, code);
  }
}

void Server::respondChallenge(Request& req, int code) {
  ++cur_->error_responses;
  req.key = nullptr;
  const auto nonce =
      nonces_.make(req.five_tuple.client, req.now.unix_seconds + config_->lifetimes.nonce.count());
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
  for (const PeerConnection& c : allocation.connections) connection_owners_.erase(c.id);
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
  countFor(a->listener);
  if (a->expires <= now.mono) {
    ++cur_->allocations_expired;
    deleteAllocation(*a, SessionEnd::kExpired, now);
    return;
  }
  a->armed_at = 0;
  expireConnections(*a, now.mono);
  for (ChannelBinding& c : a->channels) {
    if (c.expires <= now.mono) withdrawChannel(*a, c);  // before the sweep drops it
  }
  a->sweep(now.mono);
  rearm(*a);
}

bool Server::admits(const Allocation& a, PolicyVerdict& verdict, const TransportAddress& peer) {
  if (verdict.epoch != epoch_) {
    const ListenerPolicy* policy = config_->listener(a.listener);
    const PeerRange* range = policy != nullptr ? policy->admitting(peer) : nullptr;
    verdict = {epoch_, range != nullptr, range != nullptr ? range->cluster : ClusterId{0}};
  }
  return verdict.allowed;
}

bool Server::admitsIp(const Allocation& a, PolicyVerdict& verdict, const IpAddress& ip) {
  if (verdict.epoch != epoch_) {
    const ListenerPolicy* policy = config_->listener(a.listener);
    verdict = {epoch_, policy != nullptr && policy->allowsIp(ip)};
  }
  return verdict.allowed;
}

bool Server::tcpAdmitsIp(const Allocation& a, const IpAddress& ip) const {
  const ListenerPolicy* policy = config_->listener(a.listener);
  return policy != nullptr && policy->admittingTcp({ip, 0}, /*ip_only=*/true) != nullptr;
}

bool Server::admitsPacket(const Allocation& a, Permission& permission, const TransportAddress& peer,
                          ClusterId& cluster) {
  PolicyVerdict& verdict = permission.any_port_verdict;
  if (verdict.epoch != epoch_) {
    const ListenerPolicy* policy = config_->listener(a.listener);
    const PeerRange* range = policy != nullptr ? policy->admittingAllPorts(peer.ip) : nullptr;
    verdict = {epoch_, range != nullptr, range != nullptr ? range->cluster : ClusterId{0}};
  }
  if (verdict.allowed) {
    cluster = verdict.cluster;
    return true;
  }
  // Port-restricted endpoints: check this packet's port (a short scan of the listener's routes).
  const ListenerPolicy* policy = config_->listener(a.listener);
  const PeerRange* range = policy != nullptr ? policy->admitting(peer) : nullptr;
  if (range == nullptr) return false;
  cluster = range->cluster;
  return true;
}

void Server::countCluster(ClusterId cluster, bool to_peer, uint64_t bytes, uint64_t packets) {
  if (cluster >= cluster_stats_.size()) cluster_stats_.resize(cluster + 1);
  TrafficCounters& t = cluster_stats_[cluster];
  if (to_peer) {
    t.tx_packets += packets;
    t.tx_bytes += bytes;
  } else {
    t.rx_packets += packets;
    t.rx_bytes += bytes;
  }
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
