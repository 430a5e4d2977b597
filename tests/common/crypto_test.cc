#include "common/crypto.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <random>
#include <vector>

namespace kturn::crypto {
namespace {

std::string hex(std::span<const uint8_t> b) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (uint8_t c : b) {
    s += k[c >> 4];
    s += k[c & 15];
  }
  return s;
}

TEST(Crypto, HmacSha1MatchesRfc2202) {
  // RFC 2202 test case 2.
  const auto mac =
      hmacSha1(asBytes("Jefe"), {asBytes("what do ya want "), asBytes("for nothing?")});
  EXPECT_EQ(hex(mac), "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
}

TEST(Crypto, HmacSha256MatchesRfc4231) {
  const auto mac = hmacSha256(asBytes("Jefe"), {asBytes("what do ya want for nothing?")});
  EXPECT_EQ(hex(mac), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(Crypto, HmacHashesKeysLongerThanABlockFirst) {
  // RFC 2202 test case 6 and RFC 4231 test case 6: keys of 80 and 131 bytes.
  const std::vector<uint8_t> key80(80, 0xaa);
  EXPECT_EQ(
      hex(hmacSha1(key80, {asBytes("Test Using Larger Than Block-Size Key - Hash Key First")})),
      "aa4ae5e15272d00e95705637ce8a3b55ed402112");
  const std::vector<uint8_t> key131(131, 0xaa);
  EXPECT_EQ(
      hex(hmacSha256(key131, {asBytes("Test Using Larger Than Block-Size Key - Hash Key First")})),
      "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

// Against OpenSSL's own HMAC() for keys and messages of every length around the block size,
// split into parts at random points.
TEST(Crypto, HmacMatchesOpenSslHmacForAnyKeyAndMessage) {
  std::mt19937 rng(2202);
  std::vector<uint8_t> key(150), message(300);
  for (auto& b : key) b = static_cast<uint8_t>(rng());
  for (auto& b : message) b = static_cast<uint8_t>(rng());
  int checked = 0;
  for (size_t key_len : {0, 1, 16, 20, 32, 63, 64, 65, 100, 128, 150}) {
    for (size_t msg_len = 0; msg_len <= message.size(); msg_len += 13) {
      const ByteSpan k(key.data(), key_len);
      const size_t cut = msg_len == 0 ? 0 : rng() % msg_len;
      const ByteSpan head(message.data(), cut);
      const ByteSpan tail(message.data() + cut, msg_len - cut);
      uint8_t expected[EVP_MAX_MD_SIZE];
      unsigned expected_len = 0;
      HMAC(EVP_sha1(), k.data(), static_cast<int>(k.size()), message.data(), msg_len, expected,
           &expected_len);
      ASSERT_EQ(hex(hmacSha1(k, {head, tail})), hex({expected, expected_len}))
          << "key " << key_len << " message " << msg_len;
      HMAC(EVP_sha256(), k.data(), static_cast<int>(k.size()), message.data(), msg_len, expected,
           &expected_len);
      ASSERT_EQ(hex(hmacSha256(k, {head, tail})), hex({expected, expected_len}))
          << "key " << key_len << " message " << msg_len;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 11 * 24);
}

TEST(Crypto, DigestsMatchKnownValues) {
  EXPECT_EQ(hex(md5({asBytes("abc")})), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(hex(sha256({asBytes("a"), asBytes("bc")})),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Crypto, Base64RoundTripsAndRejectsGarbage) {
  for (std::string_view s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    const std::string enc = base64Encode(asBytes(s));
    const auto dec = base64Decode(enc);
    ASSERT_TRUE(dec) << enc;
    EXPECT_EQ(std::string(dec->begin(), dec->end()), s);
  }
  EXPECT_EQ(base64Encode(asBytes("foobar")), "Zm9vYmFy");
  EXPECT_EQ(base64Encode(asBytes("fo")), "Zm8=");
  EXPECT_FALSE(base64Decode("Zm9"));
  EXPECT_FALSE(base64Decode("Zm=v"));
  EXPECT_FALSE(base64Decode("Zm8=Zm8="));
  EXPECT_FALSE(base64Decode("Z!9v"));
}

TEST(Crypto, ConstantTimeCompare) {
  EXPECT_TRUE(equalConstantTime(asBytes("abc"), asBytes("abc")));
  EXPECT_FALSE(equalConstantTime(asBytes("abc"), asBytes("abd")));
  EXPECT_FALSE(equalConstantTime(asBytes("abc"), asBytes("ab")));
}

}  // namespace
}  // namespace kturn::crypto
