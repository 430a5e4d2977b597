// kturn-render-bench: the renderer at scale (issue 6). Builds a cluster of N Gateways, each with a
// UDPRoute to its own Service whose EndpointSlice holds E pod IPs (default 1,000 Gateways and
// 10,000 endpoints), then times:
//   1. the full render: snapshot from objects + render();
//   2. the first publish to a real CdsServer (validate every config, store, push);
//   3. one endpoint change, end to end: the changed EndpointSlice → snapshot + render +
//      publish → the new config arriving at a CdsClient watching that Gateway over a WebSocket
//      on 127.0.0.1 (what a kturnd sees).
// Prints the numbers; not a test (it asserts nothing but that the change arrives).
//
//   kturn-render-bench [--gateways 1000] [--endpoints 10000] [--repeat 5]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <vector>

#include "cds/cds_client.h"
#include "cds/cds_server.h"
#include "k8s/object.h"
#include "operator/cluster_snapshot.h"
#include "operator/config_publisher.h"
#include "operator/renderer.h"

namespace {

using kturn::k8s::Json;
using kturn::k8s::Object;
using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string ip(int n) {  // 10.x.y.z, n < 2^24
  return "10." + std::to_string((n >> 16) & 255) + "." + std::to_string((n >> 8) & 255) + "." +
         std::to_string(n & 255);
}

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

std::vector<Object> cluster(int gateways, int endpoints) {
  std::vector<Object> out;
  out.emplace_back(Json{{"apiVersion", "gateway.networking.k8s.io/v1"},
                        {"kind", "GatewayClass"},
                        {"metadata", {{"name", "stunner"}}},
                        {"spec",
                         {{"controllerName", "stunner.l7mp.io/gateway-operator"},
                          {"parametersRef",
                           {{"group", "stunner.l7mp.io"},
                            {"kind", "GatewayConfig"},
                            {"name", "config"},
                            {"namespace", "stunner"}}}}}});
  out.emplace_back(Json{{"apiVersion", "stunner.l7mp.io/v1"},
                        {"kind", "GatewayConfig"},
                        {"metadata", {{"name", "config"}, {"namespace", "stunner"}}},
                        {"spec", {{"authType", "static"}, {"userName", "u"}, {"password", "p"}}}});
  const int perGateway = std::max(1, endpoints / gateways);
  for (int g = 0; g < gateways; ++g) {
    const std::string ns = "tenant-" + std::to_string(g % 100);
    const std::string name = "gw-" + std::to_string(g);
    out.emplace_back(
        Json{{"apiVersion", "gateway.networking.k8s.io/v1"},
             {"kind", "Gateway"},
             {"metadata", {{"name", name}, {"namespace", ns}, {"uid", "uid-" + std::to_string(g)}}},
             {"spec",
              {{"gatewayClassName", "stunner"},
               {"addresses", {{{"type", "IPAddress"}, {"value", "198.51.100.1"}}}},
               {"listeners", {{{"name", "udp"}, {"port", 3478}, {"protocol", "TURN-UDP"}}}}}}});
    out.emplace_back(
        Json{{"apiVersion", "stunner.l7mp.io/v1"},
             {"kind", "UDPRoute"},
             {"metadata", {{"name", "route-" + std::to_string(g)}, {"namespace", ns}}},
             {"spec",
              {{"parentRefs", {{{"name", name}}}},
               {"rules", {{{"backendRefs", {{{"name", "media-" + std::to_string(g)}}}}}}}}}});
    out.emplace_back(Json{{"apiVersion", "v1"},
                          {"kind", "Service"},
                          {"metadata", {{"name", "media-" + std::to_string(g)}, {"namespace", ns}}},
                          {"spec", {{"clusterIP", "10.96.0.1"}, {"ports", {{{"port", 10000}}}}}}});
    out.emplace_back(endpointSlice(ns, g, g * perGateway, perGateway));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kturn-render-bench: the operator's renderer at scale"};
  int gateways = 1000;
  int endpoints = 10000;
  int repeat = 5;
  app.add_option("--gateways", gateways)->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--endpoints", endpoints)->check(CLI::Range(1, 1 << 23))->capture_default_str();
  app.add_option("--repeat", repeat)->check(CLI::Range(1, 100))->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<Object> objects = cluster(gateways, endpoints);
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
  kturn::op::ConfigPublisher publisher(**cds);
  auto t0 = Clock::now();
  (void)publisher.publish(result.gateways, std::time(nullptr));
  std::printf("first publish to CDS (validate + store %zu configs): %.1f ms\n", rendered,
              msSince(t0));

  // A watcher on the Gateway whose endpoint changes, as kturnd -w is.
  const std::string ns = "tenant-" + std::to_string((gateways - 1) % 100);
  const std::string id = ns + "/gw-" + std::to_string(gateways - 1);
  auto client = kturn::cds::CdsClient::create(
      {.origin = "http://127.0.0.1:" + std::to_string((*cds)->port()), .id = id});
  if (!client) {
    std::fprintf(stderr, "%s\n", client.error().message.c_str());
    return 1;
  }
  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<std::string> seen;  // every endpoint of every config received
  size_t received = 0;
  (void)(*client)->watch({.on_config = [&](kturn::config::StunnerConfig c) {
    std::lock_guard lock(mutex);
    ++received;
    for (const auto& cluster : c.clusters) {
      seen.insert(seen.end(), cluster.endpoints.begin(), cluster.endpoints.end());
    }
    arrived.notify_all();
  }});
  {
    std::unique_lock lock(mutex);
    arrived.wait_for(lock, std::chrono::seconds(10), [&] { return received > 0; });
  }

  std::vector<double> rerender, push;
  const int perGateway = std::max(1, endpoints / gateways);
  for (int i = 0; i < repeat; ++i) {
    // The last Gateway's slice gets a new first endpoint (a pod replaced).
    const std::string moved = "172.16.0." + std::to_string(i + 1);
    Json slice = endpointSlice(ns, gateways - 1, (gateways - 1) * perGateway, perGateway);
    slice["endpoints"][0]["addresses"][0] = moved;
    objects.back() = Object(slice);
    t0 = Clock::now();
    const auto snapshot = kturn::op::ClusterSnapshot::fromObjects(objects);
    result = kturn::op::render(snapshot, options);
    (void)publisher.publish(result.gateways, std::time(nullptr));
    rerender.push_back(msSince(t0));
    std::unique_lock lock(mutex);
    if (!arrived.wait_for(lock, std::chrono::seconds(10), [&] {
          return std::find(seen.begin(), seen.end(), moved) != seen.end();
        })) {
      std::fprintf(stderr, "the changed config never reached the watcher\n");
      return 1;
    }
    push.push_back(msSince(t0));
  }
  std::sort(rerender.begin(), rerender.end());
  std::sort(push.begin(), push.end());
  std::printf(
      "one endpoint changed: re-render + publish median %.1f ms (min %.1f, max %.1f); "
      "new config at the watching client median %.1f ms (min %.1f, max %.1f)\n",
      rerender[rerender.size() / 2], rerender.front(), rerender.back(), push[push.size() / 2],
      push.front(), push.back());
  (*client)->stop();
  (*cds)->stop();
  return 0;
}
