// Writes one STUN message into a caller-provided buffer (RFC 8489 §5, §14). No allocation: a
// message that does not fit marks the builder failed and finish() reports it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "kturn/result.h"
#include "kturn/transport_address.h"
#include "stun/constants.h"
#include "stun/message.h"

namespace kturn::stun {

class MessageBuilder {
 public:
  MessageBuilder(std::span<uint8_t> out, uint16_t method, MessageClass cls,
                 std::span<const uint8_t, kTransactionIdSize> transaction_id);
  MessageBuilder(std::span<uint8_t> out, Method method, MessageClass cls,
                 std::span<const uint8_t, kTransactionIdSize> transaction_id)
      : MessageBuilder(out, static_cast<uint16_t>(method), cls, transaction_id) {}

  MessageBuilder(const MessageBuilder&) = delete;
  MessageBuilder& operator=(const MessageBuilder&) = delete;

  // Appends a TLV, padding the value with zeros to a multiple of four bytes.
  MessageBuilder& add(uint16_t type, std::span<const uint8_t> value);
  MessageBuilder& addString(uint16_t type, std::string_view value);
  MessageBuilder& addUint32(uint16_t type, uint32_t value);
  MessageBuilder& addXorAddress(uint16_t type, const TransportAddress& address);
  // MAPPED-ADDRESS's layout, unXORed: MAPPED-ADDRESS itself, ALTERNATE-SERVER.
  MessageBuilder& addAddress(uint16_t type, const TransportAddress& address);
  MessageBuilder& addErrorCode(int code, std::string_view reason);
  MessageBuilder& addErrorCode(int code) { return addErrorCode(code, error::reasonPhrase(code)); }
  MessageBuilder& addUnknownAttributes(std::span<const uint16_t> types);

  // MESSAGE-INTEGRITY (HMAC-SHA1) and MESSAGE-INTEGRITY-SHA256 over everything written so far,
  // with the header length covering the integrity attribute itself (RFC 8489 §14.5, §14.6).
  MessageBuilder& addMessageIntegrity(std::span<const uint8_t> key);
  MessageBuilder& addMessageIntegritySha256(std::span<const uint8_t> key);
  // FINGERPRINT: CRC-32 of everything before it XOR 0x5354554e (RFC 8489 §14.7). Add it last.
  MessageBuilder& addFingerprint();

  // Padding may be any value (RFC 8489 §14); zero by default. RFC 5769's vectors pad with
  // spaces, so reproducing them byte for byte needs this.
  MessageBuilder& setPaddingByte(uint8_t value) {
    padding_ = value;
    return *this;
  }

  bool ok() const { return ok_; }
  size_t size() const { return size_; }
  // The finished message, a prefix of the output buffer.
  Result<std::span<const uint8_t>> finish() const;

 private:
  // Reserves a TLV with `len` value bytes; returns the value's start or nullptr on overflow.
  uint8_t* reserve(uint16_t type, size_t len);
  void setLength(size_t body_length);

  std::span<uint8_t> out_;
  size_t size_ = 0;
  bool ok_ = true;
  uint8_t padding_ = 0;
};

}  // namespace kturn::stun
