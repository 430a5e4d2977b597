#include "common/crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <memory>

namespace kturn::crypto {
namespace {

// One EVP_MAC_CTX per digest per thread: EVP_MAC_init() re-keys it, so steady-state HMACs
// allocate nothing.
struct MacContext {
  EVP_MAC* mac = nullptr;
  EVP_MAC_CTX* ctx = nullptr;
  explicit MacContext(const char* digest) {
    mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    if (mac == nullptr) std::abort();  // OpenSSL without HMAC is a broken install, not input.
    ctx = EVP_MAC_CTX_new(mac);
    if (ctx == nullptr) std::abort();
    // The digest is set once: passing it to every EVP_MAC_init() costs a provider lookup (a
    // lock and string compares) per MAC.
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, const_cast<char*>(digest), 0),
        OSSL_PARAM_construct_end()};
    if (EVP_MAC_CTX_set_params(ctx, params) != 1) std::abort();
  }
  ~MacContext() {
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
  }
  MacContext(const MacContext&) = delete;
  MacContext& operator=(const MacContext&) = delete;
};

template <size_t N>
std::array<uint8_t, N> hmac(MacContext& m, ByteSpan key, std::initializer_list<ByteSpan> parts) {
  std::array<uint8_t, N> out{};
  // An empty key is legal for HMAC; OpenSSL wants a non-null pointer.
  static const uint8_t kEmpty = 0;
  if (EVP_MAC_init(m.ctx, key.empty() ? &kEmpty : key.data(), key.size(), nullptr) != 1) {
    std::abort();
  }
  for (ByteSpan p : parts) EVP_MAC_update(m.ctx, p.data(), p.size());
  size_t len = 0;
  EVP_MAC_final(m.ctx, out.data(), &len, out.size());
  return out;
}

template <size_t N>
std::array<uint8_t, N> digest(const EVP_MD* md, std::initializer_list<ByteSpan> parts) {
  thread_local std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(),
                                                                           &EVP_MD_CTX_free);
  std::array<uint8_t, N> out{};
  EVP_DigestInit_ex(ctx.get(), md, nullptr);
  for (ByteSpan p : parts) EVP_DigestUpdate(ctx.get(), p.data(), p.size());
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx.get(), out.data(), &len);
  return out;
}

constexpr char kBase64Alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

Sha1Digest hmacSha1(ByteSpan key, std::initializer_list<ByteSpan> parts) {
  thread_local MacContext m("SHA1");
  return hmac<20>(m, key, parts);
}

Sha256Digest hmacSha256(ByteSpan key, std::initializer_list<ByteSpan> parts) {
  thread_local MacContext m("SHA256");
  return hmac<32>(m, key, parts);
}

// Fetched once: EVP_md5()/EVP_sha256() make every EVP_DigestInit_ex() look the implementation
// up in the provider store again.
static const EVP_MD* fetched(const char* name) {
  EVP_MD* md = EVP_MD_fetch(nullptr, name, nullptr);
  if (md == nullptr) std::abort();
  return md;  // kept for the life of the process
}

Md5Digest md5(std::initializer_list<ByteSpan> parts) {
  static const EVP_MD* const kMd5 = fetched("MD5");
  return digest<16>(kMd5, parts);
}

Sha256Digest sha256(std::initializer_list<ByteSpan> parts) {
  static const EVP_MD* const kSha256 = fetched("SHA256");
  return digest<32>(kSha256, parts);
}

bool equalConstantTime(ByteSpan a, ByteSpan b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string base64Encode(ByteSpan data) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    const uint32_t v = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
    out += kBase64Alphabet[(v >> 18) & 63];
    out += kBase64Alphabet[(v >> 12) & 63];
    out += kBase64Alphabet[(v >> 6) & 63];
    out += kBase64Alphabet[v & 63];
  }
  const size_t rest = data.size() - i;
  if (rest > 0) {
    uint32_t v = data[i] << 16;
    if (rest == 2) v |= data[i + 1] << 8;
    out += kBase64Alphabet[(v >> 18) & 63];
    out += kBase64Alphabet[(v >> 12) & 63];
    out += rest == 2 ? kBase64Alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::vector<uint8_t>> base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad = (text[i + 3] == '=') + (text[i + 2] == '=');
    if (pad > 0 && !last) return std::nullopt;
    if (text[i + 2] == '=' && text[i + 3] != '=') return std::nullopt;
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + k];
      const int d = (c == '=' && k >= 4 - pad) ? 0 : value(c);
      if (d < 0) return std::nullopt;
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    out.push_back(static_cast<uint8_t>(v >> 16));
    if (pad < 2) out.push_back(static_cast<uint8_t>(v >> 8));
    if (pad < 1) out.push_back(static_cast<uint8_t>(v));
  }
  return out;
}

void randomBytes(std::span<uint8_t> out) {
  if (RAND_bytes(out.data(), static_cast<int>(out.size())) != 1) std::abort();
}

}  // namespace kturn::crypto
