// A Data indication (RFC 8656 §11.4) written in place around a relayed payload, as ChannelData's
// header is (channel_data.h): the STUN header, XOR-PEER-ADDRESS and the DATA attribute's header
// go in the headroom in front of the payload, its padding after it, and nothing is copied.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "kturn/transport_address.h"
#include "stun/attributes.h"
#include "stun/byte_order.h"
#include "stun/constants.h"
#include "stun/message.h"

namespace kturn::stun {

// The bytes a Data indication needs in front of its payload for a peer of this family: header
// (20), XOR-PEER-ADDRESS (12 for IPv4, 24 for IPv6) and DATA's type and length (4).
constexpr size_t dataIndicationHeadroom(AddressFamily peer) {
  return kHeaderSize + 4 + (peer == AddressFamily::kIPv4 ? 8 : 20) + 4;
}

// Writes a Data indication from `peer` around the `length` bytes at `payload`: the
// dataIndicationHeadroom(peer.family()) bytes before them must be free, and up to 3 bytes after
// them (the padding, zeroed here). Returns the whole message.
inline std::span<uint8_t> writeDataIndication(uint8_t* payload, size_t length,
                                              const TransportAddress& peer,
                                              const TransactionId& transaction) {
  const size_t address_size = peer.ip.isV4() ? 8 : 20;
  const size_t padded = (length + 3) & ~size_t{3};
  uint8_t* start = payload - dataIndicationHeadroom(peer.family());
  store16(start,
          encodeMessageType(static_cast<uint16_t>(Method::kData), MessageClass::kIndication));
  store16(start + 2, static_cast<uint16_t>(4 + address_size + 4 + padded));
  store32(start + 4, kMagicCookie);
  std::copy(transaction.begin(), transaction.end(), start + 8);
  uint8_t* attr = start + kHeaderSize;
  store16(attr, attr::kXorPeerAddress);
  store16(attr + 2, static_cast<uint16_t>(address_size));
  encodeXorAddress(peer, std::span<const uint8_t, 16>(start + 4, 16), attr + 4);
  uint8_t* data_header = attr + 4 + address_size;
  store16(data_header, attr::kData);
  store16(data_header + 2, static_cast<uint16_t>(length));
  std::fill(payload + length, payload + padded, uint8_t{0});
  return {start, static_cast<size_t>(payload + padded - start)};
}

}  // namespace kturn::stun
