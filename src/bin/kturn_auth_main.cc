// kturn-auth: mints TURN credentials and ICE server lists for WebRTC clients, drop-in for
// STUNner's auth service (GET /?service=turn, GET /ice?service=turn; see docs/auth.md).
//   kturn-auth -c /etc/kturn/stunnerd.conf                       a dataplane config file
//   kturn-auth -c http://stunner-cds:13478                       every gateway's config over CDS
//   kturn-auth -c http://stunner-cds:13478 --id ns/gateway        one gateway's config over CDS
//   kturn-auth -c FILE --port 8088 --token-file /var/run/token    bearer-token protected
//   kturn-auth -c https://cds-a:13478 -c https://cds-b:13478      one per region, each with its
//       --cds-credentials https://cds-b:13478=TOKEN,CA ...         own token and CA
//   kturn-auth [--cds-server-namespace stunner-system]              in a cluster, as
//       stunner-auth-service: the discovery server found through the Kubernetes API (the pod
//       labelled stunner.l7mp.io/config-discovery-service=enabled), or --cds-server-address
// Besides STUNner's / and /ice: /live, and /ready (503 until every origin's state is read and
// during --shutdown-delay after SIGTERM), the chart's probes.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <vector>

#include "admin/admin_server.h"
#include "auth/auth_handlers.h"
#include "auth/config_follower.h"
#include "auth/origin_credentials.h"
#include "auth/token_file.h"
#include "common/log.h"
#include "common/signals.h"
#include "k8s/discovery_flags.h"

int main(int argc, char** argv) {
  CLI::App app{"kturn-auth: TURN credential and ICE server service, STUNner-compatible"};
  std::vector<std::string> origins;
  std::string id;
  std::vector<std::string> region_networks;
  std::vector<std::string> region_order;
  std::vector<std::string> origin_credentials;
  std::string address = "0.0.0.0";
  uint16_t port = 8088;
  std::string token_file;
  double shutdown_delay = 0;
  std::string log_spec;
  std::string log_format = "text";
  bool verbose = false;
  kturn::k8s::DiscoveryFlags discovery;
  app.add_option("-c,--config", origins,
                 "config origin: file://PATH (or a path), a config discovery server (http://, "
                 "ws://, https://, wss://), or k8s; default k8s: find the discovery server "
                 "through the Kubernetes API, as stunner-auth-service does. Repeat it to serve "
                 "the gateways of several clusters (one per region) from one kturn-auth")
      ->take_all();
  app.add_option("--region-network", region_networks,
                 "<IP>[/<prefix>]=<region>: clients in this network (the `client` parameter of "
                 "a request) get the ICE servers of that region first; repeatable, first match "
                 "wins");
  app.add_option("--region-order", region_order,
                 "regions in order of preference, for the ICE servers after the wanted region's "
                 "(comma-separated or repeated)")
      ->delimiter(',');
  app.add_option("--cds-credentials", origin_credentials,
                 "<origin>=<token-file>[,<ca-file>]: the token and CA of authenticated config "
                 "discovery for the -c origin named (each cluster has its own); repeatable, "
                 "instead of --cds-token-file and --cds-ca-file for that origin");
  app.add_option("-i,--id", id,
                 "with a config discovery server: follow only this gateway, <namespace>/<name> "
                 "(default: every gateway the server holds)");
  app.add_option("-a,--address", address, "address to listen on");
  app.add_option("-p,--port", port, "port to listen on");
  app.add_option("--token-file", token_file,
                 "file holding a bearer token every request must carry (Authorization: Bearer)");
  app.add_option("--shutdown-delay", shutdown_delay,
                 "seconds to go on answering after SIGTERM, /ready answering 503, before "
                 "stopping: the time a Service takes to drop the pod (the chart: 5); a second "
                 "signal stops at once")
      ->check(CLI::Range(0.0, 300.0));
  app.add_option("-l,--log", log_spec, "log levels, e.g. all:INFO (default)");
  app.add_flag("-v,--verbose", verbose, "log at all:DEBUG unless -l is given");
  kturn::k8s::addDiscoveryOptions(app, discovery, "Kubernetes (without -c, or -c k8s)");
  app.add_option("--log-format", log_format, "log line format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  CLI11_PARSE(app, argc, argv);

  kturn::log::setup(*kturn::log::parseFormat(log_format));
  if (log_spec.empty()) log_spec = verbose ? "all:DEBUG" : "all:INFO";
  if (auto ok = kturn::log::configure(log_spec); !ok) {
    std::fprintf(stderr, "kturn-auth: -l: %s\n", ok.error().message.c_str());
    return 2;
  }
  if (const auto ignored = kturn::k8s::ignoredDiscoveryFlags(app); !ignored.empty()) {
    spdlog::info("Kubernetes client flags accepted and ignored: {}", fmt::join(ignored, " "));
  }
  if (origins.empty()) origins.push_back("k8s");
  const auto credentials = kturn::auth::parseOriginCredentials(origin_credentials, origins);
  if (!credentials) {
    std::fprintf(stderr, "kturn-auth: %s\n", credentials.error().message.c_str());
    return 2;
  }
  for (std::string& origin : origins) {
    if (origin != "k8s") continue;
    auto found = kturn::k8s::discoverConfigDiscoveryServer(discovery);
    if (!found) {
      spdlog::critical("config discovery server: {}", found.error().message);
      return 1;
    }
    spdlog::info("config discovery server {}", *found);
    origin = *found;
  }
  std::vector<kturn::auth::RegionPolicy::Network> networks;
  for (const std::string& text : region_networks) {
    auto network = kturn::auth::RegionPolicy::parseNetwork(text);
    if (!network) {
      std::fprintf(stderr, "kturn-auth: --region-network: %s\n", network.error().message.c_str());
      return 2;
    }
    networks.push_back(std::move(*network));
  }
  // Threads started below inherit this mask; the main thread takes the signals with sigwait().
  sigset_t set = kturn::signals::blockTermination();

  kturn::auth::AuthHandlerOptions handler_options;
  handler_options.regions = kturn::auth::RegionPolicy(std::move(networks), region_order);
  if (const char* public_address = std::getenv("STUNNER_PUBLIC_ADDR")) {
    handler_options.public_address = public_address;
    spdlog::info("URIs name STUNNER_PUBLIC_ADDR {} unless a request asks for another",
                 public_address);
  }
  if (!token_file.empty()) {
    auto token = kturn::auth::readTokenFile(token_file);
    if (!token) {
      spdlog::critical("--token-file: {}", token.error().message);
      return 1;
    }
    handler_options.bearer_token = std::move(*token);
  }

  // One holder and follower per origin (a cluster, a region); the handlers read them all.
  std::vector<std::unique_ptr<kturn::auth::ConfigHolder>> holders;
  std::vector<std::unique_ptr<kturn::auth::ConfigFollower>> followers;
  kturn::auth::ConfigSources configs;
  for (std::size_t i = 0; i < origins.size(); ++i) {
    kturn::auth::ConfigFollowerOptions options{.origin = origins[i],
                                               .id = id,
                                               .token_file = discovery.cdsTokenFile,
                                               .ca_file = discovery.cdsCaFile,
                                               .ca_pem = discovery.cdsCaPem};
    if (const auto& own = (*credentials)[i]) {
      options.token_file = own->token_file;
      if (!own->ca_file.empty()) {
        options.ca_file = own->ca_file;
        options.ca_pem.clear();
      }
    }
    holders.push_back(std::make_unique<kturn::auth::ConfigHolder>());
    configs.push_back(holders.back().get());
    followers.push_back(
        std::make_unique<kturn::auth::ConfigFollower>(std::move(options), *holders.back()));
    if (auto started = followers.back()->start(); !started) {
      spdlog::critical("{}", started.error().message);
      return 1;
    }
  }
  std::atomic<bool> stopping{false};
  kturn::admin::AdminServer server({.host = address, .port = port});
  server.handle("/", kturn::auth::turnAuthHandler(configs, handler_options));
  server.handle("/ice", kturn::auth::iceAuthHandler(configs, handler_options));
  server.handle("/live", kturn::auth::liveHandler());
  server.handle("/ready", kturn::auth::readyHandler([&followers, &stopping] {
                  std::vector<std::string> reasons;
                  if (stopping.load()) reasons.push_back("shutting down");
                  for (const auto& follower : followers) {
                    if (!follower->synced())
                      reasons.push_back("no state read yet from " + follower->origin());
                  }
                  return reasons;
                }));
  if (auto started = server.start(); !started) {
    spdlog::critical("{}", started.error().message);
    return 1;
  }
  spdlog::info("kturn-auth listening on http://{}:{}", address, server.port());

  int signal_number = 0;
  sigwait(&set, &signal_number);
  if (signal_number == SIGTERM && shutdown_delay > 0) {
    // Kubernetes sends SIGTERM as it starts taking the pod out of its Services; clients routed
    // here until every node has caught up still get answers.
    stopping.store(true);
    spdlog::info("SIGTERM: answering for {} s more (/ready 503), then stopping", shutdown_delay);
    const auto whole = static_cast<time_t>(shutdown_delay);
    const timespec delay{.tv_sec = whole,
                         .tv_nsec = static_cast<long>((shutdown_delay - whole) * 1e9)};
    if (sigtimedwait(&set, nullptr, &delay) > 0) spdlog::info("second signal: stopping now");
  } else {
    spdlog::info("signal {}: stopping", signal_number);
  }
  server.stop();
  for (auto& follower : followers) follower->stop();
  return 0;
}
