#include "common/certificate.h"

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include <optional>

#include "common/openssl_ptr.h"

namespace kturn::certificate {
namespace {

using openssl::BioPtr;
using openssl::ExtPtr;
using openssl::PkeyPtr;
using openssl::X509Ptr;

Error failure(const std::string& what) {
  return makeError(Error::Code::kInternal, "certificate: " + what);
}

bool addExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

bool isIpLiteral(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

std::string drain(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

X509Ptr readCert(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return X509Ptr(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
}

PkeyPtr readKey(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return PkeyPtr(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
}

std::optional<int64_t> unixTime(const ASN1_TIME* t) {
  struct tm tm {};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return std::nullopt;
  return static_cast<int64_t>(timegm(&tm));
}

bool randomSerial(X509* cert) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return false;
  bytes[0] &= 0x7f;  // positive
  openssl::Deleter<BN_free> freeBn;
  BIGNUM* bn = BN_bin2bn(bytes, sizeof bytes, nullptr);
  if (bn == nullptr) return false;
  const bool ok = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != nullptr;
  freeBn(bn);
  return ok;
}

}  // namespace

Result<PemPair> issue(const Request& request, const PemPair* issuer) {
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return failure("key generation failed");
  X509Ptr issuerCert;
  PkeyPtr issuerKey;
  if (issuer != nullptr) {
    issuerCert = readCert(issuer->cert_pem);
    issuerKey = readKey(issuer->key_pem);
    if (!issuerCert || !issuerKey) return failure("the issuer's certificate or key does not load");
  }

  X509Ptr cert(X509_new());
  if (!cert) return failure("out of memory");
  X509_set_version(cert.get(), 2);  // v3
  if (!randomSerial(cert.get())) return failure("no random serial");
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(request.validity.count()));
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(request.common_name.c_str()),
                             -1, -1, 0);
  X509* signer = issuerCert ? issuerCert.get() : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  if (X509_set_pubkey(cert.get(), key.get()) != 1) return failure("setting the key failed");

  std::string sans;
  for (const std::string& host : request.hosts) {
    if (!sans.empty()) sans += ",";
    sans += (isIpLiteral(host) ? "IP:" : "DNS:") + host;
  }
  const bool extended =
      (request.ca
           ? addExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE") &&
                 addExtension(cert.get(), signer, NID_key_usage,
                              "critical,keyCertSign,cRLSign,digitalSignature")
           : addExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE") &&
                 addExtension(cert.get(), signer, NID_key_usage,
                              "critical,digitalSignature,keyAgreement") &&
                 addExtension(cert.get(), signer, NID_ext_key_usage, "serverAuth,clientAuth")) &&
      addExtension(cert.get(), signer, NID_subject_key_identifier, "hash") &&
      (sans.empty() || addExtension(cert.get(), signer, NID_subject_alt_name, sans));
  if (!extended) return failure("extensions rejected (hosts: " + sans + ")");
  if (issuerCert && !addExtension(cert.get(), signer, NID_authority_key_identifier, "keyid")) {
    return failure("authority key identifier failed");
  }
  EVP_PKEY* signingKey = issuerKey ? issuerKey.get() : key.get();
  if (X509_sign(cert.get(), signingKey, EVP_sha256()) == 0) return failure("signing failed");

  BioPtr certBio(BIO_new(BIO_s_mem()));
  BioPtr keyBio(BIO_new(BIO_s_mem()));
  if (!certBio || !keyBio || PEM_write_bio_X509(certBio.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(keyBio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1) {
    return failure("PEM encoding failed");
  }
  return PemPair{.cert_pem = drain(certBio.get()), .key_pem = drain(keyBio.get())};
}

Result<int64_t> notAfter(const std::string& cert_pem) {
  X509Ptr cert = readCert(cert_pem);
  if (!cert) return makeError(Error::Code::kInvalidArgument, "certificate: not a PEM certificate");
  auto t = unixTime(X509_get0_notAfter(cert.get()));
  if (!t) return makeError(Error::Code::kInvalidArgument, "certificate: unreadable notAfter");
  return *t;
}

Result<Served> inspectServing(const std::string& cert_pem, const std::string& key_pem) {
  auto invalid = [](std::string what) {
    ERR_clear_error();
    return makeError(Error::Code::kInvalidArgument, std::move(what));
  };
  X509Ptr cert = readCert(cert_pem);
  if (!cert) return invalid("no PEM certificate");
  PkeyPtr key = readKey(key_pem);
  if (!key) return invalid("no PEM private key");
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return invalid("the private key does not match the certificate");
  }
  const auto notBefore = unixTime(X509_get0_notBefore(cert.get()));
  const auto notAfter = unixTime(X509_get0_notAfter(cert.get()));
  if (!notBefore || !notAfter) return invalid("unreadable validity dates");
  Served out{.not_before = *notBefore, .not_after = *notAfter};
  BioPtr subject(BIO_new(BIO_s_mem()));
  if (subject && X509_NAME_print_ex(subject.get(), X509_get_subject_name(cert.get()), 0,
                                    XN_FLAG_ONELINE & ~ASN1_STRFLGS_ESC_MSB) >= 0) {
    out.subject = drain(subject.get());
  }
  return out;
}

}  // namespace kturn::certificate
