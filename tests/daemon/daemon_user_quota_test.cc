// admin.user_quota holds per process: with four workers a user still gets quota allocations,
// whichever worker the kernel hands each client socket to (SO_REUSEPORT hashes the 4-tuple).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "daemon/daemon_fixture.h"
#include "daemon/turn_test_client.h"

namespace kturn::daemon {
namespace {

TEST(DaemonUserQuota, HoldsAcrossWorkers) {
  const uint16_t port = testing::freeUdpPort();
  ASSERT_NE(port, 0);
  const auto path = std::filesystem::temp_directory_path() /
                    ("kturnd-user-quota-test-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << "version: v1\n"
                         "admin: {name: t, healthcheck_endpoint: \"\", user_quota: 2}\n"
                         "auth: {type: static, realm: kturn.test, "
                         "credentials: {username: u, password: p}}\n"
                         "listeners: [{name: udp, protocol: TURN-UDP, address: 127.0.0.1, "
                      << "port: " << port << ", routes: [c]}]\n"
                      << "clusters: [{name: c, type: STATIC, endpoints: [127.0.0.1/32]}]\n";
  auto daemon = testing::startDaemonOn(path, /*workers=*/4);
  ASSERT_TRUE(daemon);
  const TransportAddress server{*IpAddress::parse("127.0.0.1"), port};
  // Sixteen client sockets: spread over the four workers, each a new allocation of user u.
  std::vector<std::unique_ptr<testing::TurnTestClient>> clients;
  int admitted = 0;
  int refused = 0;
  for (int i = 0; i < 16; ++i) {
    clients.push_back(std::make_unique<testing::TurnTestClient>(server, "u", "p"));
    const auto outcome = clients.back()->allocate();
    ASSERT_TRUE(outcome.answered) << "client " << i;
    if (outcome.success) {
      ++admitted;
    } else {
      EXPECT_EQ(outcome.error, 486) << "client " << i;
      ++refused;
    }
  }
  EXPECT_EQ(admitted, 2);
  EXPECT_EQ(refused, 14);
  // One allocation ends: one more is admitted, whichever worker it lands on.
  for (auto& c : clients) {
    if (c->refresh(0).success) break;
  }
  int again = 0;
  for (int i = 0; i < 8; ++i) {
    testing::TurnTestClient late(server, "u", "p");
    again += late.allocate().success;
    if (again > 0) break;
  }
  EXPECT_EQ(again, 1);
  daemon.reset();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kturn::daemon
