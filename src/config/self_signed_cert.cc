#include "config/self_signed_cert.h"

namespace kturn::config {

Result<PemPair> generateSelfSignedCert() {
  return certificate::issue({.common_name = "localhost",
                             .hosts = {"localhost"},
                             .validity = std::chrono::hours(24 * 365 * 100)});
}

}  // namespace kturn::config
