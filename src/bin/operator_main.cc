// kturn-operator: the control plane (docs/operator.md). Watches Gateway API and stunner.l7mp.io
// resources, renders each Gateway's dataplane config, Deployment and Service, serves the configs
// over CDS and writes statuses back. Flags follow STUNner's gateway operator where they overlap.
//
//   kturn-operator                               in-cluster, or $KUBECONFIG, or ~/.kube/config
//   kturn-operator --kubeconfig K --cds-addr 127.0.0.1:13478 --leader-elect
//   kturn-operator --from-files DIR              offline: prints what `kturnctl render -f` does
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "admin/admin_server.h"
#include "admin/http_endpoint.h"
#include "admin/metrics_handler.h"
#include "admin/process_metrics.h"
#include "cds/cds_server.h"
#include "cli/render_command.h"
#include "common/log.h"
#include "common/signals.h"
#include "k8s/api_client.h"
#include "k8s/leader_elector.h"
#include "k8s/rest_config.h"
#include "kturn/host_port.h"
#include "operator/cds_authorizer.h"
#include "operator/cds_tls.h"
#include "operator/controller.h"
#include "operator/deployment_renderer.h"
#include "operator/operator_endpoints.h"

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

// --kubeconfig, then $KUBECONFIG, then the pod's service account, then ~/.kube/config (the
// order controller-runtime's GetConfig uses).
kturn::Result<kturn::k8s::RestConfig> restConfig(const std::string& kubeconfig,
                                                 const std::string& context) {
  if (!kubeconfig.empty()) return kturn::k8s::loadKubeconfig(kubeconfig, context);
  if (const std::string fromEnv = env("KUBECONFIG"); !fromEnv.empty()) {
    return kturn::k8s::loadKubeconfig(fromEnv.substr(0, fromEnv.find(':')), context);
  }
  auto inCluster = kturn::k8s::inClusterConfig();
  if (inCluster) return inCluster;
  const std::string home = env("HOME");
  if (!home.empty() && std::filesystem::exists(home + "/.kube/config")) {
    return kturn::k8s::loadKubeconfig(home + "/.kube/config", context);
  }
  return inCluster.error();
}

// ":13478", "0.0.0.0:13478", "[::]:13478", "127.0.0.1:0".
bool parseListenAddress(const std::string& text, std::string& host, uint16_t& port) {
  const auto split = kturn::splitHostPort(text);
  const auto number = split && split->port ? kturn::parsePort(*split->port) : std::nullopt;
  if (!number) return false;
  host = split->host.empty() ? "0.0.0.0" : std::string(split->host);
  port = *number;
  return true;
}

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The host of --cds-server-address ("host:port", "[v6]:port", "host").
std::string hostOf(const std::string& address) {
  std::string host;
  uint16_t port = 0;
  if (!parseListenAddress(address, host, port)) host = address;
  return host;
}

std::vector<std::string> splitComma(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    if (!item.empty()) out.push_back(std::move(item));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string defaultIdentity() {
  if (std::string pod = env("POD_NAME"); !pod.empty()) return pod;
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return std::string(name) + "_" + std::to_string(getpid());
}

// Every flag, STUNner's where they overlap.
struct Flags {
  kturn::op::ControllerOptions options;
  std::string kubeconfig;
  std::string context;
  std::string cdsAddr = ":13478";
  bool leaderElect = false;
  kturn::k8s::LeaderElectionOptions election{.name = "kturn-operator-leader"};
  std::string fromFiles;
  std::string referenceGrants = "ignore";
  std::string logSpec = "all:INFO";
  std::string logFormat = "text";
  std::string metricsAddr = ":8080";
  std::string probeAddr = ":8081";
  bool cdsAuth = false;
  std::string cdsTlsSecret;
  std::string cdsTlsSecretNamespace = env("POD_NAMESPACE");
  std::string cdsTlsCaCertSecret;
  std::string cdsTlsCert, cdsTlsKey, cdsTlsCa;
  std::string cdsTlsHosts;
  std::string cdsTlsExtraHosts;
  bool cdsAllowPlaintext = true;
};

void addFlags(CLI::App& app, Flags& f) {
  kturn::op::RenderOptions& render = f.options.render;
  app.add_option("--controller-name", render.controllerName,
                 "GatewayClass spec.controllerName this operator acts for")
      ->capture_default_str();
  app.add_option("--kubeconfig", f.kubeconfig,
                 "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  app.add_option("--context", f.context, "kubeconfig context (default: current-context)");
  app.add_option("--cds-addr", f.cdsAddr, "config discovery server listen address [host]:port")
      ->capture_default_str();
  app.add_option("--cds-server-address", render.configDiscoveryAddress,
                 "host:port the dataplane pods are told to fetch their config from "
                 "(STUNNER_CONFIG_ORIGIN)")
      ->capture_default_str();
  app.add_flag("--cds-auth", f.cdsAuth,
               "authenticate config discovery clients: a ServiceAccount token (TokenReview) that "
               "is a Gateway's dataplane pod, or that RBAC lets read configs.cds.kturn.io; the "
               "Gateways' pods get such a token (docs/cds.md#authentication)");
  app.add_option("--cds-token-audience", render.cdsAuth.audience,
                 "the audience CDS tokens must be for")
      ->capture_default_str();
  app.add_option("--cds-tls-secret", f.cdsTlsSecret,
                 "serve CDS over TLS with a certificate signed by the CA in this Secret (in "
                 "--cds-tls-secret-namespace), which the operator creates when it is missing");
  app.add_option("--cds-tls-secret-namespace", f.cdsTlsSecretNamespace,
                 "namespace of --cds-tls-secret (default: $POD_NAMESPACE)");
  app.add_option(
      "--cds-tls-ca-cert-secret", f.cdsTlsCaCertSecret,
      "with --cds-tls-secret: the Secret (same namespace) the operator keeps the CA's "
      "certificate alone in, for kturn-auth to mount (default: <--cds-tls-secret>-cert)");
  app.add_option("--cds-tls-cert", f.cdsTlsCert,
                 "serve CDS over TLS with this certificate chain (PEM file) instead");
  app.add_option("--cds-tls-key", f.cdsTlsKey, "the private key of --cds-tls-cert (PEM file)");
  app.add_option("--cds-tls-ca", f.cdsTlsCa,
                 "the CA the dataplane pods verify --cds-tls-cert against (PEM file)");
  app.add_option("--cds-tls-hosts", f.cdsTlsHosts,
                 "comma-separated names and addresses of the managed serving certificate "
                 "(default: the host of --cds-server-address and its Service name forms)");
  app.add_option("--cds-tls-extra-hosts", f.cdsTlsExtraHosts,
                 "comma-separated names and addresses the managed serving certificate carries "
                 "besides those, e.g. the load balancer address a kturn-auth in another cluster "
                 "reaches CDS at");
  app.add_option("--cds-allow-plaintext", f.cdsAllowPlaintext,
                 "with TLS: serve the configs of Gateways annotated "
                 "kturn.io/config-discovery-auth: none over plain HTTP too (stunnerd)")
      ->capture_default_str();
  app.add_flag("--dataplane-network-policy", render.dataplaneNetworkPolicy,
               "give each Gateway's pods a NetworkPolicy: TURN and relay ports open, the health "
               "and metrics ports only to --dataplane-monitoring-namespace");
  app.add_option("--dataplane-monitoring-namespace", render.metricsNamespace,
                 "the namespace whose pods may reach the dataplane pods' :8086 and :8080")
      ->capture_default_str();
  app.add_flag("--leader-elect", f.leaderElect,
               "elect one leader (coordination.k8s.io Lease) to apply objects and write statuses; "
               "every replica serves CDS");
  app.add_option("--leader-election-namespace", f.election.ns, "namespace of the Lease")
      ->capture_default_str();
  app.add_option("--leader-election-id", f.election.name, "name of the Lease")
      ->capture_default_str();
  app.add_option("--leader-election-identity", f.election.identity,
                 "this replica's holderIdentity (default: $POD_NAME, else host_pid)");
  app.add_option("--from-files", f.fromFiles,
                 "offline: render the manifests in this file or directory, print the YAML stream "
                 "`kturnctl render -f` prints, and exit");
  app.add_option("--dataplane-image", render.dataplaneImage,
                 "dataplane image when the Dataplane sets none")
      ->capture_default_str();
  app.add_option("--endpoint-discovery", render.endpointDiscovery,
                 "Service backends by their pods' addresses (EndpointSlices); false: by their DNS "
                 "names in STRICT_DNS clusters, as STUNner's --endpoint-discovery=false")
      ->capture_default_str();
  app.add_option("--relay-to-cluster-ip", render.relayToClusterIP,
                 "a Service backend also admits its ClusterIP (STUNner's EnableRelayToClusterIP)")
      ->capture_default_str();
  app.add_option("--reference-grants", f.referenceGrants,
                 "enforce: cross-namespace backends need a ReferenceGrant; ignore: as STUNner")
      ->check(CLI::IsMember({"enforce", "ignore"}))
      ->capture_default_str();
  app.add_option("--metrics-bind-address", f.metricsAddr,
                 "[host]:port of /metrics (the kturn_operator_* and process series); 0: none")
      ->capture_default_str();
  app.add_option("--health-probe-bind-address", f.probeAddr,
                 "[host]:port of /healthz and /readyz (ready once every kind is listed); 0: none")
      ->capture_default_str();
  app.add_option("--field-manager", f.options.fieldManager, "server-side apply field manager")
      ->capture_default_str();
  app.add_option("-l,--log", f.logSpec, "log levels, e.g. all:INFO,operator:DEBUG")
      ->capture_default_str();
  app.add_option("--log-format", f.logFormat, "log line format: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

// Exit codes: 2 for a usage error (a flag's value), 1 for a failure to start.
constexpr int kUsage = 2;
constexpr int kFailed = 1;

// The CDS server's certificate, managed from a CA Secret (returned: renewed until destroyed) or
// read from files; none without either flag. nullopt: go on; otherwise the exit code.
std::optional<int> configureCdsTls(Flags& f, kturn::k8s::ApiClient& client,
                                   kturn::cds::CdsServerOptions& cds,
                                   std::unique_ptr<kturn::op::CdsCertificateRenewer>& renewer) {
  auto logger = kturn::log::scope("operator");
  kturn::op::RenderOptions& render = f.options.render;
  if (!f.cdsTlsSecret.empty() && !f.cdsTlsCert.empty()) {
    std::fprintf(stderr,
                 "kturn-operator: --cds-tls-secret and --cds-tls-cert exclude each other\n");
    return kUsage;
  }
  if (!f.cdsTlsSecret.empty()) {
    if (f.cdsTlsSecretNamespace.empty()) f.cdsTlsSecretNamespace = "kturn-system";
    auto ca = kturn::op::loadOrCreateCdsCa(client, f.cdsTlsSecretNamespace, f.cdsTlsSecret);
    if (!ca) {
      logger->critical("{}", ca.error().message);
      return kFailed;
    }
    if (f.cdsTlsCaCertSecret.empty()) f.cdsTlsCaCertSecret = f.cdsTlsSecret + "-cert";
    if (auto published = kturn::op::publishCdsCaCertificate(client, f.cdsTlsSecretNamespace,
                                                            f.cdsTlsCaCertSecret, ca->cert_pem);
        !published) {
      logger->critical("{}", published.error().message);
      return kFailed;
    }
    std::vector<std::string> hosts = splitComma(f.cdsTlsHosts);
    if (hosts.empty()) {
      const std::string host = hostOf(render.configDiscoveryAddress);
      if (host == "0.0.0.0" || host == "::") {
        std::fprintf(stderr,
                     "kturn-operator: --cds-tls-secret: --cds-server-address %s names no host "
                     "for the serving certificate; give one, or --cds-tls-hosts\n",
                     render.configDiscoveryAddress.c_str());
        return kUsage;
      }
      hosts = kturn::op::cdsServingHosts(host);
    }
    for (std::string& extra : splitComma(f.cdsTlsExtraHosts)) hosts.push_back(std::move(extra));
    renewer = std::make_unique<kturn::op::CdsCertificateRenewer>(*ca, hosts);
    if (!renewer->first()) {
      logger->critical("CDS serving certificate: {}", renewer->first().error().message);
      return kFailed;
    }
    cds.tls_cert_pem = renewer->first()->cert_pem;
    cds.tls_key_pem = renewer->first()->key_pem;
    render.cdsAuth.caPem = ca->cert_pem;
    logger->info("CDS over TLS: certificate for {} from the CA in Secret {}/{}",
                 fmt::join(hosts, ","), f.cdsTlsSecretNamespace, f.cdsTlsSecret);
  } else if (!f.cdsTlsCert.empty()) {
    auto cert = readFile(f.cdsTlsCert);
    auto key = readFile(f.cdsTlsKey);
    auto ca = readFile(f.cdsTlsCa.empty() ? f.cdsTlsCert : f.cdsTlsCa);
    if (!cert || !key || !ca) {
      std::fprintf(stderr,
                   "kturn-operator: cannot read --cds-tls-cert, --cds-tls-key or --cds-tls-ca\n");
      return kUsage;
    }
    cds.tls_cert_pem = *cert;
    cds.tls_key_pem = *key;
    render.cdsAuth.caPem = *ca;
  }
  return std::nullopt;
}

// With --cds-auth: the authorizer of CDS clients, whose API calls get a client of their own with
// a short timeout, since a request waits for them.
struct CdsAuth {
  std::unique_ptr<kturn::k8s::ApiClient> client;
  std::unique_ptr<kturn::op::CdsAuthorizer> authorizer;
};
std::optional<int> configureCdsAuth(Flags& f, const kturn::k8s::RestConfig& config,
                                    kturn::cds::CdsServerOptions& cds, CdsAuth& auth) {
  if (!f.cdsAuth) return std::nullopt;
  auto logger = kturn::log::scope("operator");
  auto made = kturn::k8s::ApiClient::create(config);
  if (!made) {
    logger->critical("Kubernetes API {}: {}", config.url(), made.error().message);
    return kFailed;
  }
  auth.client = std::move(made).value();
  auth.client->setTimeout(std::chrono::seconds(5));
  kturn::op::RenderOptions& render = f.options.render;
  auth.authorizer = std::make_unique<kturn::op::CdsAuthorizer>(
      *auth.client, kturn::op::CdsAuthorizerOptions{.audience = render.cdsAuth.audience});
  cds.authorizer = std::ref(*auth.authorizer);
  render.cdsAuth.enabled = true;
  if (cds.tls_cert_pem.empty()) {
    logger->warn(
        "CDS: --cds-auth without TLS (--cds-tls-secret or --cds-tls-cert): the dataplane pods "
        "send their tokens over plain HTTP");
  }
  return std::nullopt;
}

// /healthz and /readyz, and /metrics; controller-runtime's convention, which STUNner's flags
// follow: "0" turns an endpoint off.
struct Endpoints {
  std::optional<kturn::admin::HttpEndpoint> metrics, probe;
};
std::optional<int> parseEndpoints(const Flags& f, Endpoints& out) {
  for (auto [flag, text, endpoint] :
       {std::tuple{"--metrics-bind-address", &f.metricsAddr, &out.metrics},
        std::tuple{"--health-probe-bind-address", &f.probeAddr, &out.probe}}) {
    if (*text == "0") continue;
    kturn::admin::HttpEndpoint e;
    if (!parseListenAddress(*text, e.host, e.port)) {
      std::fprintf(stderr, "kturn-operator: %s %s: want [host]:port or 0\n", flag, text->c_str());
      return kUsage;
    }
    *endpoint = e;
  }
  return std::nullopt;
}

// Started before the controller, so a probe sees 503 until the first lists are in.
std::optional<int> startEndpoints(const Endpoints& e, kturn::op::Controller& controller,
                                  kturn::cds::CdsServer& cds,
                                  std::vector<std::unique_ptr<kturn::admin::AdminServer>>& out) {
  auto logger = kturn::log::scope("operator");
  if (e.probe) {
    auto& server = out.emplace_back(std::make_unique<kturn::admin::AdminServer>(*e.probe));
    server->handle("/healthz", kturn::op::healthzHandler());
    server->handle("/readyz", kturn::op::readyzHandler(controller));
  }
  if (e.metrics) {
    auto& server = out.emplace_back(std::make_unique<kturn::admin::AdminServer>(*e.metrics));
    const auto collect = [&controller, &cds] {
      auto families =
          kturn::op::operatorMetrics(controller.stats(), cds.watcherCount(), cds.accessStats());
      for (auto& f : kturn::admin::collectProcessMetrics()) families.push_back(std::move(f));
      return families;
    };
    server->handle("/metrics", kturn::admin::metricsHandler(collect));
  }
  for (auto& server : out) {
    if (auto started = server->start(); !started) {
      logger->critical("{}", started.error().message);
      return kFailed;
    }
    logger->info("kturn-operator: serving http://{}", server->endpoint().hostPort());
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kturn-operator: Kubernetes control plane of kturn (STUNner-compatible)"};
  Flags f;
  addFlags(app, f);
  CLI11_PARSE(app, argc, argv);
  kturn::op::RenderOptions& render = f.options.render;

  if (!f.fromFiles.empty()) {
    kturn::cli::RenderCommand command;
    command.paths = {f.fromFiles};
    command.options = render;
    command.referenceGrants = f.referenceGrants;
    return kturn::cli::runRender(command, std::cout, std::cerr);
  }

  // STUNner's STUNNER_GATEWAY_OPERATOR_LABEL_FILTER: set, it replaces the Gateway label keys not
  // copied to the Deployment (comma-separated; set and empty, every label is copied).
  if (const char* filter = std::getenv("STUNNER_GATEWAY_OPERATOR_LABEL_FILTER")) {
    render.labelFilter = kturn::op::labelFilterFrom(filter);
  }

  kturn::log::setup(*kturn::log::parseFormat(f.logFormat));
  if (auto ok = kturn::log::configure(f.logSpec); !ok) {
    std::fprintf(stderr, "kturn-operator: -l: %s\n", ok.error().message.c_str());
    return kUsage;
  }
  auto logger = kturn::log::scope("operator");
  render.enforceReferenceGrants = f.referenceGrants == "enforce";

  auto config = restConfig(f.kubeconfig, f.context);
  if (!config) {
    logger->critical("Kubernetes API: {}", config.error().message);
    return kFailed;
  }
  auto client = kturn::k8s::ApiClient::create(*config);
  if (!client) {
    logger->critical("Kubernetes API {}: {}", config->url(), client.error().message);
    return kFailed;
  }

  kturn::cds::CdsServerOptions cdsOptions;
  if (!parseListenAddress(f.cdsAddr, cdsOptions.address, cdsOptions.port)) {
    std::fprintf(stderr, "kturn-operator: --cds-addr %s: want [host]:port\n", f.cdsAddr.c_str());
    return kUsage;
  }
  cdsOptions.allow_plaintext = f.cdsAllowPlaintext;
  // Until the first render is published, a client is told to come back rather than served an
  // empty list (a replica that just started, in a roll or after a crash).
  cdsOptions.wait_for_state = true;
  std::unique_ptr<kturn::op::CdsCertificateRenewer> renewer;
  if (auto exit = configureCdsTls(f, **client, cdsOptions, renewer)) return *exit;
  CdsAuth cdsAuth;
  if (auto exit = configureCdsAuth(f, *config, cdsOptions, cdsAuth)) return *exit;
  Endpoints endpointAddresses;
  if (auto exit = parseEndpoints(f, endpointAddresses)) return *exit;

  // Threads started below inherit this mask; the main thread takes the signals with sigwait().
  sigset_t set = kturn::signals::blockTermination();

  auto cds = kturn::cds::CdsServer::start(cdsOptions);
  if (!cds) {
    logger->critical("{}", cds.error().message);
    return kFailed;
  }
  if (renewer) {
    renewer->start([&server = **cds, &logger](const kturn::certificate::PemPair& pem) {
      if (auto set = server.setCertificate(pem.cert_pem, pem.key_pem); !set) {
        logger->error("CDS: {}", set.error().message);
      }
    });
  }
  logger->info("CDS: {}{}",
               f.cdsAuth ? "clients authenticated (audience " + render.cdsAuth.audience + ")"
                         : "no client authentication (as STUNner)",
               cdsOptions.tls_cert_pem.empty() ? ", plain HTTP" : ", TLS");
  logger->info("Gateway labels not copied to Deployments: {}", fmt::join(render.labelFilter, ","));
  logger->info("kturn-operator: controller {}, API server {}, CDS on {}:{}", render.controllerName,
               config->url(), cdsOptions.address, (*cds)->port());

  kturn::op::Controller controller(**client, **cds, f.options);
  std::vector<std::unique_ptr<kturn::admin::AdminServer>> endpoints;
  if (auto exit = startEndpoints(endpointAddresses, controller, **cds, endpoints)) return *exit;
  std::unique_ptr<kturn::k8s::LeaderElector> elector;
  if (f.leaderElect) {
    if (f.election.identity.empty()) f.election.identity = defaultIdentity();
    elector = std::make_unique<kturn::k8s::LeaderElector>(
        **client, f.election, [&controller](bool leading) { controller.setLeading(leading); });
  } else {
    controller.setLeading(true);
  }
  controller.start();
  if (elector) elector->start();

  int signalNumber = 0;
  sigwait(&set, &signalNumber);
  logger->info("kturn-operator: signal {}, stopping", signalNumber);
  if (elector) elector->stop();  // releases the lease first, so a successor takes over at once
  for (auto& server : endpoints) server->stop();  // their handlers read the controller
  controller.stop();
  renewer.reset();
  (*cds)->stop();
  return 0;
}
