// `kturnctl render`: the same objects give the same render whether they come from manifest files
// (-f) or from a cluster (--kubeconfig, against kturn-test-apiserver); a cluster is only listed,
// each kind the operator watches once; the failures of each source and their exit statuses.
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
#include "operator/watched_cluster.h"
#include "support/k8s_api_server/test_api_server.h"

namespace kturn::cli {
namespace {

using k8s::Json;
using kturn::testing::TestApiServer;

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

Rendered renderFiles(const std::string& path) { return render({.paths = {path}}); }

Rendered renderCluster(const std::string& kubeconfig, const std::string& context = "") {
  return render({.kubeconfig = kubeconfig, .context = context});
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

std::unique_ptr<k8s::ApiClient> clientFor(const TestApiServer& server) {
  auto config = k8s::loadKubeconfig(server.kubeconfig());
  EXPECT_TRUE(config) << config.error().message;
  if (!config) return nullptr;
  auto client = k8s::ApiClient::create(*config);
  EXPECT_TRUE(client) << client.error().message;
  return client ? std::move(client).value() : nullptr;
}

// The Kubernetes API requests the server answered (its /testctl/ requests left out).
std::vector<Json> apiRequests(k8s::ApiClient& client) {
  auto log = client.request({.method = "GET", .target = "/testctl/requests"});
  EXPECT_TRUE(log && log->ok());
  std::vector<Json> out;
  if (!log) return out;
  for (const Json& r : log->body["requests"]) {
    if (r["path"].get<std::string>().rfind("/testctl/", 0) != 0) out.push_back(r);
  }
  return out;
}

TEST(RenderCommandTest, AClusterRendersAsTheManifestsItWasLoadedWith) {
  TestApiServer server({.manifests = {seedManifests()}});
  ASSERT_TRUE(server.ready()) << server.error();
  const Rendered files = renderFiles(seedManifests());
  ASSERT_NE(files.out, "");
  const Rendered cluster = renderCluster(server.kubeconfig());
  EXPECT_EQ(cluster.status, files.status) << cluster.err;
  EXPECT_EQ(cluster.err, files.err);
  EXPECT_EQ(withoutServerSetFields(cluster.out), files.out);

  // Exactly, with what the server set: its objects written to a file render the same.
  auto client = clientFor(server);
  ASSERT_NE(client, nullptr);
  auto state = client->request({.method = "GET", .target = "/testctl/state"});
  ASSERT_TRUE(state && state->ok());
  kturn::cli::testing::TempFile dump(
      Json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", state->body["items"]}}.dump());
  const Rendered stored = renderFiles(dump.path());  // JSON is YAML
  EXPECT_EQ(cluster.out, stored.out);
  EXPECT_NE(cluster.out.find("observedGeneration: 1"), std::string::npos);

  // Each kind the operator watches listed once, and nothing else: no watch, no write.
  std::multiset<std::string> expected;
  for (const k8s::ResourceType& type : op::WatchedCluster::kinds()) {
    expected.insert(type.collectionPath());
  }
  std::multiset<std::string> listed;
  for (const Json& r : apiRequests(*client)) {
    EXPECT_EQ(r["method"], "GET") << r.dump();
    EXPECT_EQ(r["query"], "") << r.dump();
    listed.insert(r["path"].get<std::string>());
  }
  EXPECT_EQ(listed, expected);

  // The binary prints the same.
  kturn::cli::testing::Kturnctl binary(
      {"render", "--kubeconfig", server.kubeconfig(), "--now", kNow});
  EXPECT_EQ(binary.wait(), cluster.status) << binary.err();
  EXPECT_EQ(binary.out(), cluster.out);
  EXPECT_EQ(binary.err(), cluster.err);
}

// A CRD that is not installed (the API server answers 404) reads as empty, as in the operator; a
// note says so, and the render is what it would be with no object of that kind.
TEST(RenderCommandTest, AKindNotServedReadsAsEmpty) {
  TestApiServer server(
      {.manifests = {seedManifests()},
       .notServed = {"udproutes.gateway.networking.k8s.io", "staticservices.stunner.l7mp.io"}});
  ASSERT_TRUE(server.ready()) << server.error();
  const Rendered files = renderFiles(seedManifests());
  const Rendered cluster = renderCluster(server.kubeconfig());
  EXPECT_EQ(cluster.status, files.status) << cluster.err;
  EXPECT_EQ(withoutServerSetFields(cluster.out), files.out);
  const std::string note = "kturnctl render: " + server.url() + ": ";
  EXPECT_EQ(cluster.err,
            note + "UDPRoute (gateway.networking.k8s.io/v1alpha2) is not served (CRD not " +
                "installed?): read as empty\n" + note +
                "StaticService (stunner.l7mp.io/v1) is not served (CRD not installed?): read as " +
                "empty\n" + files.err);
}

TEST(RenderCommandTest, AForbiddenListIsAFailureNamingTheKind) {
  TestApiServer server({.manifests = {seedManifests()}, .forbidden = {"secrets"}});
  ASSERT_TRUE(server.ready()) << server.error();
  const Rendered cluster = renderCluster(server.kubeconfig());
  EXPECT_EQ(cluster.status, kRenderFailure);
  EXPECT_EQ(cluster.out, "");
  EXPECT_EQ(cluster.err, "kturnctl render: " + server.url() +
                             ": list Secret (v1): 403 Forbidden: secrets is forbidden: User "
                             "\"kturn-test\" cannot list resource \"secrets\" in API group \"\"\n");
}

TEST(RenderCommandTest, AWrongTokenIsAFailureNamingTheFirstKind) {
  TestApiServer server({.manifests = {seedManifests()}});
  ASSERT_TRUE(server.ready()) << server.error();
  std::ifstream in(server.kubeconfig());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find(server.token());
  ASSERT_NE(at, std::string::npos);
  text.replace(at, server.token().size(), "not-the-token");
  kturn::cli::testing::TempFile kubeconfig(text);
  const Rendered cluster = renderCluster(kubeconfig.path());
  EXPECT_EQ(cluster.status, kRenderFailure);
  EXPECT_EQ(cluster.out, "");
  EXPECT_EQ(cluster.err, "kturnctl render: " + server.url() +
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
  const Rendered cluster = renderCluster(kubeconfig.path());
  EXPECT_EQ(cluster.status, kRenderFailure);
  EXPECT_EQ(cluster.out, "");
  EXPECT_EQ(cluster.err.rfind("kturnctl render: http://127.0.0.1:1: list GatewayClass "
                              "(gateway.networking.k8s.io/v1): ",
                              0),
            0u)
      << cluster.err;
}

// A kubeconfig that cannot be read or used is bad input, as an unreadable -f is.
TEST(RenderCommandTest, AnUnusableKubeconfigIsBadInput) {
  const Rendered missing = renderCluster("/nonexistent/kubeconfig");
  EXPECT_EQ(missing.status, kRenderUsage);
  EXPECT_EQ(missing.out, "");
  EXPECT_NE(missing.err.find("kturnctl render: kubeconfig /nonexistent/kubeconfig"),
            std::string::npos)
      << missing.err;

  TestApiServer server;
  ASSERT_TRUE(server.ready()) << server.error();
  const Rendered context = renderCluster(server.kubeconfig(), "nope");
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
