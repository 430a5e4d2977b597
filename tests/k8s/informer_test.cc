// Informer (list + watch into an ObjectCache) against kturn-test-apiserver: events, bookmarks,
// reconnect after the server ends the stream, relist after 410 Gone.
#include "k8s/informer.h"

#include <gtest/gtest.h>

#include <atomic>

#include "k8s/test_cluster.h"

namespace kturn::k8s {
namespace {

using test::clientFor;
using test::eventually;
using test::seedManifests;

Json endpointSlice(const std::string& ip) {
  return {{"apiVersion", "discovery.k8s.io/v1"},
          {"kind", "EndpointSlice"},
          {"metadata",
           {{"name", "media-server-x7k2p"},
            {"namespace", "media"},
            {"labels", {{"kubernetes.io/service-name", "media-server"}}}}},
          {"addressType", "IPv4"},
          {"endpoints", Json::array({{{"addresses", Json::array({ip})}}})}};
}

std::string firstAddress(const ObjectCache& cache) {
  auto slice = cache.get({"media", "media-server-x7k2p"});
  if (!slice) return "";
  const Json& eps = slice->body()["endpoints"];
  return eps.empty() ? "" : eps[0]["addresses"][0].get<std::string>();
}

class InformerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.ready()) << server_.error();
    client_ = clientFor(server_);
    ASSERT_TRUE(client_);
  }
  kturn::testing::TestApiServer server_{{.manifests = {seedManifests()}, .bookmarkInterval = 0.2}};
  std::unique_ptr<ApiClient> client_;
  ObjectCache cache_{resources::endpointSlice()};
  std::atomic<int> changes_{0};
};

TEST_F(InformerTest, ListsThenFollowsChangesAndDeletes) {
  Informer informer(*client_, cache_, [this](const ResourceType&) { ++changes_; });
  informer.start();
  ASSERT_TRUE(eventually([&] { return informer.synced(); }));
  EXPECT_EQ(cache_.size(), 1u);
  // List items of built-in kinds come without apiVersion/kind; the cache has them.
  auto slice = cache_.get({"media", "media-server-x7k2p"});
  ASSERT_TRUE(slice);
  EXPECT_EQ(slice->kind(), "EndpointSlice");
  EXPECT_EQ(slice->apiVersion(), "discovery.k8s.io/v1");
  EXPECT_EQ(changes_, 1);

  auto updated = client_->update(resources::endpointSlice(), endpointSlice("127.0.0.9"));
  ASSERT_TRUE(updated && updated->ok());
  ASSERT_TRUE(eventually([&] { return firstAddress(cache_) == "127.0.0.9"; }));
  EXPECT_EQ(informer.resourceVersion(), updated->body["metadata"]["resourceVersion"]);

  Json another = endpointSlice("127.0.0.10");
  another["metadata"]["name"] = "second";
  ASSERT_TRUE(client_->create(resources::endpointSlice(), another));
  ASSERT_TRUE(eventually([&] { return cache_.size() == 2; }));
  ASSERT_TRUE(client_->remove(resources::endpointSlice(), "media", "second"));
  ASSERT_TRUE(eventually([&] { return cache_.size() == 1; }));
  EXPECT_GE(changes_, 4);
  // Bookmarks arrive every 0.2 s and advance the resourceVersion without changing the cache.
  const int before = changes_;
  ASSERT_TRUE(eventually([&] { return informer.stats().bookmarks >= 2; }));
  EXPECT_EQ(changes_, before);
  EXPECT_EQ(informer.stats().lists, 1u);
  informer.stop();
}

TEST_F(InformerTest, WatchesAgainWhenTheServerEndsTheStream) {
  Informer informer(*client_, cache_, nullptr);
  informer.start();
  ASSERT_TRUE(eventually([&] { return informer.stats().watches == 1; }));
  auto closed = client_->request({.method = "POST", .target = "/testctl/close-watches"});
  ASSERT_TRUE(closed && closed->ok());
  ASSERT_TRUE(eventually([&] { return informer.stats().watches >= 2; }));
  // A change made after the reconnect is seen; no relist was needed.
  ASSERT_TRUE(client_->update(resources::endpointSlice(), endpointSlice("127.0.0.11")));
  ASSERT_TRUE(eventually([&] { return firstAddress(cache_) == "127.0.0.11"; }));
  EXPECT_EQ(informer.stats().lists, 1u);
  EXPECT_EQ(informer.stats().expired, 0u);
}

TEST_F(InformerTest, RelistsAfter410Gone) {
  // No bookmarks here: they would carry the resourceVersion past the compaction point.
  kturn::testing::TestApiServer server({.manifests = {seedManifests()}, .bookmarkInterval = 3600});
  ASSERT_TRUE(server.ready()) << server.error();
  auto client = clientFor(server);
  Informer informer(*client, cache_, nullptr);
  informer.start();
  ASSERT_TRUE(eventually([&] { return informer.stats().watches == 1; }));
  // The informer's next watch waits while its stream is ended, a change is made and the history
  // compacted away: watching from its old resourceVersion then gets 410 Expired, and only a
  // relist catches up.
  auto ctl = [&](const char* what) {
    auto r = client->request({.method = "POST", .target = std::string("/testctl/") + what});
    return r && r->ok();
  };
  ASSERT_TRUE(ctl("hold-watches"));
  ASSERT_TRUE(ctl("close-watches"));
  ASSERT_TRUE(client->update(resources::endpointSlice(), endpointSlice("127.0.0.12")));
  ASSERT_TRUE(ctl("compact"));
  EXPECT_EQ(firstAddress(cache_), "10.244.1.17");  // not seen yet
  ASSERT_TRUE(ctl("release-watches"));
  ASSERT_TRUE(eventually([&] { return firstAddress(cache_) == "127.0.0.12"; }));
  EXPECT_EQ(informer.stats().expired, 1u);
  EXPECT_EQ(informer.stats().lists, 2u);
  // And it watches on from the new list.
  ASSERT_TRUE(client->update(resources::endpointSlice(), endpointSlice("127.0.0.13")));
  ASSERT_TRUE(eventually([&] { return firstAddress(cache_) == "127.0.0.13"; }));
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
