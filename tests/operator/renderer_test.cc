// Focused tests of the renderer's rules; the golden tests cover whole scenarios.
#include "operator/renderer.h"

#include <gtest/gtest.h>

#include <map>

#include "config/parser.h"
#include "config/serializer.h"
#include "k8s/manifest.h"
#include "operator/cluster_snapshot.h"
#include "operator/deployment_renderer.h"
#include "operator/render_fixture.h"

namespace kturn::op {
namespace {

using test::kPlatform;
using test::renderYaml;
using test::statusOf;

constexpr const char* kGateway = R"(
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: media}
spec:
  gatewayClassName: gc
  listeners: [{name: udp, port: 3478, protocol: TURN-UDP}]
---
apiVersion: stunner.l7mp.io/v1
kind: UDPRoute
metadata: {name: r, namespace: media}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: svc}]}]
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: media}
spec: {clusterIP: 10.96.0.1}
---
)";

std::string slice(const std::vector<std::string>& ips) {
  std::string eps;
  for (const std::string& ip : ips) eps += "  - addresses: [\"" + ip + "\"]\n";
  return "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: svc-1\n"
         "  namespace: media\n  labels: {kubernetes.io/service-name: svc}\nendpoints:\n" +
         eps;
}

TEST(Renderer, EndpointChurnChangesOnlyClusterEndpoints) {
  const RenderResult before = renderYaml(kPlatform + std::string(kGateway) + slice({"10.244.0.1"}));
  const RenderResult after =
      renderYaml(kPlatform + std::string(kGateway) + slice({"10.244.0.2", "10.244.0.3"}));
  ASSERT_EQ(before.gateways.size(), 1u);
  ASSERT_EQ(after.gateways.size(), 1u);
  const GatewayOutput& a = before.gateways[0];
  const GatewayOutput& b = after.gateways[0];
  ASSERT_TRUE(a.config && b.config);
  // What a stunnerd pod or the Deployment would restart for must not move.
  EXPECT_EQ(a.config->listeners, b.config->listeners);
  EXPECT_EQ(a.config->auth, b.config->auth);
  EXPECT_EQ(a.config->admin, b.config->admin);
  EXPECT_EQ(a.deployment->body(), b.deployment->body());
  EXPECT_EQ(a.service->body(), b.service->body());
  EXPECT_EQ(a.config->clusters[0].endpoints, (std::vector<std::string>{"10.244.0.1", "10.96.0.1"}));
  EXPECT_EQ(b.config->clusters[0].endpoints,
            (std::vector<std::string>{"10.244.0.2", "10.244.0.3", "10.96.0.1"}));
}

TEST(Renderer, RenderedConfigIsWhatStunnerdReads) {
  const RenderResult r = renderYaml(kPlatform + std::string(kGateway) + slice({"10.244.0.1"}));
  ASSERT_TRUE(r.gateways[0].config);
  const std::string json = config::toJson(*r.gateways[0].config);
  auto parsed =
      config::parseConfig(json, [](const std::string& name) -> std::optional<std::string> {
        if (name == "STUNNER_ADDR") return "10.244.9.9";
        return std::nullopt;
      });
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->listeners[0].address, "10.244.9.9");
  EXPECT_EQ(parsed->listeners[0].name, "media/gw/udp");
  EXPECT_EQ(parsed->clusters[0].name, "media/r");
}

TEST(Renderer, BadGatewayDoesNotAffectOthers) {
  const std::string broken = R"(
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: broken, namespace: media}
spec:
  gatewayClassName: gc
  addresses: {not: a-list}
  listeners: [{name: udp, port: 3478, protocol: TURN-UDP}]
---
)";
  const RenderResult r = renderYaml(kPlatform + std::string(kGateway) + broken);
  ASSERT_EQ(r.gateways.size(), 2u);
  EXPECT_FALSE(r.gateways[0].config);  // media/broken sorts first
  EXPECT_TRUE(r.gateways[1].config);
  const StatusUpdate* s = statusOf(r, "Gateway", "broken");
  ASSERT_NE(s, nullptr);
  const k8s::Json& accepted = s->status["conditions"][0];
  EXPECT_EQ(accepted["status"], "False");
  EXPECT_EQ(accepted["reason"], "UnsupportedAddress");
  EXPECT_EQ(accepted["message"],
            "Gateway media/broken: spec.addresses: expected a list, got a mapping");
}

TEST(Renderer, MissingGatewayConfigRejectsTheClassAndItsGateways) {
  const std::string noConfig = R"(
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: gc}
spec:
  controllerName: stunner.l7mp.io/gateway-operator
  parametersRef: {group: stunner.l7mp.io, kind: GatewayConfig, name: gone, namespace: stunner}
---
)";
  const RenderResult r = renderYaml(noConfig + std::string(kGateway));
  const StatusUpdate* gc = statusOf(r, "GatewayClass", "gc");
  ASSERT_NE(gc, nullptr);
  EXPECT_EQ(gc->status["conditions"][0]["reason"], "InvalidParameters");
  EXPECT_EQ(gc->status["conditions"][0]["message"], "GatewayConfig stunner/gone not found");
  ASSERT_EQ(r.gateways.size(), 1u);
  EXPECT_FALSE(r.gateways[0].config);
  EXPECT_FALSE(r.gateways[0].deployment);
}

TEST(Renderer, IgnoresOtherControllers) {
  RenderOptions options;
  options.controllerName = "example.com/other";
  const RenderResult r = renderYaml(kPlatform + std::string(kGateway), options);
  EXPECT_TRUE(r.gateways.empty());
  EXPECT_TRUE(r.statuses.empty());
}

// Without endpoint discovery (STUNner's --endpoint-discovery=false) a Service backend is its DNS
// name in a STRICT_DNS cluster, with no port range; a StaticService backend cannot join that
// cluster (one type per cluster) and is left out, named in the route's status.
TEST(Renderer, WithoutEndpointDiscoveryServicesAreDnsNames) {
  const std::string routes = R"(
apiVersion: stunner.l7mp.io/v1
kind: UDPRoute
metadata: {name: r, namespace: media}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: svc, port: 10000}, {group: stunner.l7mp.io, kind: StaticService, name: farm}]}]
---
apiVersion: stunner.l7mp.io/v1
kind: StaticService
metadata: {name: farm, namespace: media}
spec: {prefixes: [10.9.0.0/24]}
)";
  RenderOptions noEds;
  noEds.endpointDiscovery = false;
  const RenderResult r = renderYaml(kPlatform + std::string(kGateway) + routes, noEds);
  ASSERT_TRUE(r.gateways[0].config);
  const config::Cluster& c = r.gateways[0].config->clusters[0];
  EXPECT_EQ(c.type, "STRICT_DNS");
  EXPECT_EQ(c.endpoints, std::vector<std::string>{"svc.media.svc.cluster.local"});
  const k8s::Json& refs = statusOf(r, "UDPRoute", "r")->status["parents"][0]["conditions"][1];
  EXPECT_EQ(refs["status"], "False");
  EXPECT_NE(refs["message"].get<std::string>().find("farm: a STATIC backend in a STRICT_DNS"),
            std::string::npos)
      << refs.dump();
  // With discovery on: the StaticService's prefix and the Service's ClusterIP (kPlatform has no
  // EndpointSlice for it), the backendRef's port kept, in one STATIC cluster.
  const RenderResult eds = renderYaml(kPlatform + std::string(kGateway) + routes);
  EXPECT_EQ(eds.gateways[0].config->clusters[0].type, "STATIC");
  EXPECT_EQ(eds.gateways[0].config->clusters[0].endpoints,
            (std::vector<std::string>{"10.9.0.0/24", "10.96.0.1:<10000-10000>"}));
}

// By default, as STUNner, a cross-namespace backend is rendered without a ReferenceGrant;
// --reference-grants=enforce refuses it and says which grant is missing.
TEST(Renderer, ReferenceGrantsAreIgnoredAsStunnerDoesUnlessEnforced) {
  const std::string crossNs = R"(
apiVersion: stunner.l7mp.io/v1
kind: UDPRoute
metadata: {name: r, namespace: media}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: svc, namespace: other}]}]
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: other}
spec: {clusterIP: 10.96.0.2}
)";
  const std::string yaml = kPlatform + std::string(kGateway) + crossNs;
  const RenderResult byDefault = renderYaml(yaml);
  EXPECT_EQ(byDefault.gateways[0].config->clusters[0].endpoints,
            (std::vector<std::string>{"10.96.0.2"}));
  RenderOptions enforce;
  enforce.enforceReferenceGrants = true;
  const RenderResult enforced = renderYaml(yaml, enforce);
  EXPECT_TRUE(enforced.gateways[0].config->clusters[0].endpoints.empty());
  const k8s::Json& refs =
      statusOf(enforced, "UDPRoute", "r")->status["parents"][0]["conditions"][1];
  EXPECT_EQ(refs["reason"], "RefNotPermitted");
  EXPECT_NE(refs["message"].get<std::string>().find("no ReferenceGrant in namespace other"),
            std::string::npos)
      << refs.dump();
}

TEST(Renderer, DisableManagedDataplaneAnnotationDropsTheDeploymentOnly) {
  std::string gw = kGateway;
  gw.replace(
      gw.find("namespace: media}"), 17,
      "namespace: media, annotations: {stunner.l7mp.io/disable-managed-dataplane: \"true\"}}");
  const RenderResult r = renderYaml(kPlatform + gw);
  ASSERT_EQ(r.gateways.size(), 1u);
  EXPECT_TRUE(r.gateways[0].config);
  EXPECT_TRUE(r.gateways[0].service);
  EXPECT_FALSE(r.gateways[0].deployment);
}

TEST(Renderer, DataplaneNetworkPolicyOpensTurnAndRelaysAndKeepsAdminForMonitoring) {
  EXPECT_FALSE(renderYaml(std::string(kPlatform) + kGateway).gateways[0].networkPolicy)
      << "off by default";
  RenderOptions options;
  options.dataplaneNetworkPolicy = true;
  options.metricsNamespace = "prom";
  const RenderResult r = renderYaml(std::string(kPlatform) + kGateway, options);
  ASSERT_EQ(r.gateways.size(), 1u);
  ASSERT_TRUE(r.gateways[0].networkPolicy);
  const k8s::Json policy = r.gateways[0].networkPolicy->body();
  EXPECT_EQ(policy["metadata"]["name"], "gw");
  EXPECT_EQ(policy["metadata"]["namespace"], "media");
  EXPECT_EQ(policy["metadata"]["ownerReferences"][0]["kind"], "Gateway");
  // It selects exactly the pods of the Gateway's Deployment.
  const k8s::Json& pods =
      r.gateways[0].deployment->body()["spec"]["template"]["metadata"]["labels"];
  for (const auto& [key, value] : policy["spec"]["podSelector"]["matchLabels"].items()) {
    EXPECT_EQ(pods.value(key, ""), value) << key;
  }
  EXPECT_EQ(policy["spec"]["policyTypes"], k8s::Json::array({"Ingress"}));
  const k8s::Json& ingress = policy["spec"]["ingress"];
  ASSERT_EQ(ingress.size(), 2u);
  // Rule 1, from anywhere: all UDP, all TCP but 8080 and 8086.
  EXPECT_FALSE(ingress[0].contains("from"));
  auto opens = [&](const char* protocol, int64_t port) {
    for (const k8s::Json& p : ingress[0]["ports"]) {
      if (p["protocol"] == protocol && p["port"].get<int64_t>() <= port &&
          port <= p.value("endPort", p["port"].get<int64_t>())) {
        return true;
      }
    }
    return false;
  };
  for (int64_t port : {1, 3478, 5349, 8079, 8081, 8085, 8087, 49152, 65535}) {
    EXPECT_TRUE(opens("UDP", port) && opens("TCP", port)) << port;
  }
  EXPECT_FALSE(opens("TCP", 8080));
  EXPECT_FALSE(opens("TCP", 8086));
  // Rule 2: the admin ports, from the monitoring namespace only.
  EXPECT_EQ(ingress[1]["ports"], k8s::Json::parse(R"([{"protocol":"TCP","port":8086},
                                                       {"protocol":"TCP","port":8080}])"));
  EXPECT_EQ(
      ingress[1]["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
      "prom");
}

// The admin ports as the config, the probes and the container port carry them.
struct RenderedPorts {
  std::string health, metrics;  // admin.healthcheck_endpoint, admin.metrics_endpoint
  int liveness = 0, readiness = 0, container = 0;
};
RenderedPorts renderedPorts(const GatewayOutput& out) {
  const k8s::Json& c = out.deployment->body()["spec"]["template"]["spec"]["containers"][0];
  return {out.config->admin.healthcheck_endpoint.value_or(""), out.config->admin.metrics_endpoint,
          c["livenessProbe"]["httpGet"]["port"].get<int>(),
          c["readinessProbe"]["httpGet"]["port"].get<int>(),
          c["ports"][0]["containerPort"].get<int>()};
}

// kPlatform with its GatewayConfig naming a Dataplane "host" of kturnd with `spec` added.
std::string platformWithDataplane(const std::string& spec) {
  std::string platform = kPlatform;
  platform.replace(platform.find("sharedSecret: s}"), 16, "sharedSecret: s, dataplane: host}");
  return platform +
         "apiVersion: stunner.l7mp.io/v1\nkind: Dataplane\nmetadata: {name: host}\n"
         "spec: {image: kturnd, " +
         spec + "}\n---\n";
}

// Two Gateways whose kturnd pods run in the host's network can land on one node: each gets its
// own health and metrics ports, stable across renders and operator versions (a change would
// roll every pod), consistent between the config, the probes and the container port.
TEST(Renderer, HostNetworkGatewaysGetAdminPortsOfTheirOwn) {
  const std::string platform =
      platformWithDataplane("hostNetwork: true, enableMetricsEndpoint: true");
  std::string second = kGateway;
  second.replace(second.find("{name: gw, "), 11, "{name: gw2, ");
  second = second.substr(0, second.find("---") + 4);
  const RenderResult r = renderYaml(platform + kGateway + second);
  ASSERT_EQ(r.gateways.size(), 2u);
  const RenderedPorts gw = renderedPorts(r.gateways[0]);
  const RenderedPorts gw2 = renderedPorts(r.gateways[1]);
  // 18000 + 2 * (FNV-1a("media/gw") % 1000), pinned: these must never move.
  EXPECT_EQ(gw.health, "http://:19476");
  EXPECT_EQ(gw.metrics, "http://:19477/metrics");
  EXPECT_EQ(gw.liveness, 19476);
  EXPECT_EQ(gw.readiness, 19476);
  EXPECT_EQ(gw.container, 19477);
  EXPECT_EQ(gw2.health, "http://:18752");
  EXPECT_EQ(gw2.container, 18753);

  // Not in the host's network: STUNner's 8086 and 8080.
  const RenderResult pod = renderYaml(kPlatform + std::string(kGateway));
  EXPECT_EQ(renderedPorts(pod.gateways[0]).health, "http://:8086");
  EXPECT_EQ(renderedPorts(pod.gateways[0]).liveness, 8086);
}

// A hostNetwork pod resolves names with its node's resolver unless its dnsPolicy says
// otherwise, and the config discovery address is a Service name: such a kturnd never got its
// config on a cluster whose nodes do not resolve *.svc (found on the multi-node cluster).
TEST(Renderer, AHostNetworkPodResolvesClusterNames) {
  const std::string platform =
      platformWithDataplane("hostNetwork: true, dataplaneResource: DaemonSet");
  const RenderResult host = renderYaml(platform + kGateway);
  ASSERT_EQ(host.gateways.size(), 1u);
  ASSERT_TRUE(host.gateways[0].deployment);
  const k8s::Json& spec = host.gateways[0].deployment->body()["spec"]["template"]["spec"];
  EXPECT_EQ(host.gateways[0].deployment->body()["kind"], "DaemonSet");
  EXPECT_EQ(spec["hostNetwork"], true);
  EXPECT_EQ(spec["dnsPolicy"], "ClusterFirstWithHostNet");

  const RenderResult pod = renderYaml(kPlatform + std::string(kGateway));
  EXPECT_FALSE(
      pod.gateways[0].deployment->body()["spec"]["template"]["spec"].contains("dnsPolicy"));
}

TEST(Renderer, TheHealthCheckPortAnnotationMovesTheAdminPortsAndThePolicy) {
  std::string annotated = kGateway;
  annotated.replace(annotated.find("namespace: media}"), 17,
                    "namespace: media, annotations: {kturn.io/health-check-port: \"9000\"}}");
  RenderOptions options;
  options.dataplaneNetworkPolicy = true;
  const RenderResult r = renderYaml(kPlatform + annotated, options);
  ASSERT_TRUE(r.gateways[0].config);
  const RenderedPorts ports = renderedPorts(r.gateways[0]);
  EXPECT_EQ(ports.health, "http://:9000");
  EXPECT_EQ(ports.readiness, 9000);
  EXPECT_EQ(ports.container, 9001);
  // The policy keeps 9000 and 9001 for monitoring and opens everything else (no empty range
  // between neighbours, which the API server would refuse).
  const k8s::Json policy = r.gateways[0].networkPolicy->body();
  EXPECT_EQ(policy["spec"]["ingress"][0]["ports"], k8s::Json::parse(R"([
      {"protocol":"UDP","port":1,"endPort":65535},{"protocol":"TCP","port":1,"endPort":8999},
      {"protocol":"TCP","port":9002,"endPort":65535}])"));
  EXPECT_EQ(policy["spec"]["ingress"][1]["ports"], k8s::Json::parse(R"([
      {"protocol":"TCP","port":9000},{"protocol":"TCP","port":9001}])"));

  std::string privileged = annotated;
  privileged.replace(privileged.find("\"9000\""), 6, "\"80\"");
  const RenderResult refused = renderYaml(kPlatform + privileged);
  EXPECT_FALSE(refused.gateways[0].config);
  EXPECT_EQ(statusOf(refused, "Gateway", "gw")->status["conditions"][0]["message"],
            "Gateway media/gw: metadata.annotations[kturn.io/health-check-port]: want an integer "
            "1024-65534, got \"80\"");
}

TEST(Renderer, CdsAuthGivesThePodsATokenAndHttpsUnlessTheGatewayOptsOut) {
  RenderOptions options;
  options.configDiscoveryAddress = "kturn-config-discovery.kturn-system.svc:13478";
  options.cdsAuth = {.enabled = true, .audience = "kturn-cds", .caPem = "-----BEGIN CA-----\n"};
  auto podOf = [](const RenderResult& r) {
    return r.gateways.at(0).deployment->body()["spec"]["template"]["spec"];
  };
  auto envOf = [](const k8s::Json& pod) {
    std::map<std::string, std::string> env;
    for (const k8s::Json& e : pod["containers"][0]["env"]) env[e["name"]] = e.value("value", "");
    return env;
  };
  const k8s::Json pod = podOf(renderYaml(std::string(kPlatform) + kGateway, options));
  auto env = envOf(pod);
  EXPECT_EQ(env["STUNNER_CONFIG_ORIGIN"], "https://kturn-config-discovery.kturn-system.svc:13478");
  EXPECT_EQ(env["KTURN_CDS_TOKEN_FILE"], "/var/run/secrets/kturn.io/cds/token");
  EXPECT_EQ(env["KTURN_CDS_CA"], "-----BEGIN CA-----\n");
  EXPECT_EQ(
      pod["volumes"][0]["projected"]["sources"][0]["serviceAccountToken"],
      k8s::Json::parse(R"({"audience":"kturn-cds","expirationSeconds":3600,"path":"token"})"));
  EXPECT_EQ(pod["containers"][0]["volumeMounts"][0]["mountPath"], "/var/run/secrets/kturn.io/cds");

  std::string open = kGateway;
  open.replace(open.find("namespace: media}"), 17,
               "namespace: media, annotations: {kturn.io/config-discovery-auth: none}}");
  const RenderResult opened = renderYaml(kPlatform + open, options);
  EXPECT_TRUE(opened.gateways[0].cds_open);
  const k8s::Json plain = podOf(opened);
  env = envOf(plain);
  EXPECT_EQ(env["STUNNER_CONFIG_ORIGIN"], "http://kturn-config-discovery.kturn-system.svc:13478");
  EXPECT_FALSE(env.contains("KTURN_CDS_TOKEN_FILE"));
  EXPECT_FALSE(env.contains("KTURN_CDS_CA"));
  EXPECT_FALSE(plain.contains("volumes"));
  // Without --cds-auth the render is STUNner's, annotation or not.
  const k8s::Json stunner = podOf(renderYaml(std::string(kPlatform) + kGateway));
  EXPECT_FALSE(stunner.contains("volumes"));
  EXPECT_EQ(envOf(stunner)["STUNNER_CONFIG_ORIGIN"], "http://:13478");
}

TEST(Renderer, GatewayLabelsReachTheDeploymentExceptTheFilteredKeys) {
  std::string gw = kGateway;
  gw.replace(gw.find("namespace: media}"), 17,
             "namespace: media, labels: {team: a, argocd.argoproj.io/instance: x}}");
  const auto labels = [&](const RenderOptions& options) {
    const RenderResult r = renderYaml(kPlatform + gw, options);
    return r.gateways.at(0).deployment->body()["metadata"]["labels"];
  };
  const auto byDefault = labels({});
  EXPECT_EQ(byDefault["team"], "a");
  EXPECT_FALSE(byDefault.contains("argocd.argoproj.io/instance")) << "STUNner's default filter";
  RenderOptions own;
  own.labelFilter = labelFilterFrom(" team ,,");
  const auto filtered = labels(own);
  EXPECT_FALSE(filtered.contains("team"));
  EXPECT_EQ(filtered["argocd.argoproj.io/instance"], "x") << "the variable replaces the default";
}

TEST(LabelFilterFrom, CommaSeparatedKeysTrimmedEmptyOnesDropped) {
  EXPECT_EQ(labelFilterFrom("a, b ,,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(labelFilterFrom("").empty()) << "set and empty: every label is copied";
  EXPECT_TRUE(labelFilterFrom(" , ").empty());
}

TEST(Renderer, NamedDataplaneMustExistButDefaultIsBuiltIn) {
  std::string platform = kPlatform;
  platform.replace(platform.find("sharedSecret: s}"), 16, "sharedSecret: s, dataplane: custom}");
  const RenderResult r = renderYaml(platform + std::string(kGateway));
  EXPECT_EQ(statusOf(r, "GatewayClass", "gc")->status["conditions"][0]["message"],
            "Dataplane custom not found (named by GatewayConfig stunner/cfg)");
  const RenderResult builtin = renderYaml(kPlatform + std::string(kGateway));
  const k8s::Json& container =
      builtin.gateways[0].deployment->body()["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["image"], RenderOptions{}.dataplaneImage);
}

// The dataplane pods get no API token, except with stunnerd's -c k8s (the config discovery
// server found through the Kubernetes API), in any of pflag's spellings.
TEST(Renderer, DataplanePodsGetNoApiTokenUnlessTheyFindCdsThroughTheApi) {
  auto automount = [](const std::string& args) {
    std::string platform = kPlatform;
    platform.replace(platform.find("sharedSecret: s}"), 16, "sharedSecret: s, dataplane: custom}");
    platform +=
        "apiVersion: stunner.l7mp.io/v1\nkind: Dataplane\nmetadata: {name: custom}\n"
        "spec: {image: stunnerd, args: " +
        args + "}\n---\n";
    const RenderResult r = renderYaml(platform + std::string(kGateway));
    return r.gateways.at(0).deployment->body()["spec"]["template"]["spec"].value(
        "automountServiceAccountToken", true);
  };
  EXPECT_FALSE(automount("[-w, --udp-thread-num=16]"));
  EXPECT_FALSE(automount("[-c, /etc/stunnerd/stunnerd.conf]"));
  for (const char* k8s : {"[-c, k8s]", "[--config, k8s]", "[-c=k8s]", "[--config=k8s]", "[-ck8s]",
                          "[-l, all:INFO, -c, k8s]"}) {
    EXPECT_TRUE(automount(k8s)) << k8s;
  }
  const RenderResult builtin = renderYaml(kPlatform + std::string(kGateway));
  EXPECT_EQ(builtin.gateways[0]
                .deployment->body()["spec"]["template"]["spec"]["automountServiceAccountToken"],
            false);
}

TEST(Renderer, BackendPortRangeIsAppendedToEveryEndpoint) {
  std::string gw = kGateway;
  gw.replace(gw.find("{name: svc}"), 11, "{name: svc, port: 5000, endPort: 5010}");
  const RenderResult r = renderYaml(kPlatform + gw + slice({"10.244.0.1"}));
  EXPECT_EQ(r.gateways[0].config->clusters[0].endpoints,
            (std::vector<std::string>{"10.244.0.1:<5000-5010>", "10.96.0.1:<5000-5010>"}));
}

}  // namespace
}  // namespace kturn::op
