#include "common/crypto.h"

#include <gtest/gtest.h>

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
