// RFC 5769 test vectors, parsed and re-built byte for byte.
#include <gtest/gtest.h>

#include <vector>

#include "stun/attributes.h"
#include "stun/integrity.h"
#include "stun/message.h"
#include "stun/message_builder.h"

namespace kturn::stun {
namespace {

using Bytes = std::vector<uint8_t>;

// clang-format off
// RFC 5769 §2.1: Sample Request. Short-term credential, password "VOkJxbRl1RmTxUk/WvJxBt".
const Bytes kSampleRequest = {
    0x00, 0x01, 0x00, 0x58,  // Binding request, length 88
    0x21, 0x12, 0xa4, 0x42,  // magic cookie
    0xb7, 0xe7, 0xa7, 0x01,  // transaction ID
    0xbc, 0x34, 0xd6, 0x86,
    0xfa, 0x87, 0xdf, 0xae,
    0x80, 0x22, 0x00, 0x10,  // SOFTWARE, 16 bytes: "STUN test client"
    0x53, 0x54, 0x55, 0x4e,
    0x20, 0x74, 0x65, 0x73,
    0x74, 0x20, 0x63, 0x6c,
    0x69, 0x65, 0x6e, 0x74,
    0x00, 0x24, 0x00, 0x04,  // PRIORITY, 4 bytes
    0x6e, 0x00, 0x01, 0xff,
    0x80, 0x29, 0x00, 0x08,  // ICE-CONTROLLED, 8 bytes
    0x93, 0x2f, 0xf9, 0xb1,
    0x51, 0x26, 0x3b, 0x36,
    0x00, 0x06, 0x00, 0x09,  // USERNAME, 9 bytes + 3 padding
    0x65, 0x76, 0x74, 0x6a,
    0x3a, 0x68, 0x36, 0x76,
    0x59, 0x20, 0x20, 0x20,
    0x00, 0x08, 0x00, 0x14,  // MESSAGE-INTEGRITY, 20 bytes
    0x9a, 0xea, 0xa7, 0x0c,
    0xbf, 0xd8, 0xcb, 0x56,
    0x78, 0x1e, 0xf2, 0xb5,
    0xb2, 0xd3, 0xf2, 0x49,
    0xc1, 0xb5, 0x71, 0xa2,
    0x80, 0x28, 0x00, 0x04,  // FINGERPRINT, 4 bytes
    0xe5, 0x7a, 0x3b, 0xcf,
};

// RFC 5769 §2.2: Sample IPv4 Response, XOR-MAPPED-ADDRESS 192.0.2.1:32853.
const Bytes kSampleIpv4Response = {
    0x01, 0x01, 0x00, 0x3c,  // Binding success response, length 60
    0x21, 0x12, 0xa4, 0x42,  // magic cookie
    0xb7, 0xe7, 0xa7, 0x01,  // transaction ID
    0xbc, 0x34, 0xd6, 0x86,
    0xfa, 0x87, 0xdf, 0xae,
    0x80, 0x22, 0x00, 0x0b,  // SOFTWARE, 11 bytes + 1 padding: "test vector"
    0x74, 0x65, 0x73, 0x74,
    0x20, 0x76, 0x65, 0x63,
    0x74, 0x6f, 0x72, 0x20,
    0x00, 0x20, 0x00, 0x08,  // XOR-MAPPED-ADDRESS, 8 bytes
    0x00, 0x01, 0xa1, 0x47,
    0xe1, 0x12, 0xa6, 0x43,
    0x00, 0x08, 0x00, 0x14,  // MESSAGE-INTEGRITY, 20 bytes
    0x2b, 0x91, 0xf5, 0x99,
    0xfd, 0x9e, 0x90, 0xc3,
    0x8c, 0x74, 0x89, 0xf9,
    0x2a, 0xf9, 0xba, 0x53,
    0xf0, 0x6b, 0xe7, 0xd7,
    0x80, 0x28, 0x00, 0x04,  // FINGERPRINT, 4 bytes
    0xc0, 0x7d, 0x4c, 0x96,
};

// RFC 5769 §2.3: Sample IPv6 Response, 2001:db8:1234:5678:11:2233:4455:6677 port 32853.
const Bytes kSampleIpv6Response = {
    0x01, 0x01, 0x00, 0x48,  // Binding success response, length 72
    0x21, 0x12, 0xa4, 0x42,  // magic cookie
    0xb7, 0xe7, 0xa7, 0x01,  // transaction ID
    0xbc, 0x34, 0xd6, 0x86,
    0xfa, 0x87, 0xdf, 0xae,
    0x80, 0x22, 0x00, 0x0b,  // SOFTWARE, 11 bytes + 1 padding: "test vector"
    0x74, 0x65, 0x73, 0x74,
    0x20, 0x76, 0x65, 0x63,
    0x74, 0x6f, 0x72, 0x20,
    0x00, 0x20, 0x00, 0x14,  // XOR-MAPPED-ADDRESS, 20 bytes
    0x00, 0x02, 0xa1, 0x47,
    0x01, 0x13, 0xa9, 0xfa,
    0xa5, 0xd3, 0xf1, 0x79,
    0xbc, 0x25, 0xf4, 0xb5,
    0xbe, 0xd2, 0xb9, 0xd9,
    0x00, 0x08, 0x00, 0x14,  // MESSAGE-INTEGRITY, 20 bytes
    0xa3, 0x82, 0x95, 0x4e,
    0x4b, 0xe6, 0x7b, 0xf1,
    0x17, 0x84, 0xc9, 0x7c,
    0x82, 0x92, 0xc2, 0x75,
    0xbf, 0xe3, 0xed, 0x41,
    0x80, 0x28, 0x00, 0x04,  // FINGERPRINT, 4 bytes
    0xc8, 0xfb, 0x0b, 0x4c,
};

// RFC 5769 §2.4: Sample Request with Long-Term Authentication. Username "マトリックス",
// password "The<U+00AD>M<U+00AA>tr<U+2168>" ("TheMatrIX" after SASLprep), realm "example.org".
const Bytes kSampleLongTermRequest = {
    0x00, 0x01, 0x00, 0x60,  // Binding request, length 96
    0x21, 0x12, 0xa4, 0x42,  // magic cookie
    0x78, 0xad, 0x34, 0x33,  // transaction ID
    0xc6, 0xad, 0x72, 0xc0,
    0x29, 0xda, 0x41, 0x2e,
    0x00, 0x06, 0x00, 0x12,  // USERNAME, 18 bytes + 2 padding
    0xe3, 0x83, 0x9e, 0xe3,
    0x83, 0x88, 0xe3, 0x83,
    0xaa, 0xe3, 0x83, 0x83,
    0xe3, 0x82, 0xaf, 0xe3,
    0x82, 0xb9, 0x00, 0x00,
    0x00, 0x15, 0x00, 0x1c,  // NONCE, 28 bytes: "f//499k954d6OL34oL9FSTvy64sA"
    0x66, 0x2f, 0x2f, 0x34,
    0x39, 0x39, 0x6b, 0x39,
    0x35, 0x34, 0x64, 0x36,
    0x4f, 0x4c, 0x33, 0x34,
    0x6f, 0x4c, 0x39, 0x46,
    0x53, 0x54, 0x76, 0x79,
    0x36, 0x34, 0x73, 0x41,
    0x00, 0x14, 0x00, 0x0b,  // REALM, 11 bytes + 1 padding: "example.org"
    0x65, 0x78, 0x61, 0x6d,
    0x70, 0x6c, 0x65, 0x2e,
    0x6f, 0x72, 0x67, 0x00,
    0x00, 0x08, 0x00, 0x14,  // MESSAGE-INTEGRITY, 20 bytes
    0xf6, 0x70, 0x24, 0x65,
    0x6d, 0xd6, 0x4a, 0x3e,
    0x02, 0xb8, 0xe0, 0x71,
    0x2e, 0x85, 0xc9, 0xa2,
    0x8c, 0xa8, 0x96, 0x66,
};
// clang-format on

constexpr std::string_view kShortTermPassword = "VOkJxbRl1RmTxUk/WvJxBt";
const TransactionId kTxid = {0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34,
                             0xd6, 0x86, 0xfa, 0x87, 0xdf, 0xae};

std::span<const uint8_t> bytesOf(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(Rfc5769, SampleRequestParsesAndVerifies) {
  auto m = MessageView::parse(kSampleRequest);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->method(), Method::kBinding);
  EXPECT_EQ(m->messageClass(), MessageClass::kRequest);
  EXPECT_EQ(decodeString(*m->value(attr::kSoftware)), "STUN test client");
  EXPECT_EQ(decodeString(*m->value(attr::kUsername)), "evtj:h6vY");
  EXPECT_EQ(decodeUint32(*m->value(attr::kPriority)), 0x6e0001ffu);
  EXPECT_EQ(checkMessageIntegrity(*m, bytesOf(kShortTermPassword)), IntegrityCheck::kValid);
  EXPECT_EQ(checkMessageIntegrity(*m, bytesOf("wrong")), IntegrityCheck::kInvalid);
  EXPECT_EQ(checkFingerprint(*m), IntegrityCheck::kValid);
}

TEST(Rfc5769, SampleRequestIsRebuiltByteForByte) {
  uint8_t buf[256];
  MessageBuilder b(buf, Method::kBinding, MessageClass::kRequest, kTxid);
  const uint8_t controlled[] = {0x93, 0x2f, 0xf9, 0xb1, 0x51, 0x26, 0x3b, 0x36};
  b.setPaddingByte(0x20)
      .addString(attr::kSoftware, "STUN test client")
      .addUint32(attr::kPriority, 0x6e0001ff)
      .add(attr::kIceControlled, controlled)
      .addString(attr::kUsername, "evtj:h6vY")
      .addMessageIntegrity(bytesOf(kShortTermPassword))
      .addFingerprint();
  auto out = b.finish();
  ASSERT_TRUE(out);
  EXPECT_EQ(Bytes(out->begin(), out->end()), kSampleRequest);
}

TEST(Rfc5769, Ipv4ResponseRoundTrips) {
  auto m = MessageView::parse(kSampleIpv4Response);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->messageClass(), MessageClass::kSuccessResponse);
  const auto mapped = decodeXorAddress(*m->value(attr::kXorMappedAddress), m->xorPad());
  ASSERT_TRUE(mapped);
  EXPECT_EQ(mapped->toString(), "192.0.2.1:32853");
  EXPECT_EQ(checkMessageIntegrity(*m, bytesOf(kShortTermPassword)), IntegrityCheck::kValid);
  EXPECT_EQ(checkFingerprint(*m), IntegrityCheck::kValid);

  uint8_t buf[256];
  MessageBuilder b(buf, Method::kBinding, MessageClass::kSuccessResponse, kTxid);
  b.setPaddingByte(0x20)
      .addString(attr::kSoftware, "test vector")
      .addXorAddress(attr::kXorMappedAddress, *mapped)
      .addMessageIntegrity(bytesOf(kShortTermPassword))
      .addFingerprint();
  auto out = b.finish();
  ASSERT_TRUE(out);
  EXPECT_EQ(Bytes(out->begin(), out->end()), kSampleIpv4Response);
}

TEST(Rfc5769, Ipv6ResponseRoundTrips) {
  auto m = MessageView::parse(kSampleIpv6Response);
  ASSERT_TRUE(m);
  const auto mapped = decodeXorAddress(*m->value(attr::kXorMappedAddress), m->xorPad());
  ASSERT_TRUE(mapped);
  EXPECT_EQ(mapped->toString(), "[2001:db8:1234:5678:11:2233:4455:6677]:32853");
  EXPECT_EQ(checkMessageIntegrity(*m, bytesOf(kShortTermPassword)), IntegrityCheck::kValid);
  EXPECT_EQ(checkFingerprint(*m), IntegrityCheck::kValid);

  uint8_t buf[256];
  MessageBuilder b(buf, Method::kBinding, MessageClass::kSuccessResponse, kTxid);
  b.setPaddingByte(0x20)
      .addString(attr::kSoftware, "test vector")
      .addXorAddress(attr::kXorMappedAddress, *mapped)
      .addMessageIntegrity(bytesOf(kShortTermPassword))
      .addFingerprint();
  auto out = b.finish();
  ASSERT_TRUE(out);
  EXPECT_EQ(Bytes(out->begin(), out->end()), kSampleIpv6Response);
}

TEST(Rfc5769, LongTermRequestVerifiesAndRebuilds) {
  auto m = MessageView::parse(kSampleLongTermRequest);
  ASSERT_TRUE(m);
  const std::string_view user = decodeString(*m->value(attr::kUsername));
  const std::string_view realm = decodeString(*m->value(attr::kRealm));
  EXPECT_EQ(user, "\xe3\x83\x9e\xe3\x83\x88\xe3\x83\xaa\xe3\x83\x83\xe3\x82\xaf\xe3\x82\xb9");
  EXPECT_EQ(realm, "example.org");
  EXPECT_EQ(decodeString(*m->value(attr::kNonce)), "f//499k954d6OL34oL9FSTvy64sA");
  const IntegrityKey key = longTermKey(user, realm, "TheMatrIX");
  EXPECT_EQ(checkMessageIntegrity(*m, key.span()), IntegrityCheck::kValid);
  EXPECT_EQ(checkFingerprint(*m), IntegrityCheck::kAbsent);

  uint8_t buf[256];
  const TransactionId txid = {0x78, 0xad, 0x34, 0x33, 0xc6, 0xad,
                              0x72, 0xc0, 0x29, 0xda, 0x41, 0x2e};
  MessageBuilder b(buf, Method::kBinding, MessageClass::kRequest, txid);
  b.addString(attr::kUsername, user)
      .addString(attr::kNonce, "f//499k954d6OL34oL9FSTvy64sA")
      .addString(attr::kRealm, realm)
      .addMessageIntegrity(key.span());
  auto out = b.finish();
  ASSERT_TRUE(out);
  EXPECT_EQ(Bytes(out->begin(), out->end()), kSampleLongTermRequest);
}

TEST(Rfc5769, TamperedBytesFailIntegrityAndFingerprint) {
  Bytes tampered = kSampleRequest;
  tampered[30] ^= 0x01;  // inside SOFTWARE
  auto m = MessageView::parse(tampered);
  ASSERT_TRUE(m);
  EXPECT_EQ(checkMessageIntegrity(*m, bytesOf(kShortTermPassword)), IntegrityCheck::kInvalid);
  EXPECT_EQ(checkFingerprint(*m), IntegrityCheck::kInvalid);
}

}  // namespace
}  // namespace kturn::stun
