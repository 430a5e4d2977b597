// Live reconfiguration of a running daemon over real loopback sockets: listeners added, removed
// and moved touch only themselves; a config that cannot be applied changes nothing.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "daemon/daemon.h"
#include "daemon_fixture.h"
#include "net/sockaddr.h"
#include "turn_test_client.h"

namespace kturn::daemon {
namespace {

using testing::TurnTestClient;

TransportAddress loopback(uint16_t port) { return {*IpAddress::parse("127.0.0.1"), port}; }

class DaemonReconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    port_a_ = testing::freeUdpPort();
    port_b_ = testing::freeTcpPort();  // also a TURN-TCP listener's, in some tests
    ASSERT_NE(port_a_, 0);
    ASSERT_NE(port_b_, 0);
    path_ = std::filesystem::temp_directory_path() /
            ("kturnd-reconfig-test-" + std::to_string(::getpid()) + ".yaml");
    writeConfig({{"a", port_a_}});
    daemon_ = testing::startDaemonOn(path_);
    ASSERT_TRUE(daemon_);
  }
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove(path_);
  }

  void writeConfig(const std::vector<std::pair<std::string, uint16_t>>& listeners,
                   const char* protocol = "TURN-UDP", const char* limits = "{}") {
    std::ofstream out(path_);
    out << "version: v1\n"
           "admin: {name: t, healthcheck_endpoint: \"\", limits: "
        << limits
        << "}\n"
           "auth: {type: static, realm: kturn.test, credentials: {username: u, password: p}}\n"
           "listeners:\n";
    for (const auto& [name, port] : listeners) {
      out << "  - {name: " << name << ", protocol: " << (name == "t" ? "TURN-TCP" : protocol)
          << ", address: 127.0.0.1, port: " << port << ", routes: [c]}\n";
    }
    out << "clusters: [{name: c, type: STATIC, endpoints: [127.0.0.1/32]}]\n";
  }

  TurnTestClient client(uint16_t port) { return TurnTestClient(loopback(port), "u", "p"); }

  uint16_t port_a_ = 0;
  uint16_t port_b_ = 0;
  std::filesystem::path path_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(DaemonReconfigTest, AddingAListenerLeavesExistingAllocationsAlone) {
  auto on_a = client(port_a_);
  ASSERT_TRUE(on_a.allocate().success);
  EXPECT_FALSE(client(port_b_).binding().answered);

  writeConfig({{"a", port_a_}, {"b", port_b_}});
  auto reloaded = daemon_->reload();
  ASSERT_TRUE(reloaded) << reloaded.error().message;

  EXPECT_TRUE(client(port_b_).binding().success);
  EXPECT_TRUE(on_a.refresh(600).success) << "the allocation on the untouched listener is gone";
  EXPECT_EQ(daemon_->collectStats().allocations, 1u);
}

TEST_F(DaemonReconfigTest, RemovingAListenerEndsOnlyItsAllocations) {
  writeConfig({{"a", port_a_}, {"b", port_b_}});
  ASSERT_TRUE(daemon_->reload());
  auto on_a = client(port_a_);
  auto on_b = client(port_b_);
  ASSERT_TRUE(on_a.allocate().success);
  ASSERT_TRUE(on_b.allocate().success);

  writeConfig({{"b", port_b_}});
  ASSERT_TRUE(daemon_->reload());

  EXPECT_FALSE(client(port_a_).binding().answered) << "the removed listener still answers";
  EXPECT_TRUE(on_b.refresh(600).success);
  const worker::WorkerStats stats = daemon_->collectStats();
  EXPECT_EQ(stats.allocations, 1u);
  EXPECT_EQ(stats.turn.allocations_closed, 1u);
}

TEST_F(DaemonReconfigTest, MovingAListenerRebindsIt) {
  writeConfig({{"a", port_b_}});
  ASSERT_TRUE(daemon_->reload());
  EXPECT_TRUE(client(port_b_).binding().success);
  EXPECT_FALSE(client(port_a_).binding().answered);
}

TEST_F(DaemonReconfigTest, ATakenPortCostsOnlyItsListenerAndIsRetriedWithTheNextConfig) {
  auto on_a = client(port_a_);
  ASSERT_TRUE(on_a.allocate().success);
  // A socket that is not kturnd's (no SO_REUSEPORT) holds the port the new listener wants.
  auto squatter = net::UdpSocket::bind(loopback(port_b_), {});
  ASSERT_TRUE(squatter);

  writeConfig({{"a", port_a_}, {"b", port_b_}});
  auto reloaded = daemon_->reload();
  ASSERT_TRUE(reloaded) << reloaded.error().message;
  EXPECT_TRUE(on_a.refresh(600).success) << "listener a lost its allocation";
  EXPECT_TRUE(client(port_a_).binding().success);
  auto faults = daemon_->faults();
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].fault.kind, "listener");
  EXPECT_EQ(faults[0].fault.name, "b");
  EXPECT_FALSE(faults[0].kept);
  EXPECT_NE(
      faults[0].fault.error.find("127.0.0.1:" + std::to_string(port_b_) + "/udp is in use by "),
      std::string::npos)
      << faults[0].fault.error;
  EXPECT_NE(faults[0].fault.error.find("(pid " + std::to_string(::getpid()) + ", this process)"),
            std::string::npos)
      << faults[0].fault.error;
  EXPECT_EQ(daemon_->health(), admin::HealthStatus::kReady) << "listener a serves";

  // The port comes free; the next config (the same one) opens b.
  *squatter = net::UdpSocket();
  ASSERT_TRUE(daemon_->reload());
  EXPECT_TRUE(daemon_->faults().empty());
  EXPECT_TRUE(client(port_b_).binding().success);
  EXPECT_TRUE(on_a.refresh(600).success);
}

TEST_F(DaemonReconfigTest, APortSharedThroughReusePortIsTakenToo) {
  // Another process of the same user with SO_REUSEPORT could join kturnd's socket group, and
  // the kernel would split the clients between them: such a holder fails the listener too.
  net::UdpSocketOptions reuse;
  reuse.reuse_port = true;
  auto squatter = net::UdpSocket::bind(loopback(port_b_), reuse);
  ASSERT_TRUE(squatter);
  writeConfig({{"a", port_a_}, {"b", port_b_}});
  ASSERT_TRUE(daemon_->reload());
  auto faults = daemon_->faults();
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].fault.name, "b");
  EXPECT_NE(faults[0].fault.error.find("is in use by"), std::string::npos) << faults[0].fault.error;
}

TEST_F(DaemonReconfigTest, AListenerMovingOntoATakenPortKeepsRunningWhereItWas) {
  auto on_a = client(port_a_);
  ASSERT_TRUE(on_a.allocate().success);
  auto squatter = net::UdpSocket::bind(loopback(port_b_), {});
  ASSERT_TRUE(squatter);
  writeConfig({{"a", port_b_}});
  ASSERT_TRUE(daemon_->reload());
  EXPECT_TRUE(on_a.refresh(600).success) << "the running listener a was closed";
  auto faults = daemon_->faults();
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_TRUE(faults[0].kept);
  ASSERT_EQ(daemon_->loaded().config.listeners.size(), 1u);
  EXPECT_EQ(daemon_->loaded().config.listeners[0].port, port_a_) << "loaded() says what runs";
}

TEST_F(DaemonReconfigTest, WhenNoListenerCanOpenTheDaemonIsNotReady) {
  auto squatter = net::UdpSocket::bind(loopback(port_b_), {});
  ASSERT_TRUE(squatter);
  writeConfig({{"b", port_b_}});
  ASSERT_TRUE(daemon_->reload());
  EXPECT_EQ(daemon_->health(), admin::HealthStatus::kNotReady);
  EXPECT_FALSE(client(port_a_).binding().answered) << "a was removed by the config";
}

TEST_F(DaemonReconfigTest, AStartThatCanOpenNoListenerFailsNamingTheHolder) {
  auto squatter = net::UdpSocket::bind(loopback(port_b_), {});
  ASSERT_TRUE(squatter);
  writeConfig({{"b", port_b_}});
  Daemon::Options options;
  options.origin = "file://" + path_.string();
  options.workers = 1;
  Daemon other(options);  // no -w: the config cannot change, so nothing would ever serve
  auto started = other.start();
  ASSERT_FALSE(started);
  EXPECT_NE(started.error().message.find("no listener could be opened: 127.0.0.1:" +
                                         std::to_string(port_b_) + "/udp is in use by "),
            std::string::npos)
      << started.error().message;
}

// A TCP client connected to kturnd, for listener removal and shutdown with connections open.
int connectTcp(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_storage ss;
  const socklen_t len = net::toSockaddr(loopback(port), ss);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&ss), len), 0);
  return fd;
}

bool closedByServer(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 2000) <= 0) return false;
  uint8_t buf[16];
  return ::recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0;
}

TEST_F(DaemonReconfigTest, ATcpListenerGoesAwayWithItsConnectionsAndSoDoesTheDaemon) {
  writeConfig({{"a", port_a_}, {"t", port_b_}});
  ASSERT_TRUE(daemon_->reload());
  const int first = connectTcp(port_b_);
  writeConfig({{"a", port_a_}});
  ASSERT_TRUE(daemon_->reload());
  EXPECT_TRUE(closedByServer(first)) << "the removed TCP listener left its connection open";
  ::close(first);

  writeConfig({{"a", port_a_}, {"t", port_b_}});
  ASSERT_TRUE(daemon_->reload());
  const int second = connectTcp(port_b_);
  EXPECT_TRUE(client(port_a_).binding().success);
  daemon_.reset();  // shutdown with a TCP connection open: no crash, the connection closes
  EXPECT_TRUE(closedByServer(second));
  ::close(second);
}

TEST_F(DaemonReconfigTest, ConnectionLimitsApplyToRunningListeners) {
  writeConfig({{"a", port_a_}, {"t", port_b_}});
  ASSERT_TRUE(daemon_->reload());
  // One connection per worker (2 workers): of four, at least two are closed at once.
  writeConfig({{"a", port_a_}, {"t", port_b_}}, "TURN-UDP", "{max_connections: 2}");
  ASSERT_TRUE(daemon_->reload());
  std::vector<int> fds;
  for (int i = 0; i < 4; ++i) fds.push_back(connectTcp(port_b_));
  int closed = 0;
  for (int fd : fds) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 500) > 0) {
      uint8_t buf[16];
      if (::recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0) ++closed;
    }
  }
  EXPECT_GE(closed, 2) << "the cap of the running TCP listener did not change";
  EXPECT_LE(closed, 3);
  for (int fd : fds) ::close(fd);

  writeConfig({{"a", port_a_}, {"t", port_b_}});  // back to the default cap
  ASSERT_TRUE(daemon_->reload());
  const int again = connectTcp(port_b_);
  pollfd p{again, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 300), 0) << "a connection under the default cap was closed";
  ::close(again);
}

TEST_F(DaemonReconfigTest, SourceQuotaAppliesLiveAndIsSharedAmongWorkers) {
  // Every client here is 127.0.0.1. Quota 2 over 2 workers is 1 per worker, so of 8 clients
  // (their ports spread over the workers by the kernel) one or two get an allocation, never more.
  writeConfig({{"a", port_a_}}, "TURN-UDP", "{source_quota: 2}");
  ASSERT_TRUE(daemon_->reload());
  std::vector<std::unique_ptr<TurnTestClient>> clients;
  int allocated = 0;
  int refused = 0;
  for (int i = 0; i < 8; ++i) {
    clients.push_back(std::make_unique<TurnTestClient>(loopback(port_a_), "u", "p"));
    const auto outcome = clients.back()->allocate();
    if (outcome.success) ++allocated;
    if (outcome.error == 486) ++refused;
  }
  EXPECT_GE(allocated, 1);
  EXPECT_LE(allocated, 2);
  EXPECT_EQ(allocated + refused, 8);

  writeConfig({{"a", port_a_}});  // back to the default: unlimited
  ASSERT_TRUE(daemon_->reload());
  int allocated_after = 0;
  for (auto& c : clients) {
    if (c->allocate().success) ++allocated_after;  // 437 for those that already hold one
  }
  EXPECT_EQ(allocated_after, refused);
}

TEST_F(DaemonReconfigTest, AnInvalidConfigNamesTheFieldAndChangesNothing) {
  auto on_a = client(port_a_);
  ASSERT_TRUE(on_a.allocate().success);
  std::ofstream(path_) << "version: v1\nadmin: {name: t}\nauth: {type: static}\n";
  auto reloaded = daemon_->reload();
  ASSERT_FALSE(reloaded);
  EXPECT_NE(reloaded.error().message.find("auth"), std::string::npos) << reloaded.error().message;
  EXPECT_TRUE(on_a.refresh(600).success);
}

}  // namespace
}  // namespace kturn::daemon
