// `kturnctl render`: the same objects give the same render whether they come from manifest files
// (-f) or from a cluster (--kubeconfig, against the real kube-apiserver of the test control
// plane); a cluster is only listed, each kind the operator watches once; the failures of each
// source (RBAC's 403, the authenticator's 401, a CRD not installed) and their exit statuses.
#include "cli/render_command.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "cli/test_support.h"  // tests/cli
#include "k8s/api_client.h"
#include "k8s/rest_config.h"
#include "k8s/scripted_api_server.h"
#include "operator/watched_cluster.h"
#include "support/control_plane.h"

namespace kturn::cli {
namespace {

using k8s::Json;
using kturn::testing::ClusterScope;

constexpr char kNow[] = "2024-01-01T00:00:00Z";

// deploy/examples/seed000, found from this file's own path.
std::string seedManifests() {
  return (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "deploy" /
          "examples" / "seed000")
      .string();
}

struct Rendered {
  int status = -1;
  std::string out;
  std::string err;
};

Rendered render(RenderCommand command) {
  command.now = kNow;
  std::ostringstream out;
  std::ostringstream err;
  const int status = runRender(command, out, err);
  return {status, out.str(), err.str()};
}

Rendered renderCluster(const std::string& kubeconfig, const std::string& controllerName,
                       const std::string& context = "") {
  return render({.kubeconfig = kubeconfig,
                 .context = context,
                 .options = {.controllerName = controllerName}});
}

// What only the API server sets, as a render shows it: metadata.generation (1 on create) as each
// condition's observedGeneration, metadata.uid as the uid of the owner references. A manifest
// file has neither (0 and no uid).
std::string withoutServerSetFields(const std::string& yaml) {
  static const std::regex kGeneration("observedGeneration: 1\n");
  static const std::regex kUid(" *uid: [0-9a-f-]+\n");
  return std::regex_replace(std::regex_replace(yaml, kGeneration, "observedGeneration: 0\n"), kUid,
                            "");
}

// The seed as it is in `scope`, with the ClusterIP the API server gave the media Service, as a
// manifest file: what -f reads to render what the cluster holds.
std::string localizedSeed(ClusterScope& scope) {
  auto objects = k8s::loadManifestFiles(seedManifests());
  EXPECT_TRUE(objects);
  auto service = scope.admin().get(k8s::resources::service(), scope.ns("media"), "media-server");
  EXPECT_TRUE(service && service->ok());
  Json items = Json::array();
  for (const k8s::Object& o : *objects) {
    Json local = scope.localize(o.body());
    if (local["kind"] == "Service") local["spec"]["clusterIP"] = service->body["spec"]["clusterIP"];
    items.push_back(local);
  }
  return Json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}.dump();
}

// What `user` asked the API server, from its audit log.
std::vector<Json> apiRequests(const std::string& user) { return kturn::testing::auditEvents(user); }

// Everything of the kinds the operator reads that `scope` holds, as the server stores it.
Json scopedObjects(ClusterScope& scope) {
  Json items = Json::array();
  for (const k8s::ResourceType& type : op::WatchedCluster::kinds()) {
    for (const std::string& ns : {scope.ns("media"), scope.ns("stunner")}) {
      if (!type.namespaced && ns != scope.ns("media")) continue;
      auto list = scope.admin().list(type, type.namespaced ? ns : "");
      EXPECT_TRUE(list && list->ok()) << type.kind;
      if (!list || !list->ok()) continue;
      for (const k8s::Object& o : k8s::listItems(list->body, type)) {
        const bool ours = type.namespaced || o.name() == scope.name("stunner-gatewayclass");
        if (ours) items.push_back(o.body());
      }
    }
  }
  return items;
}

TEST(RenderCommandTest, AClusterRendersAsTheManifestsItWasLoadedWith) {
  ClusterScope scope;
  ASSERT_TRUE(scope.ready());
  ASSERT_TRUE(scope.apply(seedManifests()));
  kturn::cli::testing::TempFile seed(localizedSeed(scope));
  const Rendered files =
      render({.paths = {seed.path()}, .options = {.controllerName = scope.controllerName()}});
  ASSERT_NE(files.out, "");
  const std::string kubeconfig = scope.serviceAccountKubeconfig("render");
  const Rendered cluster = renderCluster(kubeconfig, scope.controllerName());
  EXPECT_EQ(cluster.status, files.status) << cluster.err;
  EXPECT_EQ(cluster.err, files.err);
  EXPECT_EQ(withoutServerSetFields(cluster.out), files.out);

  // Exactly, with what the server set: its objects written to a file render the same.
  kturn::cli::testing::TempFile dump(
      Json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", scopedObjects(scope)}}.dump());
  const Rendered stored =
      render({.paths = {dump.path()}, .options = {.controllerName = scope.controllerName()}});
  EXPECT_EQ(cluster.out, stored.out);
  EXPECT_NE(cluster.out.find("observedGeneration: 1"), std::string::npos);

  // Each kind the operator watches listed once, and nothing else: no watch, no write.
  std::multiset<std::string> expected;
  for (const k8s::ResourceType& type : op::WatchedCluster::kinds()) {
    expected.insert(type.collectionPath());
  }
  std::multiset<std::string> listed;
  for (const Json& r : apiRequests(scope.serviceAccountUser("render"))) {
    EXPECT_EQ(r["verb"], "list") << r.dump();
    listed.insert(r["requestURI"].get<std::string>());  // with its query, if any
  }
  EXPECT_EQ(listed, expected);

  // The binary prints the same.
  kturn::cli::testing::Kturnctl binary({"render", "--kubeconfig", kubeconfig, "--controller-name",
                                        scope.controllerName(), "--now", kNow});
  EXPECT_EQ(binary.wait(), cluster.status) << binary.err();
  EXPECT_EQ(binary.out(), cluster.out);
  EXPECT_EQ(binary.err(), cluster.err);
}

// A CRD that is not installed (the API server answers 404) reads as empty, as in the operator; a
// note says so, and the render is what it would be with no object of that kind. A cluster of its
// own: a kube-apiserver on a new etcd prefix, with those two CRDs left out.
TEST(RenderCommandTest, AKindNotServedReadsAsEmpty) {
  ClusterScope names;  // only for the etcd prefix
  kturn::testing::ExtraApiServer server(
      {.etcdPrefix = "/kturn-" + names.suffix(),
       .skipCrds = {"udproutes.gateway.networking.k8s.io", "staticservices.stunner.l7mp.io"}});
  ASSERT_TRUE(server.ready()) << server.error();
  ClusterScope scope(server.kubeconfig());
  ASSERT_TRUE(scope.ready());
  ASSERT_TRUE(scope.apply(seedManifests()));
  kturn::cli::testing::TempFile seed(localizedSeed(scope));
  const Rendered files =
      render({.paths = {seed.path()}, .options = {.controllerName = scope.controllerName()}});
  const Rendered cluster = renderCluster(server.kubeconfig(), scope.controllerName());
  EXPECT_EQ(cluster.status, files.status) << cluster.err;
  EXPECT_EQ(withoutServerSetFields(cluster.out), files.out);
  const std::string note = "kturnctl render: " + server.url() + ": ";
  EXPECT_EQ(cluster.err,
            note + "UDPRoute (gateway.networking.k8s.io/v1alpha2) is not served (CRD not " +
                "installed?): read as empty\n" + note +
                "StaticService (stunner.l7mp.io/v1) is not served (CRD not installed?): read as " +
                "empty\n" + files.err);
}

// RBAC: a ServiceAccount that may list every kind the operator reads but Secrets.
TEST(RenderCommandTest, AForbiddenListIsAFailureNamingTheKind) {
  ClusterScope scope;
  ASSERT_TRUE(scope.ready());
  ASSERT_TRUE(scope.apply(seedManifests()));
  Json rules = Json::array();
  for (const k8s::ResourceType& type : op::WatchedCluster::kinds()) {
    if (type.kind == "Secret") continue;
    rules.push_back(
        {{"apiGroups", {type.group}}, {"resources", {type.plural}}, {"verbs", {"list"}}});
  }
  const std::string role = scope.clusterRole("no-secrets", rules);
  const Rendered cluster =
      renderCluster(scope.serviceAccountKubeconfig("render", role), scope.controllerName());
  EXPECT_EQ(cluster.status, kRenderFailure);
  EXPECT_EQ(cluster.out, "");
  EXPECT_EQ(cluster.err,
            "kturnctl render: " + kturn::testing::serverUrl(kturn::testing::adminKubeconfig()) +
                ": list Secret (v1): 403 Forbidden: secrets is forbidden: User \"" +
                scope.serviceAccountUser("render") +
                "\" cannot list resource \"secrets\" in API group \"\" at the "
                "cluster scope\n");
}

TEST(RenderCommandTest, AWrongTokenIsAFailureNamingTheFirstKind) {
  ClusterScope scope;
  ASSERT_TRUE(scope.ready());
  std::ifstream in(scope.serviceAccountKubeconfig("render"));
  Json config = Json::parse(in);
  config["users"][0]["user"]["token"] = "not-the-token";
  kturn::cli::testing::TempFile kubeconfig(config.dump());
  const Rendered cluster = renderCluster(kubeconfig.path(), scope.controllerName());
  EXPECT_EQ(cluster.status, kRenderFailure);
  EXPECT_EQ(cluster.out, "");
  EXPECT_EQ(cluster.err, "kturnctl render: " + kturn::testing::serverUrl(kubeconfig.path()) +
                             ": list GatewayClass (gateway.networking.k8s.io/v1): 401 "
                             "Unauthorized: Unauthorized\n");
}

TEST(RenderCommandTest, AnUnreachableServerIsAFailureNamingIt) {
  kturn::cli::testing::TempFile kubeconfig(R"(apiVersion: v1
kind: Config
current-context: down
clusters: [{name: down, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: down, context: {cluster: down, user: u}}]
)");
  const Rendered cluster = renderCluster(kubeconfig.path(), "");
  EXPECT_EQ(cluster.status, kRenderFailure);
  EXPECT_EQ(cluster.out, "");
  EXPECT_EQ(cluster.err.rfind("kturnctl render: http://127.0.0.1:1: list GatewayClass "
                              "(gateway.networking.k8s.io/v1): ",
                              0),
            0u)
      << cluster.err;
}

// An API server that throttles (429 with Retry-After, API Priority and Fairness) is asked again,
// as kubectl and STUNner's client-go tools do: the render goes on.
TEST(RenderCommandTest, AThrottledListIsSentAgain) {
  kturn::testing::ScriptedApiServer server(
      {{.status = 429, .retryAfter = "0"}, {.status = 429, .retryAfter = "0"}});
  kturn::cli::testing::TempFile kubeconfig(R"(apiVersion: v1
kind: Config
current-context: busy
clusters: [{name: busy, cluster: {server: ")" +
                                           server.url() + R"("}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: busy, context: {cluster: busy, user: u}}]
)");
  const Rendered cluster = renderCluster(kubeconfig.path(), "");
  EXPECT_EQ(cluster.status, kRenderOk) << cluster.err;
  const auto seen = server.seen();
  const size_t kinds = op::WatchedCluster::kinds().size();
  ASSERT_EQ(seen.size(), kinds + 2);
  EXPECT_EQ(seen[0].target, seen[2].target);  // the first list, sent three times
}

// A kubeconfig that cannot be read or used is bad input, as an unreadable -f is.
TEST(RenderCommandTest, AnUnusableKubeconfigIsBadInput) {
  const Rendered missing = renderCluster("/nonexistent/kubeconfig", "");
  EXPECT_EQ(missing.status, kRenderUsage);
  EXPECT_EQ(missing.out, "");
  EXPECT_NE(missing.err.find("kturnctl render: kubeconfig /nonexistent/kubeconfig"),
            std::string::npos)
      << missing.err;

  const Rendered context = renderCluster(kturn::testing::adminKubeconfig(), "", "nope");
  EXPECT_EQ(context.status, kRenderUsage);
  EXPECT_NE(context.err.find("context nope not found"), std::string::npos) << context.err;
}

TEST(RenderCommandTest, ExactlyOneSource) {
  const Rendered neither = render({});
  EXPECT_EQ(neither.status, kRenderUsage);
  EXPECT_EQ(neither.err,
            "kturnctl render: give one source: -f (manifest files) or --kubeconfig (a cluster)\n");
  const Rendered both = render({.paths = {seedManifests()}, .kubeconfig = "/k"});
  EXPECT_EQ(both.status, kRenderUsage);
  EXPECT_EQ(both.err, neither.err);
  EXPECT_EQ(neither.out + both.out, "");

  // On the command line, too: CLI11 refuses the pair before anything is read.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"render", "-f", seedManifests(), "--kubeconfig", "/k"},
        {"render"},
        {"render", "-f", seedManifests(), "--context", "c"}}) {
    kturn::cli::testing::Kturnctl run(args);
    EXPECT_EQ(run.wait(), kRenderUsage) << args.back() << "\n" << run.err();
    EXPECT_NE(run.err(), "");
    EXPECT_EQ(run.out(), "");
  }
}

}  // namespace
}  // namespace kturn::cli
