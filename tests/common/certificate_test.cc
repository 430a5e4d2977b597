// certificate::issue: a CA that signs leaves OpenSSL verifies for the names they carry, a
// self-signed leaf, and the validity and extensions a TLS client checks.
#include "common/certificate.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <string>

namespace kturn::certificate {
namespace {

X509* load(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return cert;
}

// X509_verify_cert of `leaf` against `ca` alone, for TLS server use and `host`: 0 when it passes,
// else OpenSSL's error.
int verify(const std::string& ca, const std::string& leaf, const std::string& host) {
  X509* root = load(ca);
  X509* cert = load(leaf);
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, root);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, cert, nullptr);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx);
  X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
  if (host.find_first_not_of("0123456789.") == std::string::npos) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
  }
  const int ok = X509_verify_cert(ctx);
  const int error = ok == 1 ? 0 : X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  X509_free(cert);
  X509_free(root);
  return error;
}

TEST(Certificate, ACaSignsLeavesThatVerifyForTheirHostsOnly) {
  auto ca = issue({.common_name = "test CA", .ca = true, .validity = std::chrono::hours(24)});
  ASSERT_TRUE(ca) << ca.error().message;
  auto leaf = issue({.common_name = "cds", .hosts = {"cds.kturn-system.svc", "127.0.0.1"}}, &*ca);
  ASSERT_TRUE(leaf) << leaf.error().message;
  EXPECT_EQ(verify(ca->cert_pem, leaf->cert_pem, "cds.kturn-system.svc"), 0);
  EXPECT_EQ(verify(ca->cert_pem, leaf->cert_pem, "127.0.0.1"), 0);
  EXPECT_EQ(verify(ca->cert_pem, leaf->cert_pem, "other.kturn-system.svc"),
            X509_V_ERR_HOSTNAME_MISMATCH);
  EXPECT_EQ(verify(ca->cert_pem, leaf->cert_pem, "127.0.0.2"), X509_V_ERR_IP_ADDRESS_MISMATCH);
  // Another CA's leaf does not chain to this one; a leaf cannot act as a CA.
  auto other = issue({.common_name = "other CA", .ca = true});
  ASSERT_TRUE(other);
  auto stranger = issue({.common_name = "x", .hosts = {"cds.kturn-system.svc"}}, &*other);
  ASSERT_TRUE(stranger);
  EXPECT_NE(verify(ca->cert_pem, stranger->cert_pem, "cds.kturn-system.svc"), 0);
  auto byLeaf = issue({.common_name = "y", .hosts = {"cds.kturn-system.svc"}}, &*leaf);
  ASSERT_TRUE(byLeaf);
  EXPECT_NE(verify(leaf->cert_pem, byLeaf->cert_pem, "cds.kturn-system.svc"), 0);
}

TEST(Certificate, ValidityIsWhatWasAskedFor) {
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  auto cert =
      issue({.common_name = "x", .hosts = {"localhost"}, .validity = std::chrono::hours(2)});
  ASSERT_TRUE(cert);
  auto until = notAfter(cert->cert_pem);
  ASSERT_TRUE(until) << until.error().message;
  EXPECT_NEAR(static_cast<double>(*until - now), 7200.0, 5.0);
  EXPECT_FALSE(notAfter("not a certificate"));
}

TEST(Certificate, SelfSignedWithoutAnIssuerAndEveryKeyIsNew) {
  auto a = issue({.common_name = "localhost", .hosts = {"localhost"}});
  auto b = issue({.common_name = "localhost", .hosts = {"localhost"}});
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->key_pem, b->key_pem);
  EXPECT_EQ(a->key_pem.rfind("-----BEGIN PRIVATE KEY-----", 0), 0u);
  // Self-signed: its issuer is its subject and its own key signed it.
  X509* cert = load(a->cert_pem);
  ASSERT_NE(cert, nullptr);
  EXPECT_EQ(X509_NAME_cmp(X509_get_issuer_name(cert), X509_get_subject_name(cert)), 0);
  EXPECT_EQ(X509_verify(cert, X509_get0_pubkey(cert)), 1);
  X509_free(cert);
  const PemPair bad{"not a certificate", "not a key"};
  EXPECT_FALSE(issue({.common_name = "x"}, &bad));
}

TEST(Certificate, InspectServingLoadsWhatATlsServerLoads) {
  auto ca = issue({.common_name = "test CA", .ca = true});
  auto leaf = issue({.common_name = "turn.example.com"}, &*ca);
  ASSERT_TRUE(ca && leaf);
  // A leaf followed by its chain, as cert-manager writes tls.crt.
  auto served = inspectServing(leaf->cert_pem + ca->cert_pem, leaf->key_pem);
  ASSERT_TRUE(served) << served.error().message;
  EXPECT_EQ(served->subject, "CN = turn.example.com");
  EXPECT_EQ(served->not_after, *notAfter(leaf->cert_pem));
  // One year and the minute of clock skew, give or take the second issue() may straddle.
  EXPECT_NEAR(served->not_after - served->not_before, 365 * 24 * 3600 + 60, 1);

  EXPECT_EQ(inspectServing("garbage", leaf->key_pem).error().message, "no PEM certificate");
  EXPECT_EQ(inspectServing(leaf->cert_pem, leaf->cert_pem).error().message, "no PEM private key");
  EXPECT_EQ(inspectServing(leaf->cert_pem, ca->key_pem).error().message,
            "the private key does not match the certificate");
  // The CA first: the leaf's key is not the first certificate's.
  EXPECT_FALSE(inspectServing(ca->cert_pem + leaf->cert_pem, leaf->key_pem));
}

}  // namespace
}  // namespace kturn::certificate
