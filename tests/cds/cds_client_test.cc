// CdsClient against a CdsServer (and a scripted WebSocket server for what CdsServer never sends)
// over loopback: one-shot get, watch, updates, reconnects, keepalive, rejection, stop.
#include "cds/cds_client.h"

#include <gtest/gtest.h>

#include <atomic>

#include "cds/cds_server.h"
#include "cds/test_support.h"  // tests/cds
#include "config/serializer.h"

namespace kturn::cds {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::Inbox;
using testing::makeConfig;
using Clock = std::chrono::steady_clock;

std::unique_ptr<CdsServer> startServer(uint16_t port = 0, CdsServerOptions options = {}) {
  options.address = "127.0.0.1";
  options.port = port;
  auto server = CdsServer::start(std::move(options));
  EXPECT_TRUE(server) << server.error().message;
  return server ? std::move(server).value() : nullptr;
}

std::unique_ptr<CdsClient> makeClient(uint16_t port, std::string id,
                                      CdsClientOptions options = {}) {
  if (options.origin.empty()) options.origin = "http://127.0.0.1:" + std::to_string(port);
  options.id = std::move(id);
  auto client = CdsClient::create(std::move(options));
  EXPECT_TRUE(client) << client.error().message;
  return client ? std::move(client).value() : nullptr;
}

WatchCallbacks callbacksFor(Inbox& inbox) {
  return {.on_config = [&inbox](config::StunnerConfig c) { inbox.onConfig(std::move(c)); },
          .on_error = [&inbox](const Error& e) { inbox.onError(e); }};
}

TEST(CdsClientCreateTest, ChecksOriginAndId) {
  EXPECT_FALSE(CdsClient::create({.origin = "file:///etc/x", .id = "a/b"}));
  EXPECT_FALSE(CdsClient::create({.origin = "http://x:1", .id = "nameonly"}));
  auto client = CdsClient::create({.origin = "ws://cds:13478", .id = "stunner/gw", .node = "n 1"});
  ASSERT_TRUE(client);
  EXPECT_EQ((*client)->getTarget(), "/api/v1/configs/stunner/gw?node=n%201");
  EXPECT_EQ((*client)->watchTarget(), "/api/v1/configs/stunner/gw?watch=true&node=n%201");
  auto no_node = CdsClient::create({.origin = "http://cds:13478", .id = "stunner/gw"});
  ASSERT_TRUE(no_node);
  EXPECT_EQ((*no_node)->watchTarget(), "/api/v1/configs/stunner/gw?watch=true");
}

TEST(CdsClientGetTest, GetsTheConfig) {
  auto server = startServer();
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("stunner/gw", makeConfig("stunner/gw", 3478)));
  auto client = makeClient(server->port(), "stunner/gw");
  ASSERT_TRUE(client);
  auto got = client->get();
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, makeConfig("stunner/gw", 3478));
  // A bare host:port origin is HTTP too.
  auto bare =
      makeClient(0, "stunner/gw", {.origin = "127.0.0.1:" + std::to_string(server->port())});
  ASSERT_TRUE(bare);
  EXPECT_TRUE(bare->get());
}

TEST(CdsClientGetTest, NotFoundAndUnreachable) {
  auto server = startServer();
  ASSERT_TRUE(server);
  auto missing = makeClient(server->port(), "stunner/missing");
  ASSERT_TRUE(missing);
  auto got = missing->get();
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, Error::Code::kNotFound);
  EXPECT_NE(got.error().message.find("Config not found for ID stunner/missing"), std::string::npos)
      << got.error().message;

  const uint16_t port = server->port();
  server->stop();
  auto gone = makeClient(port, "stunner/gw", {.request_timeout = 1000ms});
  const auto start = Clock::now();
  auto refused = gone->get();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Error::Code::kIo);
  EXPECT_LT(Clock::now() - start, 1500ms);
}

TEST(CdsListTest, ListsEveryConfigOrOneNamespace) {
  auto server = startServer();
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("b/gw", makeConfig("b/gw", 3479)));
  ASSERT_TRUE(server->upsert("a/gw", makeConfig("a/gw", 3478)));
  ASSERT_TRUE(server->upsert("a/gw2", makeConfig("a/gw2", 3480)));
  const CdsClientOptions options{.origin = "http://127.0.0.1:" + std::to_string(server->port())};
  auto all = listConfigs(options);
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0], makeConfig("a/gw", 3478));
  EXPECT_EQ((*all)[1], makeConfig("a/gw2", 3480));
  EXPECT_EQ((*all)[2], makeConfig("b/gw", 3479));
  auto ns = listConfigs(options, "b");
  ASSERT_TRUE(ns) << ns.error().message;
  ASSERT_EQ(ns->size(), 1u);
  EXPECT_EQ((*ns)[0].admin.name, "b/gw");
  auto none = listConfigs(options, "nothing-here");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());

  EXPECT_FALSE(listConfigs({.origin = "file:///etc/kturn.yaml"}));
  const uint16_t port = server->port();
  server->stop();
  auto refused = listConfigs({.origin = "http://127.0.0.1:" + std::to_string(port)});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Error::Code::kIo);
  EXPECT_NE(refused.error().message.find("GET http://127.0.0.1:" + std::to_string(port) +
                                         "/api/v1/configs"),
            std::string::npos)
      << refused.error().message;
}

TEST(CdsClientGetTest, ExpandEnvOffKeepsVariablesAsServed) {
  auto server = startServer();
  ASSERT_TRUE(server);
  config::StunnerConfig c = makeConfig("ns/gw");
  c.listeners[0].address = "$KTURN_CDS_TEST_ADDR";
  ASSERT_TRUE(server->upsert("ns/gw", c));
  ::setenv("KTURN_CDS_TEST_ADDR", "192.0.2.7", 1);
  auto expanded = makeClient(server->port(), "ns/gw");
  auto verbatim = makeClient(server->port(), "ns/gw", {.expand_env = false});
  auto got = expanded->get();
  auto as_served = verbatim->get();
  auto listed = listConfigs(
      {.origin = "http://127.0.0.1:" + std::to_string(server->port()), .expand_env = false});
  ::unsetenv("KTURN_CDS_TEST_ADDR");
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->listeners[0].address, "192.0.2.7");
  ASSERT_TRUE(as_served) << as_served.error().message;
  EXPECT_EQ(as_served->listeners[0].address, "$KTURN_CDS_TEST_ADDR");
  ASSERT_TRUE(listed) << listed.error().message;
  EXPECT_EQ((*listed)[0].listeners[0].address, "$KTURN_CDS_TEST_ADDR");

  ::setenv("KTURN_CDS_TEST_ADDR", "192.0.2.7", 1);
  Inbox inbox;
  ASSERT_TRUE(verbatim->watch(callbacksFor(inbox)));
  const bool arrived = inbox.waitConfigs(1);
  ::unsetenv("KTURN_CDS_TEST_ADDR");
  ASSERT_TRUE(arrived);
  EXPECT_EQ(inbox.configs()[0].listeners[0].address, "$KTURN_CDS_TEST_ADDR");
}

TEST(CdsClientGetTest, SendsTheNodeForPatching) {
  auto server = startServer(
      0, {.node_patcher = [](const config::StunnerConfig& c, std::string_view node) {
        config::StunnerConfig patched = c;
        patched.listeners[0].public_address = node == "node-a" ? "192.0.2.1" : "192.0.2.2";
        return patched;
      }});
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("ns/gw", makeConfig("ns/gw")));
  auto client = makeClient(server->port(), "ns/gw", {.node = "node-a"});
  auto got = client->get();
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->listeners[0].public_address, "192.0.2.1");

  Inbox inbox;
  ASSERT_TRUE(client->watch(callbacksFor(inbox)));
  ASSERT_TRUE(inbox.waitConfigs(1));
  EXPECT_EQ(inbox.configs()[0].listeners[0].public_address, "192.0.2.1");
}

TEST(CdsWatchTest, InitialConfigThenUpdates) {
  auto server = startServer();
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("stunner/gw", makeConfig("stunner/gw", 3478)));
  auto client = makeClient(server->port(), "stunner/gw");
  Inbox inbox;
  ASSERT_TRUE(client->watch(callbacksFor(inbox)));
  EXPECT_FALSE(client->watch(callbacksFor(inbox)));  // one watch at a time
  ASSERT_TRUE(inbox.waitConfigs(1));
  EXPECT_EQ(inbox.configs()[0], makeConfig("stunner/gw", 3478));

  ASSERT_TRUE(server->upsert("stunner/gw", makeConfig("stunner/gw", 3479)));
  ASSERT_TRUE(inbox.waitConfigs(2));
  EXPECT_EQ(inbox.configs()[1].listeners[0].port, 3479);
  // An unchanged upsert pushes nothing; a real change does.
  ASSERT_TRUE(server->upsert("stunner/gw", makeConfig("stunner/gw", 3479)));
  ASSERT_TRUE(server->upsert("stunner/gw", makeConfig("stunner/gw", 3480)));
  ASSERT_TRUE(inbox.waitConfigs(3));
  EXPECT_EQ(inbox.configs()[2].listeners[0].port, 3480);
  EXPECT_EQ(inbox.configs().size(), 3u);
  EXPECT_EQ(client->stats().connects, 1u);
  EXPECT_EQ(server->watcherCount(), 1u);
}

TEST(CdsWatchTest, WatchBeforeTheConfigExists) {
  auto server = startServer();
  ASSERT_TRUE(server);
  auto client = makeClient(server->port(), "late/gw");
  Inbox inbox;
  ASSERT_TRUE(client->watch(callbacksFor(inbox)));
  ASSERT_TRUE(eventually([&] { return server->watcherCount() == 1; }));
  ASSERT_TRUE(server->upsert("late/gw", makeConfig("late/gw")));
  ASSERT_TRUE(inbox.waitConfigs(1));
  EXPECT_EQ(inbox.configs()[0].admin.name, "late/gw");
}

TEST(CdsWatchTest, ReconnectsAfterServerRestart) {
  auto server = startServer();
  ASSERT_TRUE(server);
  const uint16_t port = server->port();
  ASSERT_TRUE(server->upsert("stunner/gw", makeConfig("stunner/gw", 3478)));
  auto client = makeClient(port, "stunner/gw");
  Inbox inbox;
  ASSERT_TRUE(client->watch(callbacksFor(inbox)));
  ASSERT_TRUE(inbox.waitConfigs(1));

  server->stop();
  server.reset();
  ASSERT_TRUE(inbox.waitFor([](const auto&, const auto& errors) { return !errors.empty(); }));
  server = startServer(port);
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("stunner/gw", makeConfig("stunner/gw", 4000)));
  const auto restarted = Clock::now();
  ASSERT_TRUE(inbox.waitConfigs(2, 2500ms));
  EXPECT_LT(Clock::now() - restarted, 2000ms);  // retry period 1 s
  EXPECT_EQ(inbox.configs()[1].listeners[0].port, 4000);
  EXPECT_GE(client->stats().connects, 2u);
  EXPECT_GE(client->stats().disconnects, 1u);
}

TEST(CdsWatchTest, InvalidConfigIsReportedAndNotDelivered) {
  testing::ScriptedWsServer fake;
  auto client = makeClient(fake.port(), "stunner/gw", {.node = "node-1"});
  Inbox inbox;
  ASSERT_TRUE(client->watch(callbacksFor(inbox)));
  fake.send(config::toJson(makeConfig("stunner/gw", 3478)));
  ASSERT_TRUE(inbox.waitConfigs(1));
  EXPECT_EQ(fake.target(), "/api/v1/configs/stunner/gw?watch=true&node=node-1");

  std::string bad = config::toJson(makeConfig("stunner/gw", 3478));
  bad.replace(bad.find("3478"), 4, "70000");
  fake.send(bad);
  fake.send("{not json");
  fake.send("");
  fake.send(config::toJson(makeConfig("stunner/gw", 3490)));
  ASSERT_TRUE(inbox.waitConfigs(2));
  const auto configs = inbox.configs();
  ASSERT_EQ(configs.size(), 2u);
  EXPECT_EQ(configs[0].listeners[0].port, 3478);
  EXPECT_EQ(configs[1].listeners[0].port, 3490);
  const auto errors = inbox.errors();
  ASSERT_GE(errors.size(), 3u);
  EXPECT_NE(errors[0].find("listeners[0].port"), std::string::npos) << errors[0];
  EXPECT_EQ(client->stats().rejected, 3u);
  EXPECT_EQ(client->stats().connects, 1u);  // a bad config does not cost the connection
}

TEST(CdsWatchTest, DeletionIsSuppressedByDefault) {
  auto server = startServer();
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("stunner/gw", makeConfig("stunner/gw")));
  auto quiet = makeClient(server->port(), "stunner/gw");
  auto loud = makeClient(server->port(), "stunner/gw", {.suppress_delete = false});
  Inbox quiet_inbox;
  Inbox loud_inbox;
  std::atomic<int> told{0};
  WatchCallbacks quiet_callbacks = callbacksFor(quiet_inbox);
  quiet_callbacks.on_delete_suppressed = [&] { ++told; };
  ASSERT_TRUE(quiet->watch(std::move(quiet_callbacks)));
  ASSERT_TRUE(loud->watch(callbacksFor(loud_inbox)));
  ASSERT_TRUE(quiet_inbox.waitConfigs(1));
  ASSERT_TRUE(loud_inbox.waitConfigs(1));

  ASSERT_TRUE(server->remove("stunner/gw"));
  ASSERT_TRUE(loud_inbox.waitConfigs(2));
  EXPECT_TRUE(isConfigDeleted(loud_inbox.configs()[1]));
  EXPECT_EQ(loud_inbox.configs()[1].admin.name, "stunner/gw");
  ASSERT_TRUE(eventually([&] { return quiet->stats().deletes_suppressed == 1; }));
  EXPECT_EQ(told.load(), 1);
  EXPECT_EQ(quiet_inbox.configs().size(), 1u);
}

TEST(CdsWatchTest, PingsAreAnsweredWithPongs) {
  auto server = startServer();
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("stunner/gw", makeConfig("stunner/gw")));
  auto client = makeClient(server->port(), "stunner/gw", {.ping_period = 50ms, .pong_wait = 400ms});
  Inbox inbox;
  ASSERT_TRUE(client->watch(callbacksFor(inbox)));
  ASSERT_TRUE(inbox.waitConfigs(1));
  // Quiet server, yet the connection stays up for many pong_waits: the pongs keep it alive.
  ASSERT_TRUE(eventually([&] { return client->stats().pongs_received >= 20; }));
  const auto stats = client->stats();
  EXPECT_GE(stats.pings_sent, 20u);
  EXPECT_EQ(stats.connects, 1u);
  EXPECT_EQ(stats.disconnects, 0u);
}

TEST(CdsWatchTest, SilentServerIsDeclaredDeadAndRetried) {
  // The scripted server never reads, so it never answers pings.
  testing::ScriptedWsServer fake;
  auto client = makeClient(fake.port(), "stunner/gw", {.ping_period = 50ms, .pong_wait = 300ms});
  Inbox inbox;
  ASSERT_TRUE(client->watch(callbacksFor(inbox)));
  ASSERT_TRUE(eventually([&] { return client->stats().disconnects >= 1; }));
  bool saw_timeout = false;
  for (const auto& e : inbox.errors()) saw_timeout |= e.find("timed out") != std::string::npos;
  EXPECT_TRUE(saw_timeout);
}

TEST(CdsWatchTest, StopIsPrompt) {
  auto server = startServer();
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("stunner/gw", makeConfig("stunner/gw")));
  auto client = makeClient(server->port(), "stunner/gw");
  Inbox inbox;
  ASSERT_TRUE(client->watch(callbacksFor(inbox)));
  ASSERT_TRUE(inbox.waitConfigs(1));
  auto start = Clock::now();
  client->stop();
  EXPECT_LT(Clock::now() - start, 200ms);
  EXPECT_FALSE(client->watching());
  client->stop();  // idempotent
  // The server notices the client left.
  EXPECT_TRUE(eventually([&] { return server->watcherCount() == 0; }));

  // Also while it waits to reconnect to nothing.
  auto orphan = makeClient(1, "stunner/gw");
  ASSERT_TRUE(orphan->watch(callbacksFor(inbox)));
  std::this_thread::sleep_for(50ms);
  start = Clock::now();
  orphan.reset();
  EXPECT_LT(Clock::now() - start, 200ms);

  // And a watch can start again after stop().
  ASSERT_TRUE(client->watch(callbacksFor(inbox)));
  ASSERT_TRUE(inbox.waitConfigs(2));
}

TEST(CdsWatchTest, StopFromTheCallbackDoesNotDeadlock) {
  auto server = startServer();
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("stunner/gw", makeConfig("stunner/gw")));
  auto client = makeClient(server->port(), "stunner/gw");
  Inbox inbox;
  CdsClient* raw = client.get();
  ASSERT_TRUE(client->watch({.on_config = [&](config::StunnerConfig c) {
    raw->stop();
    inbox.onConfig(std::move(c));
  }}));
  ASSERT_TRUE(inbox.waitConfigs(1));
  EXPECT_FALSE(client->watching());
  client.reset();
}

TEST(CdsWatchTest, WatchersOnlyGetTheirOwnConfig) {
  auto server = startServer();
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("ns/a", makeConfig("ns/a", 3000)));
  ASSERT_TRUE(server->upsert("ns/b", makeConfig("ns/b", 4000)));
  auto a = makeClient(server->port(), "ns/a");
  auto b = makeClient(server->port(), "ns/b");
  Inbox inbox_a;
  Inbox inbox_b;
  ASSERT_TRUE(a->watch(callbacksFor(inbox_a)));
  ASSERT_TRUE(b->watch(callbacksFor(inbox_b)));
  ASSERT_TRUE(inbox_a.waitConfigs(1));
  ASSERT_TRUE(inbox_b.waitConfigs(1));
  ASSERT_TRUE(server->upsert("ns/a", makeConfig("ns/a", 3001)));
  ASSERT_TRUE(server->upsert("ns/b", makeConfig("ns/b", 4001)));
  ASSERT_TRUE(server->upsert("ns/a", makeConfig("ns/a", 3002)));
  ASSERT_TRUE(inbox_a.waitFor(
      [](const auto& c, const auto&) { return !c.empty() && c.back().listeners[0].port == 3002; }));
  ASSERT_TRUE(inbox_b.waitFor(
      [](const auto& c, const auto&) { return !c.empty() && c.back().listeners[0].port == 4001; }));
  for (const auto& c : inbox_a.configs()) EXPECT_EQ(c.admin.name, "ns/a");
  for (const auto& c : inbox_b.configs()) EXPECT_EQ(c.admin.name, "ns/b");
}

TEST(CdsWatchTest, ManyUpdatesArriveInOrderEndingWithTheLatest) {
  auto server = startServer();
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("ns/gw", makeConfig("ns/gw", 1000)));
  auto client = makeClient(server->port(), "ns/gw");
  Inbox inbox;
  ASSERT_TRUE(client->watch(callbacksFor(inbox)));
  ASSERT_TRUE(inbox.waitConfigs(1));
  for (int port = 1001; port <= 1200; ++port) {
    ASSERT_TRUE(server->upsert("ns/gw", makeConfig("ns/gw", port)));
  }
  ASSERT_TRUE(
      inbox.waitFor([](const auto& c, const auto&) { return c.back().listeners[0].port == 1200; }));
  int last = 0;
  for (const auto& c : inbox.configs()) {  // coalescing may skip some, never reorder
    EXPECT_GT(c.listeners[0].port, last);
    last = c.listeners[0].port;
  }
}

}  // namespace
}  // namespace kturn::cds
