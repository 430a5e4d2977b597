// `kturnctl status` against kturnd's real admin server: first one serving a known /status
// document (every table cell checked), then a whole kturnd on loopback carrying an allocation
// made with a credential from `kturnctl auth` and relaying to a peer.
#include "cli/status_command.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "admin/admin_server.h"
#include "admin/health_handlers.h"
#include "admin/health_state.h"
#include "admin/stunner_status.h"
#include "cli/auth_command.h"
#include "cli/exit_codes.h"
#include "cli/test_support.h"         // tests/cli
#include "daemon/daemon_fixture.h"    // tests/daemon
#include "daemon/turn_test_client.h"  // tests/daemon

namespace kturn::cli {
namespace {

using nlohmann::json;

// The whitespace-separated cells of the line of `table` whose first cell is `first`.
std::vector<std::string> row(const std::string& table, const std::string& first) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream cells(line);
    std::vector<std::string> out;
    for (std::string cell; cells >> cell;) out.push_back(cell);
    if (!out.empty() && out[0] == first) return out;
  }
  return {};
}

using Row = std::vector<std::string>;

json knownDocument() {
  admin::StatusDocument doc;
  doc.admin = {{"name", "media/gw"}, {"loglevel", "all:INFO"}};
  doc.auth = {{"type", "ephemeral"}, {"realm", "kturn.test"}};
  doc.listeners.push_back(admin::withStats({{"name", "media/gw/udp"},
                                            {"protocol", "TURN-UDP"},
                                            {"public_address", "198.51.100.7"},
                                            {"public_port", 30478},
                                            {"address", "0.0.0.0"},
                                            {"port", 3478},
                                            {"routes", {"media/backend", "media/b2"}}},
                                           {.rx = {10, 1000, 0}, .tx = {12, 1300, 0}}));
  doc.listeners.push_back(admin::withStats(
      {{"name", "media/gw/tls"}, {"protocol", "TURN-TLS"}, {"address", "::"}, {"port", 443}}, {}));
  doc.clusters.push_back(admin::withStats({{"name", "media/backend"},
                                           {"type", "STATIC"},
                                           {"protocol", "UDP"},
                                           {"endpoints", {"10.244.0.0/16", "10.96.12.7"}}},
                                          {.rx = {7, 700, 0}, .tx = {5, 500, 0}}));
  doc.allocation_count = 3;
  doc.status = admin::HealthStatus::kReady;
  return admin::toJson(doc);
}

class StatusCommandTest : public ::testing::Test {
 protected:
  // An admin server with kturnd's health routes; /status answers what `provider` builds.
  void serve(admin::StatusProvider provider, std::shared_ptr<BearerToken> token = nullptr) {
    server_ = std::make_unique<admin::AdminServer>(admin::HttpEndpoint{.host = "127.0.0.1"});
    admin::registerHealthRoutes(*server_, health_, std::move(provider), std::move(token));
    auto started = server_->start();
    ASSERT_TRUE(started) << started.error().message;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

  int run(StatusCommand command) {
    out_.str("");
    err_.str("");
    return runStatus(command, out_, err_);
  }

  admin::HealthState health_;
  std::unique_ptr<admin::AdminServer> server_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(StatusCommandTest, ATokenFileSendsTheBearerTokenStatusWants) {
  serve([] { return knownDocument(); }, std::make_shared<BearerToken>("status-token", ""));
  EXPECT_EQ(run({.admin = url(), .output = "json"}), kExitFailure);
  EXPECT_NE(err_.str().find("HTTP 401"), std::string::npos) << err_.str();
  const std::string file = ::testing::TempDir() + "kturnctl-status-token";
  std::ofstream(file) << "status-token\n";
  EXPECT_EQ(run({.admin = url(), .output = "json", .token_file = file}), kExitOk) << err_.str();
  EXPECT_EQ(json::parse(out_.str()), knownDocument());
  EXPECT_EQ(run({.admin = url(), .token_file = "/nonexistent/token"}), kExitUsage);
  std::remove(file.c_str());
}

TEST_F(StatusCommandTest, TablePrintsEveryField) {
  serve(knownDocument);
  ASSERT_EQ(run({.admin = url()}), kExitOk) << err_.str();
  EXPECT_EQ(err_.str(), "");
  const std::string table = out_.str();
  EXPECT_EQ(row(table, "name:"), (Row{"name:", "media/gw"}));
  EXPECT_EQ(row(table, "status:"), (Row{"status:", "READY"}));
  EXPECT_EQ(row(table, "allocations:"), (Row{"allocations:", "3"}));
  EXPECT_EQ(row(table, "auth:"), (Row{"auth:", "ephemeral"}));
  EXPECT_EQ(row(table, "realm:"), (Row{"realm:", "kturn.test"}));
  EXPECT_EQ(row(table, "LISTENER"), (Row{"LISTENER", "PROTOCOL", "ADDRESS", "PUBLIC", "ROUTES",
                                         "RX-PKTS", "RX-BYTES", "TX-PKTS", "TX-BYTES"}));
  EXPECT_EQ(row(table, "media/gw/udp"),
            (Row{"media/gw/udp", "TURN-UDP", "0.0.0.0:3478", "198.51.100.7:30478",
                 "media/backend,media/b2", "10", "1000", "12", "1300"}));
  EXPECT_EQ(row(table, "media/gw/tls"),
            (Row{"media/gw/tls", "TURN-TLS", "[::]:443", "-", "-", "0", "0", "0", "0"}));
  EXPECT_EQ(row(table, "CLUSTER"), (Row{"CLUSTER", "TYPE", "PROTOCOL", "ENDPOINTS", "RX-PKTS",
                                        "RX-BYTES", "TX-PKTS", "TX-BYTES"}));
  EXPECT_EQ(row(table, "media/backend"), (Row{"media/backend", "STATIC", "UDP",
                                              "10.244.0.0/16,10.96.12.7", "7", "700", "5", "500"}));
}

TEST_F(StatusCommandTest, JsonIsTheDocumentAsServed) {
  serve(knownDocument);
  ASSERT_EQ(run({.admin = url(), .output = "json"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), knownDocument().dump() + "\n");
}

TEST_F(StatusCommandTest, EmptyConfigSaysSo) {
  serve([] { return admin::toJson(admin::StatusDocument{}); });
  ASSERT_EQ(run({.admin = url()}), kExitOk) << err_.str();
  EXPECT_EQ(row(out_.str(), "status:"), (Row{"status:", "NOT-READY"}));
  EXPECT_EQ(row(out_.str(), "name:"), (Row{"name:", "-"}));
  EXPECT_NE(out_.str().find("\nno listeners\n"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("\nno clusters\n"), std::string::npos) << out_.str();
}

TEST_F(StatusCommandTest, ServerErrorFailsWithItsMessage) {
  serve([]() -> json { throw std::runtime_error("workers are gone"); });
  EXPECT_EQ(run({.admin = url()}), kExitFailure);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), "kturnctl status: GET http://127.0.0.1:" + std::to_string(server_->port()) +
                            "/status: HTTP 500: workers are gone\n");
}

TEST_F(StatusCommandTest, NoStatusEndpointFails) {
  server_ = std::make_unique<admin::AdminServer>(admin::HttpEndpoint{.host = "127.0.0.1"});
  server_->handle("/metrics", [](const admin::Request&) { return admin::Response{.body = "x"}; });
  ASSERT_TRUE(server_->start());
  EXPECT_EQ(run({.admin = url()}), kExitFailure);
  EXPECT_NE(err_.str().find("HTTP 404"), std::string::npos) << err_.str();
}

TEST_F(StatusCommandTest, NotJsonFails) {
  server_ = std::make_unique<admin::AdminServer>(admin::HttpEndpoint{.host = "127.0.0.1"});
  server_->handle("/status",
                  [](const admin::Request&) { return admin::Response{.body = "all good"}; });
  ASSERT_TRUE(server_->start());
  EXPECT_EQ(run({.admin = url()}), kExitFailure);
  EXPECT_NE(err_.str().find("not a JSON status document"), std::string::npos) << err_.str();
}

TEST_F(StatusCommandTest, UnreachableAndBadUrl) {
  serve(knownDocument);
  const std::string closed = url();
  server_->stop();
  EXPECT_EQ(run({.admin = closed}), kExitFailure);
  EXPECT_NE(err_.str().find("Connection refused"), std::string::npos) << err_.str();
  EXPECT_EQ(run({.admin = "https://127.0.0.1:8086"}), kExitUsage);
  EXPECT_NE(err_.str().find("--admin"), std::string::npos) << err_.str();
  EXPECT_EQ(run({.admin = "http://127.0.0.1:0"}), kExitUsage);
}

TEST_F(StatusCommandTest, SilentServerTimesOut) {
  // A listening socket that never answers: the command must give up after --timeout.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(run({.admin = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)),
                 .timeout_seconds = 0.3}),
            kExitFailure);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_NE(err_.str().find("(after 300 ms)"), std::string::npos) << err_.str();
  ::close(fd);
}

// The whole path: kturnd on loopback, a credential from `kturnctl auth -c <its config file>`,
// an allocation relaying to a peer, and `kturnctl status` reading it back.
TEST(StatusOfKturndTest, ShowsTheAllocationAndTheTraffic) {
  const uint16_t port = daemon::testing::freeUdpPort();
  ASSERT_NE(port, 0);
  auto peer = net::UdpSocket::bind(*TransportAddress::parse("127.0.0.1:0"), {});
  ASSERT_TRUE(peer);
  testing::TempFile file(
      "version: v1\n"
      "admin: {name: media/gw, healthcheck_endpoint: \"http://127.0.0.1:0\"}\n"
      "auth: {type: ephemeral, realm: kturn.test, credentials: {secret: t0p-s3cret}}\n"
      "listeners: [{name: media/gw/udp, protocol: TURN-UDP, address: 127.0.0.1, port: " +
      std::to_string(port) +
      ", routes: [media/backend]}]\n"
      "clusters: [{name: media/backend, type: STATIC, endpoints: [127.0.0.1/32]}]\n");
  auto kturnd = daemon::testing::startDaemonOn(file.path(), 1);
  ASSERT_TRUE(kturnd);
  ASSERT_NE(kturnd->healthPort(), 0);

  std::ostringstream credential;
  std::ostringstream err;
  ASSERT_EQ(runAuth({.origin = "file://" + file.path(), .username = "alice"}, credential, err),
            kExitOk)
      << err.str();
  const json minted = json::parse(credential.str());
  daemon::testing::TurnTestClient client(TransportAddress{*IpAddress::parse("127.0.0.1"), port},
                                         minted["username"], minted["password"]);
  const auto allocated = client.allocate();
  ASSERT_TRUE(allocated.success) << "error " << allocated.error;
  ASSERT_TRUE(client.createPermission(peer->localAddress()).success);
  const std::vector<uint8_t> payload(100, 0x42);
  client.sendIndication(peer->localAddress(), payload);
  pollfd p{peer->fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 2000), 1) << "the peer got nothing";
  uint8_t got[2048];
  ASSERT_EQ(::recv(peer->fd(), got, sizeof got, 0), 100);

  std::ostringstream out;
  const std::string admin = "http://127.0.0.1:" + std::to_string(kturnd->healthPort());
  ASSERT_EQ(runStatus({.admin = admin}, out, err), kExitOk) << err.str();
  const std::string table = out.str();
  EXPECT_EQ(row(table, "name:"), (Row{"name:", "media/gw"}));
  EXPECT_EQ(row(table, "status:"), (Row{"status:", "READY"}));
  EXPECT_EQ(row(table, "allocations:"), (Row{"allocations:", "1"}));
  EXPECT_EQ(row(table, "auth:"), (Row{"auth:", "ephemeral"}));
  EXPECT_EQ(row(table, "realm:"), (Row{"realm:", "kturn.test"}));
  const Row listener = row(table, "media/gw/udp");
  ASSERT_EQ(listener.size(), 9u) << table;
  EXPECT_EQ(listener[1], "TURN-UDP");
  EXPECT_EQ(listener[2], "127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(listener[3], "-");
  EXPECT_EQ(listener[4], "media/backend");
  // Allocate twice (the 401 round), CreatePermission, Send: at least four in, three answers out.
  EXPECT_GE(std::stoi(listener[5]), 4) << table;
  EXPECT_GE(std::stoi(listener[7]), 3) << table;
  const Row cluster = row(table, "media/backend");
  ASSERT_EQ(cluster.size(), 8u) << table;
  EXPECT_EQ(cluster[1], "STATIC");
  EXPECT_EQ(cluster[3], "127.0.0.1/32");
  EXPECT_EQ(cluster[6], "1") << table;    // one datagram to the peer
  EXPECT_EQ(cluster[7], "100") << table;  // its payload

  std::ostringstream raw;
  ASSERT_EQ(runStatus({.admin = admin, .output = "json"}, raw, err), kExitOk);
  const json status = json::parse(raw.str());
  EXPECT_EQ(status["allocationCount"], 1);
  EXPECT_EQ(status["status"], "READY");
  EXPECT_FALSE(status["auth"].contains("credentials")) << "never the secret";
}

}  // namespace
}  // namespace kturn::cli
