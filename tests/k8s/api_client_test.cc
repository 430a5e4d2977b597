// ApiClient against the real kube-apiserver of the test control plane (tests/support/
// control_plane.h): HTTPS with a ServiceAccount token or a client certificate, plain HTTP through
// `kubectl proxy`, optimistic concurrency, server-side apply and the status subresource.
#include "k8s/api_client.h"

#include <gtest/gtest.h>

#include <fstream>

#include "k8s/test_cluster.h"

namespace kturn::k8s {
namespace {

using test::seedManifests;

class ApiClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(scope_.ready());
    ASSERT_TRUE(scope_.apply(seedManifests()));
  }
  kturn::testing::ClusterScope scope_;
};

TEST_F(ApiClientTest, ListsOverHttpsWithAServiceAccountToken) {
  auto client = scope_.serviceAccountClient("reader", "view");
  ASSERT_TRUE(client);
  EXPECT_FALSE(client->config().token.empty());
  auto list = client->list(resources::service(), scope_.ns("media"));
  ASSERT_TRUE(list) << list.error().message;
  ASSERT_EQ(list->status, 200) << list->describe();
  EXPECT_EQ(list->body["kind"], "ServiceList");
  EXPECT_FALSE(list->body["metadata"].value("resourceVersion", "").empty());
  ASSERT_EQ(list->body["items"].size(), 1u);
  EXPECT_EQ(list->body["items"][0]["metadata"]["name"], "media-server");
  // `view` does not read Secrets: RBAC's 403, as a Status.
  auto secrets = client->list(resources::secret(), scope_.ns("stunner"));
  ASSERT_TRUE(secrets) << secrets.error().message;
  EXPECT_EQ(secrets->status, 403);
  EXPECT_EQ(secrets->body["reason"], "Forbidden");
}

TEST_F(ApiClientTest, AuthenticatesWithAClientCertificate) {
  auto config = loadKubeconfig(kturn::testing::adminKubeconfig());
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_TRUE(config->token.empty());
  EXPECT_FALSE(config->clientCertPem.empty());
  auto client = ApiClient::create(*config);
  ASSERT_TRUE(client);
  // A custom resource group, cluster-scoped: items of custom resources carry their kind.
  auto classes = (*client)->list(resources::gatewayClass());
  ASSERT_TRUE(classes) << classes.error().message;
  ASSERT_EQ(classes->status, 200) << classes->describe();
  bool found = false;
  for (const Json& item : classes->body["items"]) {
    if (item["metadata"]["name"] != scope_.name("stunner-gatewayclass")) continue;
    found = true;
    EXPECT_EQ(item["kind"], "GatewayClass");
  }
  EXPECT_TRUE(found);
}

TEST_F(ApiClientTest, WrongTokenIs401AndWrongCaFailsTheHandshake) {
  auto client = scope_.serviceAccountClient("reader", "view");
  ASSERT_TRUE(client);
  RestConfig badToken = client->config();
  badToken.token = "wrong";
  auto denying = ApiClient::create(badToken);
  ASSERT_TRUE(denying);
  auto denied = (*denying)->list(resources::service());
  ASSERT_TRUE(denied) << denied.error().message;
  EXPECT_EQ(denied->status, 401);
  EXPECT_EQ(denied->body["reason"], "Unauthorized");

  // Real CAs, but not the cluster's: the handshake must fail, not fall back.
  std::ifstream bundle("/etc/ssl/certs/ca-certificates.crt");
  RestConfig badCa = client->config();
  badCa.caPem.assign(std::istreambuf_iterator<char>(bundle), std::istreambuf_iterator<char>());
  ASSERT_FALSE(badCa.caPem.empty());
  auto untrusting = ApiClient::create(badCa);
  ASSERT_TRUE(untrusting);
  auto failed = (*untrusting)->list(resources::service());
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find("handshake"), std::string::npos) << failed.error().message;

  // Unless verification is turned off (kubeconfig insecure-skip-tls-verify).
  badCa.insecureSkipTlsVerify = true;
  auto insecure = ApiClient::create(badCa);
  ASSERT_TRUE(insecure);
  auto ok = (*insecure)->list(resources::service(), scope_.ns("media"));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->status, 200);
}

TEST_F(ApiClientTest, SpeaksPlainHttpThroughKubectlProxy) {
  kturn::testing::KubectlProxy proxy;
  ASSERT_FALSE(proxy.url().empty());
  auto config = parseServerUrl(proxy.url());
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_FALSE(config->tls);
  auto client = ApiClient::create(*config);
  ASSERT_TRUE(client);
  auto got = (*client)->get(resources::gateway(), scope_.ns("media"), "media-server-gateway");
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->status, 200) << got->describe();
  EXPECT_EQ(got->body["spec"]["gatewayClassName"], scope_.name("stunner-gatewayclass"));
  auto missing = (*client)->get(resources::gateway(), scope_.ns("media"), "nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->body["reason"], "NotFound");
}

TEST_F(ApiClientTest, CreateUpdateConflictDelete) {
  ApiClient& client = scope_.admin();
  const std::string ns = scope_.ns("ns");
  Json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", "l"}, {"namespace", ns}}},
                {"spec", {{"holderIdentity", "a"}}}};
  auto created = client.create(resources::lease(), lease);
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201) << created->describe();
  auto again = client.create(resources::lease(), lease);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 409);
  EXPECT_EQ(again->body["reason"], "AlreadyExists");

  Json first = created->body;
  first["spec"]["holderIdentity"] = "b";
  auto updated = client.update(resources::lease(), first);
  ASSERT_TRUE(updated);
  ASSERT_EQ(updated->status, 200) << updated->describe();
  EXPECT_NE(updated->body["metadata"]["resourceVersion"], first["metadata"]["resourceVersion"]);
  // The same stale resourceVersion again: optimistic concurrency says no.
  first["spec"]["holderIdentity"] = "c";
  auto stale = client.update(resources::lease(), first);
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 409);
  EXPECT_EQ(stale->body["reason"], "Conflict");

  auto removed = client.remove(resources::lease(), ns, "l");
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->status, 200);
  auto gone = client.get(resources::lease(), ns, "l");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404);
}

Json deploymentNamed(const std::string& ns, const std::string& name) {
  const Json labels = {{"app", name}};
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"a", "1"}}}}},
          {"spec",
           {{"replicas", 1},
            {"selector", {{"matchLabels", labels}}},
            {"template",
             {{"metadata", {{"labels", labels}}},
              {"spec",
               {{"containers",
                 Json::array({{{"name", "kturnd"}, {"image", "kturn/kturnd:test"}}})}}}}}}}};
}

// The time of `manager`'s Apply entry in the object's managedFields, "" when it has none.
std::string appliedAt(const Json& object, const std::string& manager) {
  for (const Json& entry : object["metadata"].value("managedFields", Json::array())) {
    if (entry.value("manager", "") == manager && entry.value("operation", "") == "Apply") {
      return entry.value("time", "");
    }
  }
  return "";
}

TEST_F(ApiClientTest, ServerSideApplyCreatesThenChangesOnlyOnDifference) {
  ApiClient& client = scope_.admin();
  Json deployment = deploymentNamed(scope_.ns("media"), "gw");
  auto created = client.apply(resources::deployment(), deployment);
  ASSERT_TRUE(created) << created.error().message;
  ASSERT_EQ(created->status, 201) << created->describe();
  const std::string applied = appliedAt(created->body, "kturn-operator");
  EXPECT_FALSE(applied.empty()) << created->body["metadata"]["managedFields"].dump();

  auto same = client.apply(resources::deployment(), deployment);
  ASSERT_TRUE(same);
  EXPECT_EQ(same->status, 200);
  // A no-op apply changes nothing. The deployment controller may have written the status in
  // between, so compare the generation and our own managed-fields entry, not the version.
  EXPECT_EQ(same->body["metadata"]["generation"], 1);
  EXPECT_EQ(appliedAt(same->body, "kturn-operator"), applied);

  deployment["spec"]["replicas"] = 2;
  auto changed = client.apply(resources::deployment(), deployment);
  ASSERT_TRUE(changed);
  EXPECT_EQ(changed->body["spec"]["replicas"], 2);
  EXPECT_EQ(changed->body["metadata"]["generation"], 2);

  // Another manager changing an owned field: 409 without force, taken over with it.
  Json other = deployment;
  other["spec"]["replicas"] = 5;
  auto conflict =
      client.apply(resources::deployment(), other, {.fieldManager = "kubectl", .force = false});
  ASSERT_TRUE(conflict);
  EXPECT_EQ(conflict->status, 409);
  EXPECT_EQ(conflict->body["reason"], "Conflict");
  auto forced =
      client.apply(resources::deployment(), other, {.fieldManager = "kubectl", .force = true});
  ASSERT_TRUE(forced);
  EXPECT_EQ(forced->status, 200);
  EXPECT_EQ(forced->body["spec"]["replicas"], 5);
}

TEST_F(ApiClientTest, StatusSubresourceChangesOnlyStatus) {
  ApiClient& client = scope_.admin();
  Json status = {
      {"apiVersion", "gateway.networking.k8s.io/v1"},
      {"kind", "Gateway"},
      {"metadata", {{"name", "media-server-gateway"}, {"namespace", scope_.ns("media")}}},
      {"spec", {{"gatewayClassName", "changed-by-mistake"}}},
      {"status",
       {{"conditions", Json::array({{{"type", "Accepted"},
                                     {"status", "True"},
                                     {"reason", "Accepted"},
                                     {"message", "test"},
                                     {"observedGeneration", 1},
                                     {"lastTransitionTime", "2026-01-01T00:00:00Z"}}})}}}};
  auto applied = client.applyStatus(resources::gateway(), status);
  ASSERT_TRUE(applied) << applied.error().message;
  ASSERT_EQ(applied->status, 200) << applied->describe();
  bool accepted = false;
  for (const Json& c : applied->body["status"]["conditions"]) {
    if (c["type"] == "Accepted") accepted = c["status"] == "True" && c["message"] == "test";
  }
  EXPECT_TRUE(accepted) << applied->body["status"].dump();
  EXPECT_EQ(applied->body["spec"]["gatewayClassName"], scope_.name("stunner-gatewayclass"));
  EXPECT_EQ(applied->body["metadata"]["generation"], 1);
}

TEST(UrlEncode, EscapesReservedCharacters) {
  EXPECT_EQ(urlEncode("kubernetes.io/service-name=a b"), "kubernetes.io%2Fservice-name%3Da%20b");
}

}  // namespace
}  // namespace kturn::k8s
