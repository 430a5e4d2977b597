// Fuzz target: the STUN codec (src/stun). Parses the input as one STUN message, runs every typed
// attribute decoder on every attribute, checks MESSAGE-INTEGRITY under a fixed key and
// FINGERPRINT, then rebuilds the message with MessageBuilder into a bounded buffer and requires
// the rebuilt message to parse back to the same attributes.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "fuzz_check.h"
#include "stun/attributes.h"
#include "stun/integrity.h"
#include "stun/message.h"
#include "stun/message_builder.h"

namespace {

using namespace kturn::stun;

// RFC 5769's short-term password, so the §2.1-2.3 seeds reach the kValid branch.
constexpr char kShortTermPassword[] = "VOkJxbRl1RmTxUk/WvJxBt";

void decodeAll(const MessageView& m) {
  for (const Attribute& a : m.attributes()) {
    FUZZ_CHECK(a.offset >= kHeaderSize && a.offset + 4 + a.value.size() <= m.bytes().size());
    FUZZ_CHECK(a.value.data() == m.bytes().data() + a.offset + 4);
    if (auto x = decodeXorAddress(a.value, m.xorPad())) {
      // Encoding the decoded address with the same pad gives the wire value back.
      uint8_t out[20];
      const size_t n = encodeXorAddress(*x, m.xorPad(), out);
      FUZZ_CHECK(n == a.value.size());
      FUZZ_CHECK(std::memcmp(out + 1, a.value.data() + 1, n - 1) == 0);
    }
    if (auto x = decodeAddress(a.value)) FUZZ_CHECK(x->ip.bytes().size() + 4 == a.value.size());
    (void)decodeUint32(a.value);
    (void)decodeString(a.value);
    if (auto e = decodeErrorCode(a.value)) FUZZ_CHECK(e->code >= 300 && e->code <= 699);
    (void)decodeRequestedTransport(a.value);
    (void)decodeChannelNumber(a.value);
    (void)decodeAddressFamily(a.value);
    (void)decodeEvenPort(a.value);
    if (auto p = decodePasswordAlgorithm(a.value)) {
      FUZZ_CHECK(p->parameters.data() + p->parameters.size() <= a.value.data() + a.value.size());
    }
  }
  const auto* first = m.attributes().empty() ? nullptr : &m.attributes()[0];
  if (first != nullptr) FUZZ_CHECK(m.find(first->type) == first);
}

void checkIntegrity(const MessageView& m) {
  static const IntegrityKey long_term = longTermKey("user1", "kturn.test", "pass1");
  static const IntegrityKey long_term_sha =
      longTermKey("user1", "kturn.test", "pass1", PasswordAlgorithm::kSha256);
  const std::span<const uint8_t> short_term{reinterpret_cast<const uint8_t*>(kShortTermPassword),
                                            sizeof kShortTermPassword - 1};
  (void)checkMessageIntegrity(m, short_term);
  (void)checkMessageIntegrity(m, long_term.span());
  (void)checkMessageIntegrity(m, long_term_sha.span());
  (void)checkMessageIntegrity(m, {});
  (void)checkFingerprint(m);
}

// Rebuilds `m` attribute by attribute; integrity and fingerprint are recomputed, so the result
// must verify under the key it was built with.
void rebuild(const MessageView& m, size_t capacity) {
  static uint8_t buffer[2048];
  const std::span<uint8_t> out{buffer, capacity};
  MessageBuilder b(out, m.methodBits(), m.messageClass(), m.transactionId());
  const std::span<const uint8_t> key{reinterpret_cast<const uint8_t*>(kShortTermPassword),
                                     sizeof kShortTermPassword - 1};
  size_t copied = 0;
  // Whether every integrity and fingerprint value has the size the builder writes: only then is
  // the rebuilt message no larger than the original.
  bool canonical = true;
  bool has_mi = false;
  bool has_fp = false;
  for (const Attribute& a : m.attributes()) {
    if ((a.type == attr::kMessageIntegrity && a.value.size() != 20) ||
        (a.type == attr::kMessageIntegritySha256 && a.value.size() != 32) ||
        (a.type == attr::kFingerprint && a.value.size() != 4)) {
      canonical = false;
    }
    if (a.type == attr::kMessageIntegrity) {
      if (has_mi) continue;
      b.addMessageIntegrity(key);
      has_mi = true;
    } else if (a.type == attr::kMessageIntegritySha256) {
      if (has_mi) continue;
      b.addMessageIntegritySha256(key);
      has_mi = true;
    } else if (a.type == attr::kFingerprint) {
      has_fp = true;
      break;
    } else if (has_mi) {
      continue;  // nothing but integrity or fingerprint may follow integrity
    } else if (a.type == attr::kErrorCode) {
      if (auto e = decodeErrorCode(a.value)) {
        b.addErrorCode(e->code, e->reason);
      } else {
        b.add(a.type, a.value);
      }
    } else if (auto x = decodeXorAddress(a.value, m.xorPad())) {
      b.addXorAddress(a.type, *x);
    } else {
      b.add(a.type, a.value);
    }
    ++copied;
  }
  if (has_fp) b.addFingerprint();
  auto built = b.finish();
  // Same attributes in a message no larger than the original (padding is normalized, never
  // grown), so it fits whenever the original did.
  if (canonical && capacity >= m.bytes().size()) FUZZ_CHECK(built.has_value());
  if (!built) return;
  FUZZ_CHECK(built->size() <= capacity);
  auto again = MessageView::parse(*built);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->methodBits() == m.methodBits());
  FUZZ_CHECK(again->messageClass() == m.messageClass());
  FUZZ_CHECK(std::memcmp(again->transactionId().data(), m.transactionId().data(),
                         kTransactionIdSize) == 0);
  if (has_mi) FUZZ_CHECK(checkMessageIntegrity(*again, key) == IntegrityCheck::kValid);
  if (has_fp) FUZZ_CHECK(checkFingerprint(*again) == IntegrityCheck::kValid);
  size_t i = 0;
  for (const Attribute& a : again->attributes()) {
    if (a.type == attr::kMessageIntegrity || a.type == attr::kMessageIntegritySha256 ||
        a.type == attr::kFingerprint) {
      continue;
    }
    ++i;
  }
  FUZZ_CHECK(i == copied - (has_mi ? 1 : 0));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes{data, size};
  (void)looksLikeStun(bytes);
  if (auto n = messageSize(bytes)) FUZZ_CHECK(*n >= kHeaderSize);
  auto m = MessageView::parse(bytes);
  if (!m) return 0;
  FUZZ_CHECK(looksLikeStun(bytes));
  FUZZ_CHECK(messageSize(bytes) == size);
  FUZZ_CHECK(m->attributes().size() <= MessageView::kMaxAttributes);
  decodeAll(*m);
  checkIntegrity(*m);
  rebuild(*m, 2048);
  // A bounded buffer that may be too small: the builder must fail cleanly, never overrun.
  rebuild(*m, size > 24 ? size / 2 + (data[size - 1] & 15) : 20);
  return 0;
}
