#include "turn/mobility_ticket.h"

#include <cstring>

#include "common/crypto.h"

namespace kturn::turn {

MobilityTickets::MobilityTickets(std::span<const uint8_t, 32> key) {
  std::memcpy(key_.data(), key.data(), key_.size());
}

std::array<uint8_t, MobilityTickets::kMacSize> MobilityTickets::mac(
    std::span<const uint8_t, kBodySize> body) const {
  const auto digest = crypto::hmacSha256(key_, {body});
  std::array<uint8_t, kMacSize> out;
  std::memcpy(out.data(), digest.data(), out.size());
  return out;
}

std::string MobilityTickets::seal(const MobilityTicket& ticket) const {
  std::array<uint8_t, kBodySize + kMacSize> raw{};
  for (int i = 0; i < 8; ++i) raw[i] = static_cast<uint8_t>(ticket.id >> (56 - 8 * i));
  raw[8] = ticket.owner;
  raw[9] = static_cast<uint8_t>(ticket.generation >> 16);
  raw[10] = static_cast<uint8_t>(ticket.generation >> 8);
  raw[11] = static_cast<uint8_t>(ticket.generation);
  const auto m = mac(std::span<const uint8_t, kBodySize>(raw.data(), kBodySize));
  std::memcpy(raw.data() + kBodySize, m.data(), m.size());
  return crypto::base64Encode(raw);
}

std::optional<MobilityTicket> MobilityTickets::open(std::string_view text) const {
  if (text.size() != kEncodedSize) return std::nullopt;
  const auto raw = crypto::base64Decode(text);
  if (!raw || raw->size() != kBodySize + kMacSize) return std::nullopt;
  const auto m = mac(std::span<const uint8_t, kBodySize>(raw->data(), kBodySize));
  if (!crypto::equalConstantTime(m, std::span<const uint8_t>(raw->data() + kBodySize, kMacSize))) {
    return std::nullopt;
  }
  MobilityTicket t;
  for (int i = 0; i < 8; ++i) t.id = (t.id << 8) | (*raw)[i];
  t.owner = (*raw)[8];
  t.generation = (uint32_t{(*raw)[9]} << 16) | (uint32_t{(*raw)[10]} << 8) | (*raw)[11];
  if (t.id == 0) return std::nullopt;
  return t;
}

}  // namespace kturn::turn
