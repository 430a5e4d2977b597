#include "auth/auth_handlers.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "admin/admin_server.h"
#include "admin/test_http_client.h"
#include "config/parser.h"
#include "turn/authenticator.h"

namespace kturn::auth {
namespace {

using nlohmann::json;
const auto kNow = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));

config::StunnerConfig ephemeralConfig(const std::string& secret) {
  auto config = config::parseConfig(R"(
version: v1
admin: {name: media/gw}
auth: {type: ephemeral, credentials: {secret: )" +
                                    secret + R"(}}
listeners:
  - {name: media/gw/udp, protocol: TURN-UDP, address: 127.0.0.1, port: 3478}
  - {name: media/gw/tcp, protocol: TURN-TCP, address: 127.0.0.1, port: 3479}
)");
  EXPECT_TRUE(config) << config.error().message;
  return *config;
}

admin::Request get(std::string path, std::string query, std::string authorization = "") {
  return {.method = "GET",
          .target = path + "?" + query,
          .path = path,
          .query = std::move(query),
          .authorization = std::move(authorization)};
}

class AuthHandlersTest : public ::testing::Test {
 protected:
  AuthHandlersTest() { configs_.set(ephemeralConfig("s3cret")); }

  AuthHandlerOptions options(std::string token = "") {
    return {.bearer_token = std::move(token), .clock = [] { return kNow; }};
  }

  ConfigHolder configs_;
};

TEST_F(AuthHandlersTest, TurnRestApiResponse) {
  const auto handler = turnAuthHandler(configs_, options());
  const auto r = handler(get("/", "service=turn&username=alice&ttl=600"));
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(r.content_type, "application/json; charset=UTF-8");  // STUNner's, byte for byte
  const auto j = json::parse(r.body);
  EXPECT_EQ(j["username"], "1800000600:alice");
  EXPECT_EQ(j["password"], turn::restPassword("s3cret", "1800000600:alice"));
  EXPECT_EQ(j["ttl"], 600);
  EXPECT_EQ(j["uris"], json::array({"turn:127.0.0.1:3478?transport=udp",
                                    "turn:127.0.0.1:3479?transport=tcp"}));
}

TEST_F(AuthHandlersTest, DefaultTtlIsOneDay) {
  const auto r = turnAuthHandler(configs_, options())(get("/", "service=turn"));
  ASSERT_EQ(r.status, 200u);
  const auto j = json::parse(r.body);
  EXPECT_EQ(j["ttl"], 86400);
  EXPECT_EQ(j["username"], "1800086400:");
}

TEST_F(AuthHandlersTest, IceConfigResponse) {
  const auto handler = iceAuthHandler(configs_, options());
  const auto r = handler(get("/ice",
                             "service=turn&username=bob&namespace=media&gateway=gw&listener=udp"
                             "&iceTransportPolicy=relay&public-addr=198.51.100.1"));
  ASSERT_EQ(r.status, 200u) << r.body;
  const auto j = json::parse(r.body);
  EXPECT_EQ(j["iceTransportPolicy"], "relay");
  ASSERT_EQ(j["iceServers"].size(), 1u);
  const auto& server = j["iceServers"][0];
  EXPECT_EQ(server["urls"], json::array({"turn:198.51.100.1:3478?transport=udp"}));
  const std::string username = server["username"];
  EXPECT_EQ(username, "1800086400:bob");
  EXPECT_EQ(server["credential"], turn::restPassword("s3cret", username));
  EXPECT_EQ(json::parse(handler(get("/ice", "service=turn")).body)["iceTransportPolicy"], "all");
}

TEST_F(AuthHandlersTest, ErrorsAreJson) {
  const auto turn = turnAuthHandler(configs_, options());
  const auto ice = iceAuthHandler(configs_, options());
  for (const auto& r : {turn(get("/", "")), turn(get("/", "service=stun")),
                        ice(get("/ice", "service=foo")), turn(get("/", "service=turn&ttl=x"))}) {
    EXPECT_EQ(r.status, 400u);
    EXPECT_EQ(json::parse(r.body)["code"], 400);
  }
  EXPECT_EQ(json::parse(turn(get("/", "")).body)["message"], R"("service" must be "turn")");
  EXPECT_EQ(turn(get("/", "service=turn&namespace=other")).status, 404u);
  EXPECT_EQ(ice(get("/ice", "service=turn&namespace=other")).status, 404u);
  EXPECT_EQ(turn(get("/foo", "service=turn")).status, 404u);

  ConfigHolder empty;
  EXPECT_EQ(turnAuthHandler(empty, options())(get("/", "service=turn")).status, 500u);
}

// STUNner's order (stunner-auth-service internal/handler): a malformed query is 400, then no
// config at all is 500 before another service is 400; `/` without a service is 400 regardless
// (its router requires the parameter).
TEST_F(AuthHandlersTest, NoConfigComesBeforeTheServiceCheck) {
  ConfigHolder empty;
  const auto turn = turnAuthHandler(empty, options());
  const auto ice = iceAuthHandler(empty, options());
  EXPECT_EQ(ice(get("/ice", "")).status, 500u);
  EXPECT_EQ(ice(get("/ice", "service=stun")).status, 500u);
  EXPECT_EQ(turn(get("/", "service=stun")).status, 500u);
  EXPECT_EQ(turn(get("/", "")).status, 400u);
  EXPECT_EQ(turn(get("/", "service=")).status, 400u);
  EXPECT_EQ(ice(get("/ice", "service=turn&ttl=x")).status, 400u);
  EXPECT_EQ(turnAuthHandler(configs_, options())(get("/", "service=stun")).status, 400u);
  EXPECT_EQ(iceAuthHandler(configs_, options())(get("/ice", "")).status, 400u);
}

// A parameter of the API given twice is 400, as STUNner's parameter binding answers.
TEST_F(AuthHandlersTest, RepeatedParameterIsABadRequest) {
  const auto turn = turnAuthHandler(configs_, options());
  const auto ice = iceAuthHandler(configs_, options());
  for (const char* q : {"service=turn&service=turn", "service=turn&username=a&username=b",
                        "service=turn&ttl=60&ttl=60", "service=turn&namespace=a&namespace=b"}) {
    EXPECT_EQ(turn(get("/", q)).status, 400u) << q;
    EXPECT_EQ(ice(get("/ice", q)).status, 400u) << q;
  }
  const auto r = ice(get("/ice", "service=turn&iceTransportPolicy=all&iceTransportPolicy=relay"));
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(json::parse(r.body)["message"], "iceTransportPolicy: given more than once");
  // Not a parameter of /: ignored there, repeated or not, valid or not.
  EXPECT_EQ(turn(get("/", "service=turn&iceTransportPolicy=all&iceTransportPolicy=x")).status,
            200u);
  EXPECT_EQ(turn(get("/", "service=turn&iceTransportPolicy=bogus")).status, 200u);
  EXPECT_EQ(ice(get("/ice", "service=turn&iceTransportPolicy=bogus")).status, 400u);
  // Parameters of no one's API stay ignored.
  EXPECT_EQ(turn(get("/", "service=turn&x=1&x=2")).status, 200u);
}

// A username that is not UTF-8: signed as received, written with U+FFFD in its place (as Go's
// encoding/json does), not an exception (500).
TEST_F(AuthHandlersTest, UsernameThatIsNotUtf8) {
  const auto r = turnAuthHandler(configs_, options())(get("/", "service=turn&username=a%FF"));
  ASSERT_EQ(r.status, 200u) << r.body;
  const auto j = json::parse(r.body);
  EXPECT_EQ(j["username"], "1800086400:a\xEF\xBF\xBD");
  EXPECT_EQ(j["password"], turn::restPassword("s3cret", "1800086400:a\xFF"));
}

// Auth type none: 200 with empty credentials (stunner-auth-service answers so), not 500.
TEST_F(AuthHandlersTest, AuthTypeNoneIsAnEmptyCredential) {
  ConfigHolder none;
  auto config = ephemeralConfig("x");
  config.auth = {.type = "none"};
  none.set(config);
  const auto r = iceAuthHandler(none, options())(get("/ice", "service=turn"));
  ASSERT_EQ(r.status, 200u) << r.body;
  const json j = json::parse(r.body);
  ASSERT_EQ(j["iceServers"].size(), 1u);
  EXPECT_EQ(j["iceServers"][0]["username"], "");
  EXPECT_EQ(j["iceServers"][0]["credential"], "");
  const auto t = json::parse(turnAuthHandler(none, options())(get("/", "service=turn")).body);
  EXPECT_EQ(t["username"], "");
  EXPECT_EQ(t["password"], "");
}

// STUNNER_PUBLIC_ADDR (AuthHandlerOptions::public_address) names the host of every URI unless the
// request's public-addr does.
TEST_F(AuthHandlersTest, PublicAddressFromTheEnvironmentUnlessTheRequestNamesOne) {
  AuthHandlerOptions o = options();
  o.public_address = "203.0.113.9";
  const auto ice = iceAuthHandler(configs_, o);
  json j = json::parse(ice(get("/ice", "service=turn")).body);
  for (const json& url : j["iceServers"][0]["urls"]) {
    EXPECT_NE(url.get<std::string>().find("203.0.113.9"), std::string::npos) << url;
  }
  j = json::parse(ice(get("/ice", "service=turn&public-addr=198.51.100.4")).body);
  for (const json& url : j["iceServers"][0]["urls"]) {
    EXPECT_NE(url.get<std::string>().find("198.51.100.4"), std::string::npos) << url;
  }
  // An empty public-addr is none: the environment's address stays.
  j = json::parse(ice(get("/ice", "service=turn&public-addr=")).body);
  for (const json& url : j["iceServers"][0]["urls"]) {
    EXPECT_NE(url.get<std::string>().find("203.0.113.9"), std::string::npos) << url;
  }
  j = json::parse(
      iceAuthHandler(configs_, options())(get("/ice", "service=turn&public-addr=")).body);
  EXPECT_EQ(j["iceServers"][0]["urls"][0], "turn:127.0.0.1:3478?transport=udp");
}

TEST_F(AuthHandlersTest, BearerToken) {
  const auto handler = turnAuthHandler(configs_, options("t0ken"));
  EXPECT_EQ(handler(get("/", "service=turn")).status, 401u);
  EXPECT_EQ(handler(get("/", "service=turn", "Bearer wrong")).status, 401u);
  EXPECT_EQ(handler(get("/", "service=turn", "Basic t0ken")).status, 401u);
  EXPECT_EQ(handler(get("/", "service=turn", "Bearer t0ken")).status, 200u);
}

TEST_F(AuthHandlersTest, EachRequestUsesTheCurrentConfig) {
  const auto handler = turnAuthHandler(configs_, options());
  const auto before = json::parse(handler(get("/", "service=turn&username=u")).body);
  configs_.set(ephemeralConfig("rotated"));
  const auto after = json::parse(handler(get("/", "service=turn&username=u")).body);
  EXPECT_EQ(before["password"],
            turn::restPassword("s3cret", before["username"].get<std::string>()));
  EXPECT_EQ(after["password"], turn::restPassword("rotated", after["username"].get<std::string>()));
}

// Two gateways as the operator renders them, each with its own GatewayConfig: different secrets
// and realms, one of them with two listeners.
config::StunnerConfig gatewayConfig(const std::string& ns, const std::string& gw,
                                    const std::string& auth, const std::string& listeners) {
  auto config = config::parseConfig("version: v1\nadmin: {name: " + ns + "/" + gw +
                                    "}\nauth: " + auth + "\nlisteners:\n" + listeners);
  EXPECT_TRUE(config) << config.error().message;
  return *config;
}

class MultiGatewayTest : public ::testing::Test {
 protected:
  MultiGatewayTest() {
    configs_.upsert("media/gw",
                    gatewayConfig("media", "gw",
                                  "{type: ephemeral, realm: media.example.org, "
                                  "credentials: {secret: media-secret}}",
                                  "  - {name: media/gw/udp, protocol: TURN-UDP, address: "
                                  "127.0.0.1, port: 3478}\n"
                                  "  - {name: media/gw/tcp, protocol: TURN-TCP, address: "
                                  "127.0.0.1, port: 3479}\n"));
    configs_.upsert("team/edge",
                    gatewayConfig("team", "edge",
                                  "{type: ephemeral, realm: team.example.org, "
                                  "credentials: {secret: team-secret}}",
                                  "  - {name: team/edge/udp, protocol: TURN-UDP, address: "
                                  "127.0.0.2, port: 3478}\n"));
  }

  json ice(const std::string& query, unsigned want_status = 200) {
    const auto r = iceAuthHandler(configs_, options_)(get("/ice", query));
    EXPECT_EQ(r.status, want_status) << r.body;
    return json::parse(r.body);
  }
  // The secret a credential of `server` was minted with: one of the two gateways', or "".
  static std::string signedWith(const json& server) {
    const std::string username = server["username"];
    for (const char* secret : {"media-secret", "team-secret"}) {
      if (server["credential"] == turn::restPassword(secret, username)) return secret;
    }
    return "";
  }

  AuthHandlerOptions options_{.clock = [] { return kNow; }};
  ConfigHolder configs_;
};

TEST_F(MultiGatewayTest, IceHasOneEntryPerGatewayEachWithItsOwnCredential) {
  const json j = ice("service=turn&username=alice&ttl=600");
  ASSERT_EQ(j["iceServers"].size(), 2u) << j;
  const json& media = j["iceServers"][0];  // id order: media/gw, team/edge
  const json& team = j["iceServers"][1];
  EXPECT_EQ(media["urls"], json::array({"turn:127.0.0.1:3478?transport=udp",
                                        "turn:127.0.0.1:3479?transport=tcp"}));
  EXPECT_EQ(team["urls"], json::array({"turn:127.0.0.2:3478?transport=udp"}));
  EXPECT_EQ(media["username"], "1800000600:alice");
  EXPECT_EQ(team["username"], "1800000600:alice");
  EXPECT_EQ(signedWith(media), "media-secret");
  EXPECT_EQ(signedWith(team), "team-secret");
}

TEST_F(MultiGatewayTest, FiltersSelectAcrossGateways) {
  const auto urls = [&](const std::string& filter) {
    const json j = ice("service=turn&" + filter);
    std::vector<std::string> out;
    for (const auto& server : j["iceServers"]) {
      out.push_back(signedWith(server) + " " + server["urls"].dump());
    }
    return out;
  };
  EXPECT_EQ(urls("namespace=team"),
            std::vector<std::string>{R"(team-secret ["turn:127.0.0.2:3478?transport=udp"])"});
  EXPECT_EQ(urls("namespace=media&gateway=gw&listener=tcp"),
            std::vector<std::string>{R"(media-secret ["turn:127.0.0.1:3479?transport=tcp"])"});
  // As in STUNner: `gateway` counts only with `namespace`, `listener` only with both.
  EXPECT_EQ(urls("gateway=edge").size(), 2u);
  EXPECT_EQ(urls("namespace=media&listener=tcp"),
            std::vector<std::string>{R"(media-secret ["turn:127.0.0.1:3478?transport=udp",)"
                                     R"("turn:127.0.0.1:3479?transport=tcp"])"});
  // Nothing selected: 404, for both endpoints.
  EXPECT_EQ(ice("service=turn&namespace=media&gateway=edge", 404)["message"],
            "no valid listener found");
  EXPECT_EQ(ice("service=turn&namespace=nope", 404)["code"], 404);
  EXPECT_EQ(turnAuthHandler(configs_, options_)(get("/", "service=turn&namespace=nope")).status,
            404u);
}

TEST_F(MultiGatewayTest, TurnRestApiAnswersForTheFirstSelectedGateway) {
  const auto turn = turnAuthHandler(configs_, options_);
  auto j = json::parse(turn(get("/", "service=turn&username=u")).body);
  EXPECT_EQ(j["password"], turn::restPassword("media-secret", j["username"].get<std::string>()));
  EXPECT_EQ(j["uris"].size(), 2u);
  j = json::parse(turn(get("/", "service=turn&username=u&namespace=team")).body);
  EXPECT_EQ(j["password"], turn::restPassword("team-secret", j["username"].get<std::string>()));
  EXPECT_EQ(j["uris"], json::array({"turn:127.0.0.2:3478?transport=udp"}));
}

TEST_F(MultiGatewayTest, AGatewayThatCannotMintIsLeftOut) {
  // Ephemeral without a shared secret (validation would refuse it; built by hand): no
  // credential can be minted.
  auto broken =
      gatewayConfig("zz", "broken", "{type: ephemeral, credentials: {secret: s}}",
                    "  - {name: zz/broken/udp, protocol: TURN-UDP, address: 127.0.0.3}\n");
  broken.auth.credentials.clear();
  configs_.upsert("zz/broken", broken);
  EXPECT_EQ(ice("service=turn")["iceServers"].size(), 2u);
  // Selected alone, it has nothing to offer: 500 naming it.
  const json j = ice("service=turn&namespace=zz", 500);
  EXPECT_NE(j["message"].get<std::string>().find("zz/broken"), std::string::npos) << j;
}

TEST_F(MultiGatewayTest, RotationAndDeletionShowInTheNextRequest) {
  const auto before = ice("service=turn");
  configs_.upsert("team/edge",
                  gatewayConfig("team", "edge", "{type: ephemeral, credentials: {secret: rotated}}",
                                "  - {name: team/edge/udp, protocol: TURN-UDP, address: "
                                "127.0.0.2, port: 3478}\n"));
  const auto after = ice("service=turn")["iceServers"][1];
  EXPECT_EQ(after["credential"],
            turn::restPassword("rotated", after["username"].get<std::string>()));
  EXPECT_TRUE(configs_.remove("media/gw"));
  EXPECT_FALSE(configs_.remove("media/gw"));
  EXPECT_EQ(ice("service=turn")["iceServers"].size(), 1u);
  EXPECT_TRUE(configs_.remove("team/edge"));
  // Every gateway deleted: as before the first config arrived.
  EXPECT_EQ(ice("service=turn", 500)["message"], "no dataplane configuration available");
}

// Through the admin HTTP server, as kturn-auth serves it: the Authorization header reaches the
// handler, the Go routing rule sends /ice to its own handler.
TEST_F(AuthHandlersTest, ServedOverHttp) {
  admin::AdminServer server({.host = "127.0.0.1", .port = 0});
  server.handle("/", turnAuthHandler(configs_, options("t0ken")));
  server.handle("/ice", iceAuthHandler(configs_, options("t0ken")));
  ASSERT_TRUE(server.start());
  const auto unauthorized = admin::testing::httpGet(server.port(), "/?service=turn");
  ASSERT_TRUE(unauthorized);
  EXPECT_EQ(unauthorized->status, 401);

  admin::testing::TestConnection connection(server.port());
  ASSERT_TRUE(connection.connected());
  ASSERT_TRUE(connection.send(
      "GET /ice?service=turn HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken\r\n\r\n"));
  const auto reply = connection.readReply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(json::parse(reply->body)["iceServers"][0]["urls"].size(), 2u);
  server.stop();
}

// The probes: /live always; /ready names what it waits for, and needs no bearer token.
TEST(AuthProbesTest, ReadyNamesWhatItWaitsFor) {
  std::vector<std::string> reasons = {"no state read yet from https://cds:13478"};
  const admin::Handler ready = readyHandler([&reasons] { return reasons; });
  auto reply = ready(get("/ready", ""));
  EXPECT_EQ(reply.status, 503u);
  EXPECT_EQ(reply.body, "no state read yet from https://cds:13478\n");
  reasons.clear();
  reply = ready(get("/ready", ""));
  EXPECT_EQ(reply.status, 200u);
  EXPECT_EQ(reply.body, "ok\n");
  reasons = {"shutting down"};
  EXPECT_EQ(ready(get("/ready", "")).status, 503u);
  EXPECT_EQ(liveHandler()(get("/live", "")).status, 200u);
}

}  // namespace
}  // namespace kturn::auth
