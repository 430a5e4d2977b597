// A throwaway self-signed certificate for TLS/DTLS listeners of the one-shot config built from a
// TURN URI, like stunnerd's GenerateSelfSignedKey (tls.go), and for tests.
#pragma once

#include "common/certificate.h"

namespace kturn::config {

using certificate::PemPair;

// CN=localhost, DNS:localhost, valid from now for 100 years, serverAuth+clientAuth, ECDSA P-256
// (stunnerd uses RSA-4096; common/certificate.h says why not).
Result<PemPair> generateSelfSignedCert();

}  // namespace kturn::config
