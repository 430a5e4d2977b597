#include "config/serializer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "config/default_config.h"
#include "config/parser.h"
#include "config/validator.h"
#include "test_configs.h"

namespace kturn::config {
namespace {

const EnvLookup kNoEnv = [](const std::string&) { return std::nullopt; };

StunnerConfig richConfig() {
  auto c = parseConfig(testing::stunnerdReadmeYaml(), kNoEnv);
  EXPECT_TRUE(c) << c.error().message;
  c->admin.metrics_endpoint = "http://:8080/metrics";
  c->admin.user_quota = 10;
  c->admin.offload_interfaces = {"eth0"};
  c->admin.license_config = LicenseConfig{.key = "k", .hmac = "h"};
  c->listeners[0].public_address = "198.51.100.7";
  c->listeners[0].public_port = 30478;
  c->listeners[0].min_relay_port = 40000;
  c->listeners[0].max_relay_port = 40100;
  c->auth.credentials["secret"] = "with \"quotes\", $dollar and: colon\nnewline";
  c->clusters.push_back({.name = "dns",
                         .type = "STRICT_DNS",
                         .protocol = "TCP",
                         .endpoints = {"a.svc", "yes", "null"}});  // must stay strings
  c->clusters[0].endpoints = {"::1/128", "10.0.0.0/8:<1-2>"};
  return std::move(*c);
}

TEST(ToJson, MatchesStunnerWireFormat) {
  const StunnerConfig c = *parseConfig(testing::kOperatorJson, kNoEnv);
  const auto got = nlohmann::json::parse(toJson(c));
  const auto want = nlohmann::json::parse(R"({
    "version": "v1",
    "admin": {"name": "stunner-daemon", "loglevel": "all:INFO",
              "healthcheck_endpoint": "http://:8086", "offload_engine": "None"},
    "auth": {"type": "static", "realm": "stunner.l7mp.io",
             "credentials": {"password": "pass-1", "username": "user-1"}},
    "listeners": [
      {"name": "stunner/udp-gateway/udp-listener", "protocol": "TURN-UDP",
       "public_address": "35.205.10.190", "public_port": 3478, "address": "127.0.0.1",
       "port": 3478, "routes": ["stunner/iperf-server"]},
      {"name": "stunner/tcp-gateway/tcp-listener", "protocol": "TURN-TCP",
       "public_address": "35.187.97.94", "public_port": 3478, "address": "127.0.0.1",
       "port": 3478, "routes": ["stunner/iperf-server"]}],
    "clusters": [{"name": "stunner/iperf-server", "type": "STATIC", "protocol": "UDP",
                  "endpoints": ["0.0.0.0/0"]}]
  })");
  EXPECT_EQ(got, want) << toJson(c, 2);
}

TEST(ToJson, KeyOrderFollowsStunnerStructs) {
  const std::string json = toJson(*parseConfig(testing::kOperatorJson, kNoEnv));
  EXPECT_EQ(json.rfind(R"({"version":"v1","admin":{"name":"stunner-daemon","loglevel")", 0), 0u)
      << json;
}

TEST(ToJson, EmptyHealthcheckIsWrittenAndNullIsOmitted) {
  StunnerConfig c{.version = "v1", .auth = {.type = "none"}};
  EXPECT_EQ(toJson(c), R"({"version":"v1","admin":{},"auth":{"type":"none","credentials":{}}})");
  c.admin.healthcheck_endpoint = "";
  EXPECT_EQ(toJson(c), R"({"version":"v1","admin":{"healthcheck_endpoint":""},)"
                       R"("auth":{"type":"none","credentials":{}}})");
}

TEST(RoundTrip, JsonAndYaml) {
  const StunnerConfig c = richConfig();
  StunnerConfig normalized = c;
  auto valid = validate(normalized);
  ASSERT_TRUE(valid) << valid.error().message;

  auto from_json = parseConfig(toJson(c), kNoEnv);
  ASSERT_TRUE(from_json) << from_json.error().message << "\n" << toJson(c, 2);
  EXPECT_EQ(*from_json, normalized);

  auto from_yaml = parseConfig(toYaml(c), kNoEnv);
  ASSERT_TRUE(from_yaml) << from_yaml.error().message << "\n" << toYaml(c);
  EXPECT_EQ(*from_yaml, normalized) << toYaml(c);

  auto pretty = parseConfig(toJson(c, 2), kNoEnv);
  ASSERT_TRUE(pretty);
  EXPECT_EQ(*pretty, normalized);
}

TEST(RoundTrip, DefaultConfig) {
  const StunnerConfig c = makeDefaultConfig("s3cret");
  auto back = parseConfig(toYaml(c), kNoEnv);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, c);
}

TEST(ToYaml, QuotesEveryString) {
  const std::string yaml = toYaml(makeDefaultConfig("s"));
  EXPECT_NE(yaml.find("version: \"v1\""), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("port: 3478"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("- \"::1/128\""), std::string::npos) << yaml;
}

}  // namespace
}  // namespace kturn::config
