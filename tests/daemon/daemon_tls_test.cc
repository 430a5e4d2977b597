// TURN-TLS through the whole daemon: a Binding answered over TLS, a certificate rotated by a
// config change without dropping the connections made with the old one, and a bad certificate
// rejected with its field named while the running listener keeps serving.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/base64.h"
#include "config/self_signed_cert.h"
#include "daemon/daemon.h"
#include "daemon_fixture.h"
#include "net/sockaddr.h"
#include "net/tls_test_client.h"
#include "stun/message.h"
#include "stun/message_builder.h"
#include "turn_test_client.h"

namespace kturn::daemon {
namespace {

using Bytes = std::vector<uint8_t>;
using net::testing::TlsTestClient;

using net::testing::derOfPem;

class DaemonTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    udp_port_ = testing::freeUdpPort();
    tls_port_ = testing::freeTcpPort();
    path_ = std::filesystem::temp_directory_path() /
            ("kturnd-tls-test-" + std::to_string(::getpid()) + ".yaml");
    first_ = *config::generateSelfSignedCert();
    writeConfig(config::encodeBase64(first_.cert_pem), config::encodeBase64(first_.key_pem));
    daemon_ = testing::startDaemonOn(path_);
    ASSERT_TRUE(daemon_);
  }
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove(path_);
  }

  void writeConfig(const std::string& cert, const std::string& key) {
    std::ofstream(path_) << "version: v1\n"
                            "admin: {name: t, healthcheck_endpoint: \"\"}\n"
                            "auth: {type: static, realm: r, credentials: {username: u, "
                            "password: p}}\n"
                            "listeners:\n"
                            "  - {name: udp, protocol: TURN-UDP, address: 127.0.0.1, port: "
                         << udp_port_
                         << ", routes: [c]}\n"
                            "  - {name: tls, protocol: TURN-TLS, address: 127.0.0.1, port: "
                         << tls_port_ << ", routes: [c], cert: \"" << cert << "\", key: \"" << key
                         << "\"}\n"
                            "clusters: [{name: c, type: STATIC, endpoints: [127.0.0.1/32]}]\n";
  }

  std::unique_ptr<TlsTestClient> connectTls() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_storage ss;
    const socklen_t len =
        net::toSockaddr(TransportAddress{*IpAddress::parse("127.0.0.1"), tls_port_}, ss);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&ss), len), 0);
    auto client = std::make_unique<TlsTestClient>(fd);
    bool done = false;
    for (int i = 0; i < 2000 && !done; ++i) done = client->handshake();  // ~1 ms per attempt
    EXPECT_TRUE(done) << "no TLS handshake";
    return client;
  }

  // A Binding request over the connection; true when a success response comes back.
  static bool binding(TlsTestClient& client, uint8_t tag) {
    uint8_t buf[64];
    stun::TransactionId txid{};
    txid[0] = tag;
    stun::MessageBuilder b(buf, stun::Method::kBinding, stun::MessageClass::kRequest, txid);
    const auto request = *b.finish();
    const size_t before = client.received().size();
    if (!client.write(request)) return false;
    for (int i = 0; i < 2000 && client.received().size() < before + 20; ++i) client.poll();
    const auto& got = client.received();
    if (got.size() < before + 20) return false;
    auto response = stun::MessageView::parse(std::span(got).subspan(before));
    return response && response->messageClass() == stun::MessageClass::kSuccessResponse &&
           response->transactionId()[0] == tag;
  }

  uint16_t udp_port_ = 0;
  uint16_t tls_port_ = 0;
  config::PemPair first_;
  std::filesystem::path path_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(DaemonTlsTest, ACertificateChangeKeepsConnectionsAndServesTheNewOne) {
  auto before = connectTls();
  EXPECT_EQ(before->peerCertificate(), derOfPem(first_.cert_pem));
  ASSERT_TRUE(binding(*before, 1));

  const config::PemPair second = *config::generateSelfSignedCert();
  writeConfig(config::encodeBase64(second.cert_pem), config::encodeBase64(second.key_pem));
  auto reloaded = daemon_->reload();
  ASSERT_TRUE(reloaded) << reloaded.error().message;

  auto after = connectTls();
  EXPECT_EQ(after->peerCertificate(), derOfPem(second.cert_pem));
  EXPECT_TRUE(binding(*after, 2));
  EXPECT_TRUE(binding(*before, 3)) << "the connection made with the old certificate was dropped";
  EXPECT_FALSE(before->closed());
}

TEST_F(DaemonTlsTest, ABadCertificateIsNamedAndTheRunningListenerKeepsServing) {
  const config::PemPair other = *config::generateSelfSignedCert();
  // Valid base64, valid PEM, but the key belongs to another certificate.
  writeConfig(config::encodeBase64(first_.cert_pem), config::encodeBase64(other.key_pem));
  auto reloaded = daemon_->reload();
  ASSERT_TRUE(reloaded) << reloaded.error().message;
  auto faults = daemon_->faults();
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].fault.name, "tls");
  EXPECT_TRUE(faults[0].kept) << "the listener with the old certificate keeps running";
  EXPECT_NE(faults[0].fault.error.find("listeners[1].key: does not match the certificate"),
            std::string::npos)
      << faults[0].fault.error;

  writeConfig(config::encodeBase64("not PEM at all"), config::encodeBase64(first_.key_pem));
  ASSERT_TRUE(daemon_->reload());
  faults = daemon_->faults();
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_NE(faults[0].fault.error.find("listeners[1].cert:"), std::string::npos)
      << faults[0].fault.error;

  auto client = connectTls();
  EXPECT_EQ(client->peerCertificate(), derOfPem(first_.cert_pem));
  EXPECT_TRUE(binding(*client, 4));
  EXPECT_TRUE(testing::TurnTestClient({*IpAddress::parse("127.0.0.1"), udp_port_}, "u", "p")
                  .binding()
                  .success);
}

TEST_F(DaemonTlsTest, AFirstConfigWithABadCertificateStartsItsOtherListeners) {
  daemon_.reset();
  writeConfig(config::encodeBase64("not PEM at all"), config::encodeBase64(first_.key_pem));
  daemon_ = testing::startDaemonOn(path_);
  ASSERT_TRUE(daemon_);
  EXPECT_TRUE(testing::TurnTestClient({*IpAddress::parse("127.0.0.1"), udp_port_}, "u", "p")
                  .binding()
                  .success);
  auto faults = daemon_->faults();
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].fault.name, "tls");
  EXPECT_FALSE(faults[0].kept);
  EXPECT_EQ(daemon_->health(), admin::HealthStatus::kReady);
  ASSERT_EQ(daemon_->loaded().config.listeners.size(), 1u);

  // The next config with a good certificate opens it.
  writeConfig(config::encodeBase64(first_.cert_pem), config::encodeBase64(first_.key_pem));
  ASSERT_TRUE(daemon_->reload());
  EXPECT_TRUE(daemon_->faults().empty());
  EXPECT_TRUE(binding(*connectTls(), 5));
}

}  // namespace
}  // namespace kturn::daemon
