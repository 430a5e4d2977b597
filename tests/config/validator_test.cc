#include "config/validator.h"

#include <gtest/gtest.h>

#include "config/parser.h"
#include "test_configs.h"

namespace kturn::config {
namespace {

// A valid config to break one field at a time; built with designated initializers.
StunnerConfig validConfig() {
  return StunnerConfig{
      .version = "v1",
      .auth = {.type = "static", .credentials = {{"username", "u"}, {"password", "p"}}},
      .listeners = {{.name = "udp", .routes = {"media"}},
                    {.name = "tls",
                     .protocol = "TURN-TLS",
                     .port = 443,
                     .cert = testing::fakeCertB64(),
                     .key = testing::fakeKeyB64(),
                     .routes = {"media"}}},
      .clusters = {{.name = "media", .endpoints = {"10.0.0.0/8", "10.1.0.1", "fd00::/8"}},
                   {.name = "dns", .type = "STRICT_DNS", .endpoints = {"media.svc"}}},
  };
}

std::string errorOf(StunnerConfig c) {
  auto r = validate(c);
  return r ? "<valid>" : r.error().message;
}

TEST(Validate, ValidConfigPasses) {
  StunnerConfig c = validConfig();
  auto r = validate(c);
  ASSERT_TRUE(r) << r.error().message;
  // Idempotent: validating the normalized config changes nothing.
  StunnerConfig again = c;
  ASSERT_TRUE(validate(again));
  EXPECT_EQ(again, c);
}

TEST(Validate, Version) {
  StunnerConfig c = validConfig();
  c.version = "v2";
  EXPECT_EQ(errorOf(c), "version: unsupported API version \"v2\" (want \"v1\")");
  c.version = "";
  EXPECT_EQ(errorOf(c), "version: unsupported API version \"\" (want \"v1\")");
}

// In place, unlike errorOf(): what validate() normalized stays in `c`.
std::string validateInPlace(StunnerConfig& c) {
  auto r = validate(c);
  return r ? "<valid>" : r.error().message;
}

// stunnerd's v1alpha1: the same fields, auth types plaintext and longterm; read as v1.
TEST(Validate, V1Alpha1IsReadAsV1) {
  StunnerConfig c = validConfig();
  c.version = "v1alpha1";
  c.auth = {.type = "longterm", .credentials = {{"secret", "s"}}};
  ASSERT_EQ(validateInPlace(c), "<valid>");
  EXPECT_EQ(c.version, "v1");
  EXPECT_EQ(c.auth.type, "ephemeral");
  c.version = "v1alpha1";
  c.auth = {.type = "plaintext", .credentials = {{"username", "u"}, {"password", "p"}}};
  ASSERT_EQ(validateInPlace(c), "<valid>");
  EXPECT_EQ(c.auth.type, "static");
}

TEST(Validate, LocalhostIsTheLoopbackAddress) {
  StunnerConfig c = validConfig();
  c.listeners[0].address = "localhost";
  ASSERT_EQ(validateInPlace(c), "<valid>");
  EXPECT_EQ(c.listeners[0].address, "127.0.0.1");
  c.listeners[0].address = "LocalHost";
  ASSERT_EQ(validateInPlace(c), "<valid>");
  EXPECT_EQ(c.listeners[0].address, "127.0.0.1");
  c.listeners[0].address = "localhost.example";  // other names are still not resolved
  EXPECT_EQ(errorOf(c), "listeners[0].address: invalid IP address \"localhost.example\"");
}

TEST(Validate, Admin) {
  StunnerConfig c = validConfig();
  c.admin.offload_engine = "eBPF";
  EXPECT_EQ(errorOf(c),
            "admin.offload_engine: unknown offload mode \"eBPF\" (want None, XDP, TC or Auto)");
  c = validConfig();
  c.admin.metrics_endpoint = "http://:80 80/metrics";
  EXPECT_EQ(errorOf(c), "admin.metrics_endpoint: invalid URL \"http://:80 80/metrics\"");
  c = validConfig();
  c.admin.healthcheck_endpoint = "http://:abc";
  EXPECT_EQ(errorOf(c), "admin.healthcheck_endpoint: invalid URL \"http://:abc\"");
  c = validConfig();
  c.admin.healthcheck_endpoint = "http://[::1]:8086";
  EXPECT_EQ(errorOf(c), "<valid>");
}

TEST(Validate, Auth) {
  StunnerConfig c = validConfig();
  c.auth.type = "kerberos";
  EXPECT_EQ(errorOf(c),
            "auth.type: unknown authentication type \"kerberos\" (want static, ephemeral or none)");
  c = validConfig();
  c.auth.credentials.erase("username");
  EXPECT_EQ(errorOf(c), "auth.credentials.username: required for static auth");
  c = validConfig();
  c.auth.credentials.erase("password");
  EXPECT_EQ(errorOf(c), "auth.credentials.password: required for static auth");
  c = validConfig();
  c.auth.type = "ephemeral";
  EXPECT_EQ(errorOf(c), "auth.credentials.secret: required for ephemeral auth");
  c.auth.credentials = {{"secret", ""}};  // present is enough, as in STUNner
  EXPECT_EQ(errorOf(c), "<valid>");
  c.auth = {.type = "none"};
  EXPECT_EQ(errorOf(c), "<valid>");
}

TEST(Validate, ListenerNameAndProtocol) {
  StunnerConfig c = validConfig();
  c.listeners[1].name = "";
  EXPECT_EQ(errorOf(c), "listeners[1].name: required");
  c = validConfig();
  c.listeners[1].name = "udp";
  EXPECT_EQ(errorOf(c), "listeners[1].name: duplicate listener name \"udp\"");
  c = validConfig();
  c.listeners[0].protocol = "SCTP";
  EXPECT_EQ(errorOf(c),
            "listeners[0].protocol: unknown listener protocol \"SCTP\" (want TURN-UDP, TURN-TCP, "
            "TURN-TLS or TURN-DTLS)");
}

TEST(Validate, ListenerAddressAndPorts) {
  StunnerConfig c = validConfig();
  c.listeners[0].address = "eth0";
  EXPECT_EQ(errorOf(c), "listeners[0].address: invalid IP address \"eth0\"");
  // What the operator renders and serves over CDS; the dataplane expands it.
  c.listeners[0].address = "$STUNNER_ADDR";
  EXPECT_EQ(errorOf(c), "<valid>");
  c.listeners[0].address = "${STUNNER_ADDR}";
  EXPECT_EQ(errorOf(c), "<valid>");
  c.listeners[0].address = "$STUNNER_ADDR:1";
  EXPECT_EQ(errorOf(c), "listeners[0].address: invalid IP address \"$STUNNER_ADDR:1\"");
  c.listeners[0].address = "eth0";
  for (int bad : {-1, 65536, 100000}) {
    c = validConfig();
    c.listeners[1].port = bad;
    EXPECT_EQ(errorOf(c), "listeners[1].port: must be 1-65535") << bad;
  }
  c = validConfig();
  c.listeners[0].public_port = 70000;
  EXPECT_EQ(errorOf(c), "listeners[0].public_port: must be 1-65535");
  c = validConfig();
  c.listeners[0].min_relay_port = -3;
  EXPECT_EQ(errorOf(c), "listeners[0].min_relay_port: must be 1-65535");
  c = validConfig();
  c.listeners[0].max_relay_port = 65536;
  EXPECT_EQ(errorOf(c), "listeners[0].max_relay_port: must be 1-65535");
  c = validConfig();
  c.listeners[0].min_relay_port = 50000;
  c.listeners[0].max_relay_port = 40000;
  EXPECT_EQ(errorOf(c), "listeners[0].max_relay_port: must not be below min_relay_port (50000)");
  c = validConfig();
  c.listeners[0].address = "::";
  c.listeners[0].port = 65535;
  EXPECT_EQ(errorOf(c), "<valid>");
}

TEST(Validate, ListenerTlsMaterial) {
  StunnerConfig c = validConfig();
  c.listeners[1].cert = "";
  EXPECT_EQ(errorOf(c), "listeners[1].cert: required for TURN-TLS listeners");
  c = validConfig();
  c.listeners[1].protocol = "DTLS";
  c.listeners[1].key = "";
  EXPECT_EQ(errorOf(c), "listeners[1].key: required for TURN-DTLS listeners");
  c = validConfig();
  c.listeners[1].cert = "my-cert.cert";  // a file name, as in stunnerd's README: not base64
  EXPECT_EQ(errorOf(c), "listeners[1].cert: not valid base64");
  c = validConfig();
  c.listeners[1].key = "abc";
  EXPECT_EQ(errorOf(c), "listeners[1].key: not valid base64");
  c = validConfig();
  c.listeners[0].cert = "ignored on UDP";  // only TLS/DTLS listeners look at it
  EXPECT_EQ(errorOf(c), "<valid>");
}

TEST(Validate, DanglingRoutesAreAccepted) {
  StunnerConfig c = validConfig();
  c.listeners[0].routes = {"media", "ghost"};
  ASSERT_TRUE(validate(c));
  EXPECT_EQ(danglingRoutes(c),
            std::vector<std::string>{"listeners[0].routes[0]: no cluster named \"ghost\""});
  EXPECT_TRUE(danglingRoutes(validConfig()).empty());
}

TEST(Validate, Cluster) {
  StunnerConfig c = validConfig();
  c.clusters[1].name = "";
  EXPECT_EQ(errorOf(c), "clusters[1].name: required");
  c = validConfig();
  c.clusters[1].name = "media";
  EXPECT_EQ(errorOf(c), "clusters[1].name: duplicate cluster name \"media\"");
  c = validConfig();
  c.clusters[0].type = "EDS";
  EXPECT_EQ(errorOf(c),
            "clusters[0].type: unknown cluster type \"EDS\" (want STATIC or STRICT_DNS)");
  c = validConfig();
  c.clusters[0].protocol = "SCTP";
  EXPECT_EQ(errorOf(c),
            "clusters[0].protocol: unknown cluster protocol \"SCTP\" (want UDP or TCP)");
  c = validConfig();
  c.clusters[0].endpoints = {"10.0.0.1", "10.0.0.2", "10.0.0.300"};
  EXPECT_EQ(errorOf(c), "clusters[0].endpoints[2]: invalid address \"10.0.0.300\"");
  c = validConfig();
  c.clusters[0].endpoints = {"10.0.0.0/8:<2000-1000>"};
  EXPECT_EQ(errorOf(c), "clusters[0].endpoints[0]: invalid port range \":<2000-1000>\": min > max");
  c = validConfig();
  c.clusters[1].endpoints = {"ok.svc", "bad host"};
  EXPECT_EQ(errorOf(c), "clusters[1].endpoints[1]: invalid host name \"bad host\"");
}

TEST(Validate, ErrorsThroughParseConfigCarryThePath) {
  auto c = parseConfig(std::string(testing::kMinimalYaml) +
                           "listeners:\n  - {name: a}\n  - {name: b, port: 70000}\n",
                       [](const std::string&) { return std::nullopt; });
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, "listeners[1].port: must be 1-65535");
  EXPECT_EQ(c.error().code, Error::Code::kInvalidArgument);
}

}  // namespace
}  // namespace kturn::config

namespace kturn::config {
namespace {

TEST(RotationConfig, PreviousSecretNeedsAParsableExpiry) {
  auto ok = parseConfig(R"(
version: v1
auth:
  type: ephemeral
  credentials: {secret: new, previous_secret: old, previous_secret_expiry: "2026-12-01T00:00:00Z"}
)");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->auth.previousSecret(), "old");
  EXPECT_EQ(ok->auth.previousSecretExpiry(), 1796083200);
  EXPECT_EQ(parseTimestamp("1796083200"), 1796083200);
  EXPECT_FALSE(parseTimestamp("2026-12-01 00:00:00"));
  EXPECT_FALSE(parseTimestamp("tomorrow"));

  auto missing = parseConfig(R"(
version: v1
auth: {type: ephemeral, credentials: {secret: new, previous_secret: old}}
)");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("auth.credentials.previous_secret_expiry"),
            std::string::npos);
}

TEST(ValidateIsolating, ABadListenerOrClusterIsTakenOutAndTheRestKept) {
  StunnerConfig c = validConfig();
  c.listeners[1].cert = "%%% not base64";
  c.listeners.push_back({.name = "udp", .port = 3479});  // a name used twice
  c.clusters[0].endpoints.push_back("10.0.0.300");
  auto r = validateIsolating(c);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].kind, "listener");
  EXPECT_EQ((*r)[0].name, "tls");
  EXPECT_EQ((*r)[0].error, "listeners[1].cert: not valid base64");
  EXPECT_EQ((*r)[1].name, "udp");
  EXPECT_EQ((*r)[1].error, "listeners[2].name: duplicate listener name \"udp\"");
  EXPECT_EQ((*r)[2].kind, "cluster");
  EXPECT_EQ((*r)[2].name, "media");
  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.listeners[0].port, 3478) << "the first \"udp\" stays, normalized";
  ASSERT_EQ(c.clusters.size(), 1u);
  EXPECT_EQ(c.clusters[0].name, "dns");
}

TEST(ValidateIsolating, WhatIsGlobalStillRejectsTheConfig) {
  StunnerConfig c = validConfig();
  c.auth.type = "ephemeral";  // without a secret
  auto r = validateIsolating(c);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind("auth", 0), 0u) << r.error().message;
  c = validConfig();
  c.version = "v2";
  EXPECT_FALSE(validateIsolating(c));
}

}  // namespace
}  // namespace kturn::config
