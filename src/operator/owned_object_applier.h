// Server-side apply of the objects the operator owns (each Gateway's Deployment or DaemonSet,
// Service and, when rendered, NetworkPolicy), only when the rendered object differs from what this
// applier last applied: a re-render that changes nothing sends nothing. Objects no longer rendered
// (a Gateway deleted or not accepted, a Service no listener needs) are deleted. What was applied is
// remembered in memory only; a new leader applies everything once (a server-side apply of an
// unchanged object is a no-op on the server).
#pragma once

#include <map>
#include <set>
#include <string>
#include <tuple>

#include "k8s/api_client.h"
#include "operator/render_result.h"

namespace kturn::op {

class OwnedObjectApplier {
 public:
  OwnedObjectApplier(k8s::ApiClient& client, std::string fieldManager)
      : client_(client), fieldManager_(std::move(fieldManager)) {}

  struct Outcome {
    int applied = 0;
    int deleted = 0;
    int unchanged = 0;
    int failed = 0;  // retried on the next reconcile
  };
  // The whole desired state: every Gateway's objects.
  Outcome apply(const std::vector<GatewayOutput>& gateways);
  // Part of it (IncrementalRenderer's delta): these Gateways' objects as now rendered (what they
  // rendered before and no longer do is deleted), and every object of the removed Gateways.
  Outcome applyChanges(const std::vector<GatewayOutput>& changed,
                       const std::vector<k8s::ObjectKey>& removed);
  // Forget what was applied: the next apply() sends everything (leadership was gained).
  void forget() {
    applied_.clear();
    byGateway_.clear();
  }

 private:
  // (apiVersion, kind, namespace, name)
  using Key = std::tuple<std::string, std::string, std::string, std::string>;
  // Applies one Gateway's objects that differ from what was applied; returns their keys.
  std::set<Key> applyGateway(const GatewayOutput& gateway, Outcome& outcome);
  // Deletes `key` if this applier applied it.
  void removeApplied(const Key& key, Outcome& outcome);
  bool applyOne(const k8s::Object& object);
  bool removeOne(const Key& key);

  k8s::ApiClient& client_;
  const std::string fieldManager_;
  std::map<Key, k8s::Json> applied_;
  std::map<k8s::ObjectKey, std::set<Key>> byGateway_;  // what each Gateway rendered last
};

}  // namespace kturn::op
