#include "cli/config_command.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>

#include "cds/cds_client.h"
#include "cds/cds_list_client.h"
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
      .tls_ca_file = command.ca_file,
      .bearer_token_file = command.token_file,
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
// and with the waiting thread, and what they do.
struct WatchState {
  WatchState(const ConfigCommand& command, std::ostream& out, std::ostream& err, StopLatch& stop)
      : command(command), out(out), err(err), stop(stop) {}

  void print(const std::string& id, config::StunnerConfig config) {
    std::lock_guard lock(mutex);
    last_error.clear();
    const auto it = printed.find(id);
    if (it != printed.end() && it->second == config) return;  // a reconnect resends it
    out << document(config, command.output, true) << std::flush;
    printed.insert_or_assign(id, std::move(config));
    if (!out) {
      output_broken = true;
      stop.requestStop();
    }
  }
  void deleted(const std::string& id) {
    std::lock_guard lock(mutex);
    last_error.clear();
    err << kPrefix << id << ": deleted\n" << std::flush;
    printed.erase(id);
  }
  void error(const Error& e) {  // an outage is reported once, not every second
    std::lock_guard lock(mutex);
    if (e.message == last_error) return;
    last_error = e.message;
    err << kPrefix << e.message << "\n" << std::flush;
  }
  // Until SIGINT/SIGTERM (or a broken output); `stopClient` joins the client's thread, so no
  // callback runs after it.
  int wait(const std::function<void()>& stopClient) {
    stop.wait();
    stopClient();
    if (output_broken) {
      err << kPrefix << "cannot write the output\n";
      return kExitFailure;
    }
    return kExitOk;
  }

  const ConfigCommand& command;
  std::ostream& out;
  std::ostream& err;
  StopLatch& stop;
  std::mutex mutex;
  std::map<std::string, config::StunnerConfig> printed;  // by id
  std::string last_error;
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
  WatchState state(command, out, err, stop);
  const std::string id = command.id;
  auto watching = client.watch({
      .on_config =
          [&](config::StunnerConfig config) {
            if (cds::isConfigDeleted(config)) {
              state.deleted(id);
            } else {
              state.print(id, std::move(config));
            }
          },
      .on_error = [&](const Error& e) { state.error(e); },
  });
  if (!watching) {
    err << kPrefix << watching.error().message << "\n";
    return kExitFailure;
  }
  return state.wait([&] { client.stop(); });
}

// --all --watch: every config (of one namespace with -n), as each arrives, deletions on stderr.
int watchAll(const ConfigCommand& command, const cds::CdsClientOptions& options, std::ostream& out,
             std::ostream& err, StopLatch& stop) {
  auto client = cds::CdsListClient::create(options, command.namespace_);
  if (!client) return usage(err, client.error().message);
  // Fail at once when the server cannot be reached at all, as a watch of one config does.
  if (auto now = cds::listConfigs(options, command.namespace_);
      !now && now.error().code == Error::Code::kIo) {
    err << kPrefix << now.error().message << "\n";
    return kExitFailure;
  }
  WatchState state(command, out, err, stop);
  auto watching = (*client)->watch({
      .on_config = [&](const std::string& id,
                       config::StunnerConfig config) { state.print(id, std::move(config)); },
      .on_delete = [&](const std::string& id) { state.deleted(id); },
      .on_error = [&](const Error& e) { state.error(e); },
  });
  if (!watching) {
    err << kPrefix << watching.error().message << "\n";
    return kExitFailure;
  }
  return state.wait([&] { (*client)->stop(); });
}

}  // namespace

CLI::App* addConfigCommand(CLI::App& app, ConfigCommand& command) {
  CLI::App* sub = app.add_subcommand(
      "config",
      "Print a Gateway's dataplane config as a config discovery (CDS) server serves it to kturnd "
      "(or stunnerd), once or, with -w, every time it changes; --all lists every config the "
      "server holds (with -w: watches them all). Exit status: 0 ok, 1 unknown id, unreachable "
      "server or invalid answer, 2 "
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
  sub->add_option("--token-file", command.token_file,
                  "a file holding the bearer token an authenticating server wants (kturn-operator "
                  "--cds-auth: a ServiceAccount token of audience kturn-cds)");
  sub->add_option("--ca-file", command.ca_file,
                  "verify an https server against this CA (PEM; the operator's is ca.crt of its "
                  "kturn-cds-ca Secret)");
  return sub;
}

int runConfig(const ConfigCommand& command, std::ostream& out, std::ostream& err, StopLatch* stop) {
  if (command.all && !command.id.empty()) {
    return usage(err, "give a <namespace>/<name> or --all, not both");
  }
  if (!command.all && command.id.empty()) return usage(err, "give a <namespace>/<name>, or --all");
  if (!command.namespace_.empty() && !command.all) return usage(err, "--namespace needs --all");
  const auto [server, source] = serverOf(command);
  cds::CdsClientOptions options = clientOptions(command, server);
  if (auto origin = cds::parseOrigin(server); !origin) {
    return usage(err, source + ": " + origin.error().message);
  }
  if (command.watch && stop == nullptr) {
    err << kPrefix << "internal error: a watch needs a stop latch\n";
    return kExitFailure;
  }
  if (command.all) {
    return command.watch ? watchAll(command, options, out, err, *stop)
                         : listAll(command, options, out, err);
  }

  auto client = cds::CdsClient::create(options);
  if (!client) return usage(err, client.error().message);
  if (command.watch) return watchOne(command, **client, out, err, *stop);
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
