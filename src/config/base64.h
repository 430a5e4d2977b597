// Base64 (RFC 4648 §4, standard alphabet, padded) for the TLS material in listener configs, as
// strings: crypto::base64Decode/base64Encode (OpenSSL's) with PEM-style line breaks skipped.
// Used by src/config and by the daemon, which decodes listener certificates.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kturn::config {

// Decodes like Go's base64.StdEncoding.DecodeString, which stunnerd uses on listener cert/key:
// padding is required and '\r' / '\n' anywhere are skipped (PEM-style line wrapping).
std::optional<std::string> decodeBase64(std::string_view text);
std::string encodeBase64(std::string_view bytes);

}  // namespace kturn::config
