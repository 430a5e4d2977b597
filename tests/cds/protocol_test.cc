// The pure parts of the CDS protocol: ids, origins, paths and routes, the list document, the
// zero config.
#include "cds/protocol.h"

#include <gtest/gtest.h>

#include "cds/origin.h"
#include "cds/server_routes.h"
#include "cds/test_support.h"  // tests/cds
#include "cds/url_util.h"
#include "config/parser.h"

namespace kturn::cds {
namespace {

TEST(ConfigIdTest, ParsesNamespaceSlashName) {
  auto id = parseConfigId("stunner/udp-gateway");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->namespace_, "stunner");
  EXPECT_EQ(id->name, "udp-gateway");
  EXPECT_EQ(id->toString(), "stunner/udp-gateway");
}

TEST(ConfigIdTest, RefusesMalformedIds) {
  for (const char* bad : {"", "nons", "/name", "ns/", "a/b/c", "/"}) {
    EXPECT_FALSE(parseConfigId(bad)) << bad;
  }
}

TEST(ConfigIdTest, PathsArePercentEncoded) {
  EXPECT_EQ(configPath({"stunner", "udp-gateway"}), "/api/v1/configs/stunner/udp-gateway");
  EXPECT_EQ(configPath({"a b", "c?d"}), "/api/v1/configs/a%20b/c%3Fd");
  EXPECT_EQ(namespacePath("default"), "/api/v1/configs/default");
}

TEST(OriginTest, SchemesAndDefaults) {
  auto http = parseOrigin("http://10.0.0.1:13478");
  ASSERT_TRUE(http);
  EXPECT_EQ(*http, (Origin{.tls = false, .host = "10.0.0.1", .port = 13478}));
  auto ws = parseOrigin("WS://cds.stunner-system.svc:13478/ignored?x=1");
  ASSERT_TRUE(ws);
  EXPECT_EQ(*ws, (Origin{.tls = false, .host = "cds.stunner-system.svc", .port = 13478}));
  auto wss = parseOrigin("wss://cds.example.com");
  ASSERT_TRUE(wss);
  EXPECT_EQ(*wss, (Origin{.tls = true, .host = "cds.example.com", .port = 443}));
  auto https = parseOrigin("https://[fd00::1]:8443");
  ASSERT_TRUE(https);
  EXPECT_EQ(*https, (Origin{.tls = true, .host = "fd00::1", .port = 8443}));
  EXPECT_EQ(https->hostPort(), "[fd00::1]:8443");
  // stunnerd's default origin ":13478" and a bare host:port are HTTP.
  auto bare = parseOrigin(":13478");
  ASSERT_TRUE(bare);
  EXPECT_EQ(*bare, (Origin{.tls = false, .host = "127.0.0.1", .port = 13478}));
  auto hostport = parseOrigin("10.0.0.7:1234");
  ASSERT_TRUE(hostport);
  EXPECT_EQ(hostport->toString(), "http://10.0.0.7:1234");
  auto noport = parseOrigin("http://cds");
  ASSERT_TRUE(noport);
  EXPECT_EQ(noport->port, 80);  // Go's URL default, as stunnerd
}

TEST(OriginTest, RefusesOtherSchemesAndBadPorts) {
  EXPECT_FALSE(parseOrigin("file:///etc/stunnerd.conf"));
  EXPECT_FALSE(parseOrigin("turn://user:pass@1.2.3.4:3478"));
  EXPECT_FALSE(parseOrigin("http://host:0"));
  EXPECT_FALSE(parseOrigin("http://host:99999"));
  EXPECT_FALSE(parseOrigin("http://host:x"));
  EXPECT_FALSE(parseOrigin("http://fd00::1:80"));
  EXPECT_TRUE(isCdsOrigin("HTTP://x"));
  EXPECT_TRUE(isCdsOrigin("wss://x"));
  EXPECT_FALSE(isCdsOrigin("file:///x"));
  EXPECT_FALSE(isCdsOrigin("turn://x"));
}

TEST(UrlUtilTest, QueryAndBooleans) {
  auto q = parseQuery("watch=true&node=node%2D1&node=second&x");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->at("watch"), "true");
  EXPECT_EQ(q->at("node"), "node-1");  // first value wins, as url.Values.Get
  EXPECT_EQ(q->at("x"), "");
  EXPECT_FALSE(parseQuery("a=%zz"));
  EXPECT_FALSE(parseQuery("a=%4"));
  for (const char* t : {"1", "t", "T", "TRUE", "true", "True"}) EXPECT_EQ(parseGoBool(t), true);
  for (const char* f : {"0", "f", "F", "FALSE", "false", "False"}) EXPECT_EQ(parseGoBool(f), false);
  EXPECT_EQ(parseGoBool("yes"), std::nullopt);
  EXPECT_EQ(percentDecode("a+b", true), "a b");
  EXPECT_EQ(percentDecode("a+b", false), "a+b");
}

TEST(RouteTest, StunnerPaths) {
  EXPECT_EQ(routeTarget("/api/v1/configs").kind, Route::Kind::kListAll);
  auto ns = routeTarget("/api/v1/configs/stunner?watch=true");
  EXPECT_EQ(ns.kind, Route::Kind::kListNamespace);
  EXPECT_EQ(ns.id.namespace_, "stunner");
  EXPECT_TRUE(ns.watch);
  auto one = routeTarget("/api/v1/configs/stunner/udp-gateway?watch=1&node=n%201");
  EXPECT_EQ(one.kind, Route::Kind::kConfig);
  EXPECT_EQ(one.id, (ConfigId{"stunner", "udp-gateway"}));
  EXPECT_TRUE(one.watch);
  EXPECT_EQ(one.node, "n 1");
  EXPECT_FALSE(routeTarget("/api/v1/configs/a/b?watch=false").watch);
  EXPECT_EQ(routeTarget("/api/v1/license").kind, Route::Kind::kLicense);
}

TEST(RouteTest, UnknownPathsAndBadQueries) {
  for (const char* bad :
       {"/", "/api", "/api/v1", "/api/v2/configs", "/api/v1/configs/", "/api/v1/configs/a/",
        "/api/v1/configs//b", "/api/v1/configs/a/b/c", "api/v1/configs"}) {
    EXPECT_EQ(routeTarget(bad).kind, Route::Kind::kNotFound) << bad;
  }
  EXPECT_EQ(routeTarget("/api/v1/configs?watch=maybe").kind, Route::Kind::kBadRequest);
  EXPECT_EQ(routeTarget("/api/v1/configs?a=%g1").kind, Route::Kind::kBadRequest);
}

TEST(ZeroConfigTest, IsStunnersDeleteMarker) {
  const config::StunnerConfig zero = zeroConfig("stunner/gw");
  EXPECT_EQ(zero.admin.name, "stunner/gw");
  EXPECT_EQ(zero.auth.type, "static");
  EXPECT_EQ(zero.auth.username(), "dummy-username");
  EXPECT_EQ(zero.auth.password(), "dummy-password");
  EXPECT_TRUE(zero.listeners.empty());
  EXPECT_TRUE(zero.clusters.empty());
  EXPECT_TRUE(isConfigDeleted(zero));
  EXPECT_FALSE(isConfigDeleted(testing::makeConfig("stunner/gw")));

  // What STUNner's server sends (json.Marshal of an unvalidated ZeroConfig) reads as deleted.
  auto wire = config::parseConfig(
      R"({"version":"v1","admin":{"name":"stunner/gw"},"auth":{"type":"static",)"
      R"("realm":"stunner.l7mp.io","credentials":{"password":"dummy-password",)"
      R"("username":"dummy-username"}},"listeners":[],"clusters":[]})");
  ASSERT_TRUE(wire) << wire.error().message;
  EXPECT_TRUE(isConfigDeleted(*wire));
}

TEST(ListJsonTest, RoundTrips) {
  const auto a = testing::makeConfig("ns/a", 3478);
  const auto b = testing::makeConfig("ns/b", 3479);
  const std::string json = toListJson({&a, &b});
  EXPECT_EQ(json.rfind(R"({"version":"v1","items":[{)", 0), 0u) << json;
  auto parsed = parseListJson(json);
  ASSERT_TRUE(parsed) << parsed.error().message;
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0], a);
  EXPECT_EQ((*parsed)[1], b);
  EXPECT_EQ(toListJson({}), "{\"version\":\"v1\",\"items\":[]}\n");
}

TEST(ListJsonTest, NamesTheBadItem) {
  auto parsed = parseListJson(
      R"({"version":"v1","items":[{"version":"v1","auth":{"type":"none"}},)"
      R"({"version":"v1","auth":{"type":"none"},"listeners":[{"name":"l","port":70000}]}]})");
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("items[1].listeners[0].port"), std::string::npos)
      << parsed.error().message;
  EXPECT_FALSE(parseListJson("[]"));
  EXPECT_FALSE(parseListJson("not json"));
}

TEST(ListJsonTest, IdsOnlyEvenOfItemsThatDoNotValidate) {
  const auto a = testing::makeConfig("ns/a", 3478);
  auto ids = parseListIds(toListJson({&a}));
  ASSERT_TRUE(ids) << ids.error().message;
  EXPECT_EQ(*ids, std::vector<std::string>{"ns/a"});
  ids = parseListIds(
      R"({"version":"v1","items":[{"admin":{"name":"ns/bad"},"listeners":[{"port":70000}]},)"
      R"({"version":"v1"}]})");
  ASSERT_TRUE(ids) << ids.error().message;
  EXPECT_EQ(*ids, (std::vector<std::string>{"ns/bad", "default-stunnerd"}));
  ids = parseListIds(R"({"version":"v1","items":null})");
  ASSERT_TRUE(ids);
  EXPECT_TRUE(ids->empty());
  EXPECT_FALSE(parseListIds(R"({"items":[1]})"));
  EXPECT_FALSE(parseListIds(R"({"items":{}})"));
  EXPECT_FALSE(parseListIds("not json"));
}

}  // namespace
}  // namespace kturn::cds
