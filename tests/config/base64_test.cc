#include "config/base64.h"

#include <gtest/gtest.h>

namespace kturn::config {
namespace {

// RFC 4648 §10 test vectors.
TEST(Base64, Rfc4648Vectors) {
  const std::pair<std::string_view, std::string_view> vectors[] = {{"", ""},
                                                                   {"f", "Zg=="},
                                                                   {"fo", "Zm8="},
                                                                   {"foo", "Zm9v"},
                                                                   {"foob", "Zm9vYg=="},
                                                                   {"fooba", "Zm9vYmE="},
                                                                   {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(encodeBase64(plain), encoded);
    EXPECT_EQ(decodeBase64(encoded), plain);
  }
}

TEST(Base64, SkipsLineBreaksLikeGo) { EXPECT_EQ(decodeBase64("Zm9v\r\nYmFy\n"), "foobar"); }

TEST(Base64, Rejects) {
  for (std::string_view bad :
       {"Zm9", "Zm9v=", "Z===", "Zm=v", "Zm9v YmFy", "Zm9-", "Zg==Zg==", "my-cert.cert"}) {
    EXPECT_FALSE(decodeBase64(bad)) << bad;
  }
}

TEST(Base64, BinaryRoundTrip) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  EXPECT_EQ(decodeBase64(encodeBase64(all)), all);
}

}  // namespace
}  // namespace kturn::config
