// TlsContext from PEM: a good pair, a chain, and each way the material can be wrong (the error
// says whether the certificate or the key is at fault, which the config layer turns into the
// field name).
#include "net/tls_context.h"

#include <gtest/gtest.h>

#include "config/self_signed_cert.h"

namespace kturn::net {
namespace {

config::PemPair freshPair() {
  auto pair = config::generateSelfSignedCert();
  EXPECT_TRUE(pair) << pair.error().message;
  return *pair;
}

TEST(TlsContextTest, BuildsFromAMatchingCertificateAndKey) {
  const config::PemPair pem = freshPair();
  for (TlsKind kind : {TlsKind::kTls, TlsKind::kDtls}) {
    auto context = TlsContext::server(pem.cert_pem, pem.key_pem, kind);
    ASSERT_TRUE(context) << context.error().message;
    EXPECT_NE((*context)->get(), nullptr);
    EXPECT_EQ((*context)->kind(), kind);
  }
}

TEST(TlsContextTest, AcceptsIntermediatesAfterTheLeaf) {
  const config::PemPair leaf = freshPair();
  const config::PemPair other = freshPair();
  auto context = TlsContext::server(leaf.cert_pem + other.cert_pem, leaf.key_pem, TlsKind::kTls);
  ASSERT_TRUE(context) << context.error().message;
}

TEST(TlsContextTest, SaysWhichHalfIsWrong) {
  const config::PemPair a = freshPair();
  const config::PemPair b = freshPair();

  auto garbage_cert = TlsContext::server("not a certificate", a.key_pem, TlsKind::kTls);
  ASSERT_FALSE(garbage_cert);
  EXPECT_EQ(garbage_cert.error().message.rfind("cert: ", 0), 0u) << garbage_cert.error().message;

  auto garbage_key =
      TlsContext::server(a.cert_pem, "-----BEGIN PRIVATE KEY-----\nAAAA\n", TlsKind::kTls);
  ASSERT_FALSE(garbage_key);
  EXPECT_EQ(garbage_key.error().message.rfind("key: ", 0), 0u) << garbage_key.error().message;

  auto mismatched = TlsContext::server(a.cert_pem, b.key_pem, TlsKind::kTls);
  ASSERT_FALSE(mismatched);
  EXPECT_NE(mismatched.error().message.find("key: does not match the certificate"),
            std::string::npos)
      << mismatched.error().message;

  auto swapped = TlsContext::server(a.key_pem, a.cert_pem, TlsKind::kTls);
  ASSERT_FALSE(swapped);
  EXPECT_EQ(swapped.error().message.rfind("cert: ", 0), 0u) << swapped.error().message;
}

TEST(TlsContextTest, CookiesDependOnTheAddressAndTheContext) {
  const config::PemPair pem = freshPair();
  auto one = TlsContext::server(pem.cert_pem, pem.key_pem, TlsKind::kDtls);
  auto two = TlsContext::server(pem.cert_pem, pem.key_pem, TlsKind::kDtls);
  ASSERT_TRUE(one && two);
  const uint8_t client_a[] = {127, 0, 0, 1, 0x30, 0x39};
  const uint8_t client_b[] = {127, 0, 0, 1, 0x30, 0x3A};
  std::array<uint8_t, TlsContext::kMaxCookie> x{}, y{}, z{}, w{};
  const size_t n = (*one)->cookieFor(client_a, x);
  ASSERT_GT(n, 0u);
  (*one)->cookieFor(client_a, y);
  (*one)->cookieFor(client_b, z);
  (*two)->cookieFor(client_a, w);
  EXPECT_EQ(x, y) << "a cookie is a function of the address: no state per client";
  EXPECT_NE(x, z) << "another port, another cookie";
  EXPECT_NE(x, w) << "each context has its own secret";
}

}  // namespace
}  // namespace kturn::net
