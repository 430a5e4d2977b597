// The incremental renderer against the full one: after every step of random change sequences
// (adds, updates and deletes of every kind the renderer reads, routes moving between Gateways,
// Services and Secrets going away, namespaces relabelled, the class changing), the incremental
// state equals render() from scratch, and so does what a consumer that applies only the deltas
// holds. Plus the dependency index and the snapshot's read recording on their own.
#include "operator/incremental_renderer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/certificate.h"
#include "config/serializer.h"
#include "operator/dependency_index.h"
#include "operator/renderer.h"

namespace kturn::op {
namespace {

using k8s::Json;
using k8s::Object;

// ---------------------------------------------------------------------------------------------
// DependencyIndex

SnapshotRead read(ReadKind kind, std::string ns, std::string name) {
  return {kind, {std::move(ns), std::move(name)}};
}

TEST(DependencyIndex, AUnitIsReachedByWhatItsLastRenderRead) {
  DependencyIndex<std::string> index;
  index.record("gw1", {read(ReadKind::kService, "a", "svc"), read(ReadKind::kSecret, "a", "s"),
                       read(ReadKind::kService, "a", "svc")});
  index.record("gw2", {read(ReadKind::kService, "a", "svc")});
  std::set<std::string> out;
  index.collect(read(ReadKind::kService, "a", "svc"), out);
  EXPECT_EQ(out, (std::set<std::string>{"gw1", "gw2"}));
  out.clear();
  index.collect(read(ReadKind::kSecret, "a", "s"), out);
  EXPECT_EQ(out, (std::set<std::string>{"gw1"}));
  EXPECT_EQ(index.readsOf("gw1").size(), 2u) << "duplicates folded";

  // Rendered again without the Secret: the Secret reaches it no more.
  index.record("gw1", {read(ReadKind::kService, "a", "svc")});
  out.clear();
  index.collect(read(ReadKind::kSecret, "a", "s"), out);
  EXPECT_TRUE(out.empty());

  index.forget("gw2");
  out.clear();
  index.collect(read(ReadKind::kService, "a", "svc"), out);
  EXPECT_EQ(out, (std::set<std::string>{"gw1"}));
  EXPECT_EQ(index.units(), 1u);
  index.forget("unknown");  // nothing to forget: no-op
}

TEST(SnapshotRead, AReadOfTheSameKindAndKeyIsTheSameRead) {
  EXPECT_EQ(read(ReadKind::kService, "a", "x"), read(ReadKind::kService, "a", "x"));
  EXPECT_NE(read(ReadKind::kService, "a", "x"), read(ReadKind::kStaticService, "a", "x"));
  EXPECT_NE(read(ReadKind::kService, "a", "x"), read(ReadKind::kService, "b", "x"));
}

// ---------------------------------------------------------------------------------------------
// Objects

Json meta(const std::string& ns, const std::string& name) {
  Json m = {{"name", name}};
  if (!ns.empty()) m["namespace"] = ns;
  return m;
}

Json gatewayClass(const std::string& configName = "config") {
  return {{"apiVersion", "gateway.networking.k8s.io/v1"},
          {"kind", "GatewayClass"},
          {"metadata", meta("", "cls")},
          {"spec",
           {{"controllerName", std::string(kDefaultControllerName)},
            {"parametersRef",
             {{"group", "stunner.l7mp.io"},
              {"kind", "GatewayConfig"},
              {"name", configName},
              {"namespace", "stunner"}}}}}};
}

Json gatewayConfig(bool secretAuth) {
  Json spec = secretAuth ? Json{{"authRef", {{"name", "auth"}, {"namespace", "stunner"}}}}
                         : Json{{"authType", "static"}, {"userName", "u"}, {"password", "p"}};
  return {{"apiVersion", "stunner.l7mp.io/v1"},
          {"kind", "GatewayConfig"},
          {"metadata", meta("stunner", "config")},
          {"spec", spec}};
}

Json gateway(const std::string& ns, const std::string& name, int listeners = 1) {
  Json ls = Json::array();
  ls.push_back({{"name", "udp"}, {"port", 3478}, {"protocol", "TURN-UDP"}});
  if (listeners > 1) {
    ls.push_back({{"name", "tls"},
                  {"port", 443},
                  {"protocol", "TURN-TLS"},
                  {"tls", {{"certificateRefs", {{{"name", "cert"}, {"namespace", "a"}}}}}}});
  }
  return {{"apiVersion", "gateway.networking.k8s.io/v1"},
          {"kind", "Gateway"},
          {"metadata", meta(ns, name)},
          {"spec", {{"gatewayClassName", "cls"}, {"listeners", ls}}}};
}

Json udpRoute(const std::string& ns, const std::string& name, const Json& parents,
              const std::string& service) {
  return {
      {"apiVersion", "stunner.l7mp.io/v1"},
      {"kind", "UDPRoute"},
      {"metadata", meta(ns, name)},
      {"spec", {{"parentRefs", parents}, {"rules", {{{"backendRefs", {{{"name", service}}}}}}}}}};
}

Json service(const std::string& ns, const std::string& name, const std::string& clusterIP) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", meta(ns, name)},
          {"spec", {{"clusterIP", clusterIP}, {"ports", {{{"port", 10000}}}}}}};
}

Json endpointSlice(const std::string& ns, const std::string& name, const std::string& service,
                   const std::vector<std::string>& addresses) {
  Json eps = Json::array();
  for (const std::string& a : addresses) eps.push_back({{"addresses", {a}}});
  Json m = meta(ns, name);
  m["labels"] = {{"kubernetes.io/service-name", service}};
  return {{"apiVersion", "discovery.k8s.io/v1"},
          {"kind", "EndpointSlice"},
          {"metadata", m},
          {"addressType", "IPv4"},
          {"endpoints", eps}};
}

std::vector<Object> objectsOf(const std::vector<Json>& bodies) {
  std::vector<Object> out;
  for (const Json& b : bodies) out.emplace_back(b);
  return out;
}

// Everything observable about a render, as text to compare and to print on a mismatch.
std::string dump(const GatewayOutput& g) {
  Json j = {{"gateway", g.gateway.str()},
            {"config", g.config ? config::toJson(*g.config) : "none"},
            {"deployment", g.deployment ? g.deployment->body() : Json()},
            {"service", g.service ? g.service->body() : Json()},
            {"networkPolicy", g.networkPolicy ? g.networkPolicy->body() : Json()},
            {"lifetime", g.credential_lifetime.count()},
            {"open", g.cds_open}};
  return j.dump();
}

std::string dump(const StatusUpdate& s) {
  return Json{
      {"apiVersion", s.apiVersion}, {"kind", s.kind}, {"key", s.key.str()}, {"status", s.status}}
      .dump();
}

std::vector<std::string> dump(const RenderResult& r) {
  std::vector<std::string> out;
  for (const GatewayOutput& g : r.gateways) out.push_back(dump(g));
  out.push_back("--");
  for (const StatusUpdate& s : r.statuses) out.push_back(dump(s));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Focused cases

class IncrementalRendererTest : public ::testing::Test {
 protected:
  IncrementalRendererTest() {
    objects_ = {gatewayClass(), gatewayConfig(false)};
    for (int g = 0; g < 4; ++g) {
      const std::string n = std::to_string(g);
      objects_.push_back(gateway("a", "gw" + n));
      objects_.push_back(udpRoute("a", "r" + n, {{{"name", "gw" + n}}}, "svc" + n));
      objects_.push_back(service("a", "svc" + n, "10.96.0." + n));
      objects_.push_back(endpointSlice("a", "es" + n, "svc" + n, {"10.1.0." + n}));
    }
  }

  RenderDelta update() {
    last_ = renderer_.update(ClusterSnapshot::fromObjects(objectsOf(objects_)), options_);
    EXPECT_EQ(dump(renderer_.result()),
              dump(render(ClusterSnapshot::fromObjects(objectsOf(objects_)), options_)));
    return last_;
  }
  Json& find(const std::string& kind, const std::string& name) {
    for (Json& o : objects_) {
      if (o["kind"] == kind && o["metadata"]["name"] == name) return o;
    }
    ADD_FAILURE() << kind << " " << name;
    return objects_.front();
  }
  static std::vector<std::string> keys(const RenderDelta& d) {
    std::vector<std::string> out;
    for (const GatewayOutput& g : d.gateways) out.push_back(g.gateway.str());
    return out;
  }

  std::vector<Json> objects_;
  RenderOptions options_{.transitionTime = "2024-01-01T00:00:00Z"};
  IncrementalRenderer renderer_;
  RenderDelta last_;
};

TEST_F(IncrementalRendererTest, TheFirstUpdateRendersEverything) {
  RenderDelta d = update();
  EXPECT_TRUE(d.full);
  EXPECT_EQ(d.gatewaysRendered, 4u);
  EXPECT_EQ(d.routesRendered, 4u);
  EXPECT_EQ(renderer_.gatewayCount(), 4u);
}

TEST_F(IncrementalRendererTest, AGatewayDependsOnTheSlicesOfItsRoutesServicesOnly) {
  update();
  const auto& reads = renderer_.gatewayReads().readsOf({"a", "gw1"});
  auto has = [&](ReadKind kind, const std::string& name) {
    return std::find(reads.begin(), reads.end(), read(kind, "a", name)) != reads.end();
  };
  EXPECT_TRUE(has(ReadKind::kEndpointSlicesOf, "svc1"));
  EXPECT_TRUE(has(ReadKind::kService, "svc1"));
  EXPECT_TRUE(has(ReadKind::kRoutesNaming, "gw1"));
  EXPECT_FALSE(has(ReadKind::kEndpointSlicesOf, "svc2"));
  EXPECT_FALSE(has(ReadKind::kService, "svc2"));
}

TEST_F(IncrementalRendererTest, AnEndpointChangeRendersTheOneGatewayItReaches) {
  update();
  find("EndpointSlice", "es2")["endpoints"][0]["addresses"][0] = "10.9.9.9";
  RenderDelta d = update();
  EXPECT_FALSE(d.full);
  EXPECT_EQ(keys(d), std::vector<std::string>{"a/gw2"});
  EXPECT_EQ(d.routesRendered, 1u) << "the route's ResolvedRefs reads the same slices";
  EXPECT_TRUE(d.removed.empty());

  RenderDelta none = update();  // nothing changed
  EXPECT_FALSE(none.full);
  EXPECT_EQ(none.gatewaysRendered, 0u);
  EXPECT_EQ(none.routesRendered, 0u);
}

TEST_F(IncrementalRendererTest, ARouteMovedToAnotherGatewayRendersBoth) {
  update();
  find("UDPRoute", "r0")["spec"]["parentRefs"][0]["name"] = "gw3";
  RenderDelta d = update();
  EXPECT_EQ(keys(d), (std::vector<std::string>{"a/gw0", "a/gw3"}));
}

TEST_F(IncrementalRendererTest, ADeletedServiceAndANewOneReachTheGatewaysThatLookedForThem) {
  update();
  objects_.erase(std::remove_if(objects_.begin(), objects_.end(),
                                [](const Json& o) {
                                  return o["kind"] == "Service" && o["metadata"]["name"] == "svc1";
                                }),
                 objects_.end());
  EXPECT_EQ(keys(update()), std::vector<std::string>{"a/gw1"});
  // A route to a Service that does not exist yet: its later creation reaches the Gateway.
  find("UDPRoute", "r2")["spec"]["rules"][0]["backendRefs"][0]["name"] = "later";
  EXPECT_EQ(keys(update()), std::vector<std::string>{"a/gw2"});
  objects_.push_back(service("a", "later", "10.96.1.1"));
  EXPECT_EQ(keys(update()), std::vector<std::string>{"a/gw2"});
}

TEST_F(IncrementalRendererTest, ASecretReachesTheGatewaysWhoseAuthReadsIt) {
  find("GatewayConfig", "config") = gatewayConfig(true);
  objects_.push_back({{"apiVersion", "v1"},
                      {"kind", "Secret"},
                      {"metadata", meta("stunner", "auth")},
                      {"stringData", {{"type", "static"}, {"username", "x"}, {"password", "y"}}}});
  update();
  find("Secret", "auth")["stringData"]["password"] = "z";
  RenderDelta d = update();
  EXPECT_FALSE(d.full);
  EXPECT_EQ(d.gatewaysRendered, 4u);
  find("Secret", "auth")["stringData"].erase("password");  // broken: every Gateway rejected
  d = update();
  EXPECT_EQ(d.gatewaysRendered, 4u);
  EXPECT_EQ(d.routesRendered, 4u) << "their routes are no longer accepted";
}

TEST_F(IncrementalRendererTest, AClassWideChangeRendersEverything) {
  update();
  find("GatewayConfig", "config")["spec"]["password"] = "q";
  EXPECT_TRUE(update().full);
  find("GatewayClass", "cls")["spec"]["parametersRef"]["name"] = "missing";
  EXPECT_TRUE(update().full);
}

TEST_F(IncrementalRendererTest, ADeletedGatewayIsReportedRemoved) {
  update();
  objects_.erase(std::remove_if(objects_.begin(), objects_.end(),
                                [](const Json& o) {
                                  return o["kind"] == "Gateway" && o["metadata"]["name"] == "gw1";
                                }),
                 objects_.end());
  RenderDelta d = update();
  EXPECT_EQ(d.removed, (std::vector<k8s::ObjectKey>{{"a", "gw1"}}));
  EXPECT_TRUE(d.gateways.empty());
}

TEST_F(IncrementalRendererTest, BadObjectsDoNotCrashEitherRender) {
  update();
  objects_.push_back({{"apiVersion", "stunner.l7mp.io/v1"},
                      {"kind", "UDPRoute"},
                      {"metadata", meta("a", "bad")},
                      {"spec", {{"parentRefs", "not a list"}, {"rules", 7}}}});
  objects_.push_back({{"apiVersion", "discovery.k8s.io/v1"},
                      {"kind", "EndpointSlice"},
                      {"metadata", {{"name", 3}, {"labels", "x"}}},
                      {"endpoints", {{{"addresses", {1, 2}}}}}});
  objects_.push_back({{"apiVersion", "v1"},
                      {"kind", "Service"},
                      {"metadata",
                       {{"name", "odd"},
                        {"namespace", "a"},
                        {"annotations", {{"stunner.l7mp.io/related-gateway-name", "no-slash"}}}}},
                      {"spec", "nope"}});
  update();  // compares with the full render
  objects_.pop_back();
  update();
}

// ---------------------------------------------------------------------------------------------
// Random change sequences

// A small cluster's worth of object slots; each step writes a fresh random version of one slot
// or deletes it. Small name pools make the changes collide: routes move between Gateways,
// slices between Services, a TLS listener's Secret comes and goes.
class RandomCluster {
 public:
  RandomCluster(uint32_t seed, bool resourceVersions)
      : rng_(seed), resourceVersions_(resourceVersions) {
    put(gatewayClass());
    put(gatewayConfig(false));
    for (int i = 0; i < 12; ++i) step();
  }

  std::vector<Object> objects() const {
    std::vector<Object> out;
    for (const auto& [key, body] : objects_) out.emplace_back(body);
    return out;
  }

  // The objects put or deleted since the last call, as they are now: what the operator's
  // caches hand ClusterSnapshot::apply().
  std::vector<ObjectUpdate> takeUpdates() {
    std::vector<ObjectUpdate> out;
    for (const auto& [id, identity] : changed_) {
      auto it = objects_.find(id);
      out.push_back({identity, it == objects_.end() ? std::nullopt
                                                    : std::optional<Object>(Object(it->second))});
    }
    changed_.clear();
    return out;
  }

  // One random change; returns what it did.
  std::string step() {
    const int kind = pick(100);
    if (kind < 2) return put(gatewayClass(pick(4) == 0 ? "missing" : "config"));
    if (kind < 5) return put(randomGatewayConfig());
    const std::vector<std::string> kinds = {"Gateway",       "UDPRoute",       "GatewayUDPRoute",
                                            "TCPRoute",      "Service",        "EndpointSlice",
                                            "EndpointSlice", "EndpointSlice",  "Secret",
                                            "StaticService", "ReferenceGrant", "Namespace",
                                            "Node"};
    const std::string k = kinds[pick(kinds.size())];
    const std::string ns = k == "Node" || k == "Namespace" ? "" : (pick(3) == 0 ? "b" : "a");
    const std::string name = k == "Namespace" ? (pick(2) ? "a" : "b") : lower(k) + pickName();
    if (pick(4) == 0 && !objects_.empty()) {
      auto it = objects_.begin();
      std::advance(it, pick(objects_.size()));
      const std::string id = it->first;
      changed_[id] = ObjectIdentity::of(Object(it->second));
      objects_.erase(it);
      return "delete " + id;
    }
    return put(make(k, ns, name));
  }

 private:
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  std::string pickName() { return std::to_string(pick(3)); }
  static std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }
  std::string ip() { return "10.0." + std::to_string(pick(3)) + "." + std::to_string(pick(4)); }
  std::string gwNs() { return pick(3) == 0 ? "b" : "a"; }
  std::string gwName() { return "gateway" + pickName(); }

  std::string put(Json body) {
    const std::string id =
        body["apiVersion"].get<std::string>() + " " + body["kind"].get<std::string>() + " " +
        body["metadata"].value("namespace", "") + "/" + body["metadata"]["name"].get<std::string>();
    if (resourceVersions_) body["metadata"]["resourceVersion"] = std::to_string(++version_);
    changed_[id] = ObjectIdentity::of(Object(body));
    objects_[id] = body;
    return "put " + id;
  }

  Json randomGatewayConfig() {
    Json c = gatewayConfig(pick(2) == 0);
    if (pick(3) == 0) c["spec"]["authLifetime"] = 60 + pick(3);
    return c;
  }

  Json parents() {
    Json ps = Json::array();
    const size_t n = 1 + pick(2);
    for (size_t i = 0; i < n; ++i) {
      Json p = {{"name", gwName()}};
      if (pick(2) == 0) p["namespace"] = gwNs();
      if (pick(5) == 0) p["sectionName"] = pick(2) ? "udp" : "tls";
      if (pick(12) == 0) p["kind"] = "Service";
      ps.push_back(p);
    }
    return ps;
  }

  Json backends() {
    Json refs = Json::array();
    const size_t n = 1 + pick(2);
    for (size_t i = 0; i < n; ++i) {
      Json r = {{"name", (pick(4) == 0 ? "staticservice" : "service") + pickName()}};
      if (r["name"].get<std::string>().starts_with("static")) {
        r["group"] = "stunner.l7mp.io";
        r["kind"] = "StaticService";
      }
      if (pick(3) == 0) r["namespace"] = gwNs();
      if (pick(4) == 0) r["port"] = 5000 + pick(3);
      refs.push_back(r);
    }
    return refs;
  }

  Json make(const std::string& k, const std::string& ns, const std::string& name) {
    Json m = meta(ns, name);
    if (k == "Gateway") {
      Json g = gateway(ns, name, 1 + static_cast<int>(pick(2)));
      const char* from[] = {"Same", "All", "Selector"};
      const std::string f = from[pick(3)];
      g["spec"]["listeners"][0]["allowedRoutes"] = {{"namespaces", {{"from", f}}}};
      if (f == "Selector") {
        g["spec"]["listeners"][0]["allowedRoutes"]["namespaces"]["selector"] = {
            {"matchLabels", {{"team", "x"}}}};
      }
      if (pick(3) == 0) g["spec"]["addresses"] = {{{"type", "IPAddress"}, {"value", ip()}}};
      if (pick(6) == 0) g["spec"]["gatewayClassName"] = "other";
      return g;
    }
    if (k == "UDPRoute" || k == "GatewayUDPRoute" || k == "TCPRoute") {
      Json r = udpRoute(ns, "route" + name.substr(name.size() - 1), parents(), "x");
      r["spec"]["rules"][0]["backendRefs"] = backends();
      if (k == "GatewayUDPRoute") r["apiVersion"] = "gateway.networking.k8s.io/v1alpha2";
      if (k == "TCPRoute") r["kind"] = "TCPRoute";
      if (pick(10) == 0) r["spec"]["rules"] = Json::array();
      return r;
    }
    if (k == "Service") {
      Json s = service(ns, "service" + name.substr(name.size() - 1), pick(4) ? ip() : "None");
      if (pick(2) == 0) {  // a Gateway's own Service, with a public address
        const std::string gw = gwName();
        s["metadata"]["annotations"] = {{"stunner.l7mp.io/related-gateway-name", ns + "/" + gw}};
        s["metadata"]["ownerReferences"] = {
            {{"apiVersion", "gateway.networking.k8s.io/v1"}, {"kind", "Gateway"}, {"name", gw}}};
        s["spec"]["type"] = pick(2) ? "LoadBalancer" : "NodePort";
        s["spec"]["ports"] = {{{"port", 3478}, {"protocol", "UDP"}, {"nodePort", 30478}}};
        s["status"] = {{"loadBalancer", {{"ingress", {{{"ip", "203.0.113." + pickName()}}}}}}};
      }
      return s;
    }
    if (k == "EndpointSlice") {
      std::vector<std::string> addrs;
      for (size_t i = pick(3); i > 0; --i) addrs.push_back(ip());
      if (pick(15) == 0) addrs.push_back("not-an-ip");
      return endpointSlice(ns, name, "service" + pickName(), addrs);
    }
    if (k == "Secret") {
      Json s = {{"apiVersion", "v1"}, {"kind", "Secret"}, {"metadata", m}};
      if (pick(2) == 0) {  // the auth Secret or a certificate
        s["metadata"] = meta("stunner", "auth");
        s["stringData"] = {{"type", pick(2) ? "static" : "ephemeral"},
                           {"username", "u" + pickName()},
                           {"password", "p"},
                           {"secret", "s" + pickName()}};
        if (pick(5) == 0) s["stringData"].erase("password");
      } else {
        s["metadata"] = meta("a", "cert");
        // A certificate that loads, or garbage (the listener is left out).
        static const certificate::PemPair pair = *certificate::issue({.common_name = "c"});
        s["stringData"] = pick(2) ? Json{{"tls.crt", pair.cert_pem}, {"tls.key", pair.key_pem}}
                                  : Json{{"tls.crt", "crt" + pickName()}, {"tls.key", "key"}};
      }
      return s;
    }
    if (k == "StaticService") {
      return {{"apiVersion", "stunner.l7mp.io/v1"},
              {"kind", "StaticService"},
              {"metadata", meta(ns, "staticservice" + name.substr(name.size() - 1))},
              {"spec", {{"prefixes", {ip() + "/32"}}}}};
    }
    if (k == "ReferenceGrant") {
      return {{"apiVersion", "gateway.networking.k8s.io/v1beta1"},
              {"kind", "ReferenceGrant"},
              {"metadata", m},
              {"spec",
               {{"from",
                 {{{"group", pick(2) ? "stunner.l7mp.io" : "gateway.networking.k8s.io"},
                   {"kind", pick(2) ? "UDPRoute" : "Gateway"},
                   {"namespace", ns == "a" ? "b" : "a"}}}},
                {"to", {{{"group", ""}, {"kind", pick(2) ? "Service" : "Secret"}}}}}}};
    }
    if (k == "Namespace") {
      m["labels"] = {{"team", pick(2) ? "x" : "y"}};
      return {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", m}};
    }
    return {{"apiVersion", "v1"},  // Node
            {"kind", "Node"},
            {"metadata", m},
            {"status", {{"addresses", {{{"type", "ExternalIP"}, {"address", ip()}}}}}}};
  }

  std::mt19937 rng_;
  const bool resourceVersions_;
  uint64_t version_ = 0;
  std::map<std::string, Json> objects_;  // by apiVersion, kind, namespace/name
  std::map<std::string, ObjectIdentity> changed_;
};

// What a consumer applying only the deltas holds: the last output of each Gateway, the last
// status written for each object.
struct DeltaMirror {
  std::map<std::string, std::string> gateways;
  std::map<std::string, std::string> statuses;

  void apply(const RenderDelta& d, const IncrementalRenderer& renderer) {
    if (d.full) {
      gateways.clear();
      const RenderResult all = renderer.result();
      for (const GatewayOutput& g : all.gateways) gateways[g.gateway.str()] = dump(g);
      for (const StatusUpdate& s : all.statuses)
        statuses[s.apiVersion + " " + s.kind + " " + s.key.str()] = dump(s);
      return;
    }
    for (const GatewayOutput& g : d.gateways) gateways[g.gateway.str()] = dump(g);
    for (const k8s::ObjectKey& k : d.removed) gateways.erase(k.str());
    for (const StatusUpdate& s : d.statuses)
      statuses[s.apiVersion + " " + s.kind + " " + s.key.str()] = dump(s);
  }
};

TEST(IncrementalRendererProperty, EqualsTheFullRenderAfterEveryRandomChange) {
  constexpr int kSeeds = 24;
  constexpr int kSteps = 150;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  int incremental = 0;
  int steps = 0;
  for (uint32_t seed = 1; seed <= kSeeds; ++seed) {
    RandomCluster cluster(seed, /*resourceVersions=*/seed % 2 == 1);
    RenderOptions options{.transitionTime = "2024-01-01T00:00:00Z"};
    options.enforceReferenceGrants = seed % 3 == 0;
    options.relayToClusterIP = seed % 4 != 1;
    options.endpointDiscovery = seed % 5 != 2;
    options.dataplaneNetworkPolicy = seed % 2 == 0;
    IncrementalRenderer renderer;
    DeltaMirror mirror;
    std::vector<std::string> history;
    for (int step = 0; step < kSteps && std::chrono::steady_clock::now() < deadline; ++step) {
      history.push_back(step == 0 ? "initial" : cluster.step());
      const RenderDelta delta =
          renderer.update(ClusterSnapshot::fromObjects(cluster.objects()), options);
      incremental += !delta.full;
      ++steps;
      mirror.apply(delta, renderer);
      const RenderResult full = render(ClusterSnapshot::fromObjects(cluster.objects()), options);
      auto context = [&] {
        std::string s = "seed " + std::to_string(seed) + ", step " + std::to_string(step) + ":";
        for (size_t i = history.size() > 8 ? history.size() - 8 : 0; i < history.size(); ++i) {
          s += "\n  " + history[i];
        }
        return s;
      };
      ASSERT_EQ(dump(renderer.result()), dump(full)) << context();
      std::map<std::string, std::string> wanted;
      for (const GatewayOutput& g : full.gateways) wanted[g.gateway.str()] = dump(g);
      ASSERT_EQ(mirror.gateways, wanted) << context();
      for (const StatusUpdate& s : full.statuses) {
        ASSERT_EQ(mirror.statuses[s.apiVersion + " " + s.kind + " " + s.key.str()], dump(s))
            << context();
      }
    }
  }
  // The sequences must exercise the incremental path, not only full renders.
  EXPECT_GT(incremental, steps / 2) << incremental << " of " << steps;
}

// What a render can see of a snapshot, as text: every object, the keys of each kind in order,
// and every lookup and index answer for every key it holds.
std::string snapshotDump(const ClusterSnapshot& s) {
  std::string out;
  std::set<k8s::ObjectKey> keys;
  for (const auto& [id, o] : s.objects()) {
    out += id.apiVersion + " " + id.kind + " " + id.key.str() + " " + o.body().dump() + "\n";
    keys.insert(id.key);
    keys.insert({id.key.ns, "gateway" + id.key.name.substr(id.key.name.size() - 1)});
  }
  for (const auto& gc : s.gatewayClasses()) out += "class " + gc.meta.name + "\n";
  for (const auto& gw : s.gateways()) out += "gateway " + gw.meta.key().str() + "\n";
  for (const auto& r : s.routes()) {
    out += "route " + std::to_string(static_cast<int>(r.routeKind)) + " " + r.meta.key().str() +
           (s.isMasked(r) ? " masked" : "") + "\n";
  }
  for (const auto& svc : s.services()) out += "service " + svc.meta.key().str() + "\n";
  for (const auto& n : s.nodes()) out += "node " + n.meta.name + "\n";
  for (const k8s::ObjectKey& key : keys) {
    const std::string k = key.str();
    if (s.findGateway(key) != nullptr) out += "findGateway " + k + "\n";
    if (s.findService(key) != nullptr) out += "findService " + k + "\n";
    if (s.findSecret(key) != nullptr) out += "findSecret " + k + "\n";
    if (s.findStaticService(key) != nullptr) out += "findStaticService " + k + "\n";
    if (s.findGatewayConfig(key) != nullptr) out += "findGatewayConfig " + k + "\n";
    for (const size_t i : s.routesNaming(key)) {
      out += "routesNaming " + k + " " + s.route(i).meta.key().str() + " " +
             std::to_string(static_cast<int>(s.route(i).routeKind)) + "\n";
    }
    for (const auto* svc : s.servicesRelatedTo(key)) {
      out += "servicesRelatedTo " + k + " " + svc->meta.key().str() + "\n";
    }
    for (const auto* es : s.endpointSlicesOf(key)) {
      out += "endpointSlicesOf " + k + " " + es->meta.key().str() + "\n";
    }
    for (const auto* rg : s.referenceGrantsIn(key.ns)) {
      out += "referenceGrantsIn " + key.ns + " " + rg->meta.name + "\n";
    }
    if (auto labels = s.namespaceLabels(key.name)) out += "namespace " + key.name + "\n";
    for (const auto kind :
         {k8s::RouteKind::kStunnerUdp, k8s::RouteKind::kStunnerTcp, k8s::RouteKind::kGatewayUdp}) {
      if (auto i = s.findRoute(kind, key)) {
        out += "findRoute " + k + " " + s.route(*i).meta.key().str() + "\n";
      }
    }
  }
  return out;
}

// The operator's path between full renders: the changed objects applied to the snapshot in
// place (several changes folded into one apply, as the debounce folds them), with a resync now
// and then. After each apply the snapshot equals one built from scratch, the render equals
// render() of it, and a consumer of the deltas holds the same.
TEST(IncrementalRendererProperty, TheSnapshotUpdatedInPlaceEqualsOneBuiltFromScratch) {
  constexpr int kSeeds = 24;
  constexpr int kSteps = 150;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  int incremental = 0;
  int steps = 0;
  for (uint32_t seed = 1; seed <= kSeeds; ++seed) {
    RandomCluster cluster(seed, /*resourceVersions=*/seed % 2 == 0);
    std::mt19937 rng(seed);
    RenderOptions options{.transitionTime = "2024-01-01T00:00:00Z"};
    options.enforceReferenceGrants = seed % 3 == 1;
    options.relayToClusterIP = seed % 4 != 2;
    options.endpointDiscovery = seed % 5 != 3;
    options.dataplaneNetworkPolicy = seed % 2 == 1;
    IncrementalRenderer renderer;
    DeltaMirror mirror;
    std::vector<std::string> history{"initial"};
    (void)cluster.takeUpdates();
    mirror.apply(renderer.update(ClusterSnapshot::fromObjects(cluster.objects()), options, true),
                 renderer);
    for (int step = 1; step < kSteps && std::chrono::steady_clock::now() < deadline; ++step) {
      const int folded = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < folded; ++i) history.push_back(cluster.step());
      RenderDelta delta;
      if (rng() % 25 == 0) {  // the resync
        (void)cluster.takeUpdates();
        history.push_back("(resync)");
        delta = renderer.update(ClusterSnapshot::fromObjects(cluster.objects()), options, true);
      } else {
        delta = renderer.apply(cluster.takeUpdates(), options);
      }
      incremental += !delta.full;
      ++steps;
      mirror.apply(delta, renderer);
      const ClusterSnapshot scratch = ClusterSnapshot::fromObjects(cluster.objects());
      auto context = [&] {
        std::string s = "seed " + std::to_string(seed) + ", step " + std::to_string(step) + ":";
        for (size_t i = history.size() > 8 ? history.size() - 8 : 0; i < history.size(); ++i) {
          s += "\n  " + history[i];
        }
        return s;
      };
      ASSERT_EQ(snapshotDump(renderer.snapshot()), snapshotDump(scratch)) << context();
      const RenderResult full = render(scratch, options);
      ASSERT_EQ(dump(renderer.result()), dump(full)) << context();
      ASSERT_EQ(dump(render(renderer.snapshot(), options)), dump(full)) << context();
      std::map<std::string, std::string> wanted;
      for (const GatewayOutput& g : full.gateways) wanted[g.gateway.str()] = dump(g);
      ASSERT_EQ(mirror.gateways, wanted) << context();
      for (const StatusUpdate& s : full.statuses) {
        ASSERT_EQ(mirror.statuses[s.apiVersion + " " + s.kind + " " + s.key.str()], dump(s))
            << context();
      }
    }
  }
  EXPECT_GT(incremental, steps / 2) << incremental << " of " << steps;
}

TEST(ClusterSnapshotApply, AnUnchangedVersionChangesNothingAndADeleteOfNothingIsNothing) {
  Json slice = endpointSlice("a", "es", "svc", {"10.1.0.1"});
  slice["metadata"]["resourceVersion"] = "7";
  ClusterSnapshot s = ClusterSnapshot::fromObjects({Object(slice)});
  EXPECT_TRUE(s.apply({{ObjectIdentity::of(Object(slice)), Object(slice)}}).empty());
  EXPECT_TRUE(s.apply({{{"v1", "Service", {"a", "gone"}}, std::nullopt}}).empty());
  slice["metadata"]["resourceVersion"] = "8";
  slice["endpoints"][0]["addresses"][0] = "10.1.0.2";
  const std::vector<ObjectChange> changes =
      s.apply({{ObjectIdentity::of(Object(slice)), Object(slice)}});
  ASSERT_EQ(changes.size(), 1u);
  ASSERT_TRUE(changes[0].before && changes[0].after);
  EXPECT_EQ(changes[0].before->meta().resourceVersion, "7");
  EXPECT_EQ(changes[0].after->meta().resourceVersion, "8");
  ASSERT_EQ(s.endpointSlicesOf({"a", "svc"}).size(), 1u);
  EXPECT_EQ(s.endpointSlicesOf({"a", "svc"})[0]->endpoints[0].addresses[0], "10.1.0.2");
}

}  // namespace
}  // namespace kturn::op
