// ApiClient against kturn-test-apiserver over real sockets on 127.0.0.1 (HTTPS, bearer token).
#include "k8s/api_client.h"

#include <gtest/gtest.h>

#include "k8s/test_cluster.h"

namespace kturn::k8s {
namespace {

using test::clientFor;
using test::seedManifests;

class ApiClientTest : public ::testing::Test {
 protected:
  kturn::testing::TestApiServer server_{{.manifests = {seedManifests()}}};
};

TEST_F(ApiClientTest, ListsOverHttpsWithTheKubeconfigToken) {
  ASSERT_TRUE(server_.ready()) << server_.error();
  auto client = clientFor(server_);
  ASSERT_TRUE(client);
  auto list = client->list(resources::service(), "media");
  ASSERT_TRUE(list) << list.error().message;
  ASSERT_EQ(list->status, 200) << list->describe();
  EXPECT_EQ(list->body["kind"], "ServiceList");
  EXPECT_FALSE(list->body["metadata"].value("resourceVersion", "").empty());
  ASSERT_EQ(list->body["items"].size(), 1u);
  EXPECT_EQ(list->body["items"][0]["metadata"]["name"], "media-server");
  // Cluster-scoped, and a custom resource group.
  auto classes = client->list(resources::gatewayClass());
  ASSERT_TRUE(classes);
  ASSERT_EQ(classes->body["items"].size(), 1u);
  EXPECT_EQ(classes->body["items"][0]["kind"], "GatewayClass");
}

TEST_F(ApiClientTest, WrongTokenIs401AndWrongCaFailsTheHandshake) {
  ASSERT_TRUE(server_.ready()) << server_.error();
  auto config = loadKubeconfig(server_.kubeconfig());
  ASSERT_TRUE(config);
  RestConfig badToken = *config;
  badToken.token = "wrong";
  auto client = ApiClient::create(badToken);
  ASSERT_TRUE(client);
  auto denied = (*client)->list(resources::service());
  ASSERT_TRUE(denied) << denied.error().message;
  EXPECT_EQ(denied->status, 401);
  EXPECT_EQ(denied->body["reason"], "Unauthorized");

  // Another server's certificate as the CA: the handshake must fail, not fall back.
  kturn::testing::TestApiServer other;
  ASSERT_TRUE(other.ready()) << other.error();
  auto otherConfig = loadKubeconfig(other.kubeconfig());
  ASSERT_TRUE(otherConfig);
  RestConfig badCa = *config;
  badCa.caPem = otherConfig->caPem;
  auto untrusting = ApiClient::create(badCa);
  ASSERT_TRUE(untrusting);
  auto failed = (*untrusting)->list(resources::service());
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find("handshake"), std::string::npos) << failed.error().message;

  // Unless verification is turned off (kubeconfig insecure-skip-tls-verify).
  badCa.insecureSkipTlsVerify = true;
  auto insecure = ApiClient::create(badCa);
  ASSERT_TRUE(insecure);
  auto ok = (*insecure)->list(resources::service());
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->status, 200);
}

TEST(ApiClientPlain, SpeaksPlainHttpToo) {
  kturn::testing::TestApiServer server({.tls = false, .manifests = {seedManifests()}});
  ASSERT_TRUE(server.ready()) << server.error();
  auto client = clientFor(server);
  ASSERT_TRUE(client);
  auto got = client->get(resources::gateway(), "media", "media-server-gateway");
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->body["spec"]["gatewayClassName"], "stunner-gatewayclass");
  auto missing = client->get(resources::gateway(), "media", "nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->body["reason"], "NotFound");
}

TEST_F(ApiClientTest, CreateUpdateConflictDelete) {
  ASSERT_TRUE(server_.ready()) << server_.error();
  auto client = clientFor(server_);
  ASSERT_TRUE(client);
  Json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", "l"}, {"namespace", "ns"}}},
                {"spec", {{"holderIdentity", "a"}}}};
  auto created = client->create(resources::lease(), lease);
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201) << created->describe();
  auto again = client->create(resources::lease(), lease);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 409);
  EXPECT_EQ(again->body["reason"], "AlreadyExists");

  Json first = created->body;
  first["spec"]["holderIdentity"] = "b";
  auto updated = client->update(resources::lease(), first);
  ASSERT_TRUE(updated);
  ASSERT_EQ(updated->status, 200) << updated->describe();
  EXPECT_NE(updated->body["metadata"]["resourceVersion"], first["metadata"]["resourceVersion"]);
  // The same stale resourceVersion again: optimistic concurrency says no.
  first["spec"]["holderIdentity"] = "c";
  auto stale = client->update(resources::lease(), first);
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 409);
  EXPECT_EQ(stale->body["reason"], "Conflict");

  auto removed = client->remove(resources::lease(), "ns", "l");
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->status, 200);
  auto gone = client->get(resources::lease(), "ns", "l");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404);
}

TEST_F(ApiClientTest, ServerSideApplyCreatesThenChangesOnlyOnDifference) {
  ASSERT_TRUE(server_.ready()) << server_.error();
  auto client = clientFor(server_);
  ASSERT_TRUE(client);
  Json deployment = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", "gw"}, {"namespace", "media"}, {"labels", {{"a", "1"}}}}},
      {"spec", {{"replicas", 1}}}};
  auto created = client->apply(resources::deployment(), deployment);
  ASSERT_TRUE(created) << created.error().message;
  ASSERT_EQ(created->status, 201) << created->describe();
  const std::string rv = created->body["metadata"]["resourceVersion"];
  EXPECT_EQ(created->body["metadata"]["managedFields"][0]["manager"], "kturn-operator");

  auto same = client->apply(resources::deployment(), deployment);
  ASSERT_TRUE(same);
  EXPECT_EQ(same->status, 200);
  EXPECT_EQ(same->body["metadata"]["resourceVersion"], rv);  // a no-op apply changes nothing

  deployment["spec"]["replicas"] = 2;
  auto changed = client->apply(resources::deployment(), deployment);
  ASSERT_TRUE(changed);
  EXPECT_EQ(changed->body["spec"]["replicas"], 2);
  EXPECT_EQ(changed->body["metadata"]["generation"], 2);

  // Another manager changing an owned field: 409 without force, taken over with it.
  Json other = deployment;
  other["spec"]["replicas"] = 5;
  auto conflict =
      client->apply(resources::deployment(), other, {.fieldManager = "kubectl", .force = false});
  ASSERT_TRUE(conflict);
  EXPECT_EQ(conflict->status, 409);
  EXPECT_EQ(conflict->body["reason"], "Conflict");
  auto forced =
      client->apply(resources::deployment(), other, {.fieldManager = "kubectl", .force = true});
  ASSERT_TRUE(forced);
  EXPECT_EQ(forced->status, 200);
  EXPECT_EQ(forced->body["spec"]["replicas"], 5);
}

TEST_F(ApiClientTest, StatusSubresourceChangesOnlyStatus) {
  ASSERT_TRUE(server_.ready()) << server_.error();
  auto client = clientFor(server_);
  ASSERT_TRUE(client);
  Json status = {
      {"apiVersion", "gateway.networking.k8s.io/v1"},
      {"kind", "Gateway"},
      {"metadata", {{"name", "media-server-gateway"}, {"namespace", "media"}}},
      {"spec", {{"gatewayClassName", "changed-by-mistake"}}},
      {"status", {{"conditions", Json::array({{{"type", "Accepted"}, {"status", "True"}}})}}}};
  auto applied = client->applyStatus(resources::gateway(), status);
  ASSERT_TRUE(applied) << applied.error().message;
  ASSERT_EQ(applied->status, 200) << applied->describe();
  EXPECT_EQ(applied->body["status"]["conditions"][0]["type"], "Accepted");
  EXPECT_EQ(applied->body["spec"]["gatewayClassName"], "stunner-gatewayclass");
  EXPECT_EQ(applied->body["metadata"]["generation"], 1);
}

TEST(UrlEncode, EscapesReservedCharacters) {
  EXPECT_EQ(urlEncode("kubernetes.io/service-name=a b"), "kubernetes.io%2Fservice-name%3Da%20b");
}

}  // namespace
}  // namespace kturn::k8s
