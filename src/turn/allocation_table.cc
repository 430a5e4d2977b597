#include "turn/allocation_table.h"

namespace kturn::turn {

Allocation& AllocationTable::create(const FiveTuple& five_tuple) {
  return adopt(std::make_unique<Allocation>(), five_tuple);
}

Allocation& AllocationTable::adopt(std::unique_ptr<Allocation> allocation,
                                   const FiveTuple& five_tuple) {
  uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    index = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& slot = slots_[index];
  ++slot.generation;
  slot.allocation = std::move(allocation);
  slot.allocation->id = AllocationId{index, slot.generation};
  slot.allocation->five_tuple = five_tuple;
  by_tuple_[five_tuple] = index;
  ++per_source_[five_tuple.client.ip];
  return *slot.allocation;
}

void AllocationTable::erase(AllocationId id) { take(id); }

std::unique_ptr<Allocation> AllocationTable::take(AllocationId id) {
  Allocation* a = find(id);
  if (a == nullptr) return nullptr;
  by_tuple_.erase(a->five_tuple);
  if (const auto it = per_source_.find(a->five_tuple.client.ip);
      it != per_source_.end() && --it->second == 0) {
    per_source_.erase(it);
  }
  free_.push_back(id.index);
  return std::move(slots_[id.index].allocation);
}

Allocation* AllocationTable::find(AllocationId id) {
  if (id.index >= slots_.size()) return nullptr;
  Slot& slot = slots_[id.index];
  if (slot.generation != id.generation || !slot.allocation) return nullptr;
  return slot.allocation.get();
}

Allocation* AllocationTable::find(const FiveTuple& five_tuple) {
  const auto it = by_tuple_.find(five_tuple);
  return it == by_tuple_.end() ? nullptr : slots_[it->second].allocation.get();
}

uint32_t AllocationTable::sourceCount(const IpAddress& source) const {
  const auto it = per_source_.find(source);
  return it == per_source_.end() ? 0 : it->second;
}

}  // namespace kturn::turn
