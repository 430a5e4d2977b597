#include "daemon/ice_server.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "config/default_config.h"
#include "config/parser.h"
#include "turn/authenticator.h"

namespace kturn::daemon {
namespace {

TEST(IceServerEntry, EphemeralCredentialValidatesAgainstTheSecret) {
  const auto config = config::makeDefaultConfig("generated-secret");
  const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  const auto entry = iceServerEntry(config, now, std::chrono::hours(1));
  ASSERT_TRUE(entry);
  const auto j = nlohmann::json::parse(*entry);
  EXPECT_EQ(j["urls"][0], "turn:127.0.0.1:3478?transport=udp");
  const std::string username = j["username"];
  EXPECT_EQ(username, "1800003600:kturn");
  EXPECT_EQ(j["credential"], turn::restPassword("generated-secret", username));
}

TEST(IceServerEntry, StaticCredentialsAndPublicAddress) {
  auto config = config::parseConfig(R"(
version: v1
auth: {type: static, credentials: {username: alice, password: wonderland}}
listeners: [{name: l, protocol: TURN-UDP, address: 0.0.0.0, port: 3478,
             public_address: 203.0.113.5, public_port: 30478}]
)");
  ASSERT_TRUE(config);
  const auto entry = iceServerEntry(*config, std::chrono::system_clock::now());
  ASSERT_TRUE(entry);
  const auto j = nlohmann::json::parse(*entry);
  EXPECT_EQ(j["urls"][0], "turn:203.0.113.5:30478?transport=udp");
  EXPECT_EQ(j["username"], "alice");
  EXPECT_EQ(j["credential"], "wonderland");
}

TEST(IceServerEntry, EveryServedListenerUdpFirst) {
  auto config = config::parseConfig(R"(
version: v1
auth: {type: static, credentials: {username: alice, password: wonderland}}
listeners:
  - {name: tls, protocol: TURN-TLS, address: 127.0.0.1, port: 5349, cert: Y2VydA==, key: a2V5}
  - {name: tcp, protocol: TURN-TCP, address: 127.0.0.1, port: 3478}
  - {name: udp, protocol: TURN-UDP, address: 127.0.0.1, port: 3478}
)");
  ASSERT_TRUE(config);
  const auto entry = iceServerEntry(*config, std::chrono::system_clock::now());
  ASSERT_TRUE(entry);
  const auto j = nlohmann::json::parse(*entry);
  ASSERT_EQ(j["urls"].size(), 3u);
  EXPECT_EQ(j["urls"][0], "turn:127.0.0.1:3478?transport=udp");
  EXPECT_EQ(j["urls"][1], "turn:127.0.0.1:3478?transport=tcp");
  EXPECT_EQ(j["urls"][2], "turns:127.0.0.1:5349?transport=tcp");
}

TEST(IceServerEntry, NoneWithoutAuthOrListener) {
  auto none =
      config::parseConfig("version: v1\nauth: {type: none}\nlisteners: [{name: l, port: 3478}]\n");
  ASSERT_TRUE(none);
  EXPECT_FALSE(iceServerEntry(*none, std::chrono::system_clock::now()));
  auto no_listener = config::parseConfig(
      "version: v1\nauth: {type: static, credentials: {username: u, password: p}}\n");
  ASSERT_TRUE(no_listener);
  EXPECT_FALSE(iceServerEntry(*no_listener, std::chrono::system_clock::now()));
}

}  // namespace
}  // namespace kturn::daemon
