#include "cli/auth_command.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <ostream>

#include "admin/handler.h"
#include "auth/auth_handlers.h"
#include "auth/config_holder.h"
#include "auth/token_file.h"
#include "cds/cds_client.h"
#include "cds/origin.h"
#include "cds/url_util.h"
#include "cli/exit_codes.h"
#include "cli/http_get.h"
#include "config/config_source.h"
#include "k8s/yaml_writer.h"

namespace kturn::cli {
namespace {

constexpr const char* kPrefix = "kturnctl auth: ";

int usage(std::ostream& err, const std::string& message) {
  err << kPrefix << message << "\nRun with --help for more information.\n";
  return kExitUsage;
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

std::chrono::milliseconds timeoutOf(const AuthCommand& command) {
  return std::chrono::milliseconds(static_cast<int64_t>(command.timeout_seconds * 1000));
}

// The endpoint path kturn-auth serves the service at.
std::string servicePath(const AuthCommand& command) {
  return command.service == "ice" ? "/ice" : "/";
}

// The answer of kturn-auth, or of its handlers run here: an HTTP status and a JSON body.
struct Answer {
  unsigned status = 0;
  std::string body;
};

// Loads the dataplane config at the origin, as kturnd would (-c). `usage_error` tells a bad
// flag from a config that cannot be had.
Result<config::StunnerConfig> loadConfig(const AuthCommand& command, const std::string& origin,
                                         bool& usage_error) {
  if (!cds::isCdsOrigin(origin)) {
    auto loaded = config::loadConfig(origin);
    if (!loaded) return loaded.error();
    return std::move(loaded->config);
  }
  std::string id = command.id;
  if (id.empty() && !env("STUNNER_NAMESPACE").empty() && !env("STUNNER_NAME").empty()) {
    id = env("STUNNER_NAMESPACE") + "/" + env("STUNNER_NAME");
  }
  if (id.empty()) {
    usage_error = true;
    return makeError(Error::Code::kInvalidArgument,
                     "a config discovery origin needs --id <namespace>/<name>");
  }
  auto client =
      cds::CdsClient::create({.origin = origin, .id = id, .request_timeout = timeoutOf(command)});
  if (!client) {
    usage_error = true;
    return client.error();
  }
  return (*client)->get();
}

// Mints with kturn-auth's own handlers on `config`: the same checks, credential and document.
Answer mintLocally(const AuthCommand& command, config::StunnerConfig config) {
  auth::ConfigHolder holder;
  holder.set(std::move(config));
  const auth::AuthHandlerOptions options{.clock = command.clock};
  const admin::Handler handler = command.service == "ice" ? auth::iceAuthHandler(holder, options)
                                                          : auth::turnAuthHandler(holder, options);
  const std::string query = authQuery(command);
  const admin::Request request{.method = "GET",
                               .target = servicePath(command) + "?" + query,
                               .path = servicePath(command),
                               .query = query,
                               .authorization = ""};
  admin::Response response = handler(request);
  return {response.status, std::move(response.body)};
}

int print(const AuthCommand& command, const std::string& body, std::ostream& out,
          std::ostream& err) {
  if (command.output == "yaml") {
    const auto tree = k8s::Json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (tree.is_discarded()) {
      err << kPrefix << "the answer is not JSON: " << errorMessage(body) << "\n";
      return kExitFailure;
    }
    out << k8s::toYaml(tree);
  } else {
    out << body;
    if (body.empty() || body.back() != '\n') out << "\n";
  }
  out.flush();
  return out ? kExitOk : kExitFailure;
}

int runLocal(const AuthCommand& command, std::ostream& out, std::ostream& err) {
  std::string origin = command.origin.empty() ? env("STUNNER_CONFIG_ORIGIN") : command.origin;
  if (origin.empty()) {
    return usage(err, "give a config origin (-c, or $STUNNER_CONFIG_ORIGIN) or --auth-server");
  }
  origin = config::normalizeOrigin(origin);
  bool usage_error = false;
  auto config = loadConfig(command, origin, usage_error);
  if (!config) {
    if (usage_error) return usage(err, config.error().message);
    err << kPrefix << config.error().message << "\n";
    return kExitFailure;
  }
  const Answer answer = mintLocally(command, std::move(*config));
  if (answer.status != 200) {
    err << kPrefix << origin << ": " << errorMessage(answer.body) << "\n";
    return kExitFailure;
  }
  return print(command, answer.body, out, err);
}

int runRemote(const AuthCommand& command, std::ostream& out, std::ostream& err) {
  auto server = parseServerUrl("--auth-server", command.auth_server, kDefaultAuthServerPort);
  if (!server) return usage(err, server.error().message);
  std::string token;
  if (!command.token_file.empty()) {
    auto read = auth::readTokenFile(command.token_file);
    if (!read) return usage(err, "--token-file: " + read.error().message);
    token = std::move(*read);
  }
  // A path in the URL is a prefix (kturn-auth behind a reverse proxy): /prefix/, /prefix/ice.
  std::string prefix = server->path;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  const std::string target = prefix + servicePath(command) + "?" + authQuery(command);
  auto reply = httpGet(
      {.server = *server, .target = target, .bearer_token = token, .timeout = timeoutOf(command)});
  if (!reply) {
    err << kPrefix << reply.error().message << "\n";
    return kExitFailure;
  }
  if (reply->status != 200) {
    err << kPrefix << "GET http://" << server->hostPort() << target << ": HTTP " << reply->status
        << ": " << errorMessage(reply->body) << "\n";
    return kExitFailure;
  }
  return print(command, reply->body, out, err);
}

}  // namespace

std::string authQuery(const AuthCommand& command) {
  std::string query = "service=turn";
  const auto add = [&query](const char* key, const std::string& value) {
    if (!value.empty()) query += std::string("&") + key + "=" + cds::percentEncode(value);
  };
  add("username", command.username);
  add("ttl", std::to_string(command.ttl));
  add("namespace", command.namespace_);
  add("gateway", command.gateway);
  add("listener", command.listener);
  add("public-addr", command.public_addr);
  add("iceTransportPolicy", command.ice_transport_policy);
  return query;
}

CLI::App* addAuthCommand(CLI::App& app, AuthCommand& command) {
  CLI::App* sub = app.add_subcommand(
      "auth",
      "Mint a TURN credential (--service turn: {username, password, ttl, uris}) or an ICE server "
      "configuration (--service ice: {iceServers, iceTransportPolicy}) as kturn-auth answers "
      "it: locally from a dataplane config (-c), or from a running kturn-auth (--auth-server). "
      "Exit status: 0 ok, 1 no config, no credential or an error answer, 2 bad usage.");
  CLI::Option* origin = sub->add_option(
      "-c,--config", command.origin,
      "dataplane config origin, as kturnd's -c: file://PATH or PATH, a TURN URI, or a config "
      "discovery server (http://, https://, ws://, wss://, IP:port) (default: "
      "$STUNNER_CONFIG_ORIGIN)");
  CLI::Option* id =
      sub->add_option("-i,--id", command.id,
                      "with a config discovery origin: the Gateway's <namespace>/<name> (default: "
                      "$STUNNER_NAMESPACE/$STUNNER_NAME)");
  CLI::Option* server = sub->add_option(
      "--auth-server", command.auth_server,
      "ask this kturn-auth (or STUNner auth service) instead: http://host[:port] (port 8088 "
      "when none)");
  server->excludes(origin);
  server->excludes(id);
  sub->add_option("--service", command.service,
                  "turn: a TURN REST API credential (GET /); ice: an RTCConfiguration (GET /ice)")
      ->check(CLI::IsMember({"turn", "ice"}))
      ->capture_default_str();
  sub->add_option("-u,--username", command.username,
                  "user id in the ephemeral username <expiry>:<username>");
  sub->add_option("--ttl", command.ttl, "credential lifetime in seconds")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--namespace", command.namespace_,
                  "only listeners of Gateways in this namespace");
  sub->add_option("--gateway", command.gateway, "with --namespace: only this Gateway's listeners");
  sub->add_option("--listener", command.listener,
                  "with --namespace and --gateway: only this listener");
  sub->add_option("--public-addr", command.public_addr,
                  "host to put in the URIs instead of the listeners' addresses");
  sub->add_option("--ice-transport-policy", command.ice_transport_policy,
                  "iceTransportPolicy of --service ice: all (default), relay or public")
      ->check(CLI::IsMember({"all", "relay", "public"}));
  sub->add_option("--token-file", command.token_file,
                  "with --auth-server: a file holding the bearer token kturn-auth requires")
      ->needs(server);
  sub->add_option("-o,--output", command.output, "json (as kturn-auth answers), or yaml")
      ->check(CLI::IsMember({"json", "yaml"}))
      ->capture_default_str();
  sub->add_option("--timeout", command.timeout_seconds,
                  "seconds to connect and get an answer (CDS origins, --auth-server)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return sub;
}

int runAuth(const AuthCommand& command, std::ostream& out, std::ostream& err) {
  if (!command.auth_server.empty()) return runRemote(command, out, err);
  return runLocal(command, out, err);
}

}  // namespace kturn::cli
