#include "operator/incremental_renderer.h"

#include <algorithm>
#include <tuple>

#include "operator/cluster_renderer.h"
#include "operator/renderer.h"
#include "operator/route_status_renderer.h"

namespace kturn::op {

// Each route's cluster rendered at most once per update, with the reads it made: every unit
// that uses the cluster depends on them too.
class IncrementalRenderer::ClusterMemo {
 public:
  ClusterMemo(const ClusterSnapshot& snapshot, const RenderOptions& options)
      : snapshot_(snapshot), options_(options) {}
  ClusterMemo(const ClusterMemo&) = delete;
  ClusterMemo& operator=(const ClusterMemo&) = delete;

  // The ClusterOf the renderers take, reading through this memo.
  ClusterOf asFunction() {
    return [this](size_t route) -> const ClusterRender& { return (*this)(route); };
  }

  const ClusterRender& operator()(size_t route) {
    auto it = memo_.find(route);
    if (it == memo_.end()) {
      ReadLog log;
      ReadLog* const outer = snapshot_.swapReadLog(&log);
      ClusterRender cluster = renderCluster(snapshot_.route(route), snapshot_, options_);
      snapshot_.swapReadLog(outer);
      it = memo_.emplace(route, Entry{std::move(cluster), log.take()}).first;
    }
    if (ReadLog* outer = snapshot_.readLog()) outer->append(it->second.reads);
    return it->second.cluster;
  }

 private:
  struct Entry {
    ClusterRender cluster;
    std::vector<SnapshotRead> reads;
  };
  const ClusterSnapshot& snapshot_;
  const RenderOptions& options_;
  std::map<size_t, Entry> memo_;
};

IncrementalRenderer::RouteId IncrementalRenderer::RouteId::of(k8s::RouteKind kind,
                                                              k8s::ObjectKey key) {
  int order = 0;
  switch (kind) {
    case k8s::RouteKind::kStunnerUdp:
      order = 0;
      break;
    case k8s::RouteKind::kStunnerTcp:
      order = 1;
      break;
    case k8s::RouteKind::kGatewayUdp:
      order = 2;
      break;
  }
  return {order, kind, std::move(key)};
}

// One version of a changed object: what it reaches, and itself if it is a unit. False when it
// reaches every Gateway.
bool IncrementalRenderer::reach(const k8s::Object& o, Changes& out) {
  std::optional<std::vector<SnapshotRead>> reads = readsReachedBy(o);
  if (!reads) return false;
  out.reads.insert(reads->begin(), reads->end());
  if (o.group() == k8s::kGatewayGroup && o.kind() == "Gateway") out.gateways.insert(o.key());
  if (auto kind = k8s::routeKindOf(o.meta())) out.routes.insert(RouteId::of(*kind, o.key()));
  return true;
}

bool IncrementalRenderer::diff(const ClusterSnapshot& before, const ClusterSnapshot& after,
                               Changes& out) {
  const auto& was = before.objects();
  const auto& is = after.objects();
  auto i = was.begin();
  auto j = is.begin();
  while (i != was.end() || j != is.end()) {
    if (j == is.end() || (i != was.end() && i->first < j->first)) {
      if (!reach((i++)->second, out)) return false;  // deleted
    } else if (i == was.end() || j->first < i->first) {
      if (!reach((j++)->second, out)) return false;  // added
    } else {
      if (!sameObjectVersion(i->second, j->second) &&
          (!reach(i->second, out) || !reach(j->second, out))) {
        return false;
      }
      ++i;
      ++j;
    }
  }
  return true;
}

void IncrementalRenderer::renderClasses() {
  classes_.clear();
  classStatuses_.clear();
  for (const k8s::GatewayClass& gc : snapshot_.gatewayClasses()) {
    if (gc.controllerName != options_.controllerName) continue;
    GatewayClassRender r = renderGatewayClass(gc, snapshot_, options_);
    classStatuses_.push_back(r.status);
    classes_.emplace(gc.meta.name, std::move(r));
  }
}

RenderDelta IncrementalRenderer::update(ClusterSnapshot snapshot, const RenderOptions& options,
                                        bool full) {
  Changes changes;
  const bool incremental =
      !full && rendered_ && sameOptions(options) && diff(snapshot_, snapshot, changes);
  snapshot_ = std::move(snapshot);
  return renderChanges(incremental, std::move(changes), options);
}

RenderDelta IncrementalRenderer::apply(std::vector<ObjectUpdate> updates,
                                       const RenderOptions& options) {
  Changes changes;
  bool incremental = rendered_ && sameOptions(options);
  for (const ObjectChange& change : snapshot_.apply(std::move(updates))) {
    // Both versions: what the old one reached may no longer be reached by the new one.
    if (!incremental) continue;
    if (change.before && !reach(*change.before, changes)) incremental = false;
    if (change.after && !reach(*change.after, changes)) incremental = false;
  }
  return renderChanges(incremental, std::move(changes), options);
}

bool IncrementalRenderer::sameOptions(const RenderOptions& options) const {
  RenderOptions comparable = options;
  comparable.transitionTime = options_.transitionTime;
  comparable.now = options_.now;
  return comparable == options_;
}

RenderDelta IncrementalRenderer::renderChanges(bool incremental, Changes changes,
                                               const RenderOptions& options) {
  options_ = options;
  rendered_ = true;
  renderClasses();  // ClassContexts point into snapshot_: before anything else
  if (!incremental) return renderAll();

  RenderDelta delta;
  delta.statuses = classStatuses_;
  std::set<k8s::ObjectKey> gateways = std::move(changes.gateways);
  std::set<RouteId> routes = std::move(changes.routes);
  for (const SnapshotRead& read : changes.reads) {
    gatewayReads_.collect(read, gateways);
    routeReads_.collect(read, routes);
  }
  ClusterMemo memo(snapshot_, options_);
  const ClusterOf clusters = memo.asFunction();
  for (const k8s::ObjectKey& key : gateways) {
    // A Gateway that came, went or changed acceptance changes the statuses of its routes.
    if (renderGatewayUnit(key, clusters, delta)) {
      routeReads_.collect({ReadKind::kGateway, key}, routes);
    }
  }
  for (const RouteId& id : routes) renderRouteUnit(id, clusters, delta);
  return delta;
}

RenderDelta IncrementalRenderer::renderAll() {
  gateways_.clear();
  ours_.clear();
  routes_.clear();
  gatewayReads_.clear();
  routeReads_.clear();
  RenderDelta delta{.full = true};
  ClusterMemo memo(snapshot_, options_);
  const ClusterOf clusters = memo.asFunction();
  for (const k8s::Gateway& gw : snapshot_.gateways()) {
    renderGatewayUnit(gw.meta.key(), clusters, delta);
  }
  for (const k8s::Route& route : snapshot_.routes()) {
    renderRouteUnit(RouteId::of(route.routeKind, route.meta.key()), clusters, delta);
  }
  delta.gateways.clear();
  delta.removed.clear();
  delta.statuses.clear();
  return delta;
}

bool IncrementalRenderer::renderGatewayUnit(const k8s::ObjectKey& key, const ClusterOf& clusters,
                                            RenderDelta& delta) {
  // What route statuses see of this Gateway: absent, rejected or accepted.
  enum class Seen { kAbsent, kRejected, kAccepted };
  const auto wasOurs = ours_.find(key);
  const Seen before = wasOurs == ours_.end() ? Seen::kAbsent
                      : wasOurs->second      ? Seen::kAccepted
                                             : Seen::kRejected;
  const k8s::Gateway* gw = snapshot_.findGateway(key);
  auto cls = gw == nullptr ? classes_.end() : classes_.find(gw->gatewayClassName);
  if (cls == classes_.end()) {
    if (gateways_.erase(key) > 0) delta.removed.push_back(key);
    ours_.erase(key);
    gatewayReads_.forget(key);
    return before != Seen::kAbsent;
  }
  ReadLog log;
  GatewayRender r;
  {
    ScopedReadLog recording(snapshot_, log);
    r = renderClassGateway(*gw, cls->second, snapshot_, clusters, options_);
  }
  ++delta.gatewaysRendered;
  gatewayReads_.record(key, log.take());
  const bool accepted = cls->second.problem.empty() && r.output.config.has_value();
  ours_[key] = accepted;
  GatewayUnit& unit = gateways_[key];
  unit.output = std::move(r.output);
  unit.status = {gw->meta.apiVersion, "Gateway", key, std::move(r.status)};
  delta.gateways.push_back(unit.output);
  delta.statuses.push_back(unit.status);
  return before != (accepted ? Seen::kAccepted : Seen::kRejected);
}

void IncrementalRenderer::renderRouteUnit(const RouteId& id, const ClusterOf& clusters,
                                          RenderDelta& delta) {
  const std::optional<size_t> index = snapshot_.findRoute(id.kind, id.key);
  if (!index) {
    routes_.erase(id);
    routeReads_.forget(id);
    return;
  }
  ReadLog log;
  std::optional<StatusUpdate> status;
  {
    ScopedReadLog recording(snapshot_, log);
    status = renderRouteStatus(*index, snapshot_, ours_, clusters, options_);
  }
  ++delta.routesRendered;
  routeReads_.record(id, log.take());
  if (status) delta.statuses.push_back(*status);
  routes_[id] = std::move(status);
}

RenderResult IncrementalRenderer::result() const {
  RenderResult out;
  out.gateways.reserve(gateways_.size());
  out.statuses = classStatuses_;
  for (const auto& [key, unit] : gateways_) {
    out.gateways.push_back(unit.output);
    out.statuses.push_back(unit.status);
  }
  for (const auto& [id, status] : routes_) {
    if (status) out.statuses.push_back(*status);
  }
  return out;
}

}  // namespace kturn::op
