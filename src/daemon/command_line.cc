#include "daemon/command_line.h"

#include <CLI/CLI.hpp>
#include <cstdlib>

#include "daemon/daemon.h"

namespace kturn::daemon {

std::string CommandLine::initialLogSpec() const {
  if (!log_spec.empty()) return log_spec;
  return verbose ? "all:DEBUG" : "all:INFO";
}

void addOptions(CLI::App& app, CommandLine& line) {
  app.add_option("-c,--config", line.origin,
                 "config origin: file://PATH (or a path), a config discovery server (http://, "
                 "ws://, https://, wss://, or IP:port), or k8s (find the discovery server through "
                 "the Kubernetes API, as stunnerd); default: $STUNNER_CONFIG_ORIGIN, else the "
                 "embedded default config");
  app.add_option("uri", line.turn_uri,
                 "TURN URI for a one-shot config, e.g. turn://u:p@127.0.0.1:3478");
  app.add_option("-i,--id", line.id,
                 "id at the config discovery server, <namespace>/<name> (default: "
                 "$STUNNER_NAMESPACE/$STUNNER_NAME, else default/stunnerd-<hostname>)");
  app.add_option("-l,--log", line.log_spec,
                 "log levels, e.g. all:INFO or all:WARN,cds:DEBUG (default: the config's "
                 "admin.loglevel, else all:INFO)");
  app.add_option("--log-format", line.log_format, "log line format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_flag("-v,--verbose", line.verbose, "log at all:DEBUG unless -l is given (stunnerd's)");
  app.add_option("-u,--udp-thread-num,--workers", line.workers,
                 "worker threads, each with its own SO_REUSEPORT sockets (default: one per core)")
      ->check(CLI::Range(size_t{0}, Daemon::kMaxWorkers));
  app.add_option("--grace-period", line.grace_seconds,
                 "on SIGTERM, serve existing allocations for at most this many seconds")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--permission-lifetime", line.permission_seconds,
                 "seconds a permission lasts unless refreshed (RFC 8656: 300; as coturn's flag)")
      ->check(CLI::Range(int64_t{1}, int64_t{3600}));
  app.add_option("--channel-lifetime", line.channel_seconds,
                 "seconds a channel binding lasts unless refreshed (RFC 8656: 600; as coturn's)")
      ->check(CLI::Range(int64_t{1}, int64_t{3600}));
  app.add_flag("--no-udp-segmentation", line.no_udp_segmentation,
               "send and receive every datagram as its own message: no UDP GSO trains, no UDP "
               "GRO on TURN-UDP listeners (for comparisons; both are used where the kernel "
               "supports them)");
  if (const char* v = std::getenv("KTURN_RELAY_SOCKETS")) line.relay_sockets = v;
  app.add_option("--relay-sockets", line.relay_sockets,
                 "per-allocation: a UDP socket per allocation; shared: each worker serves all its "
                 "relay ports from one socket (an sk_lookup program) and sends through a raw "
                 "socket: no descriptor per allocation (needs CAP_BPF, CAP_NET_ADMIN, "
                 "CAP_NET_RAW and a relay port range; falls back to per-allocation)")
      ->check(CLI::IsMember({"per-allocation", "shared"}));
  app.add_flag("--force-ready-status", line.force_ready,
               "keep /ready at 200 while terminating (stunnerd's flag)");
  app.add_flag("--ready-while-draining", line.ready_while_draining,
               "keep /ready at 200 while draining, and only then (not before the first config, "
               "not over a capacity mark): a node that announces a route per ready pod keeps "
               "it, and the drained calls' flows, until the pod exits");
  app.add_flag("-w,--watch", line.watch,
               "apply config changes live: the file (inotify) or the discovery server's pushes");
  app.add_flag("--log-anonymize-client", line.session_log.anonymize_client,
               "session records keep only the client's /24 (IPv4) or /48 (IPv6)");
  app.add_flag("--log-hash-user", line.session_log.hash_user,
               "session records carry a keyed hash of the username, not the name");
  app.add_flag("-d,--dry-run", line.dry_run, "stunnerd's test flag: accepted, ignored");
  if (const char* v = std::getenv("KTURN_ADMIN_ADDRESS")) line.admin_address = v;
  if (const char* v = std::getenv("KTURN_STATUS_TOKEN_FILE")) line.status_token_file = v;
  app.add_option("--admin-address", line.admin_address,
                 "admin endpoints that name no host (http://:8086) bind this address and "
                 "loopback, not every address: the pod IP ($KTURN_ADMIN_ADDRESS)");
  app.add_option("--status-token-file", line.status_token_file,
                 "/status requires \"Authorization: Bearer <the token in this file>\"; /live and "
                 "/ready stay open ($KTURN_STATUS_TOKEN_FILE; $KTURN_STATUS_TOKEN holds the "
                 "token itself)");

  k8s::addDiscoveryOptions(app, line.discovery, "Kubernetes (for -c k8s)");
}

std::vector<std::string> ignoredFlags(const CLI::App& app) {
  std::vector<std::string> out;
  if (app.count("--dry-run") > 0) out.emplace_back("--dry-run");
  for (std::string& flag : k8s::ignoredDiscoveryFlags(app)) out.push_back(std::move(flag));
  return out;
}

}  // namespace kturn::daemon
