// A worker's allocations: a slab indexed by AllocationId (the relay side's O(1) lookup) and a hash
// index by client 5-tuple (the client side's lookup). Worker-local, no locks.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "kturn/transport_address.h"
#include "turn/allocation.h"
#include "turn/ids.h"

namespace kturn::turn {

class AllocationTable {
 public:
  AllocationTable() = default;
  AllocationTable(const AllocationTable&) = delete;
  AllocationTable& operator=(const AllocationTable&) = delete;

  // Creates an empty allocation for `five_tuple`, which must not have one yet.
  Allocation& create(const FiveTuple& five_tuple);
  void erase(AllocationId id);
  // RFC 8016 mobility: takes an allocation out (null for an unknown id), and puts one in under
  // `five_tuple` (which must not have one yet) with an id of this table.
  std::unique_ptr<Allocation> take(AllocationId id);
  Allocation& adopt(std::unique_ptr<Allocation> allocation, const FiveTuple& five_tuple);

  Allocation* find(AllocationId id);
  Allocation* find(const FiveTuple& five_tuple);

  size_t size() const { return by_tuple_.size(); }
  // Allocations per client source IP address (all ports and transports), kept by create() and
  // erase() themselves: only Allocate and an allocation's end touch it, never a relayed packet.
  uint32_t sourceCount(const IpAddress& source) const;

  template <class Fn>
  void forEach(Fn&& fn) {
    for (auto& slot : slots_) {
      if (slot.allocation) fn(*slot.allocation);
    }
  }

 private:
  struct Slot {
    std::unique_ptr<Allocation> allocation;
    uint32_t generation = 0;
  };
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  std::unordered_map<FiveTuple, uint32_t> by_tuple_;
  std::unordered_map<IpAddress, uint32_t> per_source_;  // only sources that hold allocations
};

}  // namespace kturn::turn
