// kturnd's admin endpoints in a pod (issue 25): with an admin address (the pod IP, what the
// chart's Dataplane sets) an endpoint that names no host binds that address and loopback, never
// every address; /status behind a bearer token while /live and /ready stay open for probes.
// Real sockets on loopback aliases (127.0.0.2 stands for the pod IP).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "config/base64.h"
#include "config/self_signed_cert.h"
#include "daemon/daemon.h"

namespace kturn::daemon {
namespace {

// A TCP port that was free a moment ago.
uint16_t freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// The whole answer to GET `path` at ip:port with this Authorization header; nullopt when the
// connection is refused.
std::optional<std::string> fetch(const std::string& ip, uint16_t port, const std::string& path,
                                 const std::string& authorization = "") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{.tv_sec = 3, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
  if (!authorization.empty()) request += "Authorization: " + authorization + "\r\n";
  request += "\r\n";
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, n);
  ::close(fd);
  return reply;
}

// Its status code (0 for an answer that is not HTTP).
std::optional<int> get(const std::string& ip, uint16_t port, const std::string& path,
                       const std::string& authorization = "") {
  auto reply = fetch(ip, port, path, authorization);
  if (!reply) return std::nullopt;
  return reply->size() < 12 ? 0 : std::stoi(reply->substr(9, 3));
}

constexpr const char* kPassword = "do-not-publish-this-password";

class DaemonAdminTest : public ::testing::Test {
 protected:
  // `extra`: more listeners (YAML flow items, each starting with ", ").
  void start(Daemon::Options options, const std::string& extra = "") {
    health_ = freePort();
    metrics_ = freePort();
    path_ = std::filesystem::temp_directory_path() /
            ("kturn-admin-" + std::to_string(::getpid()) + ".yaml");
    std::ofstream(path_) << "version: v1\n"
                         << "admin: {name: t, healthcheck_endpoint: \"http://:" << health_
                         << "\", metrics_endpoint: \"http://:" << metrics_ << "/metrics\"}\n"
                         << "auth: {type: static, credentials: {username: the-user, "
                         << "password: " << kPassword << "}}\n"
                         << "listeners: [{name: udp, protocol: TURN-UDP, address: 127.0.0.1, "
                         << "port: " << freePort() << ", routes: [c]}" << extra << "]\n"
                         << "clusters: [{name: c, type: STATIC, endpoints: [127.0.0.1/32]}]\n";
    options.origin = "file://" + path_.string();
    options.workers = 1;
    daemon_ = std::make_unique<Daemon>(options);
    auto started = daemon_->start();
    ASSERT_TRUE(started) << started.error().message;
  }
  void TearDown() override {
    if (daemon_) daemon_->stop();
    std::error_code ec;
    std::filesystem::remove(path_, ec);
    if (!token_.empty()) std::filesystem::remove(token_, ec);
  }
  std::string tokenFile(const std::string& token) {
    token_ = std::filesystem::temp_directory_path() /
             ("kturn-status-token-" + std::to_string(::getpid()));
    std::ofstream(token_) << token << "\n";
    return token_.string();
  }

  uint16_t health_ = 0;
  uint16_t metrics_ = 0;
  std::filesystem::path path_;
  std::filesystem::path token_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(DaemonAdminTest, WithoutAnAdminAddressEveryAddressIsBound) {
  start({});
  for (const char* ip : {"127.0.0.1", "127.0.0.2", "127.0.0.3"}) {
    EXPECT_EQ(get(ip, health_, "/live"), 200) << ip;
    EXPECT_EQ(get(ip, metrics_, "/metrics"), 200) << ip;
  }
}

TEST_F(DaemonAdminTest, AnAdminAddressBindsItAndLoopbackOnly) {
  start({.admin_address = "127.0.0.2"});
  for (uint16_t port : {health_, metrics_}) {
    const std::string path = port == health_ ? "/live" : "/metrics";
    EXPECT_EQ(get("127.0.0.2", port, path), 200) << "the pod IP, port " << port;
    EXPECT_EQ(get("127.0.0.1", port, path), 200) << "loopback (kubectl port-forward)";
    EXPECT_EQ(get("127.0.0.3", port, path), std::nullopt) << "any other address: not bound";
  }
  EXPECT_EQ(get("127.0.0.1", health_, "/status"), 200);  // no token configured
}

TEST_F(DaemonAdminTest, StatusWantsTheBearerTokenProbesDoNot) {
  start({.status_token_file = tokenFile("s3cret-status")});
  EXPECT_EQ(get("127.0.0.1", health_, "/status"), 401);
  EXPECT_EQ(get("127.0.0.1", health_, "/status", "Bearer wrong"), 401);
  EXPECT_EQ(get("127.0.0.1", health_, "/status", "Basic czNjcmV0LXN0YXR1cw=="), 401);
  EXPECT_EQ(get("127.0.0.1", health_, "/status", "Bearer s3cret-status"), 200);
  EXPECT_EQ(get("127.0.0.1", health_, "/live"), 200);
  const auto ready = get("127.0.0.1", health_, "/ready");
  EXPECT_TRUE(ready == 200 || ready == 503);  // readiness is not behind the token
  EXPECT_EQ(get("127.0.0.1", metrics_, "/metrics"), 200);
}

TEST_F(DaemonAdminTest, AStatusTokenFileThatCannotBeReadFailsTheStart) {
  const uint16_t health = freePort();
  path_ = std::filesystem::temp_directory_path() /
          ("kturn-admin-bad-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path_) << "version: v1\n"
                       << "admin: {name: t, healthcheck_endpoint: \"http://:" << health << "\"}\n"
                       << "auth: {type: static, credentials: {username: u, password: p}}\n"
                       << "listeners: [{name: udp, protocol: TURN-UDP, address: 127.0.0.1, "
                       << "port: " << freePort() << ", routes: [c]}]\n"
                       << "clusters: [{name: c, type: STATIC, endpoints: [127.0.0.1/32]}]\n";
  Daemon daemon({.origin = "file://" + path_.string(),
                 .status_token_file = "/nonexistent/status-token",
                 .workers = 1});
  auto started = daemon.start();
  ASSERT_FALSE(started);
  EXPECT_NE(started.error().message.find("/nonexistent/status-token"), std::string::npos)
      << started.error().message;
  EXPECT_EQ(get("127.0.0.1", health, "/status"), std::nullopt) << "no admin server, open or not";
}

TEST_F(DaemonAdminTest, TheStatusTokenMayComeFromTheEnvironmentInstead) {
  start({.status_token = "from-a-secret"});  // kturnd_main: $KTURN_STATUS_TOKEN
  EXPECT_EQ(get("127.0.0.1", health_, "/status"), 401);
  EXPECT_EQ(get("127.0.0.1", health_, "/status", "Bearer from-a-secret"), 200);
}

TEST_F(DaemonAdminTest, StatusCarriesNoCredentialsOrKeys) {
  auto pem = config::generateSelfSignedCert();
  ASSERT_TRUE(pem);
  const std::string cert = config::encodeBase64(pem->cert_pem);
  const std::string key = config::encodeBase64(pem->key_pem);
  start({}, ", {name: tls, protocol: TURN-TLS, address: 127.0.0.1, port: " +
                std::to_string(freePort()) + ", cert: " + cert + ", key: " + key +
                ", routes: [c]}");
  const auto reply = fetch("127.0.0.1", health_, "/status");
  ASSERT_TRUE(reply);
  ASSERT_EQ(reply->substr(9, 3), "200");
  EXPECT_NE(reply->find("\"tls\""), std::string::npos) << "the TLS listener is listed";
  EXPECT_NE(reply->find("\"static\""), std::string::npos) << "the auth type is shown";
  for (const std::string& secret :
       {std::string(kPassword), std::string("the-user"), cert.substr(0, 40), key.substr(0, 40),
        std::string("PRIVATE KEY"), std::string("BEGIN CERTIFICATE")}) {
    EXPECT_EQ(reply->find(secret), std::string::npos) << secret;
  }
}

}  // namespace
}  // namespace kturn::daemon
