// CdsServer over loopback HTTP: the STUNner endpoints, status codes and JSON shapes.
#include "cds/cds_server.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "admin/test_http_client.h"  // a blocking HTTP client with bounded reads
#include "cds/test_support.h"        // tests/cds
#include "config/parser.h"

namespace kturn::cds {
namespace {

using namespace std::chrono_literals;
using admin::testing::httpGet;
using admin::testing::httpRequest;
using testing::makeConfig;

std::unique_ptr<CdsServer> startServer(CdsServerOptions options = {}) {
  options.address = "127.0.0.1";
  options.port = 0;
  auto server = CdsServer::start(std::move(options));
  EXPECT_TRUE(server) << server.error().message;
  return server ? std::move(server).value() : nullptr;
}

class CdsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = startServer();
    ASSERT_TRUE(server_);
    ASSERT_TRUE(server_->upsert("stunner/udp", makeConfig("stunner/udp", 3478)));
    ASSERT_TRUE(server_->upsert("stunner/tcp", makeConfig("stunner/tcp", 3479)));
    ASSERT_TRUE(server_->upsert("other/gw", makeConfig("other/gw", 3480)));
  }
  std::unique_ptr<CdsServer> server_;
};

TEST_F(CdsServerTest, ListsAllConfigs) {
  auto reply = httpGet(server_->port(), "/api/v1/configs");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->headers["content-type"], "application/json");
  auto doc = nlohmann::json::parse(reply->body);
  EXPECT_EQ(doc["version"], "v1");
  ASSERT_EQ(doc["items"].size(), 3u);
  // Sorted by id: other/gw, stunner/tcp, stunner/udp.
  EXPECT_EQ(doc["items"][0]["admin"]["name"], "other/gw");
  EXPECT_EQ(doc["items"][2]["admin"]["name"], "stunner/udp");
  auto parsed = parseListJson(reply->body);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ((*parsed)[1], makeConfig("stunner/tcp", 3479));
}

TEST_F(CdsServerTest, ListsOneNamespace) {
  auto reply = httpGet(server_->port(), "/api/v1/configs/stunner");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  auto doc = nlohmann::json::parse(reply->body);
  ASSERT_EQ(doc["items"].size(), 2u);
  auto empty = httpGet(server_->port(), "/api/v1/configs/nobody");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status, 200);  // an empty list, not a 404, as STUNner
  EXPECT_EQ(empty->body, "{\"version\":\"v1\",\"items\":[]}\n");
}

TEST_F(CdsServerTest, GetsOneConfig) {
  auto reply = httpGet(server_->port(), "/api/v1/configs/stunner/udp");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  auto parsed = config::parseConfig(reply->body);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, makeConfig("stunner/udp", 3478));
  EXPECT_EQ(server_->get("stunner/udp"), makeConfig("stunner/udp", 3478));
}

TEST_F(CdsServerTest, UnknownConfigIs404WithStunnersErrorBody) {
  auto reply = httpGet(server_->port(), "/api/v1/configs/stunner/missing");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 404);
  EXPECT_EQ(reply->headers["content-type"], "application/json");
  auto doc = nlohmann::json::parse(reply->body);
  EXPECT_EQ(doc["code"], 404);
  EXPECT_EQ(doc["message"], "Config not found for ID stunner/missing");
}

TEST_F(CdsServerTest, OtherPathsMethodsAndQueries) {
  auto unknown = httpGet(server_->port(), "/api/v1/nothing");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(unknown->body, "404 page not found\n");
  auto post = httpRequest(server_->port(), "POST", "/api/v1/configs");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  auto bad_watch = httpGet(server_->port(), "/api/v1/configs?watch=maybe");
  ASSERT_TRUE(bad_watch);
  EXPECT_EQ(bad_watch->status, 400);
  // watch=true without a WebSocket handshake.
  auto not_ws = httpGet(server_->port(), "/api/v1/configs/stunner/udp?watch=true");
  ASSERT_TRUE(not_ws);
  EXPECT_EQ(not_ws->status, 400);
  auto license = httpGet(server_->port(), "/api/v1/license");
  ASSERT_TRUE(license);
  EXPECT_EQ(license->status, 200);
  EXPECT_EQ(nlohmann::json::parse(license->body)["subscriptionType"], "free");
}

TEST_F(CdsServerTest, KeepAliveServesSeveralRequests) {
  admin::testing::TestConnection connection(server_->port());
  ASSERT_TRUE(connection.connected());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(connection.send("GET /api/v1/configs/other/gw HTTP/1.1\r\nHost: x\r\n\r\n"));
    auto reply = connection.readReply();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 200);
  }
}

TEST_F(CdsServerTest, UpsertValidatesAndRemoveForgets) {
  config::StunnerConfig bad = makeConfig("stunner/bad");
  bad.listeners[0].port = 70000;
  auto refused = server_->upsert("stunner/bad", bad);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("listeners[0].port"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(server_->get("stunner/bad"));
  EXPECT_FALSE(server_->upsert("no-slash", makeConfig("x")));

  // Defaults are filled before storing.
  config::StunnerConfig sparse{
      .version = "v1", .admin = {.name = "stunner/sparse"}, .auth = {.type = "none"}};
  ASSERT_TRUE(server_->upsert("stunner/sparse", sparse));
  EXPECT_EQ(server_->get("stunner/sparse")->auth.realm, "stunner.l7mp.io");

  EXPECT_TRUE(server_->remove("stunner/udp"));
  EXPECT_FALSE(server_->remove("stunner/udp"));
  auto reply = httpGet(server_->port(), "/api/v1/configs/stunner/udp");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 404);
}

TEST_F(CdsServerTest, UpdateIsStateOfTheWorld) {
  ASSERT_TRUE(server_->update(
      {{"stunner/udp", makeConfig("stunner/udp", 4000)}, {"new/gw", makeConfig("new/gw")}}));
  EXPECT_EQ(server_->ids(), (std::vector<std::string>{"new/gw", "stunner/udp"}));
  EXPECT_EQ(server_->get("stunner/udp")->listeners[0].port, 4000);
  config::StunnerConfig bad = makeConfig("x/y");
  bad.version = "v2";
  EXPECT_FALSE(server_->update({{"x/y", bad}}));
  EXPECT_EQ(server_->ids().size(), 2u);  // nothing applied
}

std::string adminName(const std::optional<std::string>& json) {
  if (!json) return "<none>";
  return nlohmann::json::parse(*json)["admin"]["name"];
}

TEST_F(CdsServerTest, NamespaceWatchGetsItsNamespaceOnly) {
  testing::WsTestClient watch(server_->port(), "/api/v1/configs/stunner?watch=true");
  ASSERT_TRUE(watch.ok());
  // The current state first, in id order.
  EXPECT_EQ(adminName(watch.read()), "stunner/tcp");
  EXPECT_EQ(adminName(watch.read()), "stunner/udp");
  ASSERT_TRUE(server_->upsert("other/gw", makeConfig("other/gw", 5000)));
  ASSERT_TRUE(server_->upsert("stunner/new", makeConfig("stunner/new")));
  EXPECT_EQ(adminName(watch.read()), "stunner/new");
  // A deletion is the zero config.
  ASSERT_TRUE(server_->remove("stunner/udp"));
  auto zero = watch.read();
  ASSERT_TRUE(zero);
  auto parsed = config::parseConfig(*zero);
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(isConfigDeleted(*parsed));
  EXPECT_EQ(parsed->admin.name, "stunner/udp");
}

TEST_F(CdsServerTest, AllWatchGetsEverything) {
  testing::WsTestClient watch(server_->port(), "/api/v1/configs?watch=true");
  ASSERT_TRUE(watch.ok());
  EXPECT_EQ(adminName(watch.read()), "other/gw");
  EXPECT_EQ(adminName(watch.read()), "stunner/tcp");
  EXPECT_EQ(adminName(watch.read()), "stunner/udp");
  ASSERT_TRUE(server_->upsert("third/gw", makeConfig("third/gw")));
  EXPECT_EQ(adminName(watch.read()), "third/gw");
  EXPECT_EQ(server_->watcherCount(), 1u);
}

TEST(CdsServerStartTest, SuppressDeletionSendsNothing) {
  auto server = startServer({.suppress_deletion = true});
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("ns/gw", makeConfig("ns/gw")));
  testing::WsTestClient watch(server->port(), "/api/v1/configs/ns/gw?watch=true", 300ms);
  ASSERT_TRUE(watch.ok());
  EXPECT_EQ(adminName(watch.read()), "ns/gw");
  ASSERT_TRUE(server->remove("ns/gw"));
  EXPECT_FALSE(watch.read());
}

TEST(CdsServerStartTest, StopClosesWatchers) {
  auto server = startServer();
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("ns/gw", makeConfig("ns/gw")));
  testing::WsTestClient watch(server->port(), "/api/v1/configs/ns/gw?watch=true");
  ASSERT_TRUE(watch.ok());
  EXPECT_EQ(adminName(watch.read()), "ns/gw");
  const auto start = std::chrono::steady_clock::now();
  server->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
  EXPECT_FALSE(watch.read());
  EXPECT_EQ(server->watcherCount(), 0u);
  EXPECT_TRUE(server->get("ns/gw"));  // still readable
}

TEST(CdsServerStartTest, NodePatcherAppliesToGetWithNode) {
  auto server =
      startServer({.node_patcher = [](const config::StunnerConfig& c, std::string_view node) {
        config::StunnerConfig patched = c;
        patched.listeners[0].public_address = "198.51.100." + std::string(node == "n1" ? "1" : "2");
        return patched;
      }});
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("ns/gw", makeConfig("ns/gw")));
  auto plain = httpGet(server->port(), "/api/v1/configs/ns/gw");
  auto n1 = httpGet(server->port(), "/api/v1/configs/ns/gw?node=n1");
  ASSERT_TRUE(plain && n1);
  EXPECT_EQ(config::parseConfig(plain->body)->listeners[0].public_address, "");
  EXPECT_EQ(config::parseConfig(n1->body)->listeners[0].public_address, "198.51.100.1");
}

TEST(CdsServerStartTest, RefusesBadAddressAndBusyPort) {
  EXPECT_FALSE(CdsServer::start({.address = "not-an-ip", .port = 0}));
  auto first = startServer();
  ASSERT_TRUE(first);
  auto second = CdsServer::start({.address = "127.0.0.1", .port = first->port()});
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message.find("127.0.0.1"), std::string::npos);
}

// kturn-operator's server: until the first render is published, a config request is told to
// come back (503, Retry-After) instead of being served an empty list; upserts alone do not end
// the wait, the first state of the world does.
TEST(CdsServerStartTest, WaitForStateAnswers503UntilTheFirstUpdate) {
  auto server = startServer({.wait_for_state = true});
  ASSERT_TRUE(server);
  EXPECT_FALSE(server->serving());
  ASSERT_TRUE(server->upsert("ns/gw", makeConfig("ns/gw")));
  for (const char* target : {"/api/v1/configs", "/api/v1/configs/ns", "/api/v1/configs/ns/gw"}) {
    auto reply = httpGet(server->port(), target);
    ASSERT_TRUE(reply) << target;
    EXPECT_EQ(reply->status, 503) << target;
    EXPECT_EQ(reply->headers["retry-after"], "1") << target;
    EXPECT_NE(reply->body.find("has not received its first state"), std::string::npos)
        << reply->body;
  }
  testing::WsTestClient refused(server->port(), "/api/v1/configs?watch=true", 300ms);
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(server->watcherCount(), 0u);
  auto license = httpGet(server->port(), "/api/v1/license");  // not a config: answered
  ASSERT_TRUE(license);
  EXPECT_EQ(license->status, 200);

  ASSERT_TRUE(server->update({{"ns/gw", makeConfig("ns/gw", 4000)}}));
  EXPECT_TRUE(server->serving());
  auto reply = httpGet(server->port(), "/api/v1/configs");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(nlohmann::json::parse(reply->body)["items"].size(), 1u);
  testing::WsTestClient watch(server->port(), "/api/v1/configs?watch=true", 300ms);
  ASSERT_TRUE(watch.ok());
  EXPECT_EQ(adminName(watch.read()), "ns/gw");
}

TEST(CdsServerStartTest, WithoutWaitForStateAnEmptyServerAnswersAtOnce) {
  auto server = startServer();
  ASSERT_TRUE(server);
  EXPECT_TRUE(server->serving());
  auto reply = httpGet(server->port(), "/api/v1/configs");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_TRUE(nlohmann::json::parse(reply->body)["items"].empty());
}

TEST(CdsServerStartTest, StopReleasesThePort) {
  auto server = startServer();
  ASSERT_TRUE(server);
  const uint16_t port = server->port();
  server->stop();
  server->stop();  // idempotent
  EXPECT_FALSE(httpGet(port, "/api/v1/configs"));
  auto again = CdsServer::start({.address = "127.0.0.1", .port = port});
  EXPECT_TRUE(again) << again.error().message;
}

}  // namespace
}  // namespace kturn::cds
