// The real Kubernetes control plane for gtests: etcd, kube-apiserver and kube-controller-manager
// that ctest started once for the run (FIXTURES_SETUP control_plane, tests/support/
// control_plane.py), shared by every test that needs one. A test works in a ClusterScope of its
// own, so tests running in parallel never see each other's objects:
//
//   ClusterScope scope;                                    // namespaces media-<id>, stunner-<id>
//   ASSERT_TRUE(scope.apply(seedManifests()));             // the manifests, moved into them
//   auto operatorClient = scope.serviceAccountClient("operator");
//   ... scope.ns("media") ... scope.controllerName() ...
//   EXPECT_EQ(scope.auditCount(user, "patch", "deployments"), 1);
//
// ExtraApiServer starts one more kube-apiserver on the same etcd, for the tests that stop a server
// or need a cluster without some CRDs.
//
// KTURN_CONTROL_PLANE (the control plane's folder; an environment variable set by
// tests/CMakeLists.txt) and KTURN_CONTROL_PLANE_SCRIPT (control_plane.py; a compile definition).
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "k8s/api_client.h"
#include "k8s/manifest_files.h"
#include "k8s/rest_config.h"

namespace kturn::testing {

using k8s::Json;

// Kinds only tests write (kturn itself never does).
inline k8s::ResourceType serviceAccountType() {
  return {.version = "v1", .kind = "ServiceAccount", .plural = "serviceaccounts"};
}
inline k8s::ResourceType clusterRoleBindingType() {
  return {.group = "rbac.authorization.k8s.io",
          .version = "v1",
          .kind = "ClusterRoleBinding",
          .plural = "clusterrolebindings",
          .namespaced = false};
}

inline std::filesystem::path controlPlaneDir() {
  const char* dir = std::getenv("KTURN_CONTROL_PLANE");
  return dir != nullptr ? std::filesystem::path(dir) : std::filesystem::path();
}

// The admin kubeconfig (client certificate in system:masters).
inline std::string adminKubeconfig() { return (controlPlaneDir() / "kubeconfig").string(); }

inline std::unique_ptr<k8s::ApiClient> clientFrom(const k8s::RestConfig& config) {
  auto client = k8s::ApiClient::create(config);
  EXPECT_TRUE(client) << client.error().message;
  return client ? std::move(client).value() : nullptr;
}

inline std::unique_ptr<k8s::ApiClient> clientFromKubeconfig(const std::string& path) {
  auto config = k8s::loadKubeconfig(path);
  EXPECT_TRUE(config) << path << ": " << config.error().message
                      << " (is the control_plane fixture up? KTURN_CONTROL_PLANE="
                      << controlPlaneDir() << ")";
  return config ? clientFrom(*config) : nullptr;
}

// The API server URL of a kubeconfig that control_plane.py wrote (JSON, one cluster).
inline std::string serverUrl(const std::string& kubeconfig) {
  std::ifstream in(kubeconfig);
  Json config = Json::parse(in, nullptr, false);
  if (!config.is_object() || !config["clusters"].is_array() || config["clusters"].empty())
    return "";
  return config["clusters"][0]["cluster"].value("server", "");
}

// The audit log's events (audit.k8s.io/v1 Event, stage ResponseComplete) of one user.
inline std::vector<Json> auditEvents(const std::string& user) {
  std::vector<Json> out;
  std::ifstream in(controlPlaneDir() / "audit.log");
  for (std::string line; std::getline(in, line);) {
    if (line.find(user) == std::string::npos) continue;
    Json event = Json::parse(line, nullptr, false);
    if (event.is_object() && event["user"].value("username", "") == user) out.push_back(event);
  }
  return out;
}

// Requests of `user` with this verb (get, list, watch, create, update, patch, delete) on this
// resource (its plural), and the subresource ("" for the object itself, "*" for any).
inline int auditCount(const std::string& user, const std::string& verb, const std::string& resource,
                      const std::string& subresource = "") {
  int n = 0;
  for (const Json& e : auditEvents(user)) {
    const Json& ref = e.value("objectRef", Json::object());
    if (e.value("verb", "") != verb || ref.value("resource", "") != resource) continue;
    if (subresource == "*" || ref.value("subresource", "") == subresource) ++n;
  }
  return n;
}

// Runs control_plane.py with these arguments; its standard output, or nullopt on failure.
inline std::optional<std::string> controlPlaneCommand(const std::vector<std::string>& args) {
  std::string cmd = std::string("/usr/bin/python3 ") + KTURN_CONTROL_PLANE_SCRIPT;
  for (const std::string& a : args) cmd += " '" + a + "'";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return std::nullopt;
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  if (::pclose(p) != 0) return std::nullopt;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// A test's own part of the shared cluster. Namespaces and the cluster-scoped names kturn's
// objects use (GatewayClass, Dataplane, the controller name) get a random suffix; apply() moves
// manifests written for namespaces `media`, `stunner`, ... into this scope's. Everything the
// scope created is deleted when it goes away (namespaces finish terminating in the background).
class ClusterScope {
 public:
  // `kubeconfig`: an admin's, of the shared control plane or of an ExtraApiServer.
  explicit ClusterScope(const std::string& kubeconfig = adminKubeconfig())
      : kubeconfig_(kubeconfig), admin_(clientFromKubeconfig(kubeconfig)) {
    std::random_device rd;
    std::mt19937 rng(rd());
    const char* alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    for (int i = 0; i < 6; ++i) suffix_ += alphabet[rng() % 36];
  }
  ~ClusterScope() {
    std::error_code ec;
    for (const std::string& f : files_) std::filesystem::remove(f, ec);
    if (!admin_) return;
    for (const auto& [type, name] : clusterScoped_) (void)admin_->remove(type, "", name);
    for (const auto& [base, ns] : namespaces_) {
      (void)admin_->remove(k8s::resources::namespace_(), "", ns);
    }
  }
  ClusterScope(const ClusterScope&) = delete;
  ClusterScope& operator=(const ClusterScope&) = delete;

  bool ready() const { return admin_ != nullptr; }
  k8s::ApiClient& admin() { return *admin_; }
  const std::string& suffix() const { return suffix_; }

  // This scope's namespace for `base`, created on first use.
  std::string ns(const std::string& base) {
    auto it = namespaces_.find(base);
    if (it != namespaces_.end()) return it->second;
    const std::string name = base + "-" + suffix_;
    namespaces_[base] = name;
    auto created = admin_->create(
        k8s::resources::namespace_(),
        {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}});
    EXPECT_TRUE(created && created->ok())
        << "namespace " << name << ": "
        << (created ? created->describe() : created.error().message);
    return name;
  }
  std::string name(const std::string& base) const { return base + "-" + suffix_; }
  std::string controllerName() const { return "stunner.l7mp.io/gateway-operator-" + suffix_; }

  // `object` as it is in this scope: namespaces (metadata.namespace and every reference's
  // `namespace`), GatewayClass and Dataplane names and the references to them, the controller
  // name. A Service's fixed clusterIP is dropped: the API server allocates one (tests running in
  // parallel would ask for the same).
  Json localize(Json object) {
    const std::string kind = object.value("kind", "");
    localizeNamespaces(object);
    Json& meta = object["metadata"];
    if (kind == "GatewayClass" || kind == "Dataplane") meta["name"] = name(meta.value("name", ""));
    if (kind == "Namespace") meta["name"] = ns(meta.value("name", ""));
    if (object.contains("spec") && object["spec"].is_object()) {
      Json& spec = object["spec"];
      if (kind == "GatewayClass") spec["controllerName"] = controllerName();
      if (spec.contains("gatewayClassName")) {
        spec["gatewayClassName"] = name(spec["gatewayClassName"].get<std::string>());
      }
      if (kind == "GatewayConfig" && spec.contains("dataplane")) {
        spec["dataplane"] = name(spec["dataplane"].get<std::string>());
      }
      if (kind == "Service") {
        spec.erase("clusterIP");
        spec.erase("clusterIPs");
      }
    }
    return object;
  }

  // Creates every object of `manifests` (a file or a folder of them) in this scope, a status
  // written through the status subresource.
  ::testing::AssertionResult apply(const std::filesystem::path& manifests) {
    auto objects = k8s::loadManifestFiles(manifests);
    if (!objects) return ::testing::AssertionFailure() << objects.error().message;
    for (const k8s::Object& o : *objects) {
      if (o.kind() == "Namespace") {
        (void)ns(o.name());
        continue;
      }
      auto result = create(o.body());
      if (!result) return result;
    }
    return ::testing::AssertionSuccess();
  }

  ::testing::AssertionResult create(const Json& body) {
    Json object = localize(body);
    const k8s::ResourceType* type =
        k8s::findResourceType(object.value("apiVersion", ""), object.value("kind", ""));
    if (type == nullptr) {
      return ::testing::AssertionFailure() << "no resource type for " << object.value("kind", "");
    }
    Json status = object.contains("status") ? object["status"] : Json();
    object.erase("status");
    auto created = admin_->create(*type, object);
    if (!created || !created->ok()) {
      return ::testing::AssertionFailure()
             << "create " << object["kind"] << " " << object["metadata"].value("name", "") << ": "
             << (created ? created->describe() : created.error().message);
    }
    if (!type->namespaced) clusterScoped_.emplace_back(*type, object["metadata"]["name"]);
    if (status.is_object()) {
      Json withStatus = created->body;
      withStatus["status"] = status;
      auto written = admin_->request(
          {.method = "PUT",
           .target = type->objectPath(object["metadata"].value("namespace", ""),
                                      object["metadata"]["name"].get<std::string>(), "status"),
           .body = withStatus.dump(),
           .contentType = "application/json"});
      if (!written || !written->ok()) {
        return ::testing::AssertionFailure()
               << "status of " << object["metadata"].value("name", "") << ": "
               << (written ? written->describe() : written.error().message);
      }
    }
    return ::testing::AssertionSuccess();
  }

  // The username the API server gives ServiceAccount `sa` of this scope (in ns(base)).
  std::string serviceAccountUser(const std::string& sa, const std::string& base = "kturn") {
    return "system:serviceaccount:" + ns(base) + ":" + sa;
  }

  // A client authenticated as ServiceAccount `sa` in ns(base), with a token from the
  // TokenRequest API, bound to ClusterRole `clusterRole` ("" binds nothing).
  std::unique_ptr<k8s::ApiClient> serviceAccountClient(
      const std::string& sa, const std::string& clusterRole = "cluster-admin",
      const std::string& base = "kturn") {
    const std::string nsName = ns(base);
    auto made =
        admin_->create(serviceAccountType(), {{"apiVersion", "v1"},
                                              {"kind", "ServiceAccount"},
                                              {"metadata", {{"name", sa}, {"namespace", nsName}}}});
    EXPECT_TRUE(made && (made->ok() || made->status == 409)) << (made ? made->describe() : "");
    if (!clusterRole.empty()) {
      Json binding = {
          {"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRoleBinding"},
          {"metadata", {{"name", name(sa)}}},
          {"roleRef",
           {{"apiGroup", "rbac.authorization.k8s.io"},
            {"kind", "ClusterRole"},
            {"name", clusterRole}}},
          {"subjects",
           Json::array({{{"kind", "ServiceAccount"}, {"name", sa}, {"namespace", nsName}}})}};
      auto bound = admin_->create(clusterRoleBindingType(), binding);
      EXPECT_TRUE(bound && (bound->ok() || bound->status == 409))
          << (bound ? bound->describe() : bound.error().message);
      if (bound && bound->ok()) clusterScoped_.emplace_back(clusterRoleBindingType(), name(sa));
      EXPECT_TRUE(awaitBinding(serviceAccountUser(sa, base), clusterRole));
    }
    auto token = admin_->request(
        {.method = "POST",
         .target = "/api/v1/namespaces/" + nsName + "/serviceaccounts/" + sa + "/token",
         .body = R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest",)"
                 R"("spec":{"expirationSeconds":3600}})",
         .contentType = "application/json"});
    EXPECT_TRUE(token && token->ok()) << (token ? token->describe() : token.error().message);
    if (!token || !token->ok()) return nullptr;
    k8s::RestConfig config = admin_->config();
    config.clientCertPem.clear();
    config.clientKeyPem.clear();
    config.token = token->body["status"]["token"].get<std::string>();
    return clientFrom(config);
  }

  // The API server's RBAC authorizer learns of a new binding from its own informer, a moment after
  // the create returns: waits (at most 10 s) until a SubjectAccessReview for `user` is allowed the
  // first resource rule of `clusterRole`, so a request made right after is judged by the binding.
  ::testing::AssertionResult awaitBinding(const std::string& user, const std::string& clusterRole) {
    auto role = admin_->request(
        {.target = "/apis/rbac.authorization.k8s.io/v1/clusterroles/" + clusterRole});
    if (!role || !role->ok()) {
      return ::testing::AssertionFailure() << "ClusterRole " << clusterRole << ": "
                                           << (role ? role->describe() : role.error().message);
    }
    Json attributes;
    for (const Json& rule : role->body.value("rules", Json::array())) {
      if (!rule.contains("resources") || !rule.contains("verbs")) continue;
      const auto first = [&](const char* key) {
        const Json& values = rule.value(key, Json::array());
        return values.empty() ? std::string() : values[0].get<std::string>();
      };
      attributes = {{"group", first("apiGroups")},
                    {"resource", first("resources")},
                    {"verb", first("verbs")},
                    {"namespace", ns("media")}};
      break;
    }
    if (attributes.is_null()) return ::testing::AssertionSuccess();  // nothing to wait for
    const Json review = {{"apiVersion", "authorization.k8s.io/v1"},
                         {"kind", "SubjectAccessReview"},
                         {"spec", {{"user", user}, {"resourceAttributes", attributes}}}};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::string last;
    do {
      auto answer = admin_->request({.method = "POST",
                                     .target = "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                                     .body = review.dump(),
                                     .contentType = "application/json"});
      if (answer && answer->ok() && answer->body["status"].value("allowed", false)) {
        return ::testing::AssertionSuccess();
      }
      last = answer ? answer->describe() : answer.error().message;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (std::chrono::steady_clock::now() < deadline);
    return ::testing::AssertionFailure() << user << " is still not allowed " << attributes.dump()
                                         << " by " << clusterRole << " after 10 s: " << last;
  }

  // The same ServiceAccount as a kubeconfig file (the admin's, with the token as its user), for
  // programs the test runs; removed with the scope.
  std::string serviceAccountKubeconfig(const std::string& sa,
                                       const std::string& clusterRole = "cluster-admin",
                                       const std::string& base = "kturn") {
    auto client = serviceAccountClient(sa, clusterRole, base);
    if (!client) return "";
    std::ifstream in(kubeconfig_);
    Json config = Json::parse(in, nullptr, false);  // control_plane.py writes JSON
    EXPECT_TRUE(config.is_object()) << kubeconfig_;
    if (!config.is_object()) return "";
    config["users"][0]["user"] = {{"token", client->config().token}};
    const std::string path = "/tmp/kturn-kubeconfig-" + name(sa);
    std::ofstream(path) << config.dump(1);
    files_.push_back(path);
    return path;
  }

  // A ClusterRole of this scope (named name(base)) with these rules.
  std::string clusterRole(const std::string& base, const Json& rules) {
    const k8s::ResourceType type{.group = "rbac.authorization.k8s.io",
                                 .version = "v1",
                                 .kind = "ClusterRole",
                                 .plural = "clusterroles",
                                 .namespaced = false};
    auto made = admin_->create(type, {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                                      {"kind", "ClusterRole"},
                                      {"metadata", {{"name", name(base)}}},
                                      {"rules", rules}});
    EXPECT_TRUE(made && made->ok()) << (made ? made->describe() : made.error().message);
    clusterScoped_.emplace_back(type, name(base));
    return name(base);
  }

 private:
  void localizeNamespaces(Json& node) {
    if (node.is_object()) {
      for (auto& [key, value] : node.items()) {
        if (key == "namespace" && value.is_string()) {
          value = ns(value.get<std::string>());
        } else {
          localizeNamespaces(value);
        }
      }
    } else if (node.is_array()) {
      for (Json& item : node) localizeNamespaces(item);
    }
  }

  const std::string kubeconfig_;
  std::unique_ptr<k8s::ApiClient> admin_;
  std::vector<std::string> files_;
  std::string suffix_;
  std::map<std::string, std::string> namespaces_;
  std::vector<std::pair<k8s::ResourceType, std::string>> clusterScoped_;
};

struct ExtraApiServerOptions {
  // "/registry" is the main server's cluster; another prefix is an empty cluster of its own.
  std::string etcdPrefix = "/registry";
  bool watchCache = true;
  std::vector<std::string> skipCrds{};  // "<plural>.<group>" left out of a new cluster
};

// One more kube-apiserver on the control plane's etcd, with the same certificates: started by
// the constructor, stopped (SIGTERM) by stop() or the destructor; start() again brings it back on
// the same port.
class ExtraApiServer {
 public:
  explicit ExtraApiServer(ExtraApiServerOptions options = {}) : options_(std::move(options)) {
    char tmpl[] = "/tmp/kturn-extra-apiserver-XXXXXX";
    if (::mkdtemp(tmpl) != nullptr) dir_ = tmpl;
    start();
  }
  ~ExtraApiServer() {
    stop();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  ExtraApiServer(const ExtraApiServer&) = delete;
  ExtraApiServer& operator=(const ExtraApiServer&) = delete;

  bool ready() const { return port_ != 0 && pid_ > 0; }
  const std::string& error() const { return error_; }
  std::string kubeconfig() const { return (dir_ / "kubeconfig").string(); }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

  void start() {
    if (dir_.empty()) {
      error_ = "mkdtemp failed";
      return;
    }
    // A kube-apiserver that joins a cluster while another server creates a Service can exit at
    // start: its ClusterIP repair finds the Service's IPAddress object created meanwhile ("already
    // exists", not retried, and a failed post-start hook is fatal). That race is upstream's and
    // has nothing to do with what the tests check, so a server that exits before it is ready is
    // started again, three times at most.
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (launch()) return;
    }
    std::ifstream in(dir_ / "control-plane.log");
    error_ = "extra kube-apiserver did not start (3 attempts): " +
             std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);  // the script stops its kube-apiserver, then exits
    pid_ = -1;
  }

 private:
  // One try: true once the server is ready; false, with the server stopped, if it exited or did
  // not come up within 120 s.
  bool launch() {
    std::filesystem::remove(dir_ / "port");
    std::vector<std::string> args = {"/usr/bin/python3",
                                     KTURN_CONTROL_PLANE_SCRIPT,
                                     "apiserver",
                                     "--dir",
                                     controlPlaneDir().string(),
                                     "--out",
                                     dir_.string(),
                                     "--etcd-prefix",
                                     options_.etcdPrefix,
                                     "--port",
                                     std::to_string(port_)};
    if (!options_.watchCache) args.push_back("--no-watch-cache");
    for (const std::string& crd : options_.skipCrds) args.insert(args.end(), {"--skip-crd", crd});
    const std::string log = (dir_ / "control-plane.log").string();
    pid_ = ::fork();
    if (pid_ == 0) {
      FILE* out = std::freopen(log.c_str(), "a", stdout);
      (void)out;
      ::dup2(::fileno(stdout), 2);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      std::_Exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in(dir_ / "port");
      int port = 0;
      if (in >> port && port > 0) {
        port_ = static_cast<uint16_t>(port);
        return true;
      }
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    stop();
    return false;
  }

  const ExtraApiServerOptions options_;
  std::filesystem::path dir_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string error_;
};

// The control plane's tools folder (bin/kubectl, ...), from its env file.
inline std::filesystem::path testToolsDir() {
  std::ifstream in(controlPlaneDir() / "env");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("TOOLS=", 0) == 0) return line.substr(6);
  }
  return {};
}

// `kubectl proxy` on an ephemeral loopback port: the API server over plain HTTP, as users reach
// it from a laptop. Stopped when the object dies.
class KubectlProxy {
 public:
  KubectlProxy() {
    int out[2];
    if (::pipe(out) != 0) return;
    const std::string kubectl = (testToolsDir() / "bin" / "kubectl").string();
    const std::string kubeconfig = adminKubeconfig();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      ::close(out[0]);
      ::execl(kubectl.c_str(), kubectl.c_str(), "--kubeconfig", kubeconfig.c_str(), "proxy",
              "--address", "127.0.0.1", "--port", "0", static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    ::close(out[1]);
    // "Starting to serve on 127.0.0.1:<port>"
    std::string line;
    char c;
    while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
    ::close(out[0]);
    const auto colon = line.rfind(':');
    if (colon != std::string::npos) url_ = "http://127.0.0.1" + line.substr(colon);
  }
  ~KubectlProxy() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  KubectlProxy(const KubectlProxy&) = delete;
  KubectlProxy& operator=(const KubectlProxy&) = delete;

  // "http://127.0.0.1:<port>", or "" when it did not start.
  const std::string& url() const { return url_; }

 private:
  pid_t pid_ = -1;
  std::string url_;
};

}  // namespace kturn::testing
