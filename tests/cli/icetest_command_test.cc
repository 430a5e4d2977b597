// kturnctl icetest's pieces that need no server: the RTT summary, the report in both forms, and
// the server URI and peer address parsing it shares with turncat. The probe itself runs against
// kturnd and coturn in tests/interop/kturnctl_test.py.
#include "cli/icetest_command.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/turn_target.h"

namespace kturn::cli {
namespace {

TEST(SummarizeRtts, NearestRankPercentilesAndMean) {
  std::vector<double> samples;
  for (int i = 100; i >= 1; --i) samples.push_back(i);  // 1..100, unsorted
  auto s = summarizeRtts(samples);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->min, 1);
  EXPECT_EQ(s->p50, 50);
  EXPECT_EQ(s->p90, 90);
  EXPECT_EQ(s->p99, 99);
  EXPECT_EQ(s->max, 100);
  EXPECT_DOUBLE_EQ(s->mean, 50.5);
}

TEST(SummarizeRtts, OneSampleIsEveryPercentileAndNoneIsNothing) {
  std::vector<double> one{0.25};
  auto s = summarizeRtts(one);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->min, 0.25);
  EXPECT_EQ(s->p99, 0.25);
  std::vector<double> none;
  EXPECT_FALSE(summarizeRtts(none));
}

IcetestReport sampleReport() {
  IcetestReport r;
  r.server = "turn:127.0.0.1:3478?transport=udp";
  r.transport = "udp";
  r.relayed = "127.0.0.1:50000";
  r.mapped = "127.0.0.1:40000";
  r.peer = "127.0.0.1:7";
  r.builtin_peer = true;
  r.mode = "channel";
  r.sent = 200;
  r.received = 199;
  std::vector<double> rtts{0.1, 0.2, 0.3};
  r.rtt = summarizeRtts(rtts);
  return r;
}

TEST(IcetestReport, JsonCarriesEveryField) {
  const auto j = toJson(sampleReport());
  EXPECT_EQ(j["transport"], "udp");
  EXPECT_EQ(j["relayedAddress"], "127.0.0.1:50000");
  EXPECT_EQ(j["packets"]["lost"], 1);
  EXPECT_DOUBLE_EQ(j["packets"]["lossPercent"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["rttMs"]["p50"].get<double>(), 0.2);
  EXPECT_FALSE(j.contains("security"));  // only for TLS and DTLS
}

TEST(IcetestReport, TextSaysLossAndPercentiles) {
  const std::string text = formatReport(sampleReport());
  EXPECT_NE(text.find("200 sent, 199 received, 1 lost (0.5%), 0 duplicates"), std::string::npos)
      << text;
  EXPECT_NE(text.find("p50 0.200"), std::string::npos) << text;
  EXPECT_NE(text.find("(built-in echo), channel"), std::string::npos) << text;
  IcetestReport nothing = sampleReport();
  nothing.received = 0;
  nothing.rtt.reset();
  EXPECT_NE(formatReport(nothing).find("nothing came back"), std::string::npos);
  EXPECT_TRUE(toJson(nothing)["rttMs"].is_null());
}

TEST(TurnTarget, Rfc7065AndStunnerUrisPickTheTransport) {
  struct Case {
    const char* uri;
    client::LinkTransport transport;
    uint16_t port;
    const char* shown;
  };
  const Case cases[] = {
      {"turn:127.0.0.1", client::LinkTransport::kUdp, 3478, "turn:127.0.0.1:3478?transport=udp"},
      {"turn:127.0.0.1:3479?transport=tcp", client::LinkTransport::kTcp, 3479,
       "turn:127.0.0.1:3479?transport=tcp"},
      {"turns:127.0.0.1?transport=tcp", client::LinkTransport::kTls, 443,
       "turns:127.0.0.1:443?transport=tcp"},
      {"turns:[::1]:5349?transport=udp", client::LinkTransport::kDtls, 5349,
       "turns:[::1]:5349?transport=udp"},
      {"turn://u:p@127.0.0.1:3478?transport=dtls", client::LinkTransport::kDtls, 3478,
       "turns:127.0.0.1:3478?transport=udp"},
  };
  for (const Case& c : cases) {
    auto t = resolveTurnTarget(c.uri, {});
    ASSERT_TRUE(t) << c.uri << ": " << t.error().message;
    EXPECT_EQ(t->transport, c.transport) << c.uri;
    EXPECT_EQ(t->address.port, c.port) << c.uri;
    EXPECT_EQ(t->uri, c.shown) << c.uri;
  }
}

TEST(TurnTarget, FlagsOverrideTheUrisUserInfo) {
  auto from_uri = resolveTurnTarget("turn://user%3A1:p%40ss@127.0.0.1", {});
  ASSERT_TRUE(from_uri);
  EXPECT_EQ(from_uri->username, "user:1");
  EXPECT_EQ(from_uri->password, "p@ss");
  auto from_flags = resolveTurnTarget("turn://a:b@127.0.0.1", {.user = "c", .password = "d"});
  ASSERT_TRUE(from_flags);
  EXPECT_EQ(from_flags->username, "c");
  EXPECT_EQ(from_flags->password, "d");
  EXPECT_EQ(from_flags->link.server_name, "127.0.0.1");
}

TEST(TurnTarget, BadUrisAreNamed) {
  auto bad = resolveTurnTarget("stun:127.0.0.1?transport=sctp", {});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("stun:"), std::string::npos) << bad.error().message;
}

TEST(UdpAddress, ParsesSchemesAndBrackets) {
  EXPECT_EQ(*resolveUdpAddress("udp://127.0.0.1:9"), *TransportAddress::parse("127.0.0.1:9"));
  EXPECT_EQ(*resolveUdpAddress("127.0.0.1:9"), *TransportAddress::parse("127.0.0.1:9"));
  EXPECT_EQ(*resolveUdpAddress("udp://[::1]:9"), *TransportAddress::parse("[::1]:9"));
  for (const char* bad : {"tcp://127.0.0.1:9", "udp://127.0.0.1", "udp://127.0.0.1:99999",
                          "udp://[::1]9", "udp://127.0.0.1:x"}) {
    EXPECT_FALSE(resolveUdpAddress(bad)) << bad;
  }
}

}  // namespace
}  // namespace kturn::cli
