// A zero-copy view of one STUN message (RFC 8489 §5, §14).
//
//    0                   1                   2                   3
//    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//   |0 0|     STUN Message Type     |         Message Length        |
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//   |                         Magic Cookie                          |
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//   |                     Transaction ID (96 bits)                  |
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
//   Message Type:  M11..M7 C1 M6..M4 C0 M3..M0
//
// Each attribute is a TLV padded to a multiple of four bytes:
//
//   |         Type                  |            Length             |
//   |                         Value (variable)                ....
//
// The view borrows the caller's buffer; it indexes attributes in a fixed array, so parsing never
// allocates.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "kturn/result.h"
#include "stun/constants.h"

namespace kturn::stun {

using TransactionId = std::array<uint8_t, kTransactionIdSize>;

// Message type <-> (method, class), RFC 8489 §5.
constexpr uint16_t encodeMessageType(uint16_t method, MessageClass cls) {
  const auto c = static_cast<uint16_t>(cls);
  return static_cast<uint16_t>((method & 0x000F) | ((method & 0x0070) << 1) |
                               ((method & 0x0F80) << 2) | ((c & 0b01) << 4) | ((c & 0b10) << 7));
}
constexpr uint16_t decodeMethod(uint16_t type) {
  return static_cast<uint16_t>((type & 0x000F) | ((type & 0x00E0) >> 1) | ((type & 0x3E00) >> 2));
}
constexpr MessageClass decodeClass(uint16_t type) {
  return static_cast<MessageClass>(((type >> 4) & 0b01) | ((type >> 7) & 0b10));
}

struct Attribute {
  uint16_t type = 0;
  std::span<const uint8_t> value;
  size_t offset = 0;  // of the attribute header within the message
};

class MessageView {
 public:
  // The most attributes a message may carry; more is a 400. TURN requests carry about ten.
  static constexpr size_t kMaxAttributes = 40;

  // Validates the header and the attribute framing (RFC 8489 §6.3). `bytes` must hold exactly one
  // message: for UDP the datagram, for streams the frame cut by messageLength().
  static Result<MessageView> parse(std::span<const uint8_t> bytes);

  uint16_t methodBits() const { return decodeMethod(type_); }
  Method method() const { return static_cast<Method>(methodBits()); }
  MessageClass messageClass() const { return decodeClass(type_); }
  bool isRequest() const { return messageClass() == MessageClass::kRequest; }
  bool isIndication() const { return messageClass() == MessageClass::kIndication; }
  std::span<const uint8_t, kTransactionIdSize> transactionId() const {
    return bytes_.subspan<8, kTransactionIdSize>();
  }
  // The magic cookie followed by the transaction ID, the XOR pad of XOR-*-ADDRESS.
  std::span<const uint8_t, 16> xorPad() const { return bytes_.subspan<4, 16>(); }
  std::span<const uint8_t> bytes() const { return bytes_; }

  // Attributes in wire order. Attributes after MESSAGE-INTEGRITY other than
  // MESSAGE-INTEGRITY-SHA256 and FINGERPRINT are ignored (RFC 8489 §14.5) and not listed.
  std::span<const Attribute> attributes() const { return {attrs_.data(), count_}; }
  // The first attribute of that type.
  const Attribute* find(uint16_t type) const;
  std::optional<std::span<const uint8_t>> value(uint16_t type) const;
  bool has(uint16_t type) const { return find(type) != nullptr; }

 private:
  std::span<const uint8_t> bytes_;
  uint16_t type_ = 0;
  size_t count_ = 0;
  std::array<Attribute, kMaxAttributes> attrs_{};
};

// Cheap pre-checks for demultiplexing and stream framing, no attribute walk.
// True if the bytes start with a plausible STUN header (top bits zero, magic cookie).
bool looksLikeStun(std::span<const uint8_t> bytes);
// Total size of the message whose header starts `bytes` (header + length field).
std::optional<size_t> messageSize(std::span<const uint8_t> bytes);

}  // namespace kturn::stun
