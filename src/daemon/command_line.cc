#include "daemon/command_line.h"

#include <CLI/CLI.hpp>
#include <cstdlib>

#include "daemon/daemon.h"

namespace kturn::daemon {

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// stunnerd's flags that kturnd takes and does nothing with; each value is only stored to be
// parsed. Long names, as ignoredFlags() reports them.
constexpr const char* kIgnoredWithValue[] = {
    "--namespace", "--user",     "--cluster",  "--as",        "--as-group",
    "--as-uid",    "--username", "--password", "--cache-dir", "--request-timeout",
};
constexpr const char* kIgnoredFlags[] = {"--dry-run", "--disable-compression"};

}  // namespace

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
  app.add_flag("--force-ready-status", line.force_ready,
               "keep /ready at 200 while terminating (stunnerd's flag)");
  app.add_flag("-w,--watch", line.watch,
               "apply config changes live: the file (inotify) or the discovery server's pushes");
  app.add_flag("--log-anonymize-client", line.session_log.anonymize_client,
               "session records keep only the client's /24 (IPv4) or /48 (IPv6)");
  app.add_flag("--log-hash-user", line.session_log.hash_user,
               "session records carry a keyed hash of the username, not the name");
  app.add_flag("-d,--dry-run", line.dry_run, "stunnerd's test flag: accepted, ignored");

  // -c k8s: where the config discovery server is (stunnerd's flags and environment).
  line.cds_server_address = env("CDS_SERVER_ADDR");
  line.cds_server_namespace = env("CDS_SERVER_NAMESPACE");
  // A value that is not a port keeps the default, as stunnerd does.
  if (const int port = std::atoi(env("CDS_SERVER_PORT").c_str()); port > 0 && port <= 65535) {
    line.cds_server_port = port;
  }
  const char* k8s = "Kubernetes (for -c k8s)";
  app.add_option("--cds-server-address", line.cds_server_address,
                 "-c k8s: the config discovery server's address, no lookup ($CDS_SERVER_ADDR)")
      ->group(k8s);
  app.add_option("--cds-server-namespace", line.cds_server_namespace,
                 "-c k8s: the namespace to look for the discovery server in (default: all; "
                 "$CDS_SERVER_NAMESPACE)")
      ->group(k8s);
  app.add_option("--cds-server-port", line.cds_server_port,
                 "-c k8s: the discovery server's port ($CDS_SERVER_PORT)")
      ->check(CLI::Range(1, 65535))
      ->group(k8s);
  app.add_option("--kubeconfig", line.kube.kubeconfig, "kubeconfig file (default: in-cluster)")
      ->group(k8s);
  app.add_option("--context", line.kube.context, "kubeconfig context")->group(k8s);
  app.add_option("-s,--server", line.kube.server, "the API server's URL")->group(k8s);
  app.add_option("--token", line.kube.token, "bearer token for the API server")->group(k8s);
  app.add_option("--certificate-authority", line.kube.certificateAuthority, "CA file")->group(k8s);
  app.add_option("--client-certificate", line.kube.clientCertificate, "client certificate file")
      ->group(k8s);
  app.add_option("--client-key", line.kube.clientKey, "client key file")->group(k8s);
  app.add_option("--tls-server-name", line.kube.tlsServerName, "server name to verify")->group(k8s);
  app.add_flag("--insecure-skip-tls-verify", line.kube.insecureSkipTlsVerify,
               "do not verify the API server's certificate")
      ->group(k8s);
  for (const char* name : kIgnoredWithValue) {
    const std::string flags = std::string(name) == "--namespace" ? "-n,--namespace" : name;
    app.add_option(flags)
        ->description("stunnerd's Kubernetes client flag: accepted, ignored")
        ->group(k8s);
  }
  app.add_flag(std::string(kIgnoredFlags[1]))
      ->description("stunnerd's Kubernetes client flag: accepted, ignored")
      ->group(k8s);
}

std::vector<std::string> ignoredFlags(const CLI::App& app) {
  std::vector<std::string> out;
  for (const char* name : kIgnoredFlags) {
    if (app.count(name) > 0) out.emplace_back(name);
  }
  for (const char* name : kIgnoredWithValue) {
    if (app.count(name) > 0) out.emplace_back(name);
  }
  return out;
}

std::string explicitCdsOrigin(const CommandLine& line) {
  if (line.cds_server_address.empty()) return "";
  const bool v6 = line.cds_server_address.find(':') != std::string::npos;
  const std::string host = v6 ? "[" + line.cds_server_address + "]" : line.cds_server_address;
  return "http://" + host + ":" + std::to_string(line.cds_server_port);
}

}  // namespace kturn::daemon
