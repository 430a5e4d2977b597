#include "stun/attributes.h"

#include <array>

#include "stun/byte_order.h"
#include "stun/constants.h"

namespace kturn::stun {
namespace {

std::optional<TransportAddress> decodeAddressWithPad(std::span<const uint8_t> value,
                                                     const uint8_t* pad) {
  if (value.size() < 4) return std::nullopt;
  const uint8_t family = value[1];
  const size_t addr_len = family == 0x01 ? 4 : family == 0x02 ? 16 : 0;
  if (addr_len == 0 || value.size() != 4 + addr_len) return std::nullopt;
  uint8_t addr[16];
  for (size_t i = 0; i < addr_len; ++i) addr[i] = value[4 + i] ^ (pad ? pad[i] : 0);
  const uint16_t port = load16(value.data() + 2) ^ (pad ? load16(pad) : 0);
  const auto af = static_cast<AddressFamily>(family);
  return TransportAddress{IpAddress::fromBytes(af, {addr, addr_len}), port};
}

}  // namespace

std::optional<TransportAddress> decodeXorAddress(std::span<const uint8_t> value,
                                                 std::span<const uint8_t, 16> xor_pad) {
  return decodeAddressWithPad(value, xor_pad.data());
}

size_t encodeXorAddress(const TransportAddress& address, std::span<const uint8_t, 16> xor_pad,
                        uint8_t* out) {
  const auto bytes = address.ip.bytes();
  out[0] = 0;
  out[1] = static_cast<uint8_t>(address.family());
  store16(out + 2, address.port ^ load16(xor_pad.data()));
  for (size_t i = 0; i < bytes.size(); ++i) out[4 + i] = bytes[i] ^ xor_pad[i];
  return 4 + bytes.size();
}

std::optional<TransportAddress> decodeAddress(std::span<const uint8_t> value) {
  return decodeAddressWithPad(value, nullptr);
}

size_t encodeAddress(const TransportAddress& address, uint8_t* out) {
  static constexpr std::array<uint8_t, 16> kNoXor{};
  return encodeXorAddress(address, kNoXor, out);
}

std::optional<uint32_t> decodeUint32(std::span<const uint8_t> value) {
  if (value.size() != 4) return std::nullopt;
  return load32(value.data());
}

std::optional<ErrorCodeValue> decodeErrorCode(std::span<const uint8_t> value) {
  if (value.size() < 4) return std::nullopt;
  const int cls = value[2] & 0x07;
  const int number = value[3];
  if (cls < 3 || cls > 6 || number > 99) return std::nullopt;
  return ErrorCodeValue{cls * 100 + number, decodeString(value.subspan(4))};
}

std::optional<uint8_t> decodeRequestedTransport(std::span<const uint8_t> value) {
  if (value.size() != 4) return std::nullopt;
  return value[0];
}

std::optional<uint16_t> decodeChannelNumber(std::span<const uint8_t> value) {
  if (value.size() != 4) return std::nullopt;
  return load16(value.data());
}

std::optional<uint8_t> decodeAddressFamily(std::span<const uint8_t> value) {
  if (value.size() != 4) return std::nullopt;
  return value[0];
}

std::optional<bool> decodeEvenPort(std::span<const uint8_t> value) {
  if (value.size() != 1) return std::nullopt;
  return (value[0] & 0x80) != 0;
}

std::optional<PasswordAlgorithmValue> decodePasswordAlgorithm(std::span<const uint8_t> value) {
  if (value.size() < 4) return std::nullopt;
  const size_t params_len = load16(value.data() + 2);
  if (value.size() < 4 + params_len) return std::nullopt;
  return PasswordAlgorithmValue{load16(value.data()), value.subspan(4, params_len)};
}

}  // namespace kturn::stun
