#include "client/turn_client.h"

#include <openssl/rand.h>
#include <poll.h>

#include <algorithm>
#include <cstring>

#include "stun/attributes.h"
#include "stun/channel_data.h"
#include "stun/constants.h"

namespace kturn::client {
namespace {

constexpr size_t kOutCapacity = 65536 + 64;
constexpr size_t kMaxRequest = 2048;
constexpr int kInitialRtoMs = 500;  // RFC 8489 §6.2.1
constexpr int kMaxTransmissions = 7;
constexpr uint8_t kUdpProtocol = 17;
constexpr auto kPermissionRefresh = std::chrono::seconds(240);  // of 300 (RFC 8656 §9)
constexpr auto kChannelRefresh = std::chrono::seconds(540);     // of 600 (RFC 8656 §12)

int msUntil(TurnClient::Clock::time_point t) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(t - TurnClient::Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

void writePeer(stun::MessageBuilder& b, const TransportAddress& peer) {
  b.addXorAddress(stun::attr::kXorPeerAddress, peer);
}

}  // namespace

TurnClient::TurnClient(std::unique_ptr<ServerLink> link, TurnClientOptions options)
    : link_(std::move(link)),
      options_(std::move(options)),
      request_(kMaxRequest),
      out_(new uint8_t[kOutCapacity]) {
  answer_.reserve(kMaxRequest);
}

TurnClient::~TurnClient() = default;

Result<stun::MessageView> TurnClient::transactOnce(stun::Method method, const Build& build) {
  RAND_bytes(pending_.data(), static_cast<int>(pending_.size()));
  stun::MessageBuilder b(request_, method, stun::MessageClass::kRequest, pending_);
  build(b);
  if (have_key_) {
    b.addString(stun::attr::kUsername, options_.username)
        .addString(stun::attr::kRealm, realm_)
        .addString(stun::attr::kNonce, nonce_)
        .addMessageIntegrity(key_.span());
  }
  b.addFingerprint();
  auto request = b.finish();
  if (!request) return request.error();

  waiting_ = true;
  answered_ = false;
  const auto deadline = Clock::now() + std::chrono::milliseconds(options_.transaction_timeout_ms);
  int rto_ms = kInitialRtoMs;
  int transmissions = 0;
  Clock::time_point retransmit_at = Clock::now();
  Result<void> outcome;
  while (!answered_) {
    const auto now = Clock::now();
    if (now >= deadline) {
      outcome =
          makeError(Error::Code::kIo, std::string(stun::methodName(method)) + ": no answer from " +
                                          link_->server().toString() + " within " +
                                          std::to_string(options_.transaction_timeout_ms) + " ms");
      break;
    }
    if (now >= retransmit_at && transmissions < (link_->reliable() ? 1 : kMaxTransmissions)) {
      // A datagram lost to a full buffer is retransmitted like one lost on the way.
      if (auto sent = link_->send(*request);
          !sent && sent.error().code != Error::Code::kExhausted) {
        outcome = sent;
        break;
      }
      ++transmissions;
      retransmit_at = now + std::chrono::milliseconds(rto_ms);
      rto_ms *= 2;
    }
    if (!link_->hasBuffered()) {
      const bool may_retransmit = transmissions < (link_->reliable() ? 1 : kMaxTransmissions);
      const int wait =
          std::min(msUntil(deadline), may_retransmit ? msUntil(retransmit_at) : msUntil(deadline));
      pollfd p{link_->fd(), POLLIN, 0};
      if (::poll(&p, 1, wait) <= 0) continue;
    }
    if (outcome = link_->receive([this](std::span<const uint8_t> m) { dispatch(m); }); !outcome) {
      break;
    }
  }
  waiting_ = false;
  if (!outcome) return outcome.error();
  return stun::MessageView::parse(answer_);
}

Result<stun::MessageView> TurnClient::transact(stun::Method method, const Build& build) {
  last_refusal_.reset();
  // 401 to a request without credentials is the challenge (RFC 8489 §9.2.3); 438 is a nonce gone
  // stale (§9.2.5). Both carry what the retry needs; each is answered once per request, so a
  // second one is final.
  bool challenged = false;
  bool refreshed_nonce = false;
  for (;;) {
    auto answer = transactOnce(method, build);
    if (!answer) return answer;
    if (answer->messageClass() == stun::MessageClass::kSuccessResponse) return answer;
    int code = 0;
    if (auto v = answer->value(stun::attr::kErrorCode)) {
      if (auto e = stun::decodeErrorCode(*v)) code = e->code;
    }
    const bool challenge = code == 401 && !have_key_ && !challenged;
    const bool stale = code == 438 && have_key_ && !refreshed_nonce;
    auto realm = answer->value(stun::attr::kRealm);
    auto nonce = answer->value(stun::attr::kNonce);
    if (!(challenge || stale) || !nonce || (challenge && !realm)) {
      return refused(method, *answer);
    }
    challenged = challenged || challenge;
    refreshed_nonce = refreshed_nonce || stale;
    if (options_.username.empty()) {
      last_refusal_ = Refusal{401, "Unauthorized"};
      return makeError(Error::Code::kInvalidArgument,
                       std::string(stun::methodName(method)) +
                           ": the server wants credentials and none were given");
    }
    if (realm) realm_ = std::string(stun::decodeString(*realm));
    nonce_ = std::string(stun::decodeString(*nonce));
    key_ = stun::longTermKey(options_.username, realm_, options_.password);
    have_key_ = true;
  }
}

Error TurnClient::refused(stun::Method method, const stun::MessageView& answer) {
  Refusal refusal;
  if (auto v = answer.value(stun::attr::kErrorCode)) {
    if (auto e = stun::decodeErrorCode(*v)) {
      refusal.code = e->code;
      refusal.reason = std::string(e->reason);
    }
  }
  std::string message = std::string(stun::methodName(method)) +
                        " refused: " + std::to_string(refusal.code) + " " + refusal.reason;
  if (refusal.code == 401) message += " (the credentials were not accepted)";
  last_refusal_ = std::move(refusal);
  return makeError(Error::Code::kInvalidArgument, std::move(message));
}

void TurnClient::dispatch(std::span<const uint8_t> message) {
  if (message.empty()) return;
  if (stun::isChannelDataByte(message[0])) {
    auto cd = stun::parseChannelData(message);
    if (!cd) return;
    for (const Channel& c : channels_) {
      if (c.number == cd->channel) {
        if (on_data_) on_data_(c.peer, cd->data);
        return;
      }
    }
    return;
  }
  auto m = stun::MessageView::parse(message);
  if (!m) return;
  if (m->isIndication()) {
    if (m->method() != stun::Method::kData) return;
    auto peer = m->value(stun::attr::kXorPeerAddress);
    auto data = m->value(stun::attr::kData);
    if (!peer || !data) return;
    auto address = stun::decodeXorAddress(*peer, m->xorPad());
    if (address && on_data_) on_data_(*address, *data);
    return;
  }
  if (!waiting_ || answered_ || m->isRequest()) return;
  const auto txid = m->transactionId();
  if (!std::equal(txid.begin(), txid.end(), pending_.begin())) return;  // a late duplicate
  // An answer that fails the integrity check is discarded as if never received (RFC 8489 §9.2.4).
  if (have_key_ && stun::checkMessageIntegrity(*m, key_.span()) == stun::IntegrityCheck::kInvalid) {
    return;
  }
  answer_.assign(message.begin(), message.end());
  answered_ = true;
}

Result<AllocationInfo> TurnClient::allocate() {
  auto answer = transact(stun::Method::kAllocate, [this](stun::MessageBuilder& b) {
    const uint8_t transport[] = {kUdpProtocol, 0, 0, 0};
    b.add(stun::attr::kRequestedTransport, transport);
    b.addUint32(stun::attr::kLifetime, options_.lifetime);
    if (options_.relay_family) {
      const uint8_t family[] = {static_cast<uint8_t>(*options_.relay_family), 0, 0, 0};
      b.add(stun::attr::kRequestedAddressFamily, family);
    }
  });
  if (!answer) return answer.error();
  AllocationInfo info;
  auto relayed = answer->value(stun::attr::kXorRelayedAddress);
  auto address = relayed ? stun::decodeXorAddress(*relayed, answer->xorPad()) : std::nullopt;
  if (!address) {
    return makeError(Error::Code::kMalformed, "Allocate: success without XOR-RELAYED-ADDRESS");
  }
  info.relayed = *address;
  if (auto mapped = answer->value(stun::attr::kXorMappedAddress)) {
    if (auto a = stun::decodeXorAddress(*mapped, answer->xorPad())) info.mapped = *a;
  }
  info.lifetime = options_.lifetime;
  if (auto v = answer->value(stun::attr::kLifetime)) {
    if (auto l = stun::decodeUint32(*v)) info.lifetime = *l;
  }
  allocation_ = info;
  allocation_refreshed_ = Clock::now();
  return info;
}

Result<void> TurnClient::createPermission(const IpAddress& peer) {
  auto answer = transact(stun::Method::kCreatePermission, [&peer](stun::MessageBuilder& b) {
    writePeer(b, TransportAddress{peer, 0});
  });
  if (!answer) return answer.error();
  const auto now = Clock::now();
  for (Permission& p : permissions_) {
    if (p.peer == peer) {
      p.refreshed = now;
      return {};
    }
  }
  permissions_.push_back({peer, now});
  return {};
}

Result<uint16_t> TurnClient::bindChannel(const TransportAddress& peer) {
  auto existing = std::find_if(channels_.begin(), channels_.end(),
                               [&peer](const Channel& c) { return c.peer == peer; });
  uint16_t number = existing != channels_.end() ? existing->number : next_channel_;
  if (existing == channels_.end() && number > 0x4FFF) {
    return makeError(Error::Code::kExhausted, "ChannelBind: every channel number is in use");
  }
  auto answer = transact(stun::Method::kChannelBind, [&peer, number](stun::MessageBuilder& b) {
    const uint8_t value[] = {static_cast<uint8_t>(number >> 8), static_cast<uint8_t>(number), 0, 0};
    b.add(stun::attr::kChannelNumber, value);
    writePeer(b, peer);
  });
  if (!answer) return answer.error();
  const auto now = Clock::now();
  if (existing != channels_.end()) {
    existing->refreshed = now;
  } else {
    channels_.push_back({number, peer, now});
    ++next_channel_;
  }
  // A channel binding installs or refreshes the peer's permission too (RFC 8656 §12.2).
  auto permission = std::find_if(permissions_.begin(), permissions_.end(),
                                 [&peer](const Permission& p) { return p.peer == peer.ip; });
  if (permission != permissions_.end()) {
    permission->refreshed = now;
  } else {
    permissions_.push_back({peer.ip, now});
  }
  return number;
}

Result<void> TurnClient::refresh(uint32_t lifetime) {
  auto answer = transact(stun::Method::kRefresh, [lifetime](stun::MessageBuilder& b) {
    b.addUint32(stun::attr::kLifetime, lifetime);
  });
  if (!answer) {
    if (last_refusal_ && last_refusal_->code == 437) allocation_.reset();  // already gone
    return answer.error();
  }
  if (lifetime == 0) {
    allocation_.reset();
    permissions_.clear();
    channels_.clear();
    return {};
  }
  if (allocation_) {
    allocation_->lifetime = lifetime;
    if (auto v = answer->value(stun::attr::kLifetime)) {
      if (auto l = stun::decodeUint32(*v)) allocation_->lifetime = *l;
    }
  }
  allocation_refreshed_ = Clock::now();
  return {};
}

void TurnClient::release() {
  if (!allocation_) return;
  const int timeout = options_.transaction_timeout_ms;
  options_.transaction_timeout_ms = std::min(timeout, 1000);  // best effort on the way out
  (void)refresh(0);
  options_.transaction_timeout_ms = timeout;
  allocation_.reset();
}

Result<void> TurnClient::send(const TransportAddress& peer, std::span<const uint8_t> data) {
  for (const Channel& c : channels_) {
    if (c.peer != peer) continue;
    if (data.size() > 0xFFFF) return makeError(Error::Code::kTooLong, "payload over 65535 bytes");
    stun::writeChannelDataHeader(out_.get(), c.number, static_cast<uint16_t>(data.size()));
    std::memcpy(out_.get() + 4, data.data(), data.size());
    return link_->send({out_.get(), 4 + data.size()});
  }
  stun::TransactionId txid{};
  const uint64_t n = ++indications_;
  std::memcpy(txid.data(), &n, sizeof n);
  stun::MessageBuilder b({out_.get(), kOutCapacity}, stun::Method::kSend,
                         stun::MessageClass::kIndication, txid);
  writePeer(b, peer);
  b.add(stun::attr::kData, data);
  auto message = b.finish();
  if (!message) return makeError(Error::Code::kTooLong, "payload too large for a Send indication");
  return link_->send(*message);
}

Result<void> TurnClient::receive() {
  return link_->receive([this](std::span<const uint8_t> m) { dispatch(m); });
}

TurnClient::Clock::time_point TurnClient::nextMaintenance() const {
  auto next = Clock::time_point::max();
  if (allocation_) {
    next = allocation_refreshed_ + std::chrono::seconds(allocation_->lifetime / 2);
  }
  for (const Permission& p : permissions_) next = std::min(next, p.refreshed + kPermissionRefresh);
  for (const Channel& c : channels_) next = std::min(next, c.refreshed + kChannelRefresh);
  return next;
}

Result<void> TurnClient::maintain(Clock::time_point now) {
  // What is refreshed here is dated `now`, the caller's idea of the time, not the clock.
  if (allocation_ &&
      now >= allocation_refreshed_ + std::chrono::seconds(allocation_->lifetime / 2)) {
    if (auto r = refresh(options_.lifetime); !r) return r;
    allocation_refreshed_ = now;
  }
  for (size_t i = 0; i < channels_.size(); ++i) {
    if (now < channels_[i].refreshed + kChannelRefresh) continue;
    if (auto r = bindChannel(channels_[i].peer); !r) return r.error();
    channels_[i].refreshed = now;
    for (Permission& p : permissions_) {
      if (p.peer == channels_[i].peer.ip) p.refreshed = now;  // ChannelBind renewed it too
    }
  }
  for (size_t i = 0; i < permissions_.size(); ++i) {
    if (now < permissions_[i].refreshed + kPermissionRefresh) continue;
    if (auto r = createPermission(permissions_[i].peer); !r) return r;
    permissions_[i].refreshed = now;
  }
  return {};
}

}  // namespace kturn::client
