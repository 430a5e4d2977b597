// MOBILITY-TICKET (RFC 8016): what a client presents from its new address to take its allocation
// along. The ticket names the allocation by a random 64-bit mobility id, the worker whose core
// holds it and the allocation's move count (its generation), and carries a MAC under a
// per-process key, so a forged or altered ticket is told apart from a stale one without any state.
//
// 24 bytes in base64: 32 printable characters. coturn's turnutils_uclient keeps a ticket in a
// 33-byte C string, so it must be short and contain no NUL.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kturn::turn {

struct MobilityTicket {
  uint64_t id = 0;          // the allocation's mobility id (never 0)
  uint8_t owner = 0;        // the worker whose core holds the allocation
  uint32_t generation = 0;  // 24 bits: the allocation's moves so far
  friend bool operator==(const MobilityTicket&, const MobilityTicket&) = default;
};

class MobilityTickets {
 public:
  static constexpr size_t kEncodedSize = 32;
  static constexpr uint32_t kMaxGeneration = 0xFFFFFF;

  // `key` is random bytes the caller draws once per process, the same for every core.
  explicit MobilityTickets(std::span<const uint8_t, 32> key);

  std::string seal(const MobilityTicket& ticket) const;
  // The ticket `text` names, or nullopt when this process did not make it (wrong size, not
  // base64, MAC mismatch).
  std::optional<MobilityTicket> open(std::string_view text) const;

 private:
  static constexpr size_t kBodySize = 12;  // id 8, owner 1, generation 3
  static constexpr size_t kMacSize = 12;
  std::array<uint8_t, kMacSize> mac(std::span<const uint8_t, kBodySize> body) const;
  std::array<uint8_t, 32> key_;
};

}  // namespace kturn::turn
