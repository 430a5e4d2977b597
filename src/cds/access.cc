#include "cds/access.h"

#include "common/crypto.h"

namespace kturn::cds {

const char* verbName(AccessRequest::Verb verb) {
  switch (verb) {
    case AccessRequest::Verb::kGet:
      return "get";
    case AccessRequest::Verb::kList:
      return "list";
    case AccessRequest::Verb::kWatch:
      return "watch";
  }
  return "?";
}

std::string describe(const AccessRequest& request) {
  return std::string(verbName(request.verb)) + " " +
         (request.namespace_.empty() ? "*" : request.namespace_) + "/" +
         (request.name.empty() ? "*" : request.name);
}

void AccessGate::setOpen(std::set<ConfigId> ids) {
  std::lock_guard lock(mutex_);
  open_ = std::move(ids);
}

bool AccessGate::isOpen(const ConfigId& id) const {
  std::lock_guard lock(mutex_);
  return open_.contains(id);
}

namespace {

std::string tokenKey(const std::string& token) {
  const crypto::Sha256Digest digest = crypto::sha256({crypto::asBytes(token)});
  return std::string(reinterpret_cast<const char*>(digest.data()), digest.size());
}

}  // namespace

std::optional<Decision> AccessGate::cached(const std::string& token, const AccessRequest& request) {
  const Key key{tokenKey(token), request};
  std::lock_guard lock(mutex_);
  auto it = cache_.find(key);
  if (it == cache_.end()) return std::nullopt;
  if (std::chrono::steady_clock::now() >= it->second.until ||
      std::chrono::system_clock::now() >= it->second.decision.expires) {
    cache_.erase(it);
    return std::nullopt;
  }
  return it->second.decision;
}

Decision AccessGate::review(const std::string& token, const AccessRequest& request) {
  ++reviews_;
  Decision decision = authorizer_(token, request);
  if (decision.transient) return decision;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  if (cache_.size() >= kMaxEntries) {
    std::erase_if(cache_, [now](const auto& entry) { return entry.second.until <= now; });
    if (cache_.size() >= kMaxEntries) cache_.clear();  // a flood of distinct tokens
  }
  cache_[Key{tokenKey(token), request}] = Entry{decision, now + cache_ttl_};
  return decision;
}

void AccessGate::count(Count what) { ++counts_[static_cast<int>(what)]; }

AccessStats AccessGate::stats() const {
  auto n = [this](Count c) { return counts_[static_cast<int>(c)].load(); };
  return AccessStats{
      .allowed = n(Count::kAllowed),
      .open = n(Count::kOpen),
      .unauthenticated = n(Count::kUnauthenticated),
      .forbidden = n(Count::kForbidden),
      .busy = n(Count::kBusy),
      .reviews = reviews_.load(),
      .connections_refused = n(Count::kConnectionsRefused),
      .watches_expired = n(Count::kWatchesExpired),
  };
}

}  // namespace kturn::cds
