#include "k8s/object_cache.h"

namespace kturn::k8s {

bool ObjectCache::replace(std::vector<Object> objects) {
  std::map<ObjectKey, Object> fresh;
  for (Object& o : objects) {
    const ObjectKey key = o.key();
    fresh.insert_or_assign(key, std::move(o));
  }
  std::lock_guard lock(mutex_);
  bool changed = !synced_ || fresh.size() != objects_.size();
  if (!changed) {
    for (const auto& [key, object] : fresh) {
      const auto it = objects_.find(key);
      if (it == objects_.end() || it->second.body() != object.body()) {
        changed = true;
        break;
      }
    }
  }
  objects_ = std::move(fresh);
  synced_ = true;
  return changed;
}

bool ObjectCache::upsert(Object object) {
  const ObjectKey key = object.key();
  std::lock_guard lock(mutex_);
  const auto it = objects_.find(key);
  if (it != objects_.end() && it->second.body() == object.body()) return false;
  objects_.insert_or_assign(key, std::move(object));
  return true;
}

bool ObjectCache::erase(const ObjectKey& key) {
  std::lock_guard lock(mutex_);
  return objects_.erase(key) > 0;
}

std::vector<Object> ObjectCache::snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<Object> out;
  out.reserve(objects_.size());
  for (const auto& [key, object] : objects_) out.push_back(object);
  return out;
}

std::optional<Object> ObjectCache::get(const ObjectKey& key) const {
  std::lock_guard lock(mutex_);
  const auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

size_t ObjectCache::size() const {
  std::lock_guard lock(mutex_);
  return objects_.size();
}

bool ObjectCache::synced() const {
  std::lock_guard lock(mutex_);
  return synced_;
}

}  // namespace kturn::k8s
