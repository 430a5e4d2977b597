// kturnd: the kturn data plane. Usage mirrors stunnerd:
//   kturnd                                    embedded default config (loopback, ephemeral auth)
//   kturnd -c file:///etc/kturn/stunnerd.conf STUNner dataplane config file
//   kturnd -w -c http://stunner-cds:13478     configs pushed by a config discovery server
//   kturnd turn://user:pass@127.0.0.1:3478    one-shot config from a TURN URI
//   kturnd -v -w -c k8s                       stunnerd's flags too (daemon/command_line.h)
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "common/log.h"
#include "common/signals.h"
#include "daemon/command_line.h"
#include "daemon/daemon.h"
#include "daemon/ice_server.h"
#include "k8s/discovery_flags.h"

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// stunnerd's default CDS id: STUNNER_NAMESPACE/STUNNER_NAME when both are set, else
// default/stunnerd-<hostname>.
std::string defaultCdsId() {
  const std::string ns = env("STUNNER_NAMESPACE");
  const std::string name = env("STUNNER_NAME");
  if (!ns.empty() && !name.empty()) return ns + "/" + name;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return "default/stunnerd-" + std::string(host);
}

// Every allocation holds a relay socket and every TURN-TCP/TLS client a connection: the usual soft
// descriptor limit (1024) would cap kturnd far below its own limits (8192 connections per
// listener and worker). Raise it to the hard limit, as servers do.
void raiseDescriptorLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  const rlim_t before = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) == 0) {
    spdlog::info("file descriptor limit raised from {} to {}", before, limit.rlim_max);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kturnd: Kubernetes-native TURN media gateway, STUNner-compatible data plane"};
  kturn::daemon::CommandLine line;
  kturn::daemon::addOptions(app, line);
  CLI11_PARSE(app, argc, argv);

  kturn::log::setup(*kturn::log::parseFormat(line.log_format));
  if (auto ok = kturn::log::configure(line.initialLogSpec()); !ok) {
    std::fprintf(stderr, "kturnd: -l: %s\n", ok.error().message.c_str());
    return 2;
  }
  if (!line.origin.empty() && !line.turn_uri.empty()) {
    std::fprintf(stderr, "kturnd: give either -c or a TURN URI, not both\n");
    return 2;
  }
  if (const auto ignored = kturn::daemon::ignoredFlags(app); !ignored.empty()) {
    spdlog::info("stunnerd flags accepted and ignored: {}", fmt::join(ignored, " "));
  }
  raiseDescriptorLimit();
  std::string origin = line.origin;
  if (origin.empty() && line.turn_uri.empty()) origin = env("STUNNER_CONFIG_ORIGIN");
  if (origin == "k8s") {
    auto found = kturn::k8s::discoverConfigDiscoveryServer(line.discovery);
    if (!found) {
      spdlog::critical("-c k8s: {}", found.error().message);
      return 1;
    }
    spdlog::info("-c k8s: config discovery server {}", *found);
    origin = *found;
  }
  origin = kturn::config::normalizeOrigin(origin);

  // Workers inherit this mask; the main thread takes the signals with sigwait().
  kturn::signals::blockTermination(/*with_hangup=*/true);

  kturn::daemon::Daemon::Options options;
  options.origin = line.turn_uri.empty() ? origin : line.turn_uri;
  options.cds_id = line.id.empty() ? defaultCdsId() : line.id;
  options.cds_node = env("STUNNER_NODENAME");
  options.cds_token_file = line.discovery.cdsTokenFile;
  options.cds_ca_file = line.discovery.cdsCaFile;
  options.cds_ca_pem = line.discovery.cdsCaPem;
  options.admin_address = line.admin_address;
  options.status_token_file = line.status_token_file;
  options.status_token = env("KTURN_STATUS_TOKEN");
  options.workers = line.workers;
  options.grace_period = std::chrono::seconds(line.grace_seconds);
  options.permission_lifetime = std::chrono::seconds(line.permission_seconds);
  options.channel_lifetime = std::chrono::seconds(line.channel_seconds);
  options.force_ready = line.force_ready;
  options.ready_while_draining = line.ready_while_draining;
  options.watch = line.watch;
  // -v, like -l, fixes the levels; without either the config's admin.loglevel applies.
  options.log_levels_from_config = line.log_spec.empty() && !line.verbose;
  options.session_log = line.session_log;
  options.udp_segmentation = !line.no_udp_segmentation;
  options.shared_relay_sockets = line.relay_sockets == "shared";
  kturn::daemon::Daemon daemon(options);
  if (auto started = daemon.start(); !started) {
    spdlog::critical("{}", started.error().message);
    return 1;
  }
  const kturn::config::LoadedConfig loaded = daemon.loaded();
  if (loaded.description.empty()) {
    spdlog::info("kturnd started; not ready until the first config arrives");
  } else {
    spdlog::info("kturnd ready ({})", loaded.description);
    const auto now = std::chrono::system_clock::now();
    if (auto entry = kturn::daemon::iceServerEntry(loaded.config, now)) {
      std::printf("ICE server for clients (RTCPeerConnection iceServers entry):\n%s\n",
                  entry->c_str());
      std::fflush(stdout);
    }
  }
  daemon.waitForSignals();
  const auto stats = daemon.collectStats();
  daemon.stop();
  spdlog::info("stopped: {} allocations created, {} packets relayed to peers, {} to clients",
               stats.turn.allocations_created, stats.turn.client_packets_relayed,
               stats.turn.peer_packets_relayed);
  return 0;
}
