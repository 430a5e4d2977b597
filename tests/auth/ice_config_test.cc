#include "auth/ice_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/parser.h"

namespace kturn::auth {
namespace {

using ::testing::ElementsAre;

config::StunnerConfig parse(const char* yaml) {
  auto config = config::parseConfig(yaml);
  EXPECT_TRUE(config) << config.error().message;
  return *config;
}

// Four listeners as the operator renders them: "<namespace>/<gateway>/<listener>".
constexpr const char* kGatewayConfig = R"(
version: v1
admin: {name: media/gw}
auth: {type: ephemeral, credentials: {secret: s3cret}}
listeners:
  - {name: media/gw/udp, protocol: TURN-UDP, address: 10.0.0.1, port: 3478,
     public_address: 198.51.100.7, public_port: 30478}
  - {name: media/gw/tcp, protocol: TURN-TCP, address: 10.0.0.1, port: 3478,
     public_address: 198.51.100.7}
  - {name: media/other/tls, protocol: TURN-TLS, address: 10.0.0.2, port: 443,
     cert: Y2VydA==, key: a2V5}
  - {name: team/gw/dtls, protocol: TURN-DTLS, address: "2001:db8::1", port: 5349,
     cert: Y2VydA==, key: a2V5}
)";

TEST(ParseIceQuery, DefaultsAndDecoding) {
  const auto q = parseIceQuery("service=turn&username=a%20b&namespace=media");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->service, "turn");
  EXPECT_EQ(q->username, "a b");
  EXPECT_EQ(q->ttl, kDefaultTtl);
  EXPECT_EQ(q->namespace_name, "media");
  EXPECT_FALSE(q->gateway);
  EXPECT_EQ(q->ice_transport_policy, "all");

  const auto all = parseIceQuery(
      "service=turn&ttl=600&gateway=g&listener=l&public-addr=203.0.113.1&iceTransportPolicy=relay");
  ASSERT_TRUE(all);
  EXPECT_EQ(all->ttl, std::chrono::seconds(600));
  EXPECT_EQ(all->public_addr, "203.0.113.1");
  EXPECT_EQ(all->ice_transport_policy, "relay");
}

TEST(ParseIceQuery, RejectsBadValuesNamingTheParameter) {
  for (const char* bad : {"ttl=abc", "ttl=-1", "ttl=", "ttl=10s"}) {
    const auto q = parseIceQuery(bad);
    ASSERT_FALSE(q) << bad;
    EXPECT_NE(q.error().message.find("ttl"), std::string::npos);
  }
  EXPECT_FALSE(parseIceQuery("iceTransportPolicy=none"));
  EXPECT_FALSE(parseIceQuery("username=%zz"));
  EXPECT_FALSE(parseIceQuery("username=a;b"));  // Go's parser drops such a pair
  for (const char* bad : {"ttl=+", "ttl=+-5", "ttl=++5", "ttl= 5"}) {
    EXPECT_FALSE(parseIceQuery(bad)) << bad;
  }
}

TEST(ParseIceQuery, TtlWithAPlusSignAsGoReadsIt) {
  const auto q = parseIceQuery("ttl=%2B60");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->ttl, std::chrono::seconds(60));
}

TEST(ParseIceQuery, RepeatedParameterNamed) {
  const auto q = parseIceQuery("service=turn&username=a&username=b");
  ASSERT_FALSE(q);
  EXPECT_EQ(q.error().message, "username: given more than once");
  EXPECT_FALSE(parseIceQuery("region=a&region=b"));
  EXPECT_TRUE(parseIceQuery("service=turn&other=1&other=2"));
}

TEST(ParseIceQuery, TheTurnEndpointNeedsAServiceAndHasNoPolicy) {
  EXPECT_FALSE(parseIceQuery("", Endpoint::kTurn));
  EXPECT_FALSE(parseIceQuery("service=", Endpoint::kTurn));
  EXPECT_TRUE(parseIceQuery("", Endpoint::kIce));  // the handler answers that, after the configs
  const auto q = parseIceQuery("service=turn&iceTransportPolicy=bogus", Endpoint::kTurn);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->ice_transport_policy, "all");
}

TEST(ListenerUris, Rfc7065FormsFromPublicOrBindAddress) {
  const auto config = parse(kGatewayConfig);
  EXPECT_THAT(
      listenerUris(config, {}),
      ElementsAre("turn:198.51.100.7:30478?transport=udp", "turn:198.51.100.7:3478?transport=tcp",
                  "turns:10.0.0.2:443?transport=tcp", "turns:[2001:db8::1]:5349?transport=udp"));
}

TEST(ListenerUris, FiltersAsStunnerNamespaceThenGatewayThenListener) {
  const auto config = parse(kGatewayConfig);
  EXPECT_EQ(listenerUris(config, {.namespace_name = "media"}).size(), 3u);
  EXPECT_EQ(listenerUris(config, {.namespace_name = "media", .gateway = "gw"}).size(), 2u);
  EXPECT_THAT(listenerUris(config, {.namespace_name = "media", .gateway = "gw", .listener = "tcp"}),
              ElementsAre("turn:198.51.100.7:3478?transport=tcp"));
  // `gateway` alone and `listener` without `gateway` are ignored, as in STUNner.
  EXPECT_EQ(listenerUris(config, {.gateway = "nope"}).size(), 4u);
  EXPECT_EQ(listenerUris(config, {.namespace_name = "team", .listener = "nope"}).size(), 1u);
  EXPECT_TRUE(listenerUris(config, {.namespace_name = "nope"}).empty());
}

TEST(ListenerUris, PublicAddrOverridesEveryHost) {
  const auto config = parse(kGatewayConfig);
  const auto uris = listenerUris(config, {.namespace_name = "media", .public_addr = "203.0.113.9"});
  EXPECT_THAT(uris, ElementsAre("turn:203.0.113.9:30478?transport=udp",
                                "turn:203.0.113.9:3478?transport=tcp",
                                "turns:203.0.113.9:443?transport=tcp"));
}

TEST(ListenerUris, AListenerWithoutAUsableHostNames0000AsStunnerDoes) {
  const auto config = parse(R"(
version: v1
auth: {type: static, credentials: {username: u, password: p}}
listeners:
  - {name: wildcard, protocol: TURN-UDP, address: 0.0.0.0, port: 3478}
  - {name: unset, protocol: TURN-TCP, port: 3478}
  - {name: pod, protocol: TURN-UDP, address: $STUNNER_ADDR, port: 3479}
  - {name: v6, protocol: TURN-UDP, address: "::", port: 3480}
)");
  EXPECT_THAT(listenerUris(config, {}),
              ElementsAre("turn:0.0.0.0:3478?transport=udp", "turn:0.0.0.0:3478?transport=tcp",
                          "turn:0.0.0.0:3479?transport=udp", "turn:0.0.0.0:3480?transport=udp"));
  EXPECT_EQ(listenerUris(config, {.public_addr = "192.0.2.1"}).front(),
            "turn:192.0.2.1:3478?transport=udp");
}

TEST(ListenerId, StandaloneNamesTakeNamespaceAndGatewayFromAdminName) {
  const auto config = parse(R"(
version: v1
admin: {name: ns1/gw1}
auth: {type: static, credentials: {username: u, password: p}}
listeners: [{name: udp, protocol: TURN-UDP, address: 127.0.0.1, port: 3478}]
)");
  const ListenerId id = listenerId(config, config.listeners[0]);
  EXPECT_EQ(id.namespace_name, "ns1");
  EXPECT_EQ(id.gateway, "gw1");
  EXPECT_EQ(id.listener, "udp");
  EXPECT_EQ(
      listenerUris(config, {.namespace_name = "ns1", .gateway = "gw1", .listener = "udp"}).size(),
      1u);
}

TEST(IceServer, MintsOneCredentialForAllSelectedUris) {
  const auto config = parse(kGatewayConfig);
  const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  const auto server = iceServer(config, {.username = "bob", .ttl = std::chrono::seconds(60)}, now);
  ASSERT_TRUE(server);
  EXPECT_EQ(server->urls.size(), 4u);
  EXPECT_EQ(server->credential.username, "1800000060:bob");
  const auto none = iceServer(config, {.namespace_name = "nope"}, now);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->urls.empty());
}

TEST(IceServers, OnePerConfigInIdOrderSkippingThoseThatCannotMint) {
  const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  const auto gateway = [](const char* id, const char* auth) {
    return std::make_shared<const config::StunnerConfig>(
        parse((std::string("version: v1\nadmin: {name: ") + id + "}\nauth: " + auth +
               "\nlisteners: [{name: " + id + "/udp, protocol: TURN-UDP, address: 127.0.0.1}]\n")
                  .c_str()));
  };
  // c/gw lost its secret (validation refuses that; built by hand): it cannot mint.
  auto noSecret = std::make_shared<config::StunnerConfig>(
      *gateway("c/gw", "{type: ephemeral, credentials: {secret: s}}"));
  noSecret->auth.credentials.clear();
  const ConfigSet configs{
      {"b/gw", gateway("b/gw", "{type: static, credentials: {username: u, password: p}}")},
      {"a/gw", gateway("a/gw", "{type: ephemeral, credentials: {secret: s}}")},
      {"c/gw", noSecret},
  };
  const IceServerList list = iceServers(configs, {.username = "bob"}, now);
  ASSERT_EQ(list.servers.size(), 2u);
  EXPECT_EQ(list.servers[0].credential.username, "1800086400:bob");  // a/gw
  EXPECT_EQ(list.servers[1].credential, (Credential{"u", "p"}));     // b/gw
  ASSERT_EQ(list.errors.size(), 1u);
  EXPECT_EQ(list.errors[0].message.rfind("c/gw: ", 0), 0u) << list.errors[0].message;
  // A config with no selected listener is neither an entry nor an error.
  const IceServerList b_only = iceServers(configs, {.namespace_name = "b"}, now);
  EXPECT_EQ(b_only.servers.size(), 1u);
  EXPECT_TRUE(b_only.errors.empty());
  EXPECT_TRUE(iceServers({}, {}, now).servers.empty());
}

// Region-aware ICE servers (region_policy.h): the wanted region first, then the preference.
class RegionOrderTest : public ::testing::Test {
 protected:
  static std::shared_ptr<const config::StunnerConfig> gateway(const char* id, const char* region,
                                                              const char* address) {
    return std::make_shared<const config::StunnerConfig>(
        parse((std::string("version: v1\nadmin: {name: ") + id + ", region: \"" + region +
               "\"}\nauth: {type: ephemeral, credentials: {secret: s}}\nlisteners: [{name: " + id +
               "/udp, protocol: TURN-UDP, address: " + address + "}]\n")
                  .c_str()));
  }
  std::vector<std::string> order(const IceQuery& query, const RegionPolicy& policy) const {
    std::vector<std::string> hosts;
    for (const IceServer& s : iceServers(configs_, query, now_, policy).servers) {
      hosts.push_back(s.urls.at(0));
    }
    return hosts;
  }
  const std::chrono::system_clock::time_point now_{std::chrono::seconds(1'800'000'000)};
  const ConfigSet configs_{
      {"a/fra", gateway("a/fra", "eu-central", "192.0.2.1")},
      {"b/sin", gateway("b/sin", "ap-southeast", "192.0.2.2")},
      {"c/iad", gateway("c/iad", "us-east", "192.0.2.3")},
      {"d/lab", gateway("d/lab", "", "192.0.2.4")},
  };
  const RegionPolicy policy_{{*RegionPolicy::parseNetwork("203.0.113.0/24=ap-southeast"),
                              *RegionPolicy::parseNetwork("2001:db8:1::/48=us-east")},
                             {"us-east", "eu-central"}};
  static std::string uri(int host) {
    return "turn:192.0.2." + std::to_string(host) + ":3478?transport=udp";
  }
};

TEST_F(RegionOrderTest, WithoutARegionTheConfiguredPreferenceThenTheRestThenNone) {
  EXPECT_THAT(order({}, policy_), ElementsAre(uri(3), uri(1), uri(2), uri(4)));
  // No policy at all: id order, as without regions.
  EXPECT_THAT(order({}, {}), ElementsAre(uri(1), uri(2), uri(3), uri(4)));
}

TEST_F(RegionOrderTest, TheRegionParameterComesFirstThenTheFallbacks) {
  EXPECT_THAT(order({.region = "ap-southeast"}, policy_),
              ElementsAre(uri(2), uri(3), uri(1), uri(4)));
  EXPECT_THAT(order({.region = "eu-central"}, policy_),
              ElementsAre(uri(1), uri(3), uri(2), uri(4)));
  // A region no gateway serves: the preference alone.
  EXPECT_THAT(order({.region = "sa-east"}, policy_), ElementsAre(uri(3), uri(1), uri(2), uri(4)));
}

TEST_F(RegionOrderTest, TheClientsNetworkPicksTheRegionAndTheParameterWins) {
  EXPECT_THAT(order({.client = "203.0.113.9"}, policy_),
              ElementsAre(uri(2), uri(3), uri(1), uri(4)));
  EXPECT_THAT(order({.client = "2001:db8:1::5"}, policy_),
              ElementsAre(uri(3), uri(1), uri(2), uri(4)));
  EXPECT_THAT(order({.client = "198.51.100.1"}, policy_),
              ElementsAre(uri(3), uri(1), uri(2), uri(4)));  // no network: the preference
  EXPECT_THAT(order({.region = "eu-central", .client = "203.0.113.9"}, policy_),
              ElementsAre(uri(1), uri(3), uri(2), uri(4)));
}

TEST(RegionPolicy, ParsesNetworksAndNamesWhatIsWrong) {
  EXPECT_TRUE(RegionPolicy::parseNetwork("10.0.0.0/8=eu-central"));
  EXPECT_TRUE(RegionPolicy::parseNetwork("2001:db8::/32=us-east"));
  for (const char* bad : {"10.0.0.0/8", "10.0.0.0/8=", "eu=10.0.0.0/8", "10.0.0.0/8:<1-2>=eu"}) {
    EXPECT_FALSE(RegionPolicy::parseNetwork(bad)) << bad;
  }
}

TEST(ParseIceQuery, RegionAndClient) {
  const auto q = parseIceQuery("service=turn&region=eu-central&client=203.0.113.9");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->region, "eu-central");
  EXPECT_EQ(q->client, "203.0.113.9");
  EXPECT_FALSE(parseIceQuery("service=turn&client=not-an-ip"));
}

}  // namespace
}  // namespace kturn::auth
