#include "turn_client.h"

#include <cstring>

#include "stun/attributes.h"
#include "stun/constants.h"
#include "stun/message_builder.h"

namespace kturn::bench {

bool buildRequest(TurnClient& c, const RequestParams& params, uint64_t& txid_counter) {
  ++txid_counter;
  for (size_t i = 0; i < 8; ++i) c.txid[i] = static_cast<uint8_t>(txid_counter >> (8 * i));
  for (size_t i = 0; i < 4; ++i) c.txid[8 + i] = static_cast<uint8_t>(c.index >> (8 * i));

  stun::Method method = stun::Method::kAllocate;
  switch (c.step) {
    case Step::kAllocateProbe:
    case Step::kAllocate:
      method = stun::Method::kAllocate;
      break;
    case Step::kPermission:
      method = stun::Method::kCreatePermission;
      break;
    case Step::kChannelBind:
      method = stun::Method::kChannelBind;
      break;
    case Step::kRefresh:
    case Step::kRelease:
      method = stun::Method::kRefresh;
      break;
    default:
      return false;
  }
  stun::MessageBuilder b(c.request, method, stun::MessageClass::kRequest, c.txid);
  switch (c.step) {
    case Step::kAllocateProbe:
    case Step::kAllocate: {
      const uint8_t udp[] = {17, 0, 0, 0};
      b.add(stun::attr::kRequestedTransport, udp);
      b.addUint32(stun::attr::kLifetime, params.lifetime);
      break;
    }
    case Step::kPermission:
      b.addXorAddress(stun::attr::kXorPeerAddress, params.peer);
      break;
    case Step::kChannelBind: {
      const uint8_t number[] = {static_cast<uint8_t>(c.channel >> 8),
                                static_cast<uint8_t>(c.channel), 0, 0};
      b.add(stun::attr::kChannelNumber, number);
      b.addXorAddress(stun::attr::kXorPeerAddress, params.peer);
      break;
    }
    case Step::kRefresh:
      b.addUint32(stun::attr::kLifetime, params.lifetime);
      break;
    case Step::kRelease:
      b.addUint32(stun::attr::kLifetime, 0);
      break;
    default:
      break;
  }
  if (c.step != Step::kAllocateProbe && c.have_key) {
    b.addString(stun::attr::kUsername, c.username)
        .addString(stun::attr::kRealm, c.realm)
        .addString(stun::attr::kNonce, c.nonce)
        .addMessageIntegrity(c.key.span());
  }
  b.addFingerprint();
  auto done = b.finish();
  if (!done) return false;
  c.request_size = static_cast<uint16_t>(done->size());
  return true;
}

void buildSendHead(TurnClient& c, const TransportAddress& peer, size_t payload) {
  // Build a whole Send indication with a zero DATA value and keep everything before the value:
  // the builder gets the lengths and the XOR right, the payload is sent from other iovecs.
  uint8_t scratch[2048];
  stun::TransactionId txid{};
  for (size_t i = 0; i < 4; ++i) txid[i] = static_cast<uint8_t>(c.index >> (8 * i));
  txid[11] = 0x5e;
  static const uint8_t zeros[1600] = {};
  stun::MessageBuilder b(scratch, stun::Method::kSend, stun::MessageClass::kIndication, txid);
  b.addXorAddress(stun::attr::kXorPeerAddress, peer);
  b.add(stun::attr::kData, std::span<const uint8_t>(zeros, payload));
  const size_t padded = (payload + 3) & ~size_t{3};
  const size_t head = b.size() - padded;
  std::memcpy(c.send_head.data(), scratch, head);
  c.send_head_size = static_cast<uint8_t>(head);
}

ResponseInfo readResponse(const stun::MessageView& m) {
  ResponseInfo r;
  r.success = m.messageClass() == stun::MessageClass::kSuccessResponse;
  if (auto v = m.value(stun::attr::kErrorCode)) {
    if (auto e = stun::decodeErrorCode(*v)) r.error = e->code;
  }
  if (auto v = m.value(stun::attr::kRealm)) r.realm = std::string(stun::decodeString(*v));
  if (auto v = m.value(stun::attr::kNonce)) r.nonce = std::string(stun::decodeString(*v));
  if (auto v = m.value(stun::attr::kXorRelayedAddress)) {
    r.relayed = stun::decodeXorAddress(*v, m.xorPad());
  }
  return r;
}

}  // namespace kturn::bench
