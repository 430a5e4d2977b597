#include "config/base64.h"

#include <algorithm>

#include "common/crypto.h"

namespace kturn::config {

std::optional<std::string> decodeBase64(std::string_view text) {
  std::string clean(text);
  std::erase_if(clean, [](char c) { return c == '\r' || c == '\n'; });
  auto bytes = crypto::base64Decode(clean);
  if (!bytes) return std::nullopt;
  return std::string(bytes->begin(), bytes->end());
}

std::string encodeBase64(std::string_view bytes) {
  return crypto::base64Encode(crypto::asBytes(bytes));
}

}  // namespace kturn::config
