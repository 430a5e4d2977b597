#include "stun/message_builder.h"

#include <cstring>

#include "common/crypto.h"
#include "stun/attributes.h"
#include "stun/byte_order.h"
#include "stun/integrity.h"

namespace kturn::stun {

MessageBuilder::MessageBuilder(std::span<uint8_t> out, uint16_t method, MessageClass cls,
                               std::span<const uint8_t, kTransactionIdSize> transaction_id)
    : out_(out) {
  if (out.size() < kHeaderSize) {
    ok_ = false;
    return;
  }
  store16(out_.data(), encodeMessageType(method, cls));
  store16(out_.data() + 2, 0);
  store32(out_.data() + 4, kMagicCookie);
  std::memcpy(out_.data() + 8, transaction_id.data(), kTransactionIdSize);
  size_ = kHeaderSize;
}

uint8_t* MessageBuilder::reserve(uint16_t type, size_t len) {
  const size_t padded = (len + 3) & ~size_t{3};
  if (!ok_ || len > 0xFFFF || out_.size() - size_ < 4 + padded ||
      size_ + 4 + padded - kHeaderSize > 0xFFFF) {
    ok_ = false;
    return nullptr;
  }
  uint8_t* p = out_.data() + size_;
  store16(p, type);
  store16(p + 2, static_cast<uint16_t>(len));
  std::memset(p + 4 + len, padding_, padded - len);
  size_ += 4 + padded;
  setLength(size_ - kHeaderSize);
  return p + 4;
}

void MessageBuilder::setLength(size_t body_length) {
  store16(out_.data() + 2, static_cast<uint16_t>(body_length));
}

MessageBuilder& MessageBuilder::add(uint16_t type, std::span<const uint8_t> value) {
  if (uint8_t* p = reserve(type, value.size()); p != nullptr && !value.empty()) {
    std::memcpy(p, value.data(), value.size());
  }
  return *this;
}

MessageBuilder& MessageBuilder::addString(uint16_t type, std::string_view value) {
  return add(type, crypto::asBytes(value));
}

MessageBuilder& MessageBuilder::addUint32(uint16_t type, uint32_t value) {
  if (uint8_t* p = reserve(type, 4)) store32(p, value);
  return *this;
}

MessageBuilder& MessageBuilder::addXorAddress(uint16_t type, const TransportAddress& address) {
  if (!ok_) return *this;
  const std::span<const uint8_t, 16> pad{out_.data() + 4, 16};
  uint8_t value[20];
  const size_t n = encodeXorAddress(address, pad, value);
  return add(type, {value, n});
}

MessageBuilder& MessageBuilder::addAddress(uint16_t type, const TransportAddress& address) {
  if (!ok_) return *this;
  uint8_t value[20];
  const size_t n = encodeAddress(address, value);
  return add(type, {value, n});
}

MessageBuilder& MessageBuilder::addErrorCode(int code, std::string_view reason) {
  if (uint8_t* p = reserve(attr::kErrorCode, 4 + reason.size())) {
    p[0] = 0;
    p[1] = 0;
    p[2] = static_cast<uint8_t>(code / 100);
    p[3] = static_cast<uint8_t>(code % 100);
    std::memcpy(p + 4, reason.data(), reason.size());
  }
  return *this;
}

MessageBuilder& MessageBuilder::addUnknownAttributes(std::span<const uint16_t> types) {
  if (uint8_t* p = reserve(attr::kUnknownAttributes, types.size() * 2)) {
    for (size_t i = 0; i < types.size(); ++i) store16(p + 2 * i, types[i]);
  }
  return *this;
}

MessageBuilder& MessageBuilder::addMessageIntegrity(std::span<const uint8_t> key) {
  const size_t covered = size_;
  if (uint8_t* p = reserve(attr::kMessageIntegrity, 20)) {
    // reserve() already set the length to include this attribute, as the HMAC input requires.
    const auto mac = crypto::hmacSha1(key, {{out_.data(), covered}});
    std::memcpy(p, mac.data(), mac.size());
  }
  return *this;
}

MessageBuilder& MessageBuilder::addMessageIntegritySha256(std::span<const uint8_t> key) {
  const size_t covered = size_;
  if (uint8_t* p = reserve(attr::kMessageIntegritySha256, 32)) {
    const auto mac = crypto::hmacSha256(key, {{out_.data(), covered}});
    std::memcpy(p, mac.data(), mac.size());
  }
  return *this;
}

MessageBuilder& MessageBuilder::addFingerprint() {
  const size_t covered = size_;
  if (uint8_t* p = reserve(attr::kFingerprint, 4)) {
    store32(p, crc32({out_.data(), covered}) ^ kFingerprintXor);
  }
  return *this;
}

Result<std::span<const uint8_t>> MessageBuilder::finish() const {
  if (!ok_) return makeError(Error::Code::kTooLong, "STUN message does not fit the buffer");
  return std::span<const uint8_t>(out_.data(), size_);
}

}  // namespace kturn::stun
