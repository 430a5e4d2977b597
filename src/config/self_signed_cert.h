// A throwaway self-signed certificate for TLS/DTLS listeners of the one-shot config built from a
// TURN URI, like stunnerd's GenerateSelfSignedKey (tls.go). Private to src/config.
#pragma once

#include <string>

#include "kturn/result.h"

namespace kturn::config {

struct PemPair {
  std::string cert_pem;
  std::string key_pem;
};

// CN=localhost, valid from now for 100 years, serverAuth+clientAuth. stunnerd uses RSA-4096;
// kturn uses ECDSA P-256, which every TLS and DTLS client accepts and which takes microseconds
// rather than seconds to generate.
Result<PemPair> generateSelfSignedCert();

}  // namespace kturn::config
