// Where a config discovery (CDS) server runs, found through the Kubernetes API, as stunnerd's
// `-c k8s` finds it: the pods labelled stunner.l7mp.io/config-discovery-service=enabled (the
// operator's pods, STUNner's and kturn's alike).
#pragma once

#include <string>
#include <string_view>

#include "k8s/api_client.h"
#include "kturn/result.h"

namespace kturn::k8s {

inline constexpr std::string_view kConfigDiscoveryLabel =
    "stunner.l7mp.io/config-discovery-service=enabled";

// http://<pod IP>:<port> of the first running labelled pod in `ns` ("" for every namespace), by
// namespace and name. stunnerd reaches it through a port-forward from outside the cluster; kturnd
// connects to the pod IP, so it runs where pod IPs are reachable (in the cluster), or is given the
// address instead (--cds-server-address). An error names what was searched.
Result<std::string> findConfigDiscoveryServer(ApiClient& client, std::string_view ns, int port);

}  // namespace kturn::k8s
