// `kturnctl config`: a Gateway's dataplane config from a config discovery (CDS) server, once or
// watched, or every config the server holds (docs/kturnctl.md, docs/cds.md).
//   kturnctl config media/gw                       GET /api/v1/configs/media/gw
//   kturnctl config media/gw -w                    ...?watch=true: every pushed config, until
//                                                  SIGINT/SIGTERM
//   kturnctl config --all [-n media]               GET /api/v1/configs[/media]
//   kturnctl config --all [-n media] -w            ...?watch=true: every config as it changes,
//                                                  deletions on stderr
#pragma once

#include <iosfwd>
#include <string>

#include "cli/stop_latch.h"

namespace CLI {
class App;
}

namespace kturn::cli {

// Where kturnctl looks for a CDS server when neither -c nor STUNNER_CONFIG_ORIGIN says.
inline constexpr const char* kDefaultCdsServer = "http://127.0.0.1:13478";

struct ConfigCommand {
  std::string id{};          // "namespace/name"; empty with --all
  bool all = false;          // list every config
  std::string namespace_{};  // --all: only this namespace
  std::string server{};      // empty: $STUNNER_CONFIG_ORIGIN, else kDefaultCdsServer
  bool watch = false;
  std::string output = "yaml";  // or "json"
  double timeout_seconds = 5;   // connect + request (a watch: each connection attempt)
  // kturn-operator --cds-auth: the bearer token file and the CA of an https server.
  std::string token_file{};
  std::string ca_file{};
};

// Registers the `config` subcommand; `command` must outlive `app`.
CLI::App* addConfigCommand(CLI::App& app, ConfigCommand& command);

// Runs it: configs to `out`, errors to `err`. A watch prints from the CDS client's thread (each
// config whole, then a flush) until `stop` is tripped, and needs `stop`. Returns an exit status
// (exit_codes.h): an unknown id, an unreachable server or an invalid answer is kExitFailure.
int runConfig(const ConfigCommand& command, std::ostream& out, std::ostream& err,
              StopLatch* stop = nullptr);

}  // namespace kturn::cli
