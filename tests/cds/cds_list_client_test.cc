// CdsListClient against a CdsServer over loopback: every config and one namespace, changes and
// deletions by id, configs deleted while the client was away reported after the reconnect, a
// server that cannot list, stop.
#include "cds/cds_list_client.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>

#include "cds/cds_server.h"
#include "cds/test_support.h"  // tests/cds

namespace kturn::cds {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::makeConfig;
using Clock = std::chrono::steady_clock;

std::unique_ptr<CdsServer> startServer(uint16_t port = 0) {
  auto server = CdsServer::start({.address = "127.0.0.1", .port = port});
  EXPECT_TRUE(server) << server.error().message;
  return server ? std::move(server).value() : nullptr;
}

std::unique_ptr<CdsListClient> makeClient(uint16_t port, std::string namespace_ = {},
                                          CdsClientOptions options = {}) {
  options.origin = "http://127.0.0.1:" + std::to_string(port);
  auto client = CdsListClient::create(std::move(options), std::move(namespace_));
  EXPECT_TRUE(client) << client.error().message;
  return client ? std::move(client).value() : nullptr;
}

// What a list watch delivered, as "config <id> <port of listener 0>" and "delete <id>" lines, in
// order, and the current view: id -> port.
class ListInbox {
 public:
  ListWatchCallbacks callbacks() {
    return {.on_config =
                [this](const std::string& id, config::StunnerConfig c) {
                  std::lock_guard lock(mutex_);
                  const int port = c.listeners.empty() ? 0 : c.listeners[0].port;
                  events_.push_back("config " + id + " " + std::to_string(port));
                  view_[id] = port;
                  cv_.notify_all();
                },
            .on_delete =
                [this](const std::string& id) {
                  std::lock_guard lock(mutex_);
                  events_.push_back("delete " + id);
                  view_.erase(id);
                  cv_.notify_all();
                },
            .on_error =
                [this](const Error& e) {
                  std::lock_guard lock(mutex_);
                  errors_.push_back(e.message);
                  cv_.notify_all();
                }};
  }
  // Waits until the view is exactly `want`.
  bool waitView(const std::map<std::string, int>& want, std::chrono::milliseconds timeout = 3s) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return view_ == want; });
  }
  bool waitError(const std::string& part, std::chrono::milliseconds timeout = 3s) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] {
      for (const auto& e : errors_) {
        if (e.find(part) != std::string::npos) return true;
      }
      return false;
    });
  }
  std::vector<std::string> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  std::map<std::string, int> view() const {
    std::lock_guard lock(mutex_);
    return view_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::string> events_;
  std::map<std::string, int> view_;
  std::vector<std::string> errors_;
};

TEST(CdsListClientTest, CreateChecksOriginNamespaceAndTimings) {
  EXPECT_FALSE(CdsListClient::create({.origin = "file:///etc/x"}));
  EXPECT_FALSE(CdsListClient::create({.origin = "http://cds:13478"}, "a/b"));
  EXPECT_FALSE(CdsListClient::create({.origin = "http://cds:13478", .ping_period = 0ms}));
  auto all = CdsListClient::create({.origin = "ws://cds:13478"});
  ASSERT_TRUE(all);
  EXPECT_EQ((*all)->watchTarget(), "/api/v1/configs?watch=true");
  EXPECT_EQ((*all)->listTarget(), "/api/v1/configs");
  auto ns = CdsListClient::create({.origin = "http://cds:13478"}, "media ns");
  ASSERT_TRUE(ns);
  EXPECT_EQ((*ns)->watchTarget(), "/api/v1/configs/media%20ns?watch=true");
  EXPECT_FALSE((*ns)->watch({.on_config = [](const std::string&, config::StunnerConfig) {}}))
      << "on_delete is required";
}

TEST(CdsListClientTest, EveryConfigThenChangesAndDeletionsById) {
  auto server = startServer();
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("a/gw", makeConfig("a/gw", 3478)));
  ASSERT_TRUE(server->upsert("b/gw", makeConfig("b/gw", 3479)));
  auto client = makeClient(server->port());
  ListInbox inbox;
  ASSERT_TRUE(client->watch(inbox.callbacks()));
  EXPECT_FALSE(client->watch(inbox.callbacks()));  // one watch at a time
  ASSERT_TRUE(inbox.waitView({{"a/gw", 3478}, {"b/gw", 3479}}));

  ASSERT_TRUE(server->upsert("c/gw", makeConfig("c/gw", 3480)));
  ASSERT_TRUE(server->upsert("a/gw", makeConfig("a/gw", 4000)));
  ASSERT_TRUE(server->remove("b/gw"));
  ASSERT_TRUE(inbox.waitView({{"a/gw", 4000}, {"c/gw", 3480}}));
  EXPECT_EQ(inbox.events(),
            (std::vector<std::string>{"config a/gw 3478", "config b/gw 3479", "config c/gw 3480",
                                      "config a/gw 4000", "delete b/gw"}));
  const CdsClientStats stats = client->stats();
  EXPECT_EQ(stats.configs, 4u);
  EXPECT_EQ(stats.deletes, 1u);
  EXPECT_EQ(stats.connects, 1u);
  EXPECT_EQ(server->watcherCount(), 1u);
}

TEST(CdsListClientTest, NamespaceWatchSeesOnlyItsNamespace) {
  auto server = startServer();
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("a/gw1", makeConfig("a/gw1", 3478)));
  ASSERT_TRUE(server->upsert("b/gw", makeConfig("b/gw", 3479)));
  auto client = makeClient(server->port(), "a");
  ListInbox inbox;
  ASSERT_TRUE(client->watch(inbox.callbacks()));
  ASSERT_TRUE(inbox.waitView({{"a/gw1", 3478}}));
  ASSERT_TRUE(server->upsert("b/gw", makeConfig("b/gw", 4000)));
  ASSERT_TRUE(server->remove("b/gw"));
  ASSERT_TRUE(server->upsert("a/gw2", makeConfig("a/gw2", 3480)));
  ASSERT_TRUE(inbox.waitView({{"a/gw1", 3478}, {"a/gw2", 3480}}));
  for (const auto& e : inbox.events()) EXPECT_EQ(e.find("b/"), std::string::npos) << e;
}

TEST(CdsListClientTest, ConfigsDeletedWhileAwayAreReportedAfterTheReconnect) {
  auto server = startServer();
  ASSERT_TRUE(server);
  const uint16_t port = server->port();
  ASSERT_TRUE(server->upsert("a/gw", makeConfig("a/gw", 3478)));
  ASSERT_TRUE(server->upsert("b/gw", makeConfig("b/gw", 3479)));
  auto client = makeClient(port);
  ListInbox inbox;
  ASSERT_TRUE(client->watch(inbox.callbacks()));
  ASSERT_TRUE(inbox.waitView({{"a/gw", 3478}, {"b/gw", 3479}}));

  // The server comes back without b/gw (a restarted operator never knew it) and with c/gw.
  server->stop();
  server.reset();
  ASSERT_TRUE(inbox.waitError("disconnected"));
  server = startServer(port);
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("a/gw", makeConfig("a/gw", 3478)));
  ASSERT_TRUE(server->upsert("c/gw", makeConfig("c/gw", 3480)));
  ASSERT_TRUE(inbox.waitView({{"a/gw", 3478}, {"c/gw", 3480}}, 3500ms));
  const auto events = inbox.events();
  // The deletion comes from the list, before the configs of the new session.
  const auto deleted = std::find(events.begin(), events.end(), "delete b/gw");
  const auto added = std::find(events.begin(), events.end(), "config c/gw 3480");
  ASSERT_NE(deleted, events.end());
  EXPECT_LT(deleted, added);
  EXPECT_GE(client->stats().connects, 2u);
  EXPECT_EQ(client->stats().deletes, 1u);
}

// A server that has no state yet (kturn-operator's, before its first render) answers 503: the
// watch is retried, and nothing the client holds is taken for deleted meanwhile.
TEST(CdsListClientTest, AServerWithoutStateYetDeletesNothing) {
  auto server = startServer();
  ASSERT_TRUE(server);
  const uint16_t port = server->port();
  ASSERT_TRUE(server->upsert("a/gw", makeConfig("a/gw", 3478)));
  auto client = makeClient(port);
  ListInbox inbox;
  ASSERT_TRUE(client->watch(inbox.callbacks()));
  ASSERT_TRUE(inbox.waitView({{"a/gw", 3478}}));

  // The replica it reconnects to has just started: it has not rendered anything yet.
  server->stop();
  auto restarted = CdsServer::start({.address = "127.0.0.1", .port = port, .wait_for_state = true});
  ASSERT_TRUE(restarted) << restarted.error().message;
  server = std::move(restarted).value();
  ASSERT_TRUE(inbox.waitError("HTTP status 503", 3500ms));
  EXPECT_EQ(inbox.view(), (std::map<std::string, int>{{"a/gw", 3478}}));
  EXPECT_EQ(client->stats().deletes, 0u);

  // Its first render: the same gateway moved to another port, and a new one.
  ASSERT_TRUE(server->update({{"a/gw", makeConfig("a/gw", 3490)}, {"b/gw", makeConfig("b/gw")}}));
  ASSERT_TRUE(inbox.waitView({{"a/gw", 3490}, {"b/gw", 3478}}, 3500ms));
  EXPECT_EQ(client->stats().deletes, 0u);
  const auto events = inbox.events();
  EXPECT_EQ(std::count_if(events.begin(), events.end(),
                          [](const std::string& e) { return e.rfind("delete", 0) == 0; }),
            0);
}

TEST(CdsListClientTest, AServerThatCannotListIsRetried) {
  // The scripted server upgrades the watch but never answers the list GET that follows.
  testing::ScriptedWsServer fake;
  auto client = makeClient(fake.port(), "", {.request_timeout = 200ms});
  ListInbox inbox;
  ASSERT_TRUE(client->watch(inbox.callbacks()));
  ASSERT_TRUE(inbox.waitError("listing the configs after connecting"));
  EXPECT_EQ(fake.target(), "/api/v1/configs?watch=true");
  EXPECT_TRUE(eventually([&] { return client->stats().disconnects >= 1; }));
  EXPECT_TRUE(inbox.events().empty());
}

TEST(CdsListClientTest, StopIsPromptAndAWatchCanStartAgain) {
  auto server = startServer();
  ASSERT_TRUE(server);
  ASSERT_TRUE(server->upsert("a/gw", makeConfig("a/gw")));
  auto client = makeClient(server->port());
  ListInbox inbox;
  ASSERT_TRUE(client->watch(inbox.callbacks()));
  ASSERT_TRUE(inbox.waitView({{"a/gw", 3478}}));
  const auto start = Clock::now();
  client->stop();
  EXPECT_LT(Clock::now() - start, 200ms);
  EXPECT_FALSE(client->watching());
  EXPECT_TRUE(eventually([&] { return server->watcherCount() == 0; }));

  ASSERT_TRUE(server->upsert("b/gw", makeConfig("b/gw", 3479)));
  ListInbox again;
  ASSERT_TRUE(client->watch(again.callbacks()));
  ASSERT_TRUE(again.waitView({{"a/gw", 3478}, {"b/gw", 3479}}));
}

}  // namespace
}  // namespace kturn::cds
