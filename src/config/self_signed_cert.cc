#include "config/self_signed_cert.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

#include "common/openssl_ptr.h"

namespace kturn::config {
namespace {

using openssl::BioPtr;
using openssl::ExtPtr;
using openssl::PkeyPtr;
using openssl::X509Ptr;

Error sslError(const char* what) {
  return makeError(Error::Code::kInternal, std::string("self-signed certificate: ") + what);
}

bool addExtension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

std::string drain(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

}  // namespace

Result<PemPair> generateSelfSignedCert() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return sslError("key generation failed");

  X509Ptr cert(X509_new());
  if (!cert) return sslError("out of memory");
  constexpr long kHundredYears = 100L * 365 * 24 * 3600;
  X509_set_version(cert.get(), 2);  // v3
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), kHundredYears);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  if (X509_set_pubkey(cert.get(), key.get()) != 1 ||
      !addExtension(cert.get(), NID_basic_constraints, "critical,CA:FALSE") ||
      !addExtension(cert.get(), NID_key_usage, "digitalSignature,keyAgreement") ||
      !addExtension(cert.get(), NID_ext_key_usage, "serverAuth,clientAuth") ||
      !addExtension(cert.get(), NID_subject_alt_name, "DNS:localhost") ||
      X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) {
    return sslError("signing failed");
  }

  BioPtr cert_bio(BIO_new(BIO_s_mem()));
  BioPtr key_bio(BIO_new(BIO_s_mem()));
  if (!cert_bio || !key_bio || PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1) {
    return sslError("PEM encoding failed");
  }
  return PemPair{.cert_pem = drain(cert_bio.get()), .key_pem = drain(key_bio.get())};
}

}  // namespace kturn::config
