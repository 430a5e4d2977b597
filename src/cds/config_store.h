// ConfigStore: the CDS server's configs by id and the watchers subscribed to them (STUNner's
// pkg/config/server/config_store.go). Thread-safe: the operator upserts from its reconcile
// thread while the server thread subscribes watchers. Every change and the initial state of a
// new subscription are handed to subscribers under one lock, so a watcher never misses an
// update nor sees one older than its initial state. Private to src/cds.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cds/protocol.h"
#include "config/stunner_config.h"

namespace kturn::cds {

// What a watcher asked for: every config, one namespace, or one id.
struct Topic {
  enum class Kind { kAll, kNamespace, kConfig };
  Kind kind = Kind::kAll;
  ConfigId id;  // kNamespace: namespace_ only

  bool matches(const ConfigId& config) const;
};

// Patches a config for the node a watcher runs on (STUNner's ConfigNodePatcher): e.g. the
// operator rewrites public addresses for a node's external IP.
using NodePatcher =
    std::function<config::StunnerConfig(const config::StunnerConfig&, std::string_view node)>;

class Subscriber {
 public:
  virtual ~Subscriber() = default;
  // Called with the store's lock held, from any thread: must only queue, never block or call
  // back into the store. `json` is the whole config, ready to send.
  virtual void deliver(const ConfigId& id, std::string json) = 0;
};

class ConfigStore {
 public:
  explicit ConfigStore(NodePatcher patcher) : patcher_(std::move(patcher)) {}

  // Stores `config` (validated by the caller) and pushes it to matching subscribers. False,
  // and nothing pushed, when the stored config is already equal (STUNner suppresses these).
  bool upsert(const ConfigId& id, config::StunnerConfig config);
  // Removes the config; pushes `tombstone` (the zero config) to matching subscribers unless
  // null. False if there was no such config.
  bool remove(const ConfigId& id, const config::StunnerConfig* tombstone);
  // Pushes every matching config again to the subscribers that watch from `node`.
  void pushNode(std::string_view node);

  std::optional<config::StunnerConfig> get(const ConfigId& id) const;
  // Sorted by id; `namespace_` empty means all.
  std::vector<config::StunnerConfig> list(std::optional<std::string_view> namespace_) const;
  std::vector<ConfigId> ids() const;

  // Registers `subscriber` (borrowed: it must unsubscribe before it dies) and delivers the
  // current matching configs to it. `node` empty: no patching.
  uint64_t subscribe(Topic topic, std::string node, Subscriber& subscriber);
  void unsubscribe(uint64_t handle);
  // Drops every subscription: nothing is delivered any more (the server is stopping).
  void unsubscribeAll();
  size_t subscriberCount() const;

  // The JSON a subscriber on `node` gets for `config`: patched when a patcher is set and the
  // node is known (like STUNner, only per-name watches carry a node).
  std::string render(const config::StunnerConfig& config, const std::string& node) const;

 private:
  struct Subscription {
    Topic topic;
    std::string node;
    Subscriber* subscriber;
  };

  const NodePatcher patcher_;
  mutable std::mutex mutex_;
  std::map<ConfigId, config::StunnerConfig> configs_;
  std::map<uint64_t, Subscription> subscriptions_;
  uint64_t next_handle_ = 1;
};

}  // namespace kturn::cds
