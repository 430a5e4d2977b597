// kturnd: the kturn data plane. Usage mirrors stunnerd:
//   kturnd                                    embedded default config (loopback, ephemeral auth)
//   kturnd -c file:///etc/kturn/stunnerd.conf STUNner dataplane config file
//   kturnd turn://user:pass@127.0.0.1:3478    one-shot config from a TURN URI
#include <signal.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "common/log.h"
#include "daemon/daemon.h"
#include "daemon/ice_server.h"

int main(int argc, char** argv) {
  CLI::App app{"kturnd: Kubernetes-native TURN media gateway, STUNner-compatible data plane"};
  std::string origin;
  std::string turn_uri;
  std::string log_spec = "all:INFO";
  size_t workers = 0;
  int64_t grace_seconds = 3600;
  bool force_ready = false;
  bool watch = false;
  kturn::daemon::SessionLogOptions session_log;
  app.add_option("-c,--config", origin,
                 "config origin: file://PATH (or a path); empty for the embedded default");
  app.add_option("uri", turn_uri, "TURN URI for a one-shot config, e.g. turn://u:p@127.0.0.1:3478");
  app.add_option("-l,--log", log_spec, "log levels, e.g. all:INFO or all:WARN,turn:DEBUG");
  app.add_option("--udp-thread-num,--workers", workers,
                 "worker threads, each with its own SO_REUSEPORT sockets (default: one per core)");
  app.add_option("--grace-period", grace_seconds,
                 "on SIGTERM, serve existing allocations for at most this many seconds")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--force-ready-status", force_ready,
               "keep /ready at 200 while terminating (stunnerd's flag)");
  app.add_flag("-w,--watch", watch, "reload the config file when it changes (inotify)");
  app.add_flag("--log-anonymize-client", session_log.anonymize_client,
               "session records keep only the client's /24 (IPv4) or /48 (IPv6)");
  app.add_flag("--log-hash-user", session_log.hash_user,
               "session records carry a keyed hash of the username, not the name");
  CLI11_PARSE(app, argc, argv);

  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  if (auto ok = kturn::log::configure(log_spec); !ok) {
    std::fprintf(stderr, "kturnd: -l: %s\n", ok.error().message.c_str());
    return 2;
  }
  if (!origin.empty() && !turn_uri.empty()) {
    std::fprintf(stderr, "kturnd: give either -c or a TURN URI, not both\n");
    return 2;
  }

  // Workers inherit this mask; the main thread takes the signals with sigwait().
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  kturn::daemon::Daemon::Options options;
  options.origin = turn_uri.empty() ? origin : turn_uri;
  options.workers = workers;
  options.grace_period = std::chrono::seconds(grace_seconds);
  options.force_ready = force_ready;
  options.watch = watch;
  options.session_log = session_log;
  kturn::daemon::Daemon daemon(options);
  if (auto started = daemon.start(); !started) {
    spdlog::critical("{}", started.error().message);
    return 1;
  }
  spdlog::info("kturnd ready ({})", daemon.loaded().description);
  const auto now = std::chrono::system_clock::now();
  if (auto entry = kturn::daemon::iceServerEntry(daemon.config(), now)) {
    std::printf("ICE server for clients (RTCPeerConnection iceServers entry):\n%s\n",
                entry->c_str());
    std::fflush(stdout);
  }
  daemon.waitForSignals();
  const auto stats = daemon.collectStats();
  daemon.stop();
  spdlog::info("stopped: {} allocations created, {} packets relayed to peers, {} to clients",
               stats.turn.allocations_created, stats.turn.client_packets_relayed,
               stats.turn.peer_packets_relayed);
  return 0;
}
