// The flags with which STUNner's binaries find the config discovery server through Kubernetes:
// the CDS discovery flags of stunner/pkg/config/client (--cds-server-address, -namespace, -port,
// with CDS_SERVER_* defaults) and the Kubernetes client flags of k8s.io/cli-runtime. stunnerd
// reads them for `-c k8s`, stunner-auth-service always; kturnd and kturn-auth take the same.
#pragma once

#include <string>
#include <vector>

#include "kturn/result.h"

namespace CLI {
class App;
}

namespace kturn::k8s {

// The Kubernetes client flags (cli-runtime ConfigFlags) kturn's client has a notion of.
struct KubeFlags {
  std::string kubeconfig{};
  std::string context{};
  std::string server{};
  std::string token{};
  std::string certificateAuthority{};
  std::string clientCertificate{};
  std::string clientKey{};
  std::string tlsServerName{};
  bool insecureSkipTlsVerify = false;
};

struct DiscoveryFlags {
  std::string cdsServerAddress{};
  std::string cdsServerNamespace{};
  int cdsServerPort = 13478;
  // kturn's authenticated config discovery (docs/cds.md#authentication), for any CDS origin:
  // the bearer token file (--cds-token-file, $KTURN_CDS_TOKEN_FILE), the CA to verify an https
  // server with (--cds-ca-file, $KTURN_CDS_CA_FILE; and $KTURN_CDS_CA, the PEM itself, which
  // kturn-operator sets in the pods it renders).
  std::string cdsTokenFile{};
  std::string cdsCaFile{};
  std::string cdsCaPem{};
  KubeFlags kube{};
};

// Registers the flags on `app` in help group `group`, with the defaults from CDS_SERVER_ADDR,
// CDS_SERVER_NAMESPACE, CDS_SERVER_PORT and the KTURN_CDS_* variables read now (a value that is not
// a port keeps 13478, as in STUNner). cli-runtime's flags that kturn has no use for (--namespace,
// --as, ...) are accepted and stored nowhere. `flags` must outlive `app`.
void addDiscoveryOptions(CLI::App& app, DiscoveryFlags& flags, const std::string& group);

// After parsing: the accepted-and-ignored flags that were given, by their long names.
std::vector<std::string> ignoredDiscoveryFlags(const CLI::App& app);

// http://ADDRESS:PORT when --cds-server-address is given (no lookup); empty otherwise.
std::string explicitCdsOrigin(const DiscoveryFlags& flags);

// The config discovery server's origin: the explicit address, else the labelled pod found through
// the API server (a kubeconfig if given, else in-cluster credentials; the other client flags
// applied on top). An error says what failed or what was searched.
Result<std::string> discoverConfigDiscoveryServer(const DiscoveryFlags& flags);

}  // namespace kturn::k8s
