#include "k8s/config_discovery_lookup.h"

#include <algorithm>
#include <vector>

namespace kturn::k8s {

Result<std::string> findConfigDiscoveryServer(ApiClient& client, std::string_view ns, int port) {
  const std::string where = ns.empty() ? "any namespace" : "namespace " + std::string(ns);
  auto list =
      client.list(resources::pod(), ns, "labelSelector=" + urlEncode(kConfigDiscoveryLabel));
  if (!list) return list.error();
  if (!list->ok()) {
    return makeError(Error::Code::kIo, "listing pods labelled " +
                                           std::string(kConfigDiscoveryLabel) + " in " + where +
                                           ": " + list->describe());
  }
  std::vector<Object> pods = listItems(list->body, resources::pod());
  std::sort(pods.begin(), pods.end(),
            [](const Object& a, const Object& b) { return a.key().str() < b.key().str(); });
  for (const Object& pod : pods) {
    const Json& status = pod.status();
    const std::string ip = status.value("podIP", "");
    if (status.value("phase", "") != "Running" || ip.empty()) continue;
    const std::string host = ip.find(':') != std::string::npos ? "[" + ip + "]" : ip;
    return "http://" + host + ":" + std::to_string(port);
  }
  return makeError(Error::Code::kNotFound, "no running pod labelled " +
                                               std::string(kConfigDiscoveryLabel) + " in " + where +
                                               " (" + std::to_string(pods.size()) + " found)");
}

}  // namespace kturn::k8s
