// The objects of one watched kind, as last listed and watched (client-go's Store). Written by
// the kind's Informer thread, read by the operator's reconcile thread: every call is guarded.
//
// With change tracking on, the cache also keeps the keys that changed since a reader last took
// them (the informer's add, update and delete events, and the differences a relist made), so
// that the reader can bring its own copy up to date with work proportional to the change rather
// than to the cache (the operator's in-place ClusterSnapshot, issue 26).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "k8s/object.h"
#include "k8s/resource_type.h"

namespace kturn::k8s {

// One key changed since the last takeChanges(), with its object now (nullopt: deleted).
struct CachedChange {
  ObjectKey key{};
  std::optional<Object> object{};
};

class ObjectCache {
 public:
  explicit ObjectCache(ResourceType type) : type_(std::move(type)) {}
  ObjectCache(const ObjectCache&) = delete;
  ObjectCache& operator=(const ObjectCache&) = delete;

  const ResourceType& type() const { return type_; }

  // The result of a list: every object, replacing what was there. Marks the cache synced.
  // Returns whether anything changed.
  bool replace(std::vector<Object> objects);
  // A watch event. Returns whether anything changed (an ADDED replayed after a reconnect with
  // the same resourceVersion changes nothing).
  bool upsert(Object object);
  bool erase(const ObjectKey& key);

  // Every object, in key order.
  std::vector<Object> snapshot() const;
  std::optional<Object> get(const ObjectKey& key) const;
  size_t size() const;
  // True once the first list has been stored: until then, an empty cache means "not known yet".
  bool synced() const;

  // From now on, remember which keys change (off by default: a cache nobody takes the changes
  // of would remember every key it ever held).
  void trackChanges();
  // The keys changed since the last call (or since trackChanges()), in key order, each with its
  // object as it is now; one lock, so a change made after it is in the next call's answer.
  std::vector<CachedChange> takeChanges();

 private:
  void changed(const ObjectKey& key) {
    if (tracking_) changed_.insert(key);
  }

  const ResourceType type_;
  mutable std::mutex mutex_;
  std::map<ObjectKey, Object> objects_;
  bool synced_ = false;
  bool tracking_ = false;
  std::set<ObjectKey> changed_;
};

}  // namespace kturn::k8s
