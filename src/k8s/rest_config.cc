#include "k8s/rest_config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/crypto.h"
#include "kturn/host_port.h"

namespace kturn::k8s {
namespace {

namespace fs = std::filesystem;

Result<std::string> readFile(const fs::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(Error::Code::kNotFound, what + " " + path.string() + ": cannot read");
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string scalar(const YAML::Node& map, const char* key) {
  const YAML::Node n = map[key];
  return n && n.IsScalar() ? n.as<std::string>() : std::string();
}

// The entry named `name` of a kubeconfig list (clusters, users, contexts): its `key` map.
YAML::Node namedEntry(const YAML::Node& list, const std::string& name, const char* key) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const YAML::Node& item : list) {
    if (item.IsMap() && scalar(item, "name") == name) return item[key];
  }
  return YAML::Node();
}

// `<key>-data` (base64) or `<key>` (a file, relative to the kubeconfig), "" when neither.
Result<std::string> dataOrFile(const YAML::Node& map, const std::string& key, const fs::path& base,
                               const std::string& what) {
  const std::string data = scalar(map, (key + "-data").c_str());
  if (!data.empty()) {
    auto decoded = crypto::base64Decode(data);
    if (!decoded)
      return makeError(Error::Code::kMalformed, what + ": " + key + "-data: not base64");
    return std::string(decoded->begin(), decoded->end());
  }
  const std::string file = scalar(map, key.c_str());
  if (file.empty()) return std::string();
  fs::path path(file);
  if (path.is_relative()) path = base / path;
  return readFile(path, what + ": " + key);
}

}  // namespace

std::string RestConfig::url() const {
  const bool v6 = host.find(':') != std::string::npos;
  return std::string(tls ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

Result<RestConfig> parseServerUrl(const std::string& url) {
  RestConfig out;
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    out.tls = false;
    out.port = 80;
    rest = url.substr(7);
  } else {
    return makeError(Error::Code::kInvalidArgument, "server " + url + ": must be http(s)://");
  }
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    if (rest.substr(slash) != "/") {
      return makeError(Error::Code::kUnsupported, "server " + url + ": a path is not supported");
    }
    rest.resize(slash);
  }
  const auto split = splitHostPort(rest);
  if (!split) {
    return makeError(Error::Code::kInvalidArgument, "server " + url + ": " + split.error().message);
  }
  out.host = std::string(split->host);
  if (out.host.empty())
    return makeError(Error::Code::kInvalidArgument, "server " + url + ": no host");
  if (split->port && !split->port->empty()) {
    const auto port = parsePort(*split->port);
    if (!port || *port == 0) {
      return makeError(Error::Code::kInvalidArgument, "server " + url + ": bad port");
    }
    out.port = *port;
  }
  return out;
}

Result<RestConfig> loadKubeconfig(const fs::path& path, const std::string& context) {
  const std::string where = "kubeconfig " + path.string();
  YAML::Node root;
  try {
    root = YAML::LoadFile(path.string());
  } catch (const std::exception& e) {
    return makeError(Error::Code::kMalformed, where + ": " + e.what());
  }
  if (!root.IsMap()) return makeError(Error::Code::kMalformed, where + ": not a mapping");
  const std::string name = context.empty() ? scalar(root, "current-context") : context;
  if (name.empty()) return makeError(Error::Code::kInvalidArgument, where + ": no current-context");
  const YAML::Node ctx = namedEntry(root["contexts"], name, "context");
  if (!ctx || !ctx.IsMap()) {
    return makeError(Error::Code::kNotFound, where + ": context " + name + " not found");
  }
  const std::string clusterName = scalar(ctx, "cluster");
  const YAML::Node cluster = namedEntry(root["clusters"], clusterName, "cluster");
  if (!cluster || !cluster.IsMap()) {
    return makeError(Error::Code::kNotFound, where + ": cluster " + clusterName + " not found");
  }
  Result<RestConfig> parsed = parseServerUrl(scalar(cluster, "server"));
  if (!parsed) return makeError(parsed.error().code, where + ": " + parsed.error().message);
  RestConfig out = std::move(parsed).value();
  const fs::path base = path.parent_path();
  const std::string ns = scalar(ctx, "namespace");
  if (!ns.empty()) out.ns = ns;
  out.insecureSkipTlsVerify = scalar(cluster, "insecure-skip-tls-verify") == "true";
  out.tlsServerName = scalar(cluster, "tls-server-name");
  auto ca = dataOrFile(cluster, "certificate-authority", base, where);
  if (!ca) return ca.error();
  out.caPem = std::move(ca).value();

  const std::string userName = scalar(ctx, "user");
  const YAML::Node user = namedEntry(root["users"], userName, "user");
  if (user && user.IsMap()) {
    if (user["exec"] || user["auth-provider"]) {
      return makeError(Error::Code::kUnsupported,
                       where + ": user " + userName + ": exec and auth-provider are not supported");
    }
    out.token = scalar(user, "token");
    const std::string tokenFile = scalar(user, "tokenFile");
    if (!tokenFile.empty()) {
      out.tokenFile = fs::path(tokenFile).is_relative() ? base / tokenFile : fs::path(tokenFile);
    }
    auto cert = dataOrFile(user, "client-certificate", base, where);
    if (!cert) return cert.error();
    auto key = dataOrFile(user, "client-key", base, where);
    if (!key) return key.error();
    out.clientCertPem = std::move(cert).value();
    out.clientKeyPem = std::move(key).value();
    if (out.clientCertPem.empty() != out.clientKeyPem.empty()) {
      return makeError(Error::Code::kInvalidArgument,
                       where + ": user " + userName + ": client certificate and key go together");
    }
  }
  return out;
}

Result<RestConfig> inClusterConfig(const InClusterPaths& paths) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
    return makeError(Error::Code::kNotFound,
                     "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  }
  const std::string h = host;
  const bool v6 = h.find(':') != std::string::npos;
  Result<RestConfig> parsed =
      parseServerUrl("https://" + (v6 ? "[" + h + "]" : h) + ":" + std::string(port));
  if (!parsed) return makeError(parsed.error().code, "in-cluster: " + parsed.error().message);
  RestConfig out = std::move(parsed).value();
  out.tokenFile = paths.dir / "token";
  auto token = readFile(out.tokenFile, "in-cluster: token");
  if (!token) return token.error();
  auto ca = readFile(paths.dir / "ca.crt", "in-cluster: CA");
  if (!ca) return ca.error();
  out.caPem = std::move(ca).value();
  if (auto ns = readFile(paths.dir / "namespace", "in-cluster: namespace"); ns && !ns->empty()) {
    out.ns = *ns;
    while (!out.ns.empty() && (out.ns.back() == '\n' || out.ns.back() == ' ')) out.ns.pop_back();
  }
  return out;
}

}  // namespace kturn::k8s
