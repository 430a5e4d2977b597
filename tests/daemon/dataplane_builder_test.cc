#include "daemon/dataplane_builder.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "config/base64.h"
#include "config/parser.h"
#include "config/self_signed_cert.h"

namespace kturn::daemon {
namespace {

config::StunnerConfig parse(const std::string& yaml) {
  auto c = config::parseConfig(yaml);
  EXPECT_TRUE(c) << (c ? "" : c.error().message);
  return c ? *c : config::StunnerConfig{};
}

const char* kConfig = R"(
version: v1
admin: {name: test, user_quota: 3}
auth: {type: ephemeral, realm: kturn.test, credentials: {secret: s3cret}}
listeners:
  - {name: udp, protocol: TURN-UDP, address: 127.0.0.1, port: 3478, routes: [pods, media, dns, missing]}
  - {name: tcp, protocol: TURN-TCP, address: 127.0.0.1, port: 3478, routes: [pods]}
clusters:
  - {name: pods, type: STATIC, endpoints: ["10.244.0.0/16"]}
  - {name: media, type: STATIC, endpoints: ["10.96.0.10:<10000-20000>"]}
  - {name: dns, type: STRICT_DNS, endpoints: ["media.example"]}
)";

TEST(DataplaneBuilder, TranslatesAuthListenersAndRoutes) {
  DataplaneBuilder builder;
  DnsCache dns{{"media.example", {*IpAddress::parse("10.50.0.1")}}};
  auto dp = builder.build(parse(kConfig), dns);
  ASSERT_TRUE(dp) << dp.error().message;
  const turn::ServerConfig& t = *(*dp)->turn;
  EXPECT_EQ(t.auth_mode, turn::AuthMode::kEphemeral);
  EXPECT_EQ(t.shared_secret, "s3cret");
  EXPECT_EQ(t.realm, "kturn.test");
  EXPECT_EQ(t.max_allocations_per_user, 3u);

  ASSERT_EQ((*dp)->listeners.size(), 2u);
  const worker::ListenerSpec& l = (*dp)->listeners[0];
  EXPECT_EQ(l.name, "udp");
  EXPECT_EQ(l.protocol, TransportProtocol::kUdp);
  EXPECT_EQ(l.bind.toString(), "127.0.0.1:3478");
  const worker::ListenerSpec& tcp = (*dp)->listeners[1];
  EXPECT_EQ(tcp.protocol, TransportProtocol::kTcp);
  EXPECT_EQ(tcp.bind, l.bind) << "UDP and TCP share the port number";
  EXPECT_EQ(tcp.tls, nullptr);

  const turn::ListenerPolicy* policy = t.listener(l.id);
  ASSERT_NE(policy, nullptr);
  EXPECT_TRUE(policy->allows(*TransportAddress::parse("10.244.3.4:5000")));
  EXPECT_TRUE(policy->allows(*TransportAddress::parse("10.96.0.10:15000")));
  EXPECT_FALSE(policy->allows(*TransportAddress::parse("10.96.0.10:9000")));
  EXPECT_TRUE(policy->allows(*TransportAddress::parse("10.50.0.1:1234")));  // resolved DNS
  EXPECT_FALSE(policy->allows(*TransportAddress::parse("10.50.0.2:1234")));
  EXPECT_FALSE(policy->allowsIp(*IpAddress::parse("192.168.1.1")));
}

TEST(DataplaneBuilder, TcpClustersAreTheOnlyPeersOfTcpAllocations) {
  DataplaneBuilder builder;
  auto dp = builder.build(parse(R"(
version: v1
auth: {type: static, credentials: {username: u, password: p}}
listeners:
  - {name: tcp, protocol: TURN-TCP, address: 127.0.0.1, port: 3478, routes: [pods, tcp-media]}
clusters:
  - {name: pods, type: STATIC, endpoints: ["10.244.0.0/16"]}
  - {name: tcp-media, type: STATIC, protocol: tcp, endpoints: ["10.96.0.10:<8000-9000>"]}
)"),
                          {});
  ASSERT_TRUE(dp) << dp.error().message;
  const turn::ListenerPolicy* policy = (*dp)->turn->listener((*dp)->listeners[0].id);
  ASSERT_NE(policy, nullptr);
  const auto peer = *TransportAddress::parse("10.96.0.10:8080");
  EXPECT_NE(policy->admittingTcp(peer), nullptr);
  EXPECT_EQ(policy->admittingTcp(*TransportAddress::parse("10.96.0.10:9090")), nullptr);
  EXPECT_EQ(policy->admittingTcp(*TransportAddress::parse("10.244.1.1:8080")), nullptr);
  EXPECT_NE(policy->admittingTcp(*TransportAddress::parse("10.96.0.10:40000"), true), nullptr)
      << "an inbound connection comes from any port of an admitted IP";
  // UDP allocations relay to both clusters, as in STUNner.
  EXPECT_TRUE(policy->allows(peer));
  EXPECT_TRUE(policy->allows(*TransportAddress::parse("10.244.1.1:8080")));
}

// RFC 8656 §21.1.7 (TURN loop): a listener's own addresses are never peers, even under a
// catch-all or an explicit endpoint; a wildcard listener's are every interface address.
TEST(DataplaneBuilder, NoListenerRelaysToAnyListenerOfThisServer) {
  DataplaneBuilder builder;
  builder.setInterfaceSource([] {
    return net::InterfaceAddresses({{"lo", *IpAddress::parse("127.0.0.1")},
                                    {"eth0", *IpAddress::parse("10.1.2.3")},
                                    {"eth0", *IpAddress::parse("fd00::5")}});
  });
  auto dp = builder.build(parse(R"(
version: v1
auth: {type: static, credentials: {username: u, password: p}}
listeners:
  - {name: any4, protocol: TURN-UDP, bind_address: 0.0.0.0, port: 3478, routes: [all, test-peer]}
  - {name: any6, protocol: TURN-UDP, address: "::", port: 3479, routes: [all]}
  - {name: local, protocol: TURN-TCP, address: 127.0.0.1, port: 5000, routes: [all]}
clusters:
  - {name: all, type: STATIC, endpoints: ["0.0.0.0/0", "::/0"]}
  - {name: test-peer, type: STATIC, endpoints: ["127.0.0.1/32"]}
)"),
                          {});
  ASSERT_TRUE(dp) << dp.error().message;
  const turn::ListenerPolicy* policy = (*dp)->turn->listener((*dp)->listeners[0].id);
  ASSERT_NE(policy, nullptr);
  auto allows = [&](const char* peer) { return policy->allows(*TransportAddress::parse(peer)); };
  // The wildcard listeners, on each interface address of their families.
  EXPECT_FALSE(allows("10.1.2.3:3478"));
  EXPECT_FALSE(allows("10.1.2.3:3479"));
  EXPECT_FALSE(allows("[fd00::5]:3479"));
  EXPECT_TRUE(allows("[fd00::5]:3478")) << "0.0.0.0 does not listen on IPv6 addresses";
  // The explicit listener, although the test-peer endpoint admits 127.0.0.1 otherwise.
  EXPECT_FALSE(allows("127.0.0.1:5000"));
  EXPECT_FALSE(allows("127.0.0.1:3478"));
  EXPECT_TRUE(allows("127.0.0.1:5001"));
  // Restricted interface addresses are not listed one by one: the wildcard entry covers them.
  const auto& own = policy->own_addresses;
  const IpAddress loopback = *IpAddress::parse("127.0.0.1");
  EXPECT_EQ(std::count_if(own.begin(), own.end(),
                          [&](const TransportAddress& a) { return a.ip == loopback; }),
            1)
      << "only the explicit 127.0.0.1:5000 listener";
  // Other ports of the host's addresses, and other hosts, are ordinary peers.
  EXPECT_TRUE(allows("10.1.2.3:40000"));
  EXPECT_TRUE(allows("10.1.2.4:3478"));
  EXPECT_TRUE(allows("[fd00::6]:3479"));
}

TEST(DataplaneBuilder, ListenersBindEveryAddressAndRelayOnTheirAddress) {
  DataplaneBuilder builder;
  const auto interfaces = [] {
    return net::InterfaceAddresses({{"lo", *IpAddress::parse("127.0.0.1")},
                                    {"lo", *IpAddress::parse("::1")},
                                    {"eth0", *IpAddress::parse("10.1.2.3")}});
  };
  builder.setInterfaceSource(interfaces);
  const auto config = parse(R"(
version: v1
auth: {type: static, credentials: {username: u, password: p}}
listeners:
  - {name: pod, address: 10.1.2.3, port: 3478, routes: [all]}
  - {name: nat, address: 198.51.100.7, port: 3479, routes: [all]}
  - {name: loop, address: 127.0.0.1, port: 3480, routes: [all]}
  - {name: pinned, address: 198.51.100.7, bind_address: 10.1.2.3, port: 3481, routes: [all]}
  - {name: default, port: 3482, routes: [all]}
clusters:
  - {name: all, type: STATIC, endpoints: ["0.0.0.0/0"]}
)");
  auto dp = builder.build(config, {});
  ASSERT_TRUE(dp) << dp.error().message;
  const auto& l = (*dp)->listeners;
  ASSERT_EQ(l.size(), 5u);
  EXPECT_EQ(l[0].bind.toString(), "[::]:3478") << "every address, both families";
  EXPECT_EQ(l[0].relay_ip, *IpAddress::parse("10.1.2.3"));
  EXPECT_TRUE(l[0].relay_ip_local);
  EXPECT_EQ(l[1].bind.toString(), "[::]:3479");
  EXPECT_FALSE(l[1].relay_ip_local) << "198.51.100.7 is on no interface";
  EXPECT_EQ(l[2].bind.toString(), "127.0.0.1:3480");
  EXPECT_EQ(l[3].bind.toString(), "10.1.2.3:3481");
  EXPECT_EQ(l[3].relay_ip, *IpAddress::parse("198.51.100.7"));
  EXPECT_EQ(l[4].bind.toString(), "[::]:3482");
  EXPECT_TRUE(l[4].relay_ip.isUnspecified()) << "the address the client reached";

  // Relaying to the NAT's public address on a listener port would come back in (hairpin).
  const turn::ListenerPolicy* policy = (*dp)->turn->listener(l[0].id);
  ASSERT_NE(policy, nullptr);
  EXPECT_FALSE(policy->allows(*TransportAddress::parse("198.51.100.7:3479")));
  EXPECT_TRUE(policy->allows(*TransportAddress::parse("198.51.100.7:40000")));

  // Without IPv6 on the host, "every address" is 0.0.0.0.
  DataplaneBuilder v4_only;
  v4_only.setInterfaceSource([] {
    return net::InterfaceAddresses(
        {{"lo", *IpAddress::parse("127.0.0.1")}, {"eth0", *IpAddress::parse("10.1.2.3")}});
  });
  auto dp4 = v4_only.build(config, {});
  ASSERT_TRUE(dp4) << dp4.error().message;
  EXPECT_EQ((*dp4)->listeners[0].bind.toString(), "0.0.0.0:3478");
}

TEST(DataplaneBuilder, ListenersOfOneTransportAndPortMustNotOverlap) {
  const auto build = [](const std::string& listeners) {
    DataplaneBuilder builder;
    builder.setInterfaceSource([] {
      return net::InterfaceAddresses(
          {{"lo", *IpAddress::parse("127.0.0.1")}, {"lo", *IpAddress::parse("::1")}});
    });
    auto dp = builder.build(parse("version: v1\nauth: {type: none}\nlisteners:\n" + listeners), {});
    return dp ? std::string() : dp.error().message;
  };
  // Both bind every address: they would take each other's clients.
  EXPECT_EQ(build("  - {name: a, address: 10.0.0.1, port: 3478}\n"
                  "  - {name: b, address: 10.0.0.2, port: 3478}\n"),
            "listeners[1].port: 3478/udp is also listeners[0]'s, on overlapping addresses (::, "
            "::): give each its own bind_address or port");
  EXPECT_NE(build("  - {name: a, bind_address: 0.0.0.0, port: 3478}\n"
                  "  - {name: b, bind_address: 127.0.0.2, port: 3478}\n"),
            "")
      << "0.0.0.0 covers 127.0.0.2";
  // Another transport, other addresses, another family: no overlap.
  EXPECT_EQ(build("  - {name: a, address: 10.0.0.1, port: 3478}\n"
                  "  - {name: b, address: 10.0.0.1, protocol: TURN-TCP, port: 3478}\n"),
            "");
  EXPECT_EQ(build("  - {name: a, address: 127.0.0.1, port: 3478}\n"
                  "  - {name: b, address: 127.0.0.2, port: 3478}\n"),
            "");
  EXPECT_EQ(build("  - {name: a, bind_address: 0.0.0.0, port: 3478}\n"
                  "  - {name: b, bind_address: \"::1\", port: 3478}\n"),
            "");
}

std::string tlsConfig(const config::PemPair& pem) {
  return "version: v1\nauth: {type: static, credentials: {username: u, password: p}}\n"
         "listeners:\n  - {name: tls, protocol: TURN-TLS, port: 5349, cert: \"" +
         config::encodeBase64(pem.cert_pem) + "\", key: \"" + config::encodeBase64(pem.key_pem) +
         "\"}\n";
}

TEST(DataplaneBuilder, ATlsListenerKeepsItsContextUntilItsCertificateChanges) {
  const config::PemPair first = *config::generateSelfSignedCert();
  const config::PemPair second = *config::generateSelfSignedCert();
  DataplaneBuilder builder;
  auto a = builder.build(parse(tlsConfig(first)), {});
  auto b = builder.build(parse(tlsConfig(first)), {});
  auto c = builder.build(parse(tlsConfig(second)), {});
  ASSERT_TRUE(a && b && c);
  const worker::ListenerSpec& l = (*a)->listeners.at(0);
  EXPECT_EQ(l.protocol, TransportProtocol::kTcp);
  ASSERT_NE(l.tls, nullptr);
  EXPECT_EQ((*b)->listeners.at(0).tls, l.tls) << "same certificate, same context (ticket keys)";
  EXPECT_NE((*c)->listeners.at(0).tls, l.tls) << "a new certificate needs a new context";
}

TEST(DataplaneBuilder, UnresolvedDnsAdmitsNothing) {
  DataplaneBuilder builder;
  auto dp = builder.build(parse(kConfig), {});
  ASSERT_TRUE(dp);
  const auto* policy = (*dp)->turn->listener((*dp)->listeners[0].id);
  EXPECT_FALSE(policy->allowsIp(*IpAddress::parse("10.50.0.1")));
  EXPECT_EQ(DataplaneBuilder::dnsHosts(parse(kConfig)), std::vector<std::string>{"media.example"});
}

TEST(DataplaneBuilder, ListenerIdsAreStableAcrossRebuilds) {
  DataplaneBuilder builder;
  auto first = builder.build(parse(kConfig), {});
  auto second = builder.build(parse(kConfig), {});
  ASSERT_TRUE(first && second);
  EXPECT_EQ((*first)->listeners[0].id, (*second)->listeners[0].id);
}

TEST(DataplaneBuilder, StaticAndNoneAuthModes) {
  DataplaneBuilder builder;
  auto s = builder.build(parse(R"(
version: v1
auth: {type: plaintext, credentials: {username: u, password: p}}
listeners: [{name: l, protocol: UDP, port: 3478}]
)"),
                         {});
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)->turn->auth_mode, turn::AuthMode::kStatic);
  EXPECT_EQ((*s)->turn->static_username, "u");
  EXPECT_EQ((*s)->turn->static_password, "p");
  // STUNner's default address: every address, relaying on the one the client reached.
  EXPECT_TRUE((*s)->listeners[0].bind.ip.isUnspecified());
  EXPECT_EQ((*s)->listeners[0].bind.port, 3478);
  EXPECT_TRUE((*s)->listeners[0].relay_ip.isUnspecified());
  EXPECT_TRUE((*s)->turn->listeners[0].peers.empty());  // no routes: no peers

  auto n = builder.build(parse("version: v1\nauth: {type: none}\n"), {});
  ASSERT_TRUE(n);
  EXPECT_EQ((*n)->turn->auth_mode, turn::AuthMode::kNone);
}

TEST(DataplaneBuilder, LimitsAreSharedAmongWorkers) {
  DataplaneBuilder builder(/*workers=*/4);
  auto dp = builder.build(parse(R"(
version: v1
admin: {name: t, limits: {max_allocations: 10, allocation_kbps: 800, listener_kbps: 8000,
                          auth_failures: 3, auth_failure_window: 60, nonce_lifetime: 90,
                          max_connections: 1000, idle_timeout: 15, handshake_timeout: 3}}
auth: {type: static, credentials: {username: u, password: p}}
)"),
                          {});
  ASSERT_TRUE(dp) << dp.error().message;
  const turn::ServerConfig& t = *(*dp)->turn;
  EXPECT_EQ(t.max_allocations, 3u);                    // 10 / 4, rounded up
  EXPECT_EQ(t.allocation_bytes_per_second, 100'000u);  // per allocation: not shared
  EXPECT_EQ(t.listener_bytes_per_second, 250'000u);    // 1 MB/s over 4 workers
  EXPECT_EQ(t.auth_failures_per_window, 3u);
  EXPECT_EQ(t.auth_failure_window_seconds, 60);
  EXPECT_EQ(t.lifetimes.nonce, turn::Seconds(90));
  EXPECT_EQ((*dp)->connections.max_connections, 250u);  // per worker
  EXPECT_EQ((*dp)->connections.idle_timeout, std::chrono::seconds(15));
  EXPECT_EQ((*dp)->connections.handshake_timeout, std::chrono::seconds(3));

  auto defaults = builder.build(parse(kConfig), {});
  ASSERT_TRUE(defaults);
  EXPECT_EQ((*defaults)->turn->max_allocations, 0u);
  EXPECT_EQ((*defaults)->turn->auth_failures_per_window, 20u);
  EXPECT_EQ((*defaults)->turn->lifetimes.nonce, turn::Seconds(600));
  EXPECT_EQ((*defaults)->connections, worker::ConnectionLimits{});  // 8192 per worker, 30 s, 10 s
}

TEST(DataplaneBuilder, SourceQuotaIsSharedAmongWorkersPerAllocationLimitsAreNot) {
  const char* config = R"(
version: v1
admin: {name: t, limits: {source_quota: 10, max_permissions: 16, max_channels: 8}}
auth: {type: static, credentials: {username: u, password: p}}
)";
  auto four = DataplaneBuilder(/*workers=*/4).build(parse(config), {});
  ASSERT_TRUE(four) << four.error().message;
  // A source's 5-tuples spread over the workers, each counting its own: 10 / 4, rounded up, so
  // the source holds at most 12 in all.
  EXPECT_EQ((*four)->turn->max_allocations_per_source, 3u);
  EXPECT_EQ((*four)->turn->max_permissions_per_allocation, 16u);  // an allocation: one worker
  EXPECT_EQ((*four)->turn->max_channels_per_allocation, 8u);

  auto one = DataplaneBuilder(/*workers=*/1).build(parse(config), {});
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ((*one)->turn->max_allocations_per_source, 10u);

  auto defaults = DataplaneBuilder(/*workers=*/4).build(parse(kConfig), {});
  ASSERT_TRUE(defaults) << defaults.error().message;
  EXPECT_EQ((*defaults)->turn->max_allocations_per_source, 0u);  // unlimited
  EXPECT_EQ((*defaults)->turn->max_permissions_per_allocation, 64u);
  EXPECT_EQ((*defaults)->turn->max_channels_per_allocation, 64u);
}

}  // namespace
}  // namespace kturn::daemon
