#include "k8s/object_cache.h"

namespace kturn::k8s {

bool ObjectCache::replace(std::vector<Object> objects) {
  std::map<ObjectKey, Object> fresh;
  for (Object& o : objects) {
    const ObjectKey key = o.key();
    fresh.insert_or_assign(key, std::move(o));
  }
  std::lock_guard lock(mutex_);
  bool any = !synced_ || fresh.size() != objects_.size();
  // Without tracking the first difference settles it; with it, every changed key is wanted.
  if (!any || tracking_) {
    for (const auto& [key, object] : fresh) {
      const auto it = objects_.find(key);
      if (it == objects_.end() || it->second.body() != object.body()) {
        any = true;
        if (!tracking_) break;
        changed(key);
      }
    }
    if (tracking_) {
      for (const auto& [key, object] : objects_) {
        if (!fresh.contains(key)) changed(key);
      }
    }
  }
  objects_ = std::move(fresh);
  synced_ = true;
  return any;
}

bool ObjectCache::upsert(Object object) {
  const ObjectKey key = object.key();
  std::lock_guard lock(mutex_);
  const auto it = objects_.find(key);
  if (it != objects_.end() && it->second.body() == object.body()) return false;
  objects_.insert_or_assign(key, std::move(object));
  changed(key);
  return true;
}

bool ObjectCache::erase(const ObjectKey& key) {
  std::lock_guard lock(mutex_);
  if (objects_.erase(key) == 0) return false;
  changed(key);
  return true;
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

void ObjectCache::trackChanges() {
  std::lock_guard lock(mutex_);
  tracking_ = true;
}

std::vector<CachedChange> ObjectCache::takeChanges() {
  std::lock_guard lock(mutex_);
  std::vector<CachedChange> out;
  out.reserve(changed_.size());
  for (const ObjectKey& key : changed_) {
    const auto it = objects_.find(key);
    out.push_back({key, it == objects_.end() ? std::nullopt : std::optional<Object>(it->second)});
  }
  changed_.clear();
  return out;
}

}  // namespace kturn::k8s
