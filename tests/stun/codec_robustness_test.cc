// The codec on hostile input: random, truncated and bit-flipped bytes never crash it, and every
// view it returns stays inside the input.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "stun/attributes.h"
#include "stun/channel_data.h"
#include "stun/integrity.h"
#include "stun/message.h"
#include "stun/message_builder.h"

namespace kturn::stun {
namespace {

bool inside(std::span<const uint8_t> part, std::span<const uint8_t> whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

void exercise(std::span<const uint8_t> bytes) {
  if (auto m = MessageView::parse(bytes)) {
    for (const Attribute& a : m->attributes()) {
      ASSERT_TRUE(inside(a.value, bytes));
      (void)decodeXorAddress(a.value, m->xorPad());
      (void)decodeAddress(a.value);
      (void)decodeUint32(a.value);
      (void)decodeErrorCode(a.value);
      (void)decodeRequestedTransport(a.value);
      (void)decodeChannelNumber(a.value);
      (void)decodeAddressFamily(a.value);
      (void)decodeEvenPort(a.value);
      (void)decodePasswordAlgorithm(a.value);
    }
    const uint8_t key[16] = {};
    (void)checkMessageIntegrity(*m, key);
    (void)checkFingerprint(*m);
  }
  if (auto cd = parseChannelData(bytes)) {
    ASSERT_TRUE(inside(cd->data, bytes));
  }
}

TEST(CodecRobustness, RandomTruncatedAndFlippedInputs) {
  uint8_t buf[512];
  const TransactionId txid = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  MessageBuilder b(buf, Method::kAllocate, MessageClass::kRequest, txid);
  const uint8_t udp[] = {17, 0, 0, 0};
  b.add(attr::kRequestedTransport, udp)
      .addString(attr::kUsername, "user")
      .addString(attr::kRealm, "realm")
      .addString(attr::kNonce, "nonce")
      .addXorAddress(attr::kXorPeerAddress, *TransportAddress::parse("[2001:db8::1]:9"))
      .addMessageIntegrity(udp)
      .addFingerprint();
  const auto valid = *b.finish();

  std::mt19937 rng(2024);
  for (int i = 0; i < 50000; ++i) {
    std::vector<uint8_t> d;
    switch (i % 3) {
      case 0:
        d.resize(rng() % 600);
        for (auto& x : d) x = static_cast<uint8_t>(rng());
        if (d.size() >= 8 && rng() % 2) {  // plausible header, garbage body
          d[0] &= 0x3F;
          d[4] = 0x21, d[5] = 0x12, d[6] = 0xA4, d[7] = 0x42;
          d[2] = static_cast<uint8_t>((d.size() - 20) >> 8);
          d[3] = static_cast<uint8_t>(d.size() - 20);
        }
        break;
      case 1:
        d.assign(valid.begin(), valid.begin() + rng() % (valid.size() + 1));
        break;
      default:
        d.assign(valid.begin(), valid.end());
        for (int k = 0; k < 4; ++k) d[rng() % d.size()] ^= static_cast<uint8_t>(rng());
        break;
    }
    exercise(d);
  }
}

}  // namespace
}  // namespace kturn::stun
