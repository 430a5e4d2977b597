#include "cli/config_command.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <ostream>

#include "cds/cds_client.h"
#include "cds/protocol.h"
#include "cli/exit_codes.h"
#include "config/serializer.h"

namespace kturn::cli {
namespace {

constexpr const char* kPrefix = "kturnctl config: ";

int usage(std::ostream& err, const std::string& message) {
  err << kPrefix << message << "\nRun with --help for more information.\n";
  return kExitUsage;
}

// -c, else $STUNNER_CONFIG_ORIGIN (kturnd's variable), else the local default; and where it came
// from, for messages.
std::pair<std::string, std::string> serverOf(const ConfigCommand& command) {
  if (!command.server.empty()) return {command.server, "-c"};
  const char* env = std::getenv("STUNNER_CONFIG_ORIGIN");
  if (env != nullptr && *env != '\0') return {env, "$STUNNER_CONFIG_ORIGIN"};
  return {kDefaultCdsServer, "-c"};
}

// One config as a document of its own: the compact JSON the CDS server sends, on one line, or
// block YAML. `stream`: YAML documents of a stream start with "---".
std::string document(const config::StunnerConfig& config, const std::string& output, bool stream) {
  if (output == "json") return config::toJson(config) + "\n";
  return (stream ? "---\n" : "") + config::toYaml(config);
}

cds::CdsClientOptions clientOptions(const ConfigCommand& command, std::string origin) {
  return {
      .origin = std::move(origin),
      .id = command.id,
      .request_timeout =
          std::chrono::milliseconds(static_cast<int64_t>(command.timeout_seconds * 1000)),
      // A user watching wants to see a deletion; it is reported on stderr, not printed.
      .suppress_delete = false,
      // The config as the server serves it: "$STUNNER_ADDR" is the pod's business, and this
      // machine's environment has no say in it.
      .expand_env = false,
  };
}

int listAll(const ConfigCommand& command, const cds::CdsClientOptions& options, std::ostream& out,
            std::ostream& err) {
  auto configs = cds::listConfigs(options, command.namespace_);
  if (!configs) {
    err << kPrefix << configs.error().message << "\n";
    return kExitFailure;
  }
  if (command.output == "json") {
    std::vector<const config::StunnerConfig*> items;
    for (const config::StunnerConfig& c : *configs) items.push_back(&c);
    out << cds::toListJson(items);
  } else {
    for (const config::StunnerConfig& c : *configs) out << document(c, command.output, true);
    if (configs->empty()) err << kPrefix << "no configs at " << options.origin << "\n";
  }
  out.flush();
  return out ? kExitOk : kExitFailure;
}

// What the watch callbacks share with each other (they run one at a time on the client's thread)
// and with the waiting thread.
struct WatchState {
  std::mutex mutex;
  std::optional<config::StunnerConfig> last;  // printed last; a reconnect resends it
  std::string last_error;                     // an outage is reported once, not every second
  bool output_broken = false;
};

int watchOne(const ConfigCommand& command, cds::CdsClient& client, std::ostream& out,
             std::ostream& err, StopLatch& stop) {
  // Fail at once when the server cannot be reached at all; a config that does not exist yet is
  // waited for, as kturnd's watch does.
  auto now = client.get();
  if (!now && now.error().code == Error::Code::kIo) {
    err << kPrefix << now.error().message << "\n";
    return kExitFailure;
  }
  if (!now && now.error().code == Error::Code::kNotFound) {
    err << kPrefix << command.id << ": no such config yet, waiting for it\n";
  }
  WatchState state;
  const std::string id = command.id;
  auto watching = client.watch({
      .on_config =
          [&](config::StunnerConfig config) {
            std::lock_guard lock(state.mutex);
            state.last_error.clear();
            if (cds::isConfigDeleted(config)) {
              err << kPrefix << id << ": deleted\n" << std::flush;
              state.last.reset();
              return;
            }
            if (state.last && *state.last == config) return;
            out << document(config, command.output, true) << std::flush;
            state.last = std::move(config);
            if (!out) {
              state.output_broken = true;
              stop.requestStop();
            }
          },
      .on_error =
          [&](const Error& e) {
            std::lock_guard lock(state.mutex);
            if (e.message == state.last_error) return;
            state.last_error = e.message;
            err << kPrefix << e.message << "\n" << std::flush;
          },
  });
  if (!watching) {
    err << kPrefix << watching.error().message << "\n";
    return kExitFailure;
  }
  stop.wait();
  client.stop();  // joins the client's thread: no callback runs after this
  if (state.output_broken) {
    err << kPrefix << "cannot write the output\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

CLI::App* addConfigCommand(CLI::App& app, ConfigCommand& command) {
  CLI::App* sub = app.add_subcommand(
      "config",
      "Print a Gateway's dataplane config as a config discovery (CDS) server serves it to kturnd "
      "(or stunnerd), once or, with -w, every time it changes; --all lists every config the "
      "server holds. Exit status: 0 ok, 1 unknown id, unreachable server or invalid answer, 2 "
      "bad usage.");
  sub->add_option("id", command.id, "the Gateway's <namespace>/<name> (the config id)");
  sub->add_flag("-a,--all", command.all, "list every config the server holds");
  sub->add_option("-n,--namespace", command.namespace_, "with --all: only this namespace");
  sub->add_option("-c,--cds-server", command.server,
                  std::string("config discovery server: http://, https://, ws://, wss:// or "
                              "host:port (default: $STUNNER_CONFIG_ORIGIN, else ") +
                      kDefaultCdsServer + ")");
  sub->add_flag("-w,--watch", command.watch,
                "print the config, then each config the server pushes, until SIGINT or SIGTERM");
  sub->add_option("-o,--output", command.output,
                  "yaml, or json (one line per config, as the server sends it)")
      ->check(CLI::IsMember({"yaml", "json"}))
      ->capture_default_str();
  sub->add_option("--timeout", command.timeout_seconds,
                  "seconds to connect and get an answer (a watch: per connection attempt)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return sub;
}

int runConfig(const ConfigCommand& command, std::ostream& out, std::ostream& err, StopLatch* stop) {
  if (command.all && !command.id.empty()) {
    return usage(err, "give a <namespace>/<name> or --all, not both");
  }
  if (!command.all && command.id.empty()) return usage(err, "give a <namespace>/<name>, or --all");
  if (!command.namespace_.empty() && !command.all) return usage(err, "--namespace needs --all");
  if (command.all && command.watch) {
    return usage(err, "--watch follows one <namespace>/<name>; --all cannot be watched");
  }
  const auto [server, source] = serverOf(command);
  cds::CdsClientOptions options = clientOptions(command, server);
  if (auto origin = cds::parseOrigin(server); !origin) {
    return usage(err, source + ": " + origin.error().message);
  }
  if (command.all) return listAll(command, options, out, err);

  auto client = cds::CdsClient::create(options);
  if (!client) return usage(err, client.error().message);
  if (command.watch) {
    if (stop == nullptr) {
      err << kPrefix << "internal error: a watch needs a stop latch\n";
      return kExitFailure;
    }
    return watchOne(command, **client, out, err, *stop);
  }
  auto config = (*client)->get();
  if (!config) {
    if (config.error().code == Error::Code::kNotFound) {
      err << kPrefix << "no config " << command.id << " at " << (*client)->origin().toString()
          << " (404)\n";
    } else {
      err << kPrefix << config.error().message << "\n";
    }
    return kExitFailure;
  }
  out << document(*config, command.output, false) << std::flush;
  return out ? kExitOk : kExitFailure;
}

}  // namespace kturn::cli
