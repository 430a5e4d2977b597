// The renderer of renderer.h, kept up to date by re-rendering only what a change reaches (issue
// 26): with 1,000 Gateways, one EndpointSlice change re-renders the one Gateway whose route
// reads it, not the cluster.
//
//   update(next snapshot), or apply(the objects that changed):
//     1. diff the objects against the previous snapshot (resourceVersion, else content), or take
//        the old and new versions of the changed ones from ClusterSnapshot::apply;
//     2. each changed object, old and new version, → the reads it can alter (readsReachedBy);
//        a GatewayClass, GatewayConfig or Dataplane, or other options → a full render;
//     3. the units whose last render made one of those reads (DependencyIndex), plus the changed
//        Gateways and routes themselves, render again, recording their reads afresh;
//     4. a Gateway whose acceptance changed (or that appeared or went) reaches the route
//        statuses that read it.
//   A unit is one Gateway (its config, owned objects and status) or one route (its status).
//   GatewayClass statuses render every time (a handful).
//
// What is read is recorded by the ClusterSnapshot itself (snapshot_read.h), so the index holds
// exactly what each render looked at. render() from scratch stays the reference: the tests
// check that result() equals it after random change sequences.
#pragma once

#include <compare>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "operator/cluster_renderer.h"
#include "operator/cluster_snapshot.h"
#include "operator/dependency_index.h"
#include "operator/gateway_class_renderer.h"
#include "operator/render_options.h"
#include "operator/render_result.h"

namespace kturn::op {

// What one update() changed, for the appliers.
struct RenderDelta {
  // Everything was rendered again (the first update, a class-wide change, `full` asked): the
  // fields below are empty, take IncrementalRenderer::result().
  bool full = false;
  // The Gateways rendered again (their output may equal the previous one), sorted by key.
  std::vector<GatewayOutput> gateways{};
  // Gateways no longer rendered (deleted, or no longer of one of our classes).
  std::vector<k8s::ObjectKey> removed{};
  // Every GatewayClass's, and those of the Gateways and routes rendered again.
  std::vector<StatusUpdate> statuses{};
  // Units rendered again, for the logs and the bench.
  size_t gatewaysRendered = 0;
  size_t routesRendered = 0;
};

class IncrementalRenderer {
 public:
  IncrementalRenderer() = default;
  IncrementalRenderer(const IncrementalRenderer&) = delete;
  IncrementalRenderer& operator=(const IncrementalRenderer&) = delete;

  // Makes `snapshot` the current one and renders what changed since the previous (everything
  // when `full`). Options that differ from the previous update's, transitionTime aside, render
  // everything; a unit not rendered again keeps its conditions' earlier transitionTime.
  RenderDelta update(ClusterSnapshot snapshot, const RenderOptions& options, bool full = false);
  // The same from the objects that changed (ClusterSnapshot::apply: the snapshot is updated in
  // place, nothing else is copied or compared), as the operator's reconcile does between full
  // renders. What the changes reach is found from each object's old and new version.
  RenderDelta apply(std::vector<ObjectUpdate> updates, const RenderOptions& options);

  // The whole current state, as render(snapshot(), options) gives it (same order).
  RenderResult result() const;
  const ClusterSnapshot& snapshot() const { return snapshot_; }
  size_t gatewayCount() const { return gateways_.size(); }

  // A route unit: routes of different kinds may share a name. Ordered as routes() is.
  struct RouteId {
    int order = 0;  // STUNner UDPRoutes, TCPRoutes, Gateway API UDPRoutes
    k8s::RouteKind kind = k8s::RouteKind::kStunnerUdp;
    k8s::ObjectKey key{};

    static RouteId of(k8s::RouteKind kind, k8s::ObjectKey key);
    friend auto operator<=>(const RouteId&, const RouteId&) = default;
    friend bool operator==(const RouteId&, const RouteId&) = default;
  };
  // What each unit's last render read (for tests).
  const DependencyIndex<k8s::ObjectKey>& gatewayReads() const { return gatewayReads_; }
  const DependencyIndex<RouteId>& routeReads() const { return routeReads_; }

 private:
  struct Changes {
    std::set<SnapshotRead> reads;
    std::set<k8s::ObjectKey> gateways;
    std::set<RouteId> routes;
  };
  struct GatewayUnit {
    GatewayOutput output;
    StatusUpdate status;
  };
  class ClusterMemo;

  // False when a change reaches every Gateway (a full render is due).
  static bool diff(const ClusterSnapshot& before, const ClusterSnapshot& after, Changes& out);
  static bool reach(const k8s::Object& version, Changes& out);
  // Equal but for the transitionTime.
  bool sameOptions(const RenderOptions& options) const;
  // After snapshot_ is current: everything, or the units `changes` reaches.
  RenderDelta renderChanges(bool incremental, Changes changes, const RenderOptions& options);
  void renderClasses();
  RenderDelta renderAll();
  // Each returns whether the unit's observable state for others changed (for a Gateway: its
  // presence among ours_ or its acceptance).
  bool renderGatewayUnit(const k8s::ObjectKey& key, const ClusterOf& clusters, RenderDelta& delta);
  void renderRouteUnit(const RouteId& id, const ClusterOf& clusters, RenderDelta& delta);

  ClusterSnapshot snapshot_;
  RenderOptions options_;
  bool rendered_ = false;
  std::map<std::string, GatewayClassRender> classes_;  // our classes, by name
  std::vector<StatusUpdate> classStatuses_;            // in gatewayClasses() order
  std::map<k8s::ObjectKey, GatewayUnit> gateways_;
  std::map<k8s::ObjectKey, bool> ours_;  // as render() keeps it: Gateway → accepted
  std::map<RouteId, std::optional<StatusUpdate>> routes_;
  DependencyIndex<k8s::ObjectKey> gatewayReads_;
  DependencyIndex<RouteId> routeReads_;
};

}  // namespace kturn::op
