// kturnd's command line: its own flags, and every flag stunnerd takes (cmd/stunnerd/main.go of
// STUNner), so that a Dataplane written for STUNner (`stunnerd -v -c ...`, `-w
// --udp-thread-num=16`, `-c k8s`) runs kturnd unchanged after the image swap.
//
// stunnerd's flags, as kturnd reads them:
//   -c, --config ORIGIN     the same; "k8s" finds the CDS server (k8s/discovery_flags.h)
//   -l, --log, --log-format, -i, --id, -w, --watch, --force-ready-status   the same
//   -u, --udp-thread-num N  worker threads (kturnd's model: one SO_REUSEPORT socket per worker)
//   -v, --verbose           -l all:DEBUG, unless -l is given
//   -d, --dry-run           accepted and ignored (stunnerd's test hook); logged once
//   --cds-server-address, --cds-server-namespace, --cds-server-port   used by -c k8s
//   the Kubernetes client flags (--kubeconfig, --context, -s/--server, --token, ...)   used by
//                           -c k8s where kturn's client has the notion; the rest accepted and
//                           logged once as ignored
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "k8s/discovery_flags.h"
#include "worker/session_log.h"

namespace CLI {
class App;
}

namespace kturn::daemon {

struct CommandLine {
  std::string origin{};
  std::string turn_uri{};
  std::string log_spec{};
  std::string log_format = "text";
  std::string id{};
  size_t workers = 0;
  int64_t grace_seconds = 3600;
  int64_t permission_seconds = 300;
  int64_t channel_seconds = 600;
  bool force_ready = false;
  bool ready_while_draining = false;  // --ready-while-draining
  bool watch = false;
  bool no_udp_segmentation = false;
  std::string relay_sockets = "per-allocation";  // --relay-sockets, $KTURN_RELAY_SOCKETS
  bool verbose = false;
  bool dry_run = false;
  std::string admin_address{};      // --admin-address, $KTURN_ADMIN_ADDRESS
  std::string status_token_file{};  // --status-token-file, $KTURN_STATUS_TOKEN_FILE
  worker::SessionLogOptions session_log{};
  // -c k8s: stunnerd's CDS server discovery and Kubernetes client flags.
  k8s::DiscoveryFlags discovery{};

  // The log levels to start with: -l, else all:DEBUG with -v, else all:INFO.
  std::string initialLogSpec() const;
};

// Registers every flag on `app`; `line` must outlive it. Call before app.parse().
void addOptions(CLI::App& app, CommandLine& line);

// After parsing: the stunnerd flags that were given and that kturnd accepts without acting on
// them, by their long names, for one log line.
std::vector<std::string> ignoredFlags(const CLI::App& app);

}  // namespace kturn::daemon
