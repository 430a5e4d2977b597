// Which renders read what (snapshot_read.h): for each unit of the incremental renderer (a
// Gateway, a route's status) the reads of its last render, and the reverse, from a read to the
// units that made it. A unit's reads are replaced whole each time it renders, so the index is
// exactly what the last renders looked at, never kept up by hand.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "operator/snapshot_read.h"

namespace kturn::op {

template <class Unit>
class DependencyIndex {
 public:
  // `unit` rendered again and made these reads (in any order, duplicates allowed).
  void record(const Unit& unit, std::vector<SnapshotRead> reads) {
    forget(unit);
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    for (const SnapshotRead& r : reads) readers_[r].insert(unit);
    reads_[unit] = std::move(reads);
  }

  // `unit` is gone: its reads reach it no more.
  void forget(const Unit& unit) {
    auto it = reads_.find(unit);
    if (it == reads_.end()) return;
    for (const SnapshotRead& r : it->second) {
      auto readers = readers_.find(r);
      if (readers == readers_.end()) continue;
      readers->second.erase(unit);
      if (readers->second.empty()) readers_.erase(readers);
    }
    reads_.erase(it);
  }

  void clear() {
    reads_.clear();
    readers_.clear();
  }

  // Adds to `out` every unit whose last render made `read`.
  void collect(const SnapshotRead& read, std::set<Unit>& out) const {
    auto it = readers_.find(read);
    if (it != readers_.end()) out.insert(it->second.begin(), it->second.end());
  }

  // The reads of `unit`'s last render, sorted; empty when it is not known.
  const std::vector<SnapshotRead>& readsOf(const Unit& unit) const {
    static const std::vector<SnapshotRead> kNone;
    auto it = reads_.find(unit);
    return it == reads_.end() ? kNone : it->second;
  }

  size_t units() const { return reads_.size(); }

 private:
  std::map<Unit, std::vector<SnapshotRead>> reads_;
  std::map<SnapshotRead, std::set<Unit>> readers_;
};

}  // namespace kturn::op
