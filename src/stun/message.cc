#include "stun/message.h"

#include "stun/byte_order.h"

namespace kturn::stun {

bool looksLikeStun(std::span<const uint8_t> bytes) {
  return bytes.size() >= kHeaderSize && (bytes[0] & 0xC0) == 0 &&
         load32(bytes.data() + 4) == kMagicCookie;
}

std::optional<size_t> messageSize(std::span<const uint8_t> bytes) {
  if (bytes.size() < 4) return std::nullopt;
  return kHeaderSize + load16(bytes.data() + 2);
}

Result<MessageView> MessageView::parse(std::span<const uint8_t> bytes) {
  using enum Error::Code;
  if (bytes.size() < kHeaderSize) return makeError(kTooShort, "shorter than a STUN header");
  if ((bytes[0] & 0xC0) != 0) return makeError(kMalformed, "first two bits not zero");
  if (load32(bytes.data() + 4) != kMagicCookie) return makeError(kMalformed, "bad magic cookie");
  const size_t length = load16(bytes.data() + 2);
  if (length % 4 != 0) return makeError(kMalformed, "length not a multiple of 4");
  if (kHeaderSize + length != bytes.size()) {
    return makeError(kMalformed, "length field does not match message size");
  }

  MessageView m;
  m.bytes_ = bytes;
  m.type_ = load16(bytes.data());
  bool after_integrity = false;
  bool after_fingerprint = false;
  size_t pos = kHeaderSize;
  while (pos < bytes.size()) {
    if (after_fingerprint) return makeError(kMalformed, "attribute after FINGERPRINT");
    if (bytes.size() - pos < 4) return makeError(kMalformed, "truncated attribute header");
    const uint16_t type = load16(bytes.data() + pos);
    const size_t len = load16(bytes.data() + pos + 2);
    const size_t padded = (len + 3) & ~size_t{3};
    if (bytes.size() - pos - 4 < padded) return makeError(kMalformed, "truncated attribute value");
    const bool listed =
        !after_integrity || type == attr::kMessageIntegritySha256 || type == attr::kFingerprint;
    if (listed) {
      if (m.count_ == kMaxAttributes) return makeError(kTooLong, "too many attributes");
      m.attrs_[m.count_++] = Attribute{type, bytes.subspan(pos + 4, len), pos};
    }
    if (type == attr::kMessageIntegrity || type == attr::kMessageIntegritySha256) {
      after_integrity = true;
    }
    if (type == attr::kFingerprint) after_fingerprint = true;
    pos += 4 + padded;
  }
  return m;
}

const Attribute* MessageView::find(uint16_t type) const {
  for (size_t i = 0; i < count_; ++i) {
    if (attrs_[i].type == type) return &attrs_[i];
  }
  return nullptr;
}

std::optional<std::span<const uint8_t>> MessageView::value(uint16_t type) const {
  const Attribute* a = find(type);
  if (a == nullptr) return std::nullopt;
  return a->value;
}

}  // namespace kturn::stun
