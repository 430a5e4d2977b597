// Typed decoding and encoding of attribute values (RFC 8489 §14, RFC 8656 §18). Decoders take
// the value span of an Attribute and return nullopt when it is malformed; the caller chooses the
// error response.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "kturn/transport_address.h"

namespace kturn::stun {

// XOR-MAPPED-ADDRESS, XOR-PEER-ADDRESS, XOR-RELAYED-ADDRESS (RFC 8489 §14.2):
//
//   |0 0 0 0 0 0 0 0|    Family     |         X-Port                |
//   |                X-Address (Variable)
//
// X-Port is the port XOR the cookie's top 16 bits; X-Address is the address XOR the cookie (IPv4)
// or the cookie followed by the transaction ID (IPv6). `xor_pad` is those 16 header bytes.
std::optional<TransportAddress> decodeXorAddress(std::span<const uint8_t> value,
                                                 std::span<const uint8_t, 16> xor_pad);
// Writes the value (8 or 20 bytes) to `out` and returns its size; `out` must hold 20 bytes.
size_t encodeXorAddress(const TransportAddress& address, std::span<const uint8_t, 16> xor_pad,
                        uint8_t* out);

// MAPPED-ADDRESS (RFC 8489 §14.1), the same layout without the XOR; also ALTERNATE-SERVER
// (§14.15).
std::optional<TransportAddress> decodeAddress(std::span<const uint8_t> value);
// Writes the value (8 or 20 bytes) to `out` and returns its size; `out` must hold 20 bytes.
size_t encodeAddress(const TransportAddress& address, uint8_t* out);

// A 32-bit value: LIFETIME, ICMP's data word, and similar.
std::optional<uint32_t> decodeUint32(std::span<const uint8_t> value);

inline std::string_view decodeString(std::span<const uint8_t> value) {
  return {reinterpret_cast<const char*>(value.data()), value.size()};
}

// ERROR-CODE (RFC 8489 §14.8): | Reserved, should be 0 |Class| Number | Reason Phrase ...
struct ErrorCodeValue {
  int code = 0;
  std::string_view reason;
};
std::optional<ErrorCodeValue> decodeErrorCode(std::span<const uint8_t> value);

// REQUESTED-TRANSPORT (RFC 8656 §18.7): | Protocol | RFFU |. Returns the protocol number.
std::optional<uint8_t> decodeRequestedTransport(std::span<const uint8_t> value);

// CHANNEL-NUMBER (RFC 8656 §18.1): | Channel Number | RFFU = 0 |.
std::optional<uint16_t> decodeChannelNumber(std::span<const uint8_t> value);

// REQUESTED-ADDRESS-FAMILY and ADDITIONAL-ADDRESS-FAMILY (RFC 8656 §18.8, §18.11):
// | Family | Reserved |. Returns the raw family byte; the caller answers 440 to unknown ones.
std::optional<uint8_t> decodeAddressFamily(std::span<const uint8_t> value);

// EVEN-PORT (RFC 8656 §18.6): |R|    RFFU     |. Returns the R (reserve next port) bit.
std::optional<bool> decodeEvenPort(std::span<const uint8_t> value);

// PASSWORD-ALGORITHM (RFC 8489 §14.11): | Algorithm | Parameters Length | Parameters ...
struct PasswordAlgorithmValue {
  uint16_t algorithm = 0;
  std::span<const uint8_t> parameters;
};
std::optional<PasswordAlgorithmValue> decodePasswordAlgorithm(std::span<const uint8_t> value);

}  // namespace kturn::stun
