// kturnd's config discovery client against the project's own CDS server, over real sockets: not
// ready until the first config, configs pushed live, serving on while the server is down, and
// reconnecting when it comes back.
#include <gtest/gtest.h>

#include <thread>

#include "cds/cds_server.h"
#include "config/validator.h"
#include "daemon/daemon.h"
#include "turn_test_client.h"

namespace kturn::daemon {
namespace {

using namespace std::chrono_literals;
using testing::TurnTestClient;

constexpr char kId[] = "kturn-test/gateway";

TransportAddress loopback(uint16_t port) { return {*IpAddress::parse("127.0.0.1"), port}; }

config::StunnerConfig gatewayConfig(const std::vector<std::pair<std::string, uint16_t>>& ports) {
  config::StunnerConfig c{
      .version = "v1",
      .admin = {.name = kId, .healthcheck_endpoint = ""},
      .auth = {.type = "static",
               .realm = "kturn.test",
               .credentials = {{"username", "u"}, {"password", "p"}}},
      .clusters = {{.name = "c", .type = "STATIC", .endpoints = {"127.0.0.1/32"}}},
  };
  for (const auto& [name, port] : ports) {
    c.listeners.push_back({.name = name,
                           .protocol = "TURN-UDP",
                           .address = "127.0.0.1",
                           .port = port,
                           .routes = {"c"}});
  }
  (void)config::validate(c);
  return c;
}

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

std::unique_ptr<cds::CdsServer> startServer(uint16_t port) {
  auto server = cds::CdsServer::start({.address = "127.0.0.1", .port = port});
  return server ? std::move(*server) : nullptr;
}

std::unique_ptr<Daemon> startDaemon(uint16_t cds_port, bool watch) {
  Daemon::Options options;
  options.origin = "http://127.0.0.1:" + std::to_string(cds_port);
  options.cds_id = kId;
  options.watch = watch;
  options.workers = 2;
  auto daemon = std::make_unique<Daemon>(options);
  auto started = daemon->start();
  EXPECT_TRUE(started) << started.error().message;
  return started ? std::move(daemon) : nullptr;
}

TEST(DaemonCds, WatchIsNotReadyUntilTheFirstConfigThenAppliesPushes) {
  auto server = startServer(0);
  ASSERT_TRUE(server);
  auto daemon = startDaemon(server->port(), /*watch=*/true);
  ASSERT_TRUE(daemon);
  EXPECT_EQ(daemon->health(), admin::HealthStatus::kNotReady);

  const uint16_t port_a = testing::freeUdpPort();
  const uint16_t port_b = testing::freeUdpPort();
  ASSERT_TRUE(server->upsert(kId, gatewayConfig({{"a", port_a}})));
  ASSERT_TRUE(eventually([&] { return daemon->health() == admin::HealthStatus::kReady; }));
  TurnTestClient on_a(loopback(port_a), "u", "p");
  ASSERT_TRUE(on_a.allocate().success);

  ASSERT_TRUE(server->upsert(kId, gatewayConfig({{"a", port_a}, {"b", port_b}})));
  EXPECT_TRUE(
      eventually([&] { return TurnTestClient(loopback(port_b), "u", "p").binding().success; }));
  EXPECT_TRUE(on_a.refresh(600).success) << "a pushed config dropped an untouched allocation";
}

TEST(DaemonCds, ServesWhileTheServerIsDownAndReconnectsWhenItReturns) {
  auto server = startServer(0);
  ASSERT_TRUE(server);
  const uint16_t cds_port = server->port();
  const uint16_t port_a = testing::freeUdpPort();
  const uint16_t port_b = testing::freeUdpPort();
  ASSERT_TRUE(server->upsert(kId, gatewayConfig({{"a", port_a}})));
  auto daemon = startDaemon(cds_port, /*watch=*/true);
  ASSERT_TRUE(daemon);
  ASSERT_TRUE(eventually([&] { return daemon->health() == admin::HealthStatus::kReady; }));
  TurnTestClient on_a(loopback(port_a), "u", "p");
  ASSERT_TRUE(on_a.allocate().success);

  server.reset();                       // the CDS server goes away
  std::this_thread::sleep_for(1500ms);  // past a reconnect attempt
  EXPECT_EQ(daemon->health(), admin::HealthStatus::kReady);
  EXPECT_TRUE(on_a.refresh(600).success);
  EXPECT_TRUE(TurnTestClient(loopback(port_a), "u", "p").binding().success);

  server = startServer(cds_port);
  ASSERT_TRUE(server) << "port " << cds_port << " not reusable";
  ASSERT_TRUE(server->upsert(kId, gatewayConfig({{"a", port_a}, {"b", port_b}})));
  EXPECT_TRUE(
      eventually([&] { return TurnTestClient(loopback(port_b), "u", "p").binding().success; }, 10s))
      << "no reconnect: the pushed config never arrived";
  EXPECT_TRUE(on_a.refresh(600).success);
}

TEST(DaemonCds, WithoutWatchTheConfigIsFetchedOnceAtStart) {
  auto server = startServer(0);
  ASSERT_TRUE(server);
  const uint16_t port_a = testing::freeUdpPort();
  ASSERT_TRUE(server->upsert(kId, gatewayConfig({{"a", port_a}})));
  auto daemon = startDaemon(server->port(), /*watch=*/false);
  ASSERT_TRUE(daemon);
  EXPECT_EQ(daemon->health(), admin::HealthStatus::kReady);
  EXPECT_TRUE(TurnTestClient(loopback(port_a), "u", "p").binding().success);
}

TEST(DaemonCds, WithoutWatchAnUnknownIdFailsTheStart) {
  auto server = startServer(0);
  ASSERT_TRUE(server);
  Daemon::Options options;
  options.origin = "http://127.0.0.1:" + std::to_string(server->port());
  options.cds_id = "kturn-test/absent";
  options.workers = 1;
  Daemon daemon(options);
  auto started = daemon.start();
  ASSERT_FALSE(started);
  EXPECT_NE(started.error().message.find("kturn-test/absent"), std::string::npos)
      << started.error().message;
}

}  // namespace
}  // namespace kturn::daemon
