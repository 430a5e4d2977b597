// Informer (list + watch into an ObjectCache) against the real kube-apiserver: events,
// bookmarks, a new watch after the server ends the stream, a relist after 410 Gone from a real
// etcd compaction.
#include "k8s/informer.h"

#include <gtest/gtest.h>

#include <atomic>

#include "k8s/test_cluster.h"

namespace kturn::k8s {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::seedManifests;

class InformerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(scope_.ready());
    ASSERT_TRUE(scope_.apply(seedManifests()));
  }

  Json endpointSlice(const std::string& ip) {
    return {{"apiVersion", "discovery.k8s.io/v1"},
            {"kind", "EndpointSlice"},
            {"metadata",
             {{"name", "media-server-x7k2p"},
              {"namespace", scope_.ns("media")},
              {"labels", {{"kubernetes.io/service-name", "media-server"}}}}},
            {"addressType", "IPv4"},
            {"endpoints", Json::array({{{"addresses", Json::array({ip})}}})}};
  }
  std::string firstAddress() {
    auto slice = cache_.get({scope_.ns("media"), "media-server-x7k2p"});
    if (!slice) return "";
    const Json& eps = slice->body()["endpoints"];
    return eps.empty() ? "" : eps[0]["addresses"][0].get<std::string>();
  }
  InformerOptions options(std::chrono::seconds watchTimeout) {
    return {.ns = scope_.ns("media"),
            .initialBackoff = 50ms,
            .maxBackoff = 500ms,
            .watchTimeout = watchTimeout};
  }

  kturn::testing::ClusterScope scope_;
  ObjectCache cache_{resources::endpointSlice()};
  std::atomic<int> changes_{0};
};

TEST_F(InformerTest, ListsThenFollowsChangesAndDeletes) {
  ApiClient& client = scope_.admin();
  // The server sends a bookmark two seconds before a watch's timeout (when its resourceVersion
  // has moved on), so a 3 s watch gets one.
  Informer informer(
      client, cache_, [this](const ResourceType&) { ++changes_; }, options(3s));
  informer.start();
  ASSERT_TRUE(eventually([&] { return informer.synced(); }));
  EXPECT_EQ(cache_.size(), 1u);
  // List items of built-in kinds come without apiVersion/kind; the cache has them.
  auto slice = cache_.get({scope_.ns("media"), "media-server-x7k2p"});
  ASSERT_TRUE(slice);
  EXPECT_EQ(slice->kind(), "EndpointSlice");
  EXPECT_EQ(slice->apiVersion(), "discovery.k8s.io/v1");
  EXPECT_EQ(changes_, 1);

  auto updated = client.update(resources::endpointSlice(), endpointSlice("10.244.9.9"));
  ASSERT_TRUE(updated && updated->ok()) << (updated ? updated->describe() : "");
  ASSERT_TRUE(eventually([&] { return firstAddress() == "10.244.9.9"; }));
  EXPECT_EQ(informer.resourceVersion(), updated->body["metadata"]["resourceVersion"]);

  Json another = endpointSlice("10.244.9.10");
  another["metadata"]["name"] = "second";
  ASSERT_TRUE(client.create(resources::endpointSlice(), another));
  ASSERT_TRUE(eventually([&] { return cache_.size() == 2; }));
  ASSERT_TRUE(client.remove(resources::endpointSlice(), scope_.ns("media"), "second"));
  ASSERT_TRUE(eventually([&] { return cache_.size() == 1; }));
  EXPECT_GE(changes_, 4);
  // A change this watch does not show (another namespace's slice) reaches it as a bookmark:
  // the resourceVersion advances past it, the cache stays as it was.
  const int before = changes_;
  Json elsewhere = endpointSlice("10.244.9.14");
  elsewhere["metadata"]["namespace"] = scope_.ns("elsewhere");
  auto created = client.create(resources::endpointSlice(), elsewhere);
  ASSERT_TRUE(created && created->ok()) << (created ? created->describe() : "");
  const uint64_t past =
      std::stoull(created->body["metadata"]["resourceVersion"].get<std::string>());
  ASSERT_TRUE(eventually([&] {
    return informer.stats().bookmarks >= 1 && std::stoull(informer.resourceVersion()) >= past;
  })) << "resourceVersion "
      << informer.resourceVersion() << ", want " << past << " or later";
  EXPECT_EQ(changes_, before);
  EXPECT_EQ(cache_.size(), 1u);
  EXPECT_EQ(informer.stats().lists, 1u);
  informer.stop();
}

// What the operator's in-place snapshot is fed with: the keys the watch events changed, each
// with the object as it is now.
TEST_F(InformerTest, ATrackingCacheHandsOverTheKeysItsEventsChanged) {
  ApiClient& client = scope_.admin();
  cache_.trackChanges();
  Informer informer(client, cache_, nullptr, options(30s));
  informer.start();
  ASSERT_TRUE(eventually([&] { return informer.synced(); }));
  const ObjectKey slice{scope_.ns("media"), "media-server-x7k2p"};
  std::vector<CachedChange> listed = cache_.takeChanges();
  ASSERT_EQ(listed.size(), 1u);  // the list's
  EXPECT_EQ(listed[0].key, slice);
  ASSERT_TRUE(client.update(resources::endpointSlice(), endpointSlice("10.244.9.12")));
  Json another = endpointSlice("10.244.9.13");
  another["metadata"]["name"] = "second";
  ASSERT_TRUE(client.create(resources::endpointSlice(), another));
  ASSERT_TRUE(eventually([&] { return cache_.size() == 2 && firstAddress() == "10.244.9.12"; }));
  ASSERT_TRUE(client.remove(resources::endpointSlice(), scope_.ns("media"), "second"));
  ASSERT_TRUE(eventually([&] { return cache_.size() == 1; }));
  const std::vector<CachedChange> changes = cache_.takeChanges();
  ASSERT_EQ(changes.size(), 2u);  // key order: media-server-x7k2p, second
  EXPECT_EQ(changes[0].key, slice);
  ASSERT_TRUE(changes[0].object);
  EXPECT_EQ(changes[0].object->body()["endpoints"][0]["addresses"][0], "10.244.9.12");
  EXPECT_EQ(changes[1].key, (ObjectKey{scope_.ns("media"), "second"}));
  EXPECT_FALSE(changes[1].object);  // created, then deleted: gone now
  EXPECT_TRUE(cache_.takeChanges().empty());
  informer.stop();
}

TEST_F(InformerTest, WatchesAgainWhenTheServerEndsTheStream) {
  // timeoutSeconds=1: the API server ends every watch after a second.
  Informer informer(scope_.admin(), cache_, nullptr, options(1s));
  informer.start();
  ASSERT_TRUE(eventually([&] { return informer.stats().watches == 1; }));
  ASSERT_TRUE(eventually([&] { return informer.stats().watches >= 3; }));
  // A change made after the reconnects is seen; no relist was needed.
  ASSERT_TRUE(scope_.admin().update(resources::endpointSlice(), endpointSlice("10.244.9.11")));
  ASSERT_TRUE(eventually([&] { return firstAddress() == "10.244.9.11"; }));
  EXPECT_EQ(informer.stats().lists, 1u);
  EXPECT_EQ(informer.stats().expired, 0u);
}

TEST_F(InformerTest, RelistsAfter410Gone) {
  // A second API server on the same cluster, without a watch cache: it watches etcd itself, so
  // a resourceVersion compacted away in etcd is 410 Expired.
  kturn::testing::ExtraApiServer server({.watchCache = false});
  ASSERT_TRUE(server.ready()) << server.error();
  auto client = kturn::testing::clientFromKubeconfig(server.kubeconfig());
  ASSERT_TRUE(client);
  Informer informer(*client, cache_, nullptr, options(300s));
  informer.start();
  ASSERT_TRUE(eventually([&] { return informer.stats().watches == 1; }));
  // While the informer's server is down, a change is made through the other one and etcd's
  // history compacted: watching from its old resourceVersion then gets 410, and only a relist
  // catches up.
  server.stop();
  ASSERT_TRUE(scope_.admin().update(resources::endpointSlice(), endpointSlice("10.244.9.12")));
  ASSERT_TRUE(kturn::testing::controlPlaneCommand(
      {"compact", "--dir", kturn::testing::controlPlaneDir().string()}));
  EXPECT_EQ(firstAddress(), "10.244.1.17");  // not seen yet
  server.start();
  ASSERT_TRUE(server.ready()) << server.error();
  ASSERT_TRUE(eventually([&] { return firstAddress() == "10.244.9.12"; }, 30s));
  EXPECT_EQ(informer.stats().expired, 1u);
  EXPECT_EQ(informer.stats().lists, 2u);
  // And it watches on from the new list.
  ASSERT_TRUE(scope_.admin().update(resources::endpointSlice(), endpointSlice("10.244.9.13")));
  ASSERT_TRUE(eventually([&] { return firstAddress() == "10.244.9.13"; }));
  EXPECT_EQ(informer.stats().lists, 2u);
  informer.stop();
}

TEST(InformerBackoff, RetriesUntilTheServerAnswers) {
  // A port nobody listens on: the informer keeps failing, backing off, and stops promptly.
  auto config = parseServerUrl("http://127.0.0.1:1");
  ASSERT_TRUE(config);
  auto client = ApiClient::create(*config);
  ASSERT_TRUE(client);
  ObjectCache cache(resources::node());
  Informer informer(**client, cache, nullptr,
                    {.initialBackoff = std::chrono::milliseconds(10),
                     .maxBackoff = std::chrono::milliseconds(40)});
  informer.start();
  ASSERT_TRUE(eventually([&] { return informer.stats().failures >= 4; }));
  EXPECT_FALSE(informer.synced());
  const auto t0 = std::chrono::steady_clock::now();
  informer.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

}  // namespace
}  // namespace kturn::k8s
