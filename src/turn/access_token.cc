#include "turn/access_token.h"

#include <cstring>

#include "common/crypto.h"
#include "stun/byte_order.h"

namespace kturn::turn {
namespace {

constexpr size_t kTagSize = 16;
// key-length, mac-key (at most 32), timestamp, lifetime.
constexpr size_t kMaxBlock = 2 + 32 + 8 + 4;

crypto::ByteSpan bytesOf(std::string_view s) { return crypto::asBytes(s); }

}  // namespace

std::optional<AccessToken> decodeAccessToken(std::span<const uint8_t> token,
                                             std::string_view server_name,
                                             std::span<const uint8_t> key) {
  if (token.size() < 2) return std::nullopt;
  const size_t nonce_size = stun::load16(token.data());
  // The encrypted block holds at least a key length, a timestamp and a lifetime.
  if (nonce_size == 0 || nonce_size > 64 || token.size() < 2 + nonce_size + 2 + 8 + 4 + kTagSize) {
    return std::nullopt;
  }
  const auto nonce = token.subspan(2, nonce_size);
  const auto sealed = token.subspan(2 + nonce_size, token.size() - 2 - nonce_size - kTagSize);
  if (sealed.size() > kMaxBlock) return std::nullopt;
  const std::span<const uint8_t, kTagSize> tag(token.data() + token.size() - kTagSize, kTagSize);
  uint8_t block[kMaxBlock];
  if (!crypto::aesGcmDecrypt(key, nonce, bytesOf(server_name), sealed, tag, block)) {
    return std::nullopt;
  }
  const size_t mac_size = stun::load16(block);
  if ((mac_size != 20 && mac_size != 32) || sealed.size() != 2 + mac_size + 8 + 4) {
    return std::nullopt;
  }
  AccessToken out;
  std::memcpy(out.mac_key.data(), block + 2, mac_size);
  out.mac_key_size = static_cast<uint8_t>(mac_size);
  const uint64_t timestamp =
      uint64_t{stun::load32(block + 2 + mac_size)} << 32 | stun::load32(block + 2 + mac_size + 4);
  out.issued_unix = static_cast<int64_t>(timestamp >> 16);
  out.lifetime = stun::load32(block + 2 + mac_size + 8);
  return out;
}

size_t encodeAccessToken(const AccessToken& token, std::string_view server_name,
                         std::span<const uint8_t> key,
                         std::span<const uint8_t, kAccessTokenNonceSize> nonce,
                         std::span<uint8_t> out) {
  const size_t mac_size = token.mac_key_size;
  const size_t block_size = 2 + mac_size + 8 + 4;
  const size_t total = 2 + nonce.size() + block_size + kTagSize;
  if (mac_size > token.mac_key.size() || out.size() < total) return 0;
  uint8_t block[kMaxBlock];
  stun::store16(block, static_cast<uint16_t>(mac_size));
  std::memcpy(block + 2, token.mac_key.data(), mac_size);
  const uint64_t timestamp = static_cast<uint64_t>(token.issued_unix) << 16;
  stun::store32(block + 2 + mac_size, static_cast<uint32_t>(timestamp >> 32));
  stun::store32(block + 2 + mac_size + 4, static_cast<uint32_t>(timestamp));
  stun::store32(block + 2 + mac_size + 8, token.lifetime);
  stun::store16(out.data(), static_cast<uint16_t>(nonce.size()));
  std::memcpy(out.data() + 2, nonce.data(), nonce.size());
  uint8_t* sealed = out.data() + 2 + nonce.size();
  const std::span<uint8_t, kTagSize> tag(sealed + block_size, kTagSize);
  if (!crypto::aesGcmEncrypt(key, nonce, bytesOf(server_name), {block, block_size}, sealed, tag)) {
    return 0;
  }
  return total;
}

}  // namespace kturn::turn
