#include "k8s/discovery_flags.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <utility>

#include "k8s/api_client.h"
#include "k8s/config_discovery_lookup.h"
#include "k8s/rest_config.h"

namespace kturn::k8s {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// cli-runtime's flags kturn takes and does nothing with; each value is only stored to be parsed.
// Long names, as ignoredDiscoveryFlags() reports them.
constexpr const char* kIgnoredWithValue[] = {
    "--namespace", "--user",     "--cluster",  "--as",        "--as-group",
    "--as-uid",    "--username", "--password", "--cache-dir", "--request-timeout",
};
constexpr const char* kIgnoredFlag = "--disable-compression";

}  // namespace

void addDiscoveryOptions(CLI::App& app, DiscoveryFlags& flags, const std::string& group) {
  flags.cdsServerAddress = env("CDS_SERVER_ADDR");
  flags.cdsServerNamespace = env("CDS_SERVER_NAMESPACE");
  if (const int port = std::atoi(env("CDS_SERVER_PORT").c_str()); port > 0 && port <= 65535) {
    flags.cdsServerPort = port;
  }
  app.add_option("--cds-server-address", flags.cdsServerAddress,
                 "the config discovery server's address, no lookup ($CDS_SERVER_ADDR)")
      ->group(group);
  app.add_option("--cds-server-namespace", flags.cdsServerNamespace,
                 "the namespace to look for the discovery server in (default: all; "
                 "$CDS_SERVER_NAMESPACE)")
      ->group(group);
  app.add_option("--cds-server-port", flags.cdsServerPort,
                 "the discovery server's port ($CDS_SERVER_PORT)")
      ->check(CLI::Range(1, 65535))
      ->group(group);
  flags.cdsTokenFile = env("KTURN_CDS_TOKEN_FILE");
  flags.cdsCaFile = env("KTURN_CDS_CA_FILE");
  flags.cdsCaPem = env("KTURN_CDS_CA");
  app.add_option("--cds-token-file", flags.cdsTokenFile,
                 "send the bearer token in this file to the config discovery server, re-read "
                 "when it changes (kturn-operator --cds-auth; $KTURN_CDS_TOKEN_FILE)")
      ->group(group);
  app.add_option("--cds-ca-file", flags.cdsCaFile,
                 "verify an https config discovery server against this CA (PEM; "
                 "$KTURN_CDS_CA_FILE; $KTURN_CDS_CA holds the PEM itself)")
      ->group(group);
  KubeFlags& kube = flags.kube;
  app.add_option("--kubeconfig", kube.kubeconfig, "kubeconfig file (default: in-cluster)")
      ->group(group);
  app.add_option("--context", kube.context, "kubeconfig context")->group(group);
  app.add_option("-s,--server", kube.server, "the API server's URL")->group(group);
  app.add_option("--token", kube.token, "bearer token for the API server")->group(group);
  app.add_option("--certificate-authority", kube.certificateAuthority, "CA file")->group(group);
  app.add_option("--client-certificate", kube.clientCertificate, "client certificate file")
      ->group(group);
  app.add_option("--client-key", kube.clientKey, "client key file")->group(group);
  app.add_option("--tls-server-name", kube.tlsServerName, "server name to verify")->group(group);
  app.add_flag("--insecure-skip-tls-verify", kube.insecureSkipTlsVerify,
               "do not verify the API server's certificate")
      ->group(group);
  for (const char* name : kIgnoredWithValue) {
    const std::string names = std::string(name) == "--namespace" ? "-n,--namespace" : name;
    app.add_option(names)->description("Kubernetes client flag: accepted, ignored")->group(group);
  }
  app.add_flag(kIgnoredFlag)
      ->description("Kubernetes client flag: accepted, ignored")
      ->group(group);
}

std::vector<std::string> ignoredDiscoveryFlags(const CLI::App& app) {
  std::vector<std::string> out;
  if (app.count(kIgnoredFlag) > 0) out.emplace_back(kIgnoredFlag);
  for (const char* name : kIgnoredWithValue) {
    if (app.count(name) > 0) out.emplace_back(name);
  }
  return out;
}

std::string explicitCdsOrigin(const DiscoveryFlags& flags) {
  if (flags.cdsServerAddress.empty()) return "";
  const bool v6 = flags.cdsServerAddress.find(':') != std::string::npos;
  const std::string host = v6 ? "[" + flags.cdsServerAddress + "]" : flags.cdsServerAddress;
  return "http://" + host + ":" + std::to_string(flags.cdsServerPort);
}

Result<std::string> discoverConfigDiscoveryServer(const DiscoveryFlags& flags) {
  if (std::string origin = explicitCdsOrigin(flags); !origin.empty()) return origin;
  const KubeFlags& kube = flags.kube;
  auto config =
      kube.kubeconfig.empty() ? inClusterConfig() : loadKubeconfig(kube.kubeconfig, kube.context);
  if (!config) return config.error();
  if (!kube.server.empty()) {
    auto server = parseServerUrl(kube.server);
    if (!server) return server.error();
    config->host = server->host;
    config->port = server->port;
    config->tls = server->tls;
  }
  if (!kube.token.empty()) {
    config->token = kube.token;
    config->tokenFile.clear();  // the flag wins over the in-cluster token file
  }
  if (!kube.tlsServerName.empty()) config->tlsServerName = kube.tlsServerName;
  if (kube.insecureSkipTlsVerify) config->insecureSkipTlsVerify = true;
  for (auto [path, pem] : {std::pair{&kube.certificateAuthority, &config->caPem},
                           std::pair{&kube.clientCertificate, &config->clientCertPem},
                           std::pair{&kube.clientKey, &config->clientKeyPem}}) {
    if (path->empty()) continue;
    std::ifstream in(*path);
    if (!in) return makeError(Error::Code::kIo, "cannot read " + *path);
    pem->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto client = ApiClient::create(*config);
  if (!client) return client.error();
  return findConfigDiscoveryServer(**client, flags.cdsServerNamespace, flags.cdsServerPort);
}

}  // namespace kturn::k8s
