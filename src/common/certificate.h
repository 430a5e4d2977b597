// X.509 certificates kturn makes itself, with ECDSA P-256 keys: the throwaway self-signed
// certificate of a TLS listener built from a TURN URI (as stunnerd's GenerateSelfSignedKey, which
// uses RSA-4096; P-256 is accepted by every TLS and DTLS client and takes microseconds to make),
// and kturn-operator's config discovery CA and the serving certificates it signs.
//
//   auto ca = certificate::issue({.common_name = "kturn CDS CA", .ca = true,
//                                 .validity = std::chrono::years(10)});
//   auto leaf = certificate::issue({.common_name = "kturn-config-discovery",
//                                   .hosts = {"kturn-config-discovery.kturn-system.svc"}}, &*ca);
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "kturn/result.h"

namespace kturn::certificate {

struct PemPair {
  std::string cert_pem;
  std::string key_pem;
};

struct Request {
  std::string common_name;
  // Subject alternative names: IP literals become IP SANs, anything else a DNS SAN.
  std::vector<std::string> hosts{};
  bool ca = false;  // a CA (keyCertSign) rather than a TLS leaf (serverAuth, clientAuth)
  std::chrono::seconds validity{std::chrono::hours(24 * 365)};
};

// A new key and a certificate for it, valid from a minute ago (clock skew) for `validity`,
// signed by `issuer` (a CA from issue()) or, when null, by itself. A random 128-bit serial.
Result<PemPair> issue(const Request& request, const PemPair* issuer = nullptr);

// The notAfter of the first certificate in `cert_pem` as seconds since the epoch.
Result<int64_t> notAfter(const std::string& cert_pem);

// A TLS server's certificate and key as a server loads them (the first PEM certificate is the
// leaf, any that follow its chain): what kturn-operator checks before it renders a listener's
// Secret, so that what kturnd cannot load never reaches it.
struct Served {
  std::string subject{};   // the leaf's subject, one line: "CN = turn.example.com"
  int64_t not_before = 0;  // seconds since the epoch
  int64_t not_after = 0;
};

// kInvalidArgument saying which part fails: "no PEM certificate", "no PEM private key", "the
// private key does not match the certificate", "unreadable validity dates". Dates are not
// judged here: the caller has the clock.
Result<Served> inspectServing(const std::string& cert_pem, const std::string& key_pem);

}  // namespace kturn::certificate
