// kturn-render-bench: the renderer at scale (issues 6 and 26). Builds a cluster of N Gateways,
// each with a UDPRoute to its own Service whose EndpointSlice holds E pod IPs (default 1,000
// Gateways and 10,000 endpoints), then times:
//   1. the full render: snapshot from objects + render();
//   2. the first publish to a real CdsServer (validate every config, store, push);
//   3. --changes single endpoint changes, end to end: the changed EndpointSlice → snapshot +
//      render + publish → the new config arriving at a CdsClient watching that Gateway over a
//      WebSocket on 127.0.0.1 (what a kturnd sees); once the old way (a snapshot decoded from a
//      copy of every object, render() of everything, publish() of every config: --full alone)
//      and once as the controller does it now (the changed object applied to the snapshot in
//      place by IncrementalRenderer::apply, publishChanges: --incremental alone; the default
//      runs both);
//   4. with --kubeconfig, the same step against a real kube-apiserver: the objects created there
//      (--api-gateways of them), a Controller (a follower: it serves CDS, writes nothing)
//      watching them, and each change a merge patch of one EndpointSlice through the API server
//      → the operator's informer → render → CDS → the watching client, broken down by the
//      moments the controller notes (ControllerStats::dirtiedAt ... publishedAt).
// Prints median, p99 and max; not a test (it asserts nothing but that each change arrives).
//
//   kturn-render-bench [--gateways 1000] [--endpoints 10000] [--repeat 5] [--changes 100]
//                      [--full | --incremental] [--kubeconfig PATH [--api-gateways 1000]]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "cds/cds_client.h"
#include "cds/cds_server.h"
#include "k8s/api_client.h"
#include "k8s/object.h"
#include "k8s/resource_type.h"
#include "k8s/rest_config.h"
#include "operator/cluster_snapshot.h"
#include "operator/config_publisher.h"
#include "operator/controller.h"
#include "operator/incremental_renderer.h"
#include "operator/renderer.h"

namespace {

using kturn::k8s::Json;
using kturn::k8s::Object;
using Clock = std::chrono::steady_clock;

double msBetween(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string ip(int n) {  // 10.x.y.z, n < 2^24
  return "10." + std::to_string((n >> 16) & 255) + "." + std::to_string((n >> 8) & 255) + "." +
         std::to_string(n & 255);
}

// Where the objects go: the in-process cluster, or a real API server shared with others.
struct Layout {
  std::string nsPrefix = "tenant-";
  int namespaces = 100;
  std::string className = "stunner";
  std::string controllerName = "stunner.l7mp.io/gateway-operator";
  std::string configNs = "stunner";

  std::string ns(int g) const { return nsPrefix + std::to_string(g % namespaces); }
};

Json endpointSlice(const std::string& ns, int g, int first, int count) {
  Json endpoints = Json::array();
  for (int i = 0; i < count; ++i) {
    endpoints.push_back({{"addresses", {ip(first + i)}}, {"conditions", {{"ready", true}}}});
  }
  return {{"apiVersion", "discovery.k8s.io/v1"},
          {"kind", "EndpointSlice"},
          {"metadata",
           {{"name", "media-" + std::to_string(g) + "-slice"},
            {"namespace", ns},
            {"labels", {{"kubernetes.io/service-name", "media-" + std::to_string(g)}}}}},
          {"addressType", "IPv4"},
          {"endpoints", endpoints}};
}

std::vector<Json> cluster(int gateways, int endpoints, const Layout& layout) {
  std::vector<Json> out;
  out.push_back({{"apiVersion", "gateway.networking.k8s.io/v1"},
                 {"kind", "GatewayClass"},
                 {"metadata", {{"name", layout.className}}},
                 {"spec",
                  {{"controllerName", layout.controllerName},
                   {"parametersRef",
                    {{"group", "stunner.l7mp.io"},
                     {"kind", "GatewayConfig"},
                     {"name", "config"},
                     {"namespace", layout.configNs}}}}}});
  out.push_back({{"apiVersion", "stunner.l7mp.io/v1"},
                 {"kind", "GatewayConfig"},
                 {"metadata", {{"name", "config"}, {"namespace", layout.configNs}}},
                 {"spec", {{"authType", "static"}, {"userName", "u"}, {"password", "p"}}}});
  const int perGateway = std::max(1, endpoints / gateways);
  for (int g = 0; g < gateways; ++g) {
    const std::string ns = layout.ns(g);
    const std::string name = "gw-" + std::to_string(g);
    out.push_back(
        {{"apiVersion", "gateway.networking.k8s.io/v1"},
         {"kind", "Gateway"},
         {"metadata", {{"name", name}, {"namespace", ns}, {"uid", "uid-" + std::to_string(g)}}},
         {"spec",
          {{"gatewayClassName", layout.className},
           {"addresses", {{{"type", "IPAddress"}, {"value", "198.51.100.1"}}}},
           {"listeners", {{{"name", "udp"}, {"port", 3478}, {"protocol", "TURN-UDP"}}}}}}});
    out.push_back({{"apiVersion", "stunner.l7mp.io/v1"},
                   {"kind", "UDPRoute"},
                   {"metadata", {{"name", "route-" + std::to_string(g)}, {"namespace", ns}}},
                   {"spec",
                    {{"parentRefs", {{{"name", name}}}},
                     {"rules", {{{"backendRefs", {{{"name", "media-" + std::to_string(g)}}}}}}}}}});
    out.push_back({{"apiVersion", "v1"},
                   {"kind", "Service"},
                   {"metadata", {{"name", "media-" + std::to_string(g)}, {"namespace", ns}}},
                   {"spec", {{"clusterIP", "10.96.0.1"}, {"ports", {{{"port", 10000}}}}}}});
    out.push_back(endpointSlice(ns, g, g * perGateway, perGateway));
  }
  return out;
}

// A client watching one config id, as kturnd -w is; waits for an endpoint to show up.
class Watcher {
 public:
  static std::unique_ptr<Watcher> start(uint16_t port, const std::string& id) {
    auto client = kturn::cds::CdsClient::create(
        {.origin = "http://127.0.0.1:" + std::to_string(port), .id = id});
    if (!client) {
      std::fprintf(stderr, "%s\n", client.error().message.c_str());
      return nullptr;
    }
    auto w = std::unique_ptr<Watcher>(new Watcher(std::move(*client)));
    Watcher* self = w.get();
    (void)self->client_->watch({.on_config = [self](kturn::config::StunnerConfig c) {
      const auto now = Clock::now();
      std::lock_guard lock(self->mutex_);
      for (const auto& cluster : c.clusters) {
        for (const std::string& e : cluster.endpoints) self->seen_.emplace(e, now);
      }
      ++self->received_;
      self->arrived_.notify_all();
    }});
    return w;
  }
  ~Watcher() { client_->stop(); }

  // When the first config holding `endpoint` arrived; nullopt after `limit`.
  std::optional<Clock::time_point> waitFor(const std::string& endpoint,
                                           std::chrono::seconds limit) {
    std::unique_lock lock(mutex_);
    if (!arrived_.wait_for(lock, limit, [&] { return seen_.contains(endpoint); })) {
      return std::nullopt;
    }
    return seen_.at(endpoint);
  }
  bool waitAny(std::chrono::seconds limit) {
    std::unique_lock lock(mutex_);
    return arrived_.wait_for(lock, limit, [&] { return received_ > 0; });
  }

 private:
  explicit Watcher(std::unique_ptr<kturn::cds::CdsClient> client) : client_(std::move(client)) {}
  std::unique_ptr<kturn::cds::CdsClient> client_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::map<std::string, Clock::time_point> seen_;  // endpoint → first config holding it
  size_t received_ = 0;
};

// median, p99 (nearest rank) and max.
void report(const char* what, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  const size_t p99 = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(n))) - 1;
  std::printf("  %-52s median %7.1f ms  p99 %7.1f ms  max %7.1f ms  (%zu changes)\n", what,
              ms[n / 2], ms[std::min(p99, n - 1)], ms.back(), n);
}

// With a resourceVersion each, as a watch cache holds them (the incremental render's diff
// compares those).
std::vector<Object> objectsOf(std::vector<Json> bodies) {
  std::vector<Object> out;
  out.reserve(bodies.size());
  for (Json& b : bodies) {
    b["metadata"]["resourceVersion"] = std::to_string(out.size() + 1);
    out.emplace_back(std::move(b));
  }
  return out;
}

// Step 3: `changes` endpoint changes of the last Gateway's slice, each until the watcher has it.
// Before (`full`): as the controller did before issue 26, a copy of every cached object decoded
// into a snapshot, render() of everything and publish() of every config. After: as it does now,
// the one changed object applied to the snapshot in place (IncrementalRenderer::apply), the
// Gateways it reaches rendered, and only those published.
int endpointChanges(bool full, int changes, int gateways, int endpoints,
                    std::vector<Object>& objects, kturn::cds::CdsServer& cds, Watcher& watcher,
                    const kturn::op::RenderOptions& options, int& serial) {
  const Layout layout;
  const std::string ns = layout.ns(gateways - 1);
  const int perGateway = std::max(1, endpoints / gateways);
  kturn::op::ConfigPublisher publisher(cds);
  kturn::op::IncrementalRenderer renderer;
  (void)publisher.publish(
      render(kturn::op::ClusterSnapshot::fromObjects(objects), options).gateways,
      std::time(nullptr));
  if (!full) (void)renderer.update(kturn::op::ClusterSnapshot::fromObjects(objects), options);
  std::vector<double> snapshot, render, publish, total;
  size_t rendered = 0;
  for (int i = 0; i < changes; ++i) {
    ++serial;
    const std::string moved =
        "172.16." + std::to_string(serial / 250) + "." + std::to_string(serial % 250 + 1);
    Json slice = endpointSlice(ns, gateways - 1, (gateways - 1) * perGateway, perGateway);
    slice["endpoints"][0]["addresses"][0] = moved;
    slice["metadata"]["resourceVersion"] = "change-" + std::to_string(serial);
    objects.back() = Object(slice);
    const auto t0 = Clock::now();
    Clock::time_point snapshotted;
    Clock::time_point renderedAt;
    if (full) {
      // A copy of every cached object, decoded into a snapshot.
      const auto built = kturn::op::ClusterSnapshot::fromObjects(objects);
      snapshotted = Clock::now();
      const kturn::op::RenderResult result = kturn::op::render(built, options);
      render.push_back(msSince(snapshotted));
      renderedAt = Clock::now();
      (void)publisher.publish(result.gateways, std::time(nullptr));
      rendered += result.gateways.size();
    } else {
      // What WatchedCluster::takeChanges() hands the controller: the changed object.
      std::vector<kturn::op::ObjectUpdate> updates;
      updates.push_back({kturn::op::ObjectIdentity::of(objects.back()), objects.back()});
      snapshotted = t0;
      const kturn::op::RenderDelta delta = renderer.apply(std::move(updates), options);
      render.push_back(msSince(t0));
      renderedAt = Clock::now();
      (void)publisher.publishChanges(delta.gateways, delta.removed, std::time(nullptr));
      rendered += delta.gatewaysRendered;
    }
    snapshot.push_back(msBetween(t0, snapshotted));
    const std::optional<Clock::time_point> arrived =
        watcher.waitFor(moved, std::chrono::seconds(10));
    if (!arrived) {
      std::fprintf(stderr, "the changed config never reached the watcher\n");
      return 1;
    }
    // The CDS server pushes from its own thread, often before publish() returns: one span.
    publish.push_back(msBetween(renderedAt, *arrived));
    total.push_back(msBetween(t0, *arrived));
  }
  std::printf("one endpoint changed, %s (%.1f Gateways rendered per change):\n",
              full
                  ? "snapshot from a copy of everything + full render + publish of everything "
                    "(before)"
                  : "snapshot updated in place + incremental render + publish of the delta (after)",
              static_cast<double>(rendered) / changes);
  if (full) report("copy + decode of every object (snapshot)", snapshot);
  report(full ? "render of everything" : "apply in place + render of what it reaches", render);
  report("publish + CDS push to the watching client", publish);
  report("total: change -> config at the watching client", total);
  return 0;
}

// Step 4: the same against a real API server.
int apiServerChanges(const std::string& kubeconfig, int gateways, int endpoints, int changes) {
  auto config = kturn::k8s::loadKubeconfig(kubeconfig);
  if (!config) {
    std::fprintf(stderr, "%s: %s\n", kubeconfig.c_str(), config.error().message.c_str());
    return 1;
  }
  auto client = kturn::k8s::ApiClient::create(*config);
  auto writer = kturn::k8s::ApiClient::create(*config);
  if (!client || !writer) {
    std::fprintf(stderr, "API client: %s\n",
                 (client ? writer.error() : client.error()).message.c_str());
    return 1;
  }
  std::mt19937 rng(std::random_device{}());
  const std::string suffix = std::to_string(rng() % 100000);
  Layout layout{.nsPrefix = "kturn-bench-" + suffix + "-",
                .namespaces = 10,
                .className = "kturn-render-bench-" + suffix,
                .controllerName = "kturn.io/render-bench-" + suffix};
  layout.configNs = layout.ns(0);
  std::vector<Json> objects = cluster(gateways, endpoints, layout);
  const auto t0 = Clock::now();
  for (int n = 0; n < layout.namespaces; ++n) {
    (void)(*writer)->create(kturn::k8s::resources::namespace_(),
                            {{"apiVersion", "v1"},
                             {"kind", "Namespace"},
                             {"metadata", {{"name", layout.nsPrefix + std::to_string(n)}}}});
  }
  for (Json& o : objects) {
    if (o["kind"] == "Service") o["spec"].erase("clusterIP");  // the API server allocates one
    o["metadata"].erase("uid");
    const auto* type = kturn::k8s::findResourceType(o["apiVersion"].get<std::string>(),
                                                    o["kind"].get<std::string>());
    if (type == nullptr) return 1;
    auto made = (*writer)->create(*type, o);
    if (!made || !made->ok()) {
      std::fprintf(stderr, "create %s %s: %s\n", o["kind"].get<std::string>().c_str(),
                   o["metadata"]["name"].get<std::string>().c_str(),
                   made ? made->describe().c_str() : made.error().message.c_str());
      return 1;
    }
  }
  std::printf("real API server: %d Gateways, %d endpoints, %zu objects created in %.1f s\n",
              gateways, endpoints, objects.size(), msSince(t0) / 1000);

  auto cds = kturn::cds::CdsServer::start({.address = "127.0.0.1", .port = 0});
  if (!cds) return 1;
  kturn::op::ControllerOptions options;
  options.render.controllerName = layout.controllerName;
  kturn::op::Controller controller(**client, **cds, options);
  controller.setLeading(
      false);  // serves CDS, writes nothing: the API server only lists and watches
  const auto started = Clock::now();
  controller.start();
  const int g = gateways - 1;
  const std::string id = layout.ns(g) + "/gw-" + std::to_string(g);
  auto watcher = Watcher::start((*cds)->port(), id);
  if (!watcher || !watcher->waitAny(std::chrono::seconds(120))) {
    std::fprintf(stderr, "no config for %s\n", id.c_str());
    return 1;
  }
  std::printf("operator started: lists + first render + config at the client in %.1f s\n",
              msSince(started) / 1000);
  std::vector<double> roundTrip, delivery, wakeup, render, publish, total;
  const auto* sliceType = kturn::k8s::findResourceType("discovery.k8s.io/v1", "EndpointSlice");
  const int perGateway = std::max(1, endpoints / gateways);
  for (int i = 0; i < changes; ++i) {
    std::this_thread::sleep_for(options.debounce + std::chrono::milliseconds(50));  // isolated
    const std::string moved =
        "172.17." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1);
    Json slice = endpointSlice(layout.ns(g), g, g * perGateway, perGateway);
    slice["endpoints"][0]["addresses"][0] = moved;
    const Json patch = {{"endpoints", slice["endpoints"]}};
    const auto t1 = Clock::now();
    auto patched =
        (*writer)->request({.method = "PATCH",
                            .target = sliceType->objectPath(
                                layout.ns(g), slice["metadata"]["name"].get<std::string>()),
                            .body = patch.dump(),
                            .contentType = "application/merge-patch+json"});
    const auto answered = Clock::now();
    if (!patched || !patched->ok()) {
      std::fprintf(stderr, "patch: %s\n", patched ? patched->describe().c_str() : "failed");
      return 1;
    }
    const std::optional<Clock::time_point> arrived =
        watcher->waitFor(moved, std::chrono::seconds(10));
    if (!arrived) {
      std::fprintf(stderr, "the patched endpoint never reached the watcher\n");
      return 1;
    }
    // The reconcile that answered it notes its moments after publishing: wait for them.
    kturn::op::ControllerStats at = controller.stats();
    for (int wait = 0; wait < 1000 && at.publishedAt < t1; ++wait) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      at = controller.stats();
    }
    roundTrip.push_back(msBetween(t1, answered));
    delivery.push_back(msBetween(t1, at.dirtiedAt));
    wakeup.push_back(msBetween(at.dirtiedAt, at.startedAt));
    render.push_back(msBetween(at.startedAt, at.renderedAt));
    // The CDS server pushes from its own thread, often before publishChanges() returns.
    publish.push_back(msBetween(at.renderedAt, *arrived));
    total.push_back(msBetween(t1, *arrived));
  }
  const kturn::op::ControllerStats stats = controller.stats();
  std::printf("one EndpointSlice patched through the API server (%llu reconciles, %llu full):\n",
              static_cast<unsigned long long>(stats.reconciles),
              static_cast<unsigned long long>(stats.fullRenders));
  report("PATCH round trip (sent -> API server's answer)", roundTrip);
  report("patch sent -> watch event in the informer's cache", delivery);
  report("informer's wakeup -> reconcile starts (debounce)", wakeup);
  report("changes taken + applied in place + render", render);
  report("publish + CDS push to the watching client", publish);
  report("total: patch sent -> config at the watching client", total);
  watcher.reset();
  controller.stop();
  (void)(*writer)->remove(kturn::k8s::resources::gatewayClass(), "", layout.className);
  for (int n = 0; n < layout.namespaces; ++n) {
    (void)(*writer)->remove(kturn::k8s::resources::namespace_(), "",
                            layout.nsPrefix + std::to_string(n));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kturn-render-bench: the operator's renderer at scale"};
  int gateways = 1000;
  int endpoints = 10000;
  int repeat = 5;
  int changes = 100;
  bool fullOnly = false;
  bool incrementalOnly = false;
  std::string kubeconfig;
  int apiGateways = 1000;
  app.add_option("--gateways", gateways)->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--endpoints", endpoints)->check(CLI::Range(1, 1 << 23))->capture_default_str();
  app.add_option("--repeat", repeat, "full renders timed")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--changes", changes, "endpoint changes timed, each way")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_flag("--full", fullOnly, "only the old way: full render + publish of everything");
  app.add_flag("--incremental", incrementalOnly, "only the controller's way");
  app.add_option("--kubeconfig", kubeconfig, "also against this API server (creates objects)");
  app.add_option("--api-gateways", apiGateways, "Gateways created in the API server")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<Object> objects = objectsOf(cluster(gateways, endpoints, Layout{}));
  kturn::op::RenderOptions options;
  options.transitionTime = "2024-01-01T00:00:00Z";
  std::printf("cluster: %d Gateways, %d endpoints, %zu objects\n", gateways, endpoints,
              objects.size());

  double best = 1e18;
  kturn::op::RenderResult result;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = Clock::now();
    const auto snapshot = kturn::op::ClusterSnapshot::fromObjects(objects);
    result = kturn::op::render(snapshot, options);
    best = std::min(best, msSince(t0));
  }
  size_t rendered = 0;
  size_t eps = 0;
  for (const auto& gw : result.gateways) {
    if (!gw.config) continue;
    ++rendered;
    for (const auto& c : gw.config->clusters) eps += c.endpoints.size();
  }
  std::printf(
      "full render (snapshot + render), best of %d: %.1f ms; %zu configs, %zu endpoints, "
      "%zu statuses\n",
      repeat, best, rendered, eps, result.statuses.size());

  auto cds = kturn::cds::CdsServer::start({.address = "127.0.0.1", .port = 0});
  if (!cds) {
    std::fprintf(stderr, "%s\n", cds.error().message.c_str());
    return 1;
  }
  {
    kturn::op::ConfigPublisher publisher(**cds);
    auto t0 = Clock::now();
    (void)publisher.publish(result.gateways, std::time(nullptr));
    std::printf("first publish to CDS (validate + store %zu configs): %.1f ms\n", rendered,
                msSince(t0));
  }
  const std::string id = Layout{}.ns(gateways - 1) + "/gw-" + std::to_string(gateways - 1);
  auto watcher = Watcher::start((*cds)->port(), id);
  if (!watcher || !watcher->waitAny(std::chrono::seconds(10))) return 1;
  int serial = 0;
  if (!incrementalOnly && endpointChanges(true, changes, gateways, endpoints, objects, **cds,
                                          *watcher, options, serial) != 0) {
    return 1;
  }
  if (!fullOnly && endpointChanges(false, changes, gateways, endpoints, objects, **cds, *watcher,
                                   options, serial) != 0) {
    return 1;
  }
  watcher.reset();
  (*cds)->stop();
  if (!kubeconfig.empty()) return apiServerChanges(kubeconfig, apiGateways, endpoints, changes);
  return 0;
}
