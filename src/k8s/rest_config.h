// Where the Kubernetes API server is and how to authenticate to it: read from a kubeconfig
// file (its current context, or a named one) or from the pod's service account (in-cluster),
// the two ways client-go's rest.Config is usually built.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "kturn/result.h"

namespace kturn::k8s {

struct RestConfig {
  std::string host{};  // host name or IP literal (IPv6 without brackets)
  uint16_t port = 443;
  bool tls = true;
  // Authentication. A token file (in-cluster, or kubeconfig tokenFile) wins over `token` and is
  // re-read when it changes: projected service-account tokens are rotated by the kubelet.
  std::string token{};
  std::filesystem::path tokenFile{};
  std::string clientCertPem{};
  std::string clientKeyPem{};
  // Server verification: a PEM bundle, or the system store when empty.
  std::string caPem{};
  bool insecureSkipTlsVerify = false;
  std::string tlsServerName{};  // overrides the host name checked and sent as SNI
  // The namespace of the context (kubeconfig) or of the pod (in-cluster); "default" otherwise.
  std::string ns = "default";

  // "https://host:port", for logs.
  std::string url() const;
};

// Parses "https://host[:port][/]" or "http://...". Errors name the URL.
Result<RestConfig> parseServerUrl(const std::string& url);

// Reads a kubeconfig (YAML): the context `context`, or current-context when empty; the cluster's
// server, certificate-authority(-data), insecure-skip-tls-verify, tls-server-name; the user's
// token, tokenFile, client-certificate(-data), client-key(-data). Relative file paths are taken
// relative to the kubeconfig's directory, as kubectl does. exec and auth-provider plugins are not
// supported (an error says so).
Result<RestConfig> loadKubeconfig(const std::filesystem::path& path,
                                  const std::string& context = "");

// Where the in-cluster credentials are; tests point it elsewhere.
struct InClusterPaths {
  std::filesystem::path dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};

// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, and the service account's token, ca.crt
// and namespace files, as rest.InClusterConfig reads them.
Result<RestConfig> inClusterConfig(const InClusterPaths& paths = {});

}  // namespace kturn::k8s
