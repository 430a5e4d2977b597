#include "config/parser.h"

#include <gtest/gtest.h>

#include <map>

#include "test_configs.h"

namespace kturn::config {
namespace {

using testing::kMinimalYaml;
using testing::kOperatorJson;

EnvLookup fakeEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

Result<StunnerConfig> parse(std::string_view text, std::map<std::string, std::string> env = {}) {
  return parseConfig(text, fakeEnv(std::move(env)));
}

TEST(ParseConfig, StunnerdReadmeExampleYaml) {
  auto c = parse(testing::stunnerdReadmeYaml(),
                 {{"STUNNER_SHARED_SECRET", "s3cr3t"}, {"STUNNER_ADDR", "10.0.0.7"}});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->version, "v1");
  EXPECT_EQ(c->admin.name, "my-stunnerd");
  EXPECT_EQ(c->admin.loglevel, "all:DEBUG");  // "logLevel" matched case-insensitively
  EXPECT_EQ(c->admin.metrics_endpoint, "");
  EXPECT_EQ(c->admin.healthcheck_endpoint, "http://:8086");
  EXPECT_EQ(c->admin.offload_engine, "None");
  EXPECT_EQ(c->auth.authType(), AuthType::kEphemeral);
  EXPECT_EQ(c->auth.type, "ephemeral");
  EXPECT_EQ(c->auth.realm, "stunner.l7mp.io");  // admin.realm is not a field
  // The secret is written as "$STUNNER_SHARED_SECRET": credentials are never substituted.
  EXPECT_EQ(c->auth.secret(), "$STUNNER_SHARED_SECRET");

  ASSERT_EQ(c->listeners.size(), 4u);
  const Listener& udp = c->listeners[0];
  EXPECT_EQ(udp.name, "stunnerd-udp");
  EXPECT_EQ(udp.protocol, "TURN-UDP");
  EXPECT_EQ(udp.protocolType(), ListenerProtocol::kTurnUdp);
  EXPECT_EQ(udp.address, "10.0.0.7");
  EXPECT_EQ(udp.port, 3478);
  EXPECT_EQ(udp.public_address, "");
  EXPECT_EQ(udp.public_port, 0);
  EXPECT_EQ(udp.min_relay_port, 0);
  EXPECT_EQ(udp.max_relay_port, 0);
  EXPECT_EQ(udp.routes, std::vector<std::string>{"default/media-plane"});
  EXPECT_EQ(c->listeners[1].protocolType(), ListenerProtocol::kTurnTcp);
  EXPECT_EQ(c->listeners[2].protocol, "TURN-TLS");
  EXPECT_EQ(c->listeners[2].port, 3479);
  EXPECT_EQ(c->listeners[2].cert, testing::fakeCertB64());
  EXPECT_EQ(c->listeners[2].key, testing::fakeKeyB64());
  EXPECT_EQ(c->listeners[3].protocolType(), ListenerProtocol::kTurnDtls);

  ASSERT_EQ(c->clusters.size(), 1u);
  EXPECT_EQ(c->clusters[0].name, "stunner/iperf-server");
  EXPECT_EQ(c->clusters[0].clusterType(), ClusterType::kStatic);
  EXPECT_EQ(c->clusters[0].clusterProtocol(), ClusterProtocol::kUdp);
  EXPECT_EQ(c->clusters[0].endpoints, std::vector<std::string>{"127.0.0.1"});
}

// The shape of stunnerd's own sample config (cmd/stunnerd/stunnerd.conf): version v1alpha1, every
// value from the environment, auth type "plaintext"; and a listener on localhost.
TEST(ParseConfig, StunnerdSampleV1Alpha1) {
  auto c = parse(R"(version: v1alpha1
admin:
  name: stunnerd
  loglevel: $STUNNER_LOGLEVEL
auth:
  type: $STUNNER_AUTH_TYPE
  realm: $STUNNER_REALM
  credentials:
    username: $STUNNER_USERNAME
    password: $STUNNER_PASSWORD
clusters:
  - name: open-cluster
    type: STATIC
    endpoints: ["0.0.0.0/0"]
listeners:
  - name: stunnerd-udp
    address: "$STUNNER_ADDR"
    protocol: TURN-UDP
    port: $STUNNER_PORT
    routes: [open-cluster]
  - name: stunnerd-tcp
    address: "$STUNNER_ADDR"
    protocol: TURN-TCP
    port: $STUNNER_PORT
    routes: [open-cluster]
)",
                 {{"STUNNER_LOGLEVEL", "all:INFO"},
                  {"STUNNER_AUTH_TYPE", "plaintext"},
                  {"STUNNER_REALM", "stunner.l7mp.io"},
                  {"STUNNER_USERNAME", "user1"},
                  {"STUNNER_PASSWORD", "passwd1"},
                  {"STUNNER_ADDR", "localhost"},
                  {"STUNNER_PORT", "3478"}});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->version, "v1");
  EXPECT_EQ(c->auth.type, "static");
  EXPECT_EQ(c->auth.username(), "$STUNNER_USERNAME");  // credentials are never substituted
  ASSERT_EQ(c->listeners.size(), 2u);
  EXPECT_EQ(c->listeners[0].address, "127.0.0.1");
  EXPECT_EQ(c->listeners[1].protocolType(), ListenerProtocol::kTurnTcp);
  EXPECT_EQ(c->listeners[1].port, 3478);
}

TEST(ParseConfig, UnsetAddressVariableFallsBackToDefault) {
  auto c = parse(testing::stunnerdReadmeYaml());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->listeners[0].address, "0.0.0.0");
}

TEST(ParseConfig, OperatorRenderedJson) {
  auto c = parse(kOperatorJson);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->admin.name, "stunner-daemon");
  EXPECT_EQ(c->admin.loglevel, "all:INFO");
  EXPECT_EQ(c->admin.healthcheck_endpoint, "http://:8086");
  EXPECT_EQ(c->auth.type, "static");
  EXPECT_EQ(c->auth.username(), "user-1");
  EXPECT_EQ(c->auth.password(), "pass-1");
  EXPECT_FALSE(c->auth.secret());
  ASSERT_EQ(c->listeners.size(), 2u);
  EXPECT_EQ(c->listeners[0].name, "stunner/udp-gateway/udp-listener");
  EXPECT_EQ(c->listeners[0].public_address, "35.205.10.190");
  EXPECT_EQ(c->listeners[0].public_port, 3478);
  EXPECT_EQ(c->listeners[0].address, "127.0.0.1");
  EXPECT_EQ(c->listeners[1].protocol, "TURN-TCP");
  EXPECT_EQ(c->clusters[0].endpoints, std::vector<std::string>{"0.0.0.0/0"});
  EXPECT_EQ(c->findCluster("stunner/iperf-server"), &c->clusters[0]);
  EXPECT_EQ(c->findListener("nope"), nullptr);
}

TEST(ParseConfig, Defaults) {
  auto c = parse(R"(version: v1
auth: {credentials: {username: u, password: p}}
listeners: [{name: l}]
clusters: [{name: c}]
)");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->admin.name, "default-stunnerd");
  EXPECT_EQ(c->admin.loglevel, "all:INFO");
  EXPECT_EQ(c->admin.healthcheck_endpoint, "http://:8086");
  EXPECT_EQ(c->admin.metrics_endpoint, "");
  EXPECT_EQ(c->admin.user_quota, 0);
  EXPECT_EQ(c->admin.offload_engine, "None");
  EXPECT_FALSE(c->admin.license_config);
  EXPECT_EQ(c->auth.type, "static");
  EXPECT_EQ(c->auth.realm, "stunner.l7mp.io");
  const Listener& l = c->listeners[0];
  EXPECT_EQ(l.protocol, "TURN-UDP");
  EXPECT_EQ(l.address, "0.0.0.0");
  EXPECT_EQ(l.port, 3478);
  EXPECT_EQ(l.min_relay_port, 0);  // kernel ephemeral range
  EXPECT_EQ(l.max_relay_port, 0);
  EXPECT_TRUE(l.routes.empty());
  EXPECT_EQ(c->clusters[0].type, "STATIC");
  EXPECT_EQ(c->clusters[0].protocol, "UDP");
  EXPECT_TRUE(c->clusters[0].endpoints.empty());
}

TEST(ParseConfig, EmptyHealthcheckDisablesIt) {
  auto c = parse(std::string(kMinimalYaml) + "admin:\n  healthcheck_endpoint: \"\"\n");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->admin.healthcheck_endpoint, "");
  // A YAML null is absent, as in Go: the default applies.
  auto d = parse(std::string(kMinimalYaml) + "admin:\n  healthcheck_endpoint:\n");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->admin.healthcheck_endpoint, "http://:8086");
}

TEST(ParseConfig, AdminFields) {
  auto c = parse(std::string(kMinimalYaml) + R"(admin:
  metrics_endpoint: "http://0.0.0.0:8080/metrics"
  user_quota: -5
  offload_engine: xdp
  offload_interfaces: [eth1, eth0]
  license_config: {key: k, hmac: h}
)");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->admin.metrics_endpoint, "http://0.0.0.0:8080/metrics");
  EXPECT_EQ(c->admin.user_quota, 0);  // clamped like STUNner
  EXPECT_EQ(c->admin.offload_engine, "XDP");
  EXPECT_EQ(c->admin.offload_interfaces, (std::vector<std::string>{"eth0", "eth1"}));
  ASSERT_TRUE(c->admin.license_config);
  EXPECT_EQ(c->admin.license_config->key, "k");
  EXPECT_EQ(c->admin.license_config->hmac, "h");
}

TEST(ParseConfig, MobilityIsABooleanInYamlOrJson) {
  auto yaml = parse(std::string(kMinimalYaml) + "admin:\n  mobility: true\n");
  ASSERT_TRUE(yaml) << yaml.error().message;
  EXPECT_TRUE(yaml->admin.mobility);
  auto off = parse(std::string(kMinimalYaml) + "admin:\n  mobility: False\n");
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_FALSE(off->admin.mobility);
  EXPECT_FALSE(parse(kMinimalYaml)->admin.mobility);
  for (const char* bad : {"yes", "1", "\"on\"", "[true]"}) {
    auto c = parse(std::string(kMinimalYaml) + "admin:\n  mobility: " + bad + "\n");
    ASSERT_FALSE(c) << bad;
    EXPECT_NE(c.error().message.find("admin.mobility"), std::string::npos) << c.error().message;
  }
}

TEST(ParseConfig, AuthTypeAliases) {
  const std::pair<std::string_view, AuthType> cases[] = {
      {"static", AuthType::kStatic},          {"plaintext", AuthType::kStatic},
      {"ephemeral", AuthType::kEphemeral},    {"longterm", AuthType::kEphemeral},
      {"timewindowed", AuthType::kEphemeral}, {"none", AuthType::kNone},
      {"Static", AuthType::kStatic}};
  for (const auto& [alias, want] : cases) {
    auto c = parse("version: v1\nauth:\n  type: " + std::string(alias) +
                   "\n  credentials: {username: u, password: p, secret: s}\n");
    ASSERT_TRUE(c) << alias << ": " << c.error().message;
    EXPECT_EQ(c->auth.authType(), want) << alias;
    EXPECT_EQ(c->auth.type, toString(want)) << alias;  // normalized
  }
}

TEST(ParseConfig, ListenerProtocolAliases) {
  const std::tuple<std::string_view, ListenerProtocol, std::string_view> cases[] = {
      {"UDP", ListenerProtocol::kTurnUdp, "UDP"},
      {"udp", ListenerProtocol::kTurnUdp, "UDP"},
      {"TCP", ListenerProtocol::kTurnTcp, "TCP"},
      {"turn-udp", ListenerProtocol::kTurnUdp, "TURN-UDP"},
      {"Turn-Tcp", ListenerProtocol::kTurnTcp, "TURN-TCP"},
      {"TLS", ListenerProtocol::kTurnTls, "TLS"},
      {"dtls", ListenerProtocol::kTurnDtls, "DTLS"},
  };
  for (const auto& [alias, want, normalized] : cases) {
    auto c = parse(
        std::string(kMinimalYaml) + "listeners:\n  - name: l\n    protocol: " + std::string(alias) +
        "\n    cert: " + testing::fakeCertB64() + "\n    key: " + testing::fakeKeyB64() + "\n");
    ASSERT_TRUE(c) << alias << ": " << c.error().message;
    EXPECT_EQ(c->listeners[0].protocolType(), want) << alias;
    EXPECT_EQ(c->listeners[0].protocol, normalized) << alias;
  }
}

TEST(ParseConfig, ClusterTypeAndProtocolCaseInsensitive) {
  auto c = parse(std::string(kMinimalYaml) + R"(clusters:
  - name: dns
    type: strict_dns
    protocol: tcp
    endpoints: [media.default.svc.cluster.local, other:<100-200>]
)");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->clusters[0].type, "STRICT_DNS");
  EXPECT_EQ(c->clusters[0].clusterType(), ClusterType::kStrictDns);
  EXPECT_EQ(c->clusters[0].protocol, "TCP");
  auto dns = c->clusters[0].dnsEndpoints();
  ASSERT_TRUE(dns);
  EXPECT_EQ((*dns)[0].host, "media.default.svc.cluster.local");
  EXPECT_EQ((*dns)[1].host, "other");
  EXPECT_EQ((*dns)[1].min_port, 100);
}

TEST(ParseConfig, SortsRoutesEndpointsLikeStunner) {
  auto c = parse(std::string(kMinimalYaml) + R"(listeners:
  - {name: l, routes: [b, a]}
clusters:
  - {name: a, endpoints: [10.0.0.2, 10.0.0.1]}
)");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->listeners[0].routes, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c->clusters[0].endpoints, (std::vector<std::string>{"10.0.0.1", "10.0.0.2"}));
}

TEST(ParseConfig, RelayPortRange) {
  auto c = parse(std::string(kMinimalYaml) + R"(listeners:
  - {name: both, min_relay_port: 40000, max_relay_port: 50000}
  - {name: min-only, min_relay_port: 40000}
  - {name: max-only, max_relay_port: 50000}
)");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->listeners[0].min_relay_port, 40000);
  EXPECT_EQ(c->listeners[0].max_relay_port, 50000);
  EXPECT_EQ(c->listeners[1].max_relay_port, 65535);
  EXPECT_EQ(c->listeners[2].min_relay_port, 1);
}

TEST(ParseConfig, UnknownFieldsIgnored) {
  auto c = parse(R"(version: v1
kind: whatever
admin: {name: a, future_knob: 7, nested: {x: [1, 2]}}
auth: {credentials: {username: u, password: p}, extra: true}
listeners: [{name: l, colour: blue}]
)");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->admin.name, "a");
}

TEST(ParseConfig, ScalarsIntoStringFields) {
  // stunnerd's YAML reader turns numbers into text for string fields.
  auto c = parse("version: v1\nauth:\n  credentials:\n    username: 1234\n    password: 0042\n");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->auth.username(), "1234");
  EXPECT_EQ(c->auth.password(), "0042");  // kturn keeps the text as written
  auto j = parse(R"({"version":"v1","auth":{"credentials":{"username":7,"password":true}}})");
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_EQ(j->auth.username(), "7");
  EXPECT_EQ(j->auth.password(), "true");
}

TEST(ParseConfig, QuotedAndFloatIntegers) {
  auto c = parse(std::string(kMinimalYaml) + "listeners:\n  - {name: l, port: \"4000\"}\n");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->listeners[0].port, 4000);
  auto j =
      parse(R"({"version":"v1","auth":{"type":"none"},"listeners":[{"name":"l","port":4000.0}]})");
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_EQ(j->listeners[0].port, 4000);
}

TEST(ParseConfig, YamlFlowMappingStartingWithBrace) {
  auto c = parse("{version: v1, auth: {type: none}}");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->auth.type, "none");
}

// --- environment substitution ----------------------------------------------------------------

TEST(ParseConfigEnv, SubstitutesEverywhereButCredentials) {
  auto c = parse(R"(version: v1
admin:
  name: ${NAME}
  loglevel: $LOGLEVEL
auth:
  type: $AUTH_TYPE
  realm: $REALM
  credentials:
    username: $USER
    password: pa$ss
listeners:
  - name: udp
    address: $STUNNER_ADDR
    public_address: ${PUBLIC_ADDR}
    port: $STUNNER_PORT
    routes: [$ROUTE]
clusters:
  - name: $ROUTE
    endpoints: ["$PEERS"]
)",
                 {{"NAME", "gw"},
                  {"LOGLEVEL", "all:TRACE"},
                  {"AUTH_TYPE", "plaintext"},
                  {"REALM", "example.org"},
                  {"USER", "must-not-appear"},
                  {"ss", "must-not-appear"},
                  {"STUNNER_ADDR", "10.1.2.3"},
                  {"PUBLIC_ADDR", "198.51.100.1"},
                  {"STUNNER_PORT", "3479"},
                  {"ROUTE", "media"},
                  {"PEERS", "10.0.0.0/8"}});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->admin.name, "gw");
  EXPECT_EQ(c->admin.loglevel, "all:TRACE");
  EXPECT_EQ(c->auth.type, "static");
  EXPECT_EQ(c->auth.realm, "example.org");
  EXPECT_EQ(c->auth.username(), "$USER");
  EXPECT_EQ(c->auth.password(), "pa$ss");
  EXPECT_EQ(c->listeners[0].address, "10.1.2.3");
  EXPECT_EQ(c->listeners[0].public_address, "198.51.100.1");
  EXPECT_EQ(c->listeners[0].port, 3479);
  EXPECT_EQ(c->listeners[0].routes, std::vector<std::string>{"media"});
  EXPECT_EQ(c->clusters[0].name, "media");
  EXPECT_EQ(c->clusters[0].endpoints, std::vector<std::string>{"10.0.0.0/8"});
}

// STUNner's TestCredentialParser cases (config_test.go).
TEST(ParseConfigEnv, DollarInCredentialsIsLiteral) {
  for (std::string_view value : {"$user", "user$", "us$er", "${x}", "$$", "a$"}) {
    const std::string v(value);
    const std::string json =
        R"({"version":"v1","auth":{"type":"static","credentials":{"password":")" + v +
        R"(","username":")" + v + R"(","secret":")" + v + R"("}}})";
    auto c = parse(json, {{"user", "X"}, {"er", "X"}, {"x", "X"}});
    ASSERT_TRUE(c) << value << ": " << c.error().message;
    EXPECT_EQ(c->auth.username(), value);
    EXPECT_EQ(c->auth.password(), value);
    EXPECT_EQ(c->auth.secret(), value);
  }
}

TEST(ParseConfigEnv, StunnerPortDefaultsFromPublicPort) {
  const std::string text =
      std::string(kMinimalYaml) + "listeners: [{name: l, port: $STUNNER_PORT}]\n";
  auto dflt = parse(text);
  ASSERT_TRUE(dflt) << dflt.error().message;
  EXPECT_EQ(dflt->listeners[0].port, 3478);
  auto pub = parse(text, {{"STUNNER_PUBLIC_PORT", "31000"}});
  ASSERT_TRUE(pub) << pub.error().message;
  EXPECT_EQ(pub->listeners[0].port, 31000);
}

TEST(ParseConfigEnv, ProcessEnvironment) {
  ::setenv("KTURN_CONFIG_TEST_NAME", "from-env", 1);
  ::setenv("KTURN_CONFIG_TEST_SECRET", "leaked", 1);
  auto c = parseConfig(R"(version: v1
admin: {name: $KTURN_CONFIG_TEST_NAME}
auth: {type: ephemeral, credentials: {secret: $KTURN_CONFIG_TEST_SECRET}}
)");
  ::unsetenv("KTURN_CONFIG_TEST_NAME");
  ::unsetenv("KTURN_CONFIG_TEST_SECRET");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->admin.name, "from-env");
  EXPECT_EQ(c->auth.secret(), "$KTURN_CONFIG_TEST_SECRET");
}

// --- malformed input: errors, never exceptions -----------------------------------------------

void expectError(std::string_view text, std::string_view want_prefix) {
  Result<StunnerConfig> c = Error{};
  ASSERT_NO_THROW(c = parse(text)) << text;
  ASSERT_FALSE(c) << text;
  EXPECT_EQ(c.error().message.substr(0, want_prefix.size()), want_prefix)
      << "full message: " << c.error().message;
}

TEST(ParseConfigMalformed, WrongTypes) {
  const std::string head(kMinimalYaml);
  expectError(head + "listeners:\n  - {name: l, port: abc}\n",
              "listeners[0].port: expected an integer, got a string \"abc\"");
  expectError(head + "listeners:\n  - {name: l, port: \"abc\"}\n", "listeners[0].port: expected");
  expectError(head + "listeners:\n  - {name: l, port: 3478.5}\n", "listeners[0].port: expected");
  expectError(head + "listeners:\n  - {name: l, port: 99999999999}\n",
              "listeners[0].port: integer out of range");
  expectError(head + "listeners: {name: l}\n", "listeners: expected a list, got a mapping");
  expectError(head + "listeners: udp\n", "listeners: expected a list");
  expectError(head + "listeners:\n  - just-a-name\n", "listeners[0]: expected a mapping");
  expectError(head + "listeners:\n  - {name: l, routes: a}\n",
              "listeners[0].routes: expected a list");
  expectError(head + "listeners:\n  - {name: [a]}\n", "listeners[0].name: expected a string");
  expectError(head + "clusters:\n  - {name: c, endpoints: [[1]]}\n",
              "clusters[0].endpoints[0]: expected a string, got a list");
  expectError("version: v1\nauth:\n  credentials: [a]\n", "auth.credentials: expected a mapping");
  expectError("version: v1\nauth:\n  credentials: {secret: {a: b}}\n",
              "auth.credentials.secret: expected a string");
  expectError("version: v1\nadmin: [1]\n", "admin: expected a mapping");
  expectError("version: v1\nadmin: {healthcheck_endpoint: [x]}\n",
              "admin.healthcheck_endpoint: expected a string");
  expectError(R"({"version":"v1","listeners":[{"name":"l","port":"abc"}]})",
              "listeners[0].port: expected an integer");
  expectError(R"({"version":"v1","listeners":[{"name":"l","port":-70000000000}]})",
              "listeners[0].port: integer out of range");
}

TEST(ParseConfigMalformed, NotAMapping) {
  expectError("- a\n- b\n", "config: expected a mapping, got a list");
  expectError("just text", "config: expected a mapping, got a string");
  expectError("", "config: expected a mapping, got null");
  expectError("[]", "config: expected a mapping");
  expectError("42", "config: expected a mapping");
}

TEST(ParseConfigMalformed, SyntaxErrors) {
  expectError("version: v1\nauth: {type: static\n", "yaml: line");
  expectError("version: v1\n  bad: indent\n", "yaml: line");
  expectError("a: b: c\n", "yaml: line");
  expectError("version: v1\nlisteners:\n- name: a\n  - b\n", "yaml: line");
  expectError(R"({"version": "v1", "auth": {)", "json: ");
  expectError(R"({"version": "v1" "auth": 1})", "json: ");
  expectError("{\"a\": \"\xff\"}", "");  // invalid UTF-8: any error, no crash
}

TEST(ParseConfigMalformed, HostileDocuments) {
  expectError(std::string(10000, '[') + std::string(10000, ']'), "config: brackets nest");
  expectError(std::string(10000, '{'), "config: brackets nest");
  // A billion laughs: nine levels of ten aliases each.
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    const char prev = static_cast<char>(c - 1);
    laughs += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) laughs += std::string(i ? ", *" : "*") + prev;
    laughs += "]\n";
  }
  expectError(laughs, "yaml: document expands to too many nodes");
  expectError("a: &a [*a]\n", "");  // self-reference: any error, no crash
  expectError("? [a, b]\n: c\n", "yaml: line 1, column 3: mapping keys must be scalars");
}

TEST(ParseConfigMalformed, JsonThatIsValidYamlIsAccepted) {
  // stunnerd reads JSON with its YAML reader first, so YAML's laxer flow syntax is fine.
  auto c = parse(R"({"version": "v1", "auth": {"type": "none"},})");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->auth.type, "none");
}

TEST(ParseConfigMalformed, RawSyntaxErrorBeforeSubstitution) {
  // The text must parse as written; substitution cannot repair it.
  expectError("version: v1\nauth: {type: $X\n", "yaml: line");
}

TEST(DecodeConfig, NoDefaultsNoSubstitution) {
  auto c = decodeConfig("version: v1\nadmin: {name: $NAME}\nlisteners: [{name: l}]\n");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->admin.name, "$NAME");
  EXPECT_EQ(c->admin.loglevel, "");
  EXPECT_FALSE(c->admin.healthcheck_endpoint);
  EXPECT_EQ(c->listeners[0].port, 0);
}

TEST(DecodeConfig, CaseInsensitiveKeysPreferExactMatch) {
  auto c = decodeConfig("version: v1\nadmin: {NAME: upper, name: exact, Name: mixed}\n");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->admin.name, "mixed");  // document order, last one wins, like Go
  auto v = decodeConfig("VERSION: v1\nLISTENERS: [{NAME: l, PORT: 1}]\n");
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->version, "v1");
  EXPECT_EQ(v->listeners[0].port, 1);
}

}  // namespace
}  // namespace kturn::config
