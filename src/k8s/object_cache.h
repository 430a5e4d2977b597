// The objects of one watched kind, as last listed and watched (client-go's Store). Written by
// the kind's Informer thread, read by the operator's reconcile thread: every call is guarded.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "k8s/object.h"
#include "k8s/resource_type.h"

namespace kturn::k8s {

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

 private:
  const ResourceType type_;
  mutable std::mutex mutex_;
  std::map<ObjectKey, Object> objects_;
  bool synced_ = false;
};

}  // namespace kturn::k8s
