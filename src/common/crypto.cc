// SHA1_*, SHA256_* and MD5_* are deprecated in OpenSSL 3 in favour of EVP, but EVP in 3.0
// allocates and frees a provider context for every digest, and EVP_MAC duplicates two more per
// MAC, with cleanses: one MESSAGE-INTEGRITY check took 2.8 us through EVP_MAC and takes 1.3 us
// here (kturn-micro), and an allocation's 401, Allocate and Refresh cost seven MACs and two MD5s.
// These functions run the same assembly EVP dispatches to.
#define OPENSSL_SUPPRESS_DEPRECATED

#include "common/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/md5.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace kturn::crypto {
namespace {

// A digest as the HMAC and digest templates below use it; the context lives on the stack.
struct Sha1 {
  using Context = SHA_CTX;
  static constexpr size_t kSize = SHA_DIGEST_LENGTH;
  static void init(Context* c) { SHA1_Init(c); }
  static void update(Context* c, ByteSpan b) { SHA1_Update(c, b.data(), b.size()); }
  static void final(uint8_t* out, Context* c) { SHA1_Final(out, c); }
};

struct Sha256 {
  using Context = SHA256_CTX;
  static constexpr size_t kSize = SHA256_DIGEST_LENGTH;
  static void init(Context* c) { SHA256_Init(c); }
  static void update(Context* c, ByteSpan b) { SHA256_Update(c, b.data(), b.size()); }
  static void final(uint8_t* out, Context* c) { SHA256_Final(out, c); }
};

struct Md5 {
  using Context = MD5_CTX;
  static constexpr size_t kSize = MD5_DIGEST_LENGTH;
  static void init(Context* c) { MD5_Init(c); }
  static void update(Context* c, ByteSpan b) { MD5_Update(c, b.data(), b.size()); }
  static void final(uint8_t* out, Context* c) { MD5_Final(out, c); }
};

template <typename H>
std::array<uint8_t, H::kSize> digest(std::initializer_list<ByteSpan> parts) {
  typename H::Context c;
  H::init(&c);
  for (ByteSpan p : parts) H::update(&c, p);
  std::array<uint8_t, H::kSize> out{};
  H::final(out.data(), &c);
  OPENSSL_cleanse(&c, sizeof c);  // a long-term key's digest holds the password
  return out;
}

// HMAC (RFC 2104): H((K ^ opad) || H((K ^ ipad) || message)), with K hashed first when longer
// than the block. Tests check it against OpenSSL's HMAC().
template <typename H>
std::array<uint8_t, H::kSize> hmac(ByteSpan key, std::initializer_list<ByteSpan> parts) {
  constexpr size_t kBlock = 64;  // SHA-1 and SHA-256
  static_assert(H::kSize <= kBlock, "a hashed key must fit the block");
  std::array<uint8_t, kBlock> pad{};
  if (key.size() > kBlock) {
    const auto hashed = digest<H>({key});
    std::memcpy(pad.data(), hashed.data(), hashed.size());
  } else if (!key.empty()) {
    std::memcpy(pad.data(), key.data(), key.size());
  }
  for (uint8_t& b : pad) b ^= 0x36;
  typename H::Context c;
  H::init(&c);
  H::update(&c, pad);
  for (ByteSpan p : parts) H::update(&c, p);
  std::array<uint8_t, H::kSize> out{};
  H::final(out.data(), &c);
  for (uint8_t& b : pad) b ^= 0x36 ^ 0x5c;
  H::init(&c);
  H::update(&c, pad);
  H::update(&c, out);
  H::final(out.data(), &c);
  OPENSSL_cleanse(pad.data(), pad.size());
  OPENSSL_cleanse(&c, sizeof c);
  return out;
}

}  // namespace

Sha1Digest hmacSha1(ByteSpan key, std::initializer_list<ByteSpan> parts) {
  return hmac<Sha1>(key, parts);
}

Sha256Digest hmacSha256(ByteSpan key, std::initializer_list<ByteSpan> parts) {
  return hmac<Sha256>(key, parts);
}

Md5Digest md5(std::initializer_list<ByteSpan> parts) { return digest<Md5>(parts); }

Sha256Digest sha256(std::initializer_list<ByteSpan> parts) { return digest<Sha256>(parts); }

bool equalConstantTime(ByteSpan a, ByteSpan b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string base64Encode(ByteSpan data) {
  std::string out((data.size() + 2) / 3 * 4 + 1, '\0');  // EVP_EncodeBlock adds a NUL
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data.data(),
                                static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(std::max(n, 0)));
  return out;
}

std::optional<std::vector<uint8_t>> base64Decode(std::string_view text) {
  // OpenSSL's decoder is lenient (it takes '=' anywhere, trailing whitespace): the strict form
  // of Go's base64.StdEncoding is checked here, the decoding is OpenSSL's.
  if (text.size() % 4 != 0) return std::nullopt;
  const size_t pad = text.ends_with("==") ? 2 : text.ends_with('=') ? 1 : 0;
  for (size_t i = 0; i < text.size() - pad; ++i) {
    const char c = text[i];
    const bool alphabet = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                          (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (!alphabet) return std::nullopt;
  }
  std::vector<uint8_t> out(text.size() / 4 * 3);
  const int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0 || static_cast<size_t>(n) < pad) return std::nullopt;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

void randomBytes(std::span<uint8_t> out) {
  if (RAND_bytes(out.data(), static_cast<int>(out.size())) != 1) std::abort();
}

namespace {

const EVP_CIPHER* gcmCipher(size_t key_size) {
  return key_size == 16 ? EVP_aes_128_gcm() : key_size == 32 ? EVP_aes_256_gcm() : nullptr;
}

// AES-GCM through EVP (no digest shortcut exists for ciphers); per token, never per packet.
bool aesGcm(bool encrypt, ByteSpan key, ByteSpan iv, ByteSpan aad, ByteSpan in, uint8_t* out,
            uint8_t* tag) {
  const EVP_CIPHER* cipher = gcmCipher(key.size());
  if (cipher == nullptr || iv.empty() || in.size() > INT32_MAX || aad.size() > INT32_MAX) {
    return false;
  }
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  if (ctx == nullptr) return false;
  int aad_len = 0;
  int written = 0;
  int final_len = 0;
  uint8_t none[16];  // GCM's final step writes nothing; a buffer in case `out` is empty
  const int iv_len = static_cast<int>(iv.size());
  bool ok = EVP_CipherInit_ex(ctx, cipher, nullptr, nullptr, nullptr, encrypt ? 1 : 0) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, iv_len, nullptr) == 1 &&
            EVP_CipherInit_ex(ctx, nullptr, nullptr, key.data(), iv.data(), -1) == 1 &&
            (encrypt || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, tag) == 1) &&
            (aad.empty() || EVP_CipherUpdate(ctx, nullptr, &aad_len, aad.data(),
                                             static_cast<int>(aad.size())) == 1) &&
            (in.empty() ||
             EVP_CipherUpdate(ctx, out, &written, in.data(), static_cast<int>(in.size())) == 1) &&
            EVP_CipherFinal_ex(ctx, in.empty() ? none : out + written, &final_len) == 1 &&
            (!encrypt || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1);
  EVP_CIPHER_CTX_free(ctx);
  return ok;
}

}  // namespace

bool aesGcmEncrypt(ByteSpan key, ByteSpan iv, ByteSpan aad, ByteSpan plaintext, uint8_t* out,
                   std::span<uint8_t, 16> tag) {
  return aesGcm(true, key, iv, aad, plaintext, out, tag.data());
}

bool aesGcmDecrypt(ByteSpan key, ByteSpan iv, ByteSpan aad, ByteSpan ciphertext,
                   std::span<const uint8_t, 16> tag, uint8_t* out) {
  uint8_t expected[16];
  std::memcpy(expected, tag.data(), sizeof(expected));
  return aesGcm(false, key, iv, aad, ciphertext, out, expected);
}

}  // namespace kturn::crypto
