// kturnd: the kturn data plane. Usage mirrors stunnerd:
//   kturnd                                    embedded default config (loopback, ephemeral auth)
//   kturnd -c file:///etc/kturn/stunnerd.conf STUNner dataplane config file
//   kturnd -w -c http://stunner-cds:13478     configs pushed by a config discovery server
//   kturnd turn://user:pass@127.0.0.1:3478    one-shot config from a TURN URI
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
#include "daemon/daemon.h"
#include "daemon/ice_server.h"

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
  std::string origin;
  std::string turn_uri;
  std::string log_spec;
  std::string log_format = "text";
  std::string id;
  size_t workers = 0;
  int64_t grace_seconds = 3600;
  int64_t permission_seconds = 300;
  int64_t channel_seconds = 600;
  bool force_ready = false;
  bool watch = false;
  bool no_udp_segmentation = false;
  kturn::daemon::SessionLogOptions session_log;
  app.add_option("-c,--config", origin,
                 "config origin: file://PATH (or a path), or a config discovery server "
                 "(http://, ws://, https://, wss://, or IP:port); default: $STUNNER_CONFIG_ORIGIN, "
                 "else the embedded default config");
  app.add_option("uri", turn_uri, "TURN URI for a one-shot config, e.g. turn://u:p@127.0.0.1:3478");
  app.add_option("-i,--id", id,
                 "id at the config discovery server, <namespace>/<name> (default: "
                 "$STUNNER_NAMESPACE/$STUNNER_NAME, else default/stunnerd-<hostname>)");
  app.add_option("-l,--log", log_spec,
                 "log levels, e.g. all:INFO or all:WARN,cds:DEBUG (default: the config's "
                 "admin.loglevel, else all:INFO)");
  app.add_option("--log-format", log_format, "log line format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--udp-thread-num,--workers", workers,
                 "worker threads, each with its own SO_REUSEPORT sockets (default: one per core)")
      ->check(CLI::Range(size_t{0}, kturn::daemon::Daemon::kMaxWorkers));
  app.add_option("--grace-period", grace_seconds,
                 "on SIGTERM, serve existing allocations for at most this many seconds")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--permission-lifetime", permission_seconds,
                 "seconds a permission lasts unless refreshed (RFC 8656: 300; as coturn's flag)")
      ->check(CLI::Range(int64_t{1}, int64_t{3600}));
  app.add_option("--channel-lifetime", channel_seconds,
                 "seconds a channel binding lasts unless refreshed (RFC 8656: 600; as coturn's)")
      ->check(CLI::Range(int64_t{1}, int64_t{3600}));
  app.add_flag("--no-udp-segmentation", no_udp_segmentation,
               "send and receive every datagram as its own message: no UDP GSO trains, no UDP "
               "GRO on TURN-UDP listeners (for comparisons; both are used where the kernel "
               "supports them)");
  app.add_flag("--force-ready-status", force_ready,
               "keep /ready at 200 while terminating (stunnerd's flag)");
  app.add_flag("-w,--watch", watch,
               "apply config changes live: the file (inotify) or the discovery server's pushes");
  app.add_flag("--log-anonymize-client", session_log.anonymize_client,
               "session records keep only the client's /24 (IPv4) or /48 (IPv6)");
  app.add_flag("--log-hash-user", session_log.hash_user,
               "session records carry a keyed hash of the username, not the name");
  CLI11_PARSE(app, argc, argv);

  kturn::log::setup(*kturn::log::parseFormat(log_format));
  if (auto ok = kturn::log::configure(log_spec.empty() ? "all:INFO" : log_spec); !ok) {
    std::fprintf(stderr, "kturnd: -l: %s\n", ok.error().message.c_str());
    return 2;
  }
  if (!origin.empty() && !turn_uri.empty()) {
    std::fprintf(stderr, "kturnd: give either -c or a TURN URI, not both\n");
    return 2;
  }
  raiseDescriptorLimit();
  if (origin.empty() && turn_uri.empty()) origin = env("STUNNER_CONFIG_ORIGIN");
  origin = kturn::daemon::normalizeOrigin(origin);

  // Workers inherit this mask; the main thread takes the signals with sigwait().
  kturn::signals::blockTermination(/*with_hangup=*/true);

  kturn::daemon::Daemon::Options options;
  options.origin = turn_uri.empty() ? origin : turn_uri;
  options.cds_id = id.empty() ? defaultCdsId() : id;
  options.cds_node = env("STUNNER_NODENAME");
  options.workers = workers;
  options.grace_period = std::chrono::seconds(grace_seconds);
  options.permission_lifetime = std::chrono::seconds(permission_seconds);
  options.channel_lifetime = std::chrono::seconds(channel_seconds);
  options.force_ready = force_ready;
  options.watch = watch;
  options.log_levels_from_config = log_spec.empty();
  options.session_log = session_log;
  options.udp_segmentation = !no_udp_segmentation;
  kturn::daemon::Daemon daemon(options);
  if (auto started = daemon.start(); !started) {
    spdlog::critical("{}", started.error().message);
    return 1;
  }
  const kturn::daemon::LoadedConfig loaded = daemon.loaded();
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
