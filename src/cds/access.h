// Who may read which configs: kturn's authenticated config discovery (docs/cds.md#authentication).
//
// A CDS server with an Authorizer serves a request only when
//   - it names one config that is open (the per-Gateway opt-in for clients without a token, such
//     as stunnerd), or
//   - it carries "Authorization: Bearer <token>" and the Authorizer allows the request.
// Without an Authorizer everything is served to everyone, as STUNner's server does.
//
// The Authorizer may block (kturn-operator's asks the Kubernetes API: TokenReview,
// SubjectAccessReview); the server calls it on threads of its own, never on the I/O thread, with
// a bounded number of calls in flight, and keeps each decision for a few seconds.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "cds/protocol.h"

namespace kturn::cds {

struct AccessRequest {
  enum class Verb { kGet, kList, kWatch };
  Verb verb = Verb::kGet;
  std::string namespace_{};  // empty: every namespace
  std::string name{};        // empty: every config of namespace_

  auto operator<=>(const AccessRequest&) const = default;
};

const char* verbName(AccessRequest::Verb verb);
// "get media/gw", "watch media/*", "list */*": for logs.
std::string describe(const AccessRequest& request);

struct Decision {
  bool authenticated = false;  // false: 401
  bool allowed = false;        // authenticated and not allowed: 403
  std::string who{};     // for logs: "pod media/gw-5d8f (system:serviceaccount:media:default)"
  std::string reason{};  // why not: for the log and the response body
  // When the credential stops being valid; a watch it opened is closed then (or sooner, see
  // CdsServerOptions::max_watch_age), and the client connects again with its fresh token.
  std::chrono::system_clock::time_point expires = std::chrono::system_clock::time_point::max();
  // No decision could be made (the API server did not answer): 503, not kept in the cache.
  bool transient = false;
};

using Authorizer = std::function<Decision(const std::string& token, const AccessRequest& request)>;

// Counters of the gate and of the server's connection limits, for the operator's metrics.
struct AccessStats {
  uint64_t allowed = 0;              // requests served after a decision (cached or not)
  uint64_t open = 0;                 // requests for an open config, served without a token
  uint64_t unauthenticated = 0;      // 401: no token for a config that is not open, or a bad token
  uint64_t forbidden = 0;            // 403
  uint64_t busy = 0;                 // 503: too many decisions in flight
  uint64_t reviews = 0;              // Authorizer calls (cache misses)
  uint64_t connections_refused = 0;  // over max_connections or max_connections_per_source
  uint64_t watches_expired = 0;      // watches closed when their credential expired
};

// The decision cache and the open set. Thread-safe.
class AccessGate {
 public:
  AccessGate(Authorizer authorizer, std::chrono::milliseconds cache_ttl)
      : authorizer_(std::move(authorizer)), cache_ttl_(cache_ttl) {}

  bool enabled() const { return static_cast<bool>(authorizer_); }

  // The configs served without a token from now on (replaces the previous set).
  void setOpen(std::set<ConfigId> ids);
  bool isOpen(const ConfigId& id) const;

  // A decision kept from an earlier call for this token and request, if still fresh.
  std::optional<Decision> cached(const std::string& token, const AccessRequest& request);
  // Calls the Authorizer (blocking) and keeps the answer for cache_ttl, or until it expires
  // (a transient one is not kept).
  Decision review(const std::string& token, const AccessRequest& request);

  // Counting, from any thread.
  enum class Count {
    kAllowed,
    kOpen,
    kUnauthenticated,
    kForbidden,
    kBusy,
    kConnectionsRefused,
    kWatchesExpired
  };
  static constexpr size_t kCounts = static_cast<size_t>(Count::kWatchesExpired) + 1;
  void count(Count what);
  AccessStats stats() const;

 private:
  using Key = std::pair<std::string, AccessRequest>;  // (SHA-256 of the token, request)
  struct Entry {
    Decision decision;
    std::chrono::steady_clock::time_point until;
  };
  static constexpr size_t kMaxEntries = 4096;

  const Authorizer authorizer_;
  const std::chrono::milliseconds cache_ttl_;
  mutable std::mutex mutex_;
  std::set<ConfigId> open_;
  std::map<Key, Entry> cache_;
  std::atomic<uint64_t> counts_[kCounts] = {};
  std::atomic<uint64_t> reviews_{0};
};

}  // namespace kturn::cds
