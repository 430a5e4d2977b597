#include "config/default_config.h"

#include <gtest/gtest.h>

#include "config/base64.h"
#include "config/turn_uri.h"
#include "config/validator.h"

namespace kturn::config {
namespace {

TEST(MakeDefaultConfig, KturndEmbeddedDefault) {
  StunnerConfig c = makeDefaultConfig("topsecret");
  EXPECT_EQ(c.version, "v1");
  EXPECT_EQ(c.admin.name, "kturnd");
  EXPECT_EQ(c.admin.loglevel, "all:INFO");
  EXPECT_EQ(c.admin.healthcheck_endpoint, "http://127.0.0.1:8086") << "loopback, not every address";
  EXPECT_EQ(c.auth.authType(), AuthType::kEphemeral);
  EXPECT_EQ(c.auth.realm, "stunner.l7mp.io");
  EXPECT_EQ(c.auth.secret(), "topsecret");
  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.listeners[0].name, "default-listener");
  EXPECT_EQ(c.listeners[0].protocolType(), ListenerProtocol::kTurnUdp);
  EXPECT_EQ(c.listeners[0].address, "127.0.0.1");
  EXPECT_EQ(c.listeners[0].port, 3478);
  EXPECT_EQ(c.listeners[0].routes, std::vector<std::string>{"default-cluster"});
  ASSERT_EQ(c.clusters.size(), 1u);
  EXPECT_EQ(c.clusters[0].name, "default-cluster");
  EXPECT_EQ(c.clusters[0].type, "STATIC");
  EXPECT_EQ(c.clusters[0].endpoints, (std::vector<std::string>{"127.0.0.0/8", "::1/128"}));
  EXPECT_TRUE(danglingRoutes(c).empty());

  StunnerConfig copy = c;
  ASSERT_TRUE(validate(copy));
  EXPECT_EQ(copy, c);

  auto eps = c.clusters[0].staticEndpoints();
  ASSERT_TRUE(eps);
  const auto peer = [](std::string_view ip) {
    return TransportAddress{.ip = *IpAddress::parse(ip), .port = 9};
  };
  EXPECT_TRUE((*eps)[0].contains(peer("127.1.2.3")));
  EXPECT_TRUE((*eps)[1].contains(peer("::1")));
  EXPECT_FALSE((*eps)[0].contains(peer("10.0.0.1")));
}

TEST(ParseTurnUri, StunnerCases) {
  // STUNner's TestStunnerURIParser (config_test.go).
  struct Case {
    std::string_view uri;
    ListenerProtocol protocol;
    std::string_view user, pass;
    int port;
  };
  const Case cases[] = {
      {"turn://user1:passwd1@1.2.3.4:3478?transport=udp", ListenerProtocol::kTurnUdp, "user1",
       "passwd1", 3478},
      {"turn://user1:passwd1@1.2.3.4?transport=udp", ListenerProtocol::kTurnUdp, "user1", "passwd1",
       3478},
      {"turn://user1:passwd1@1.2.3.4:3478", ListenerProtocol::kTurnUdp, "user1", "passwd1", 3478},
      {"turn://user1:passwd1@1.2.3.4:3478?transport=tcp", ListenerProtocol::kTurnTcp, "user1",
       "passwd1", 3478},
      {"turn://user1:passwd1@1.2.3.4?transport=tcp", ListenerProtocol::kTurnTcp, "user1", "passwd1",
       3478},
      {"turn://user1:passwd1@1.2.3.4:3478?transport=tls", ListenerProtocol::kTurnTls, "user1",
       "passwd1", 3478},
      {"turn://user1:passwd1@1.2.3.4?transport=tls", ListenerProtocol::kTurnTls, "user1", "passwd1",
       443},
      {"turns://user1:passwd1@1.2.3.4:3478?transport=tcp", ListenerProtocol::kTurnTls, "user1",
       "passwd1", 3478},
      {"turns://user1:passwd1@1.2.3.4?transport=tcp", ListenerProtocol::kTurnTls, "user1",
       "passwd1", 443},
      {"turn://user1:passwd1@1.2.3.4:3478?transport=dtls", ListenerProtocol::kTurnDtls, "user1",
       "passwd1", 3478},
      {"turn://user1:passwd1@1.2.3.4?transport=dtls", ListenerProtocol::kTurnDtls, "user1",
       "passwd1", 443},
      {"turns://user1:passwd1@1.2.3.4:3478?transport=udp", ListenerProtocol::kTurnDtls, "user1",
       "passwd1", 3478},
      {"turns://user1:passwd1@1.2.3.4?transport=udp", ListenerProtocol::kTurnDtls, "user1",
       "passwd1", 443},
      {"turn://1.2.3.4:3478?transport=udp", ListenerProtocol::kTurnUdp, "", "", 3478},
      {"turn://1.2.3.4?transport=udp", ListenerProtocol::kTurnUdp, "", "", 3478},
      {"turn://1.2.3.4", ListenerProtocol::kTurnUdp, "", "", 3478},
      {"TURN://u%40x:p%3Aw@[::1]:5000?transport=TCP", ListenerProtocol::kTurnTcp, "u@x", "p:w",
       5000},
  };
  for (const Case& c : cases) {
    auto u = parseTurnUri(c.uri);
    ASSERT_TRUE(u) << c.uri << ": " << u.error().message;
    EXPECT_EQ(u->protocol, c.protocol) << c.uri;
    EXPECT_EQ(u->username, c.user) << c.uri;
    EXPECT_EQ(u->password, c.pass) << c.uri;
    EXPECT_EQ(u->port, c.port) << c.uri;
  }
  EXPECT_EQ(parseTurnUri("turn://[::1]:5000")->host, "::1");
}

TEST(ParseTurnUri, Rejects) {
  for (std::string_view bad :
       {"1.2.3.4:3478", "://1.2.3.4", "turn://", "turn://u:p@", "stun://1.2.3.4",
        "turn://1.2.3.4?transport=sctp", "turn://1.2.3.4:http", "turn://1.2.3.4:70000",
        "turn://[::1", "turn://u%zz:p@1.2.3.4"}) {
    EXPECT_FALSE(parseTurnUri(bad)) << bad;
  }
}

TEST(ConfigFromTurnUri, UdpLikeStunnerdNewDefaultConfig) {
  auto c = configFromTurnUri("turn://user1:passwd1@1.2.3.4:3478?transport=udp");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->admin.name, "default-stunnerd");
  EXPECT_EQ(c->admin.loglevel, "all:INFO");
  EXPECT_EQ(c->admin.healthcheck_endpoint, "http://:8086");
  EXPECT_EQ(c->admin.metrics_endpoint, "");
  EXPECT_EQ(c->auth.type, "static");
  EXPECT_EQ(c->auth.realm, "stunner.l7mp.io");
  EXPECT_EQ(c->auth.username(), "user1");
  EXPECT_EQ(c->auth.password(), "passwd1");
  ASSERT_EQ(c->listeners.size(), 1u);
  EXPECT_EQ(c->listeners[0].name, "default-listener");
  EXPECT_EQ(c->listeners[0].protocol, "TURN-UDP");
  EXPECT_EQ(c->listeners[0].address, "1.2.3.4");
  EXPECT_EQ(c->listeners[0].port, 3478);
  EXPECT_EQ(c->listeners[0].routes, std::vector<std::string>{"allow-any"});
  ASSERT_EQ(c->clusters.size(), 1u);
  EXPECT_EQ(c->clusters[0].name, "allow-any");
  EXPECT_EQ(c->clusters[0].type, "STATIC");
  EXPECT_EQ(c->clusters[0].protocol, "UDP");
  EXPECT_EQ(c->clusters[0].endpoints, std::vector<std::string>{"0.0.0.0/0"});
}

TEST(ConfigFromTurnUri, TlsGetsSelfSignedCertificate) {
  for (std::string_view uri :
       {"turns://u:p@127.0.0.1:5349?transport=tcp", "turn://u:p@127.0.0.1?transport=dtls"}) {
    auto c = configFromTurnUri(uri);
    ASSERT_TRUE(c) << uri << ": " << c.error().message;
    const Listener& l = c->listeners[0];
    EXPECT_TRUE(l.protocolType() == ListenerProtocol::kTurnTls ||
                l.protocolType() == ListenerProtocol::kTurnDtls);
    const auto cert = decodeBase64(l.cert);
    const auto key = decodeBase64(l.key);
    ASSERT_TRUE(cert && key);
    EXPECT_EQ(cert->rfind("-----BEGIN CERTIFICATE-----", 0), 0u);
    EXPECT_EQ(key->rfind("-----BEGIN PRIVATE KEY-----", 0), 0u);
  }
  EXPECT_EQ(configFromTurnUri("turn://u:p@127.0.0.1?transport=dtls")->listeners[0].port, 443);
}

TEST(ConfigFromTurnUri, Errors) {
  auto no_creds = configFromTurnUri("turn://1.2.3.4:3478");
  ASSERT_FALSE(no_creds);
  EXPECT_NE(no_creds.error().message.find("username and password must be set"), std::string::npos);
  EXPECT_FALSE(configFromTurnUri("turn://user@1.2.3.4"));        // no password
  EXPECT_FALSE(configFromTurnUri("turn://u:p@localhost:3478"));  // kturn wants an IP
  EXPECT_FALSE(configFromTurnUri("not a uri"));
}

}  // namespace
}  // namespace kturn::config
