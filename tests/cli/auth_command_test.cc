// `kturnctl auth`: credentials minted from a config file, a TURN URI and a real CdsServer, checked
// field by field and against the HMAC kturnd verifies with; the same request to an in-process
// kturn-auth (its handlers on the admin HTTP server) gives the same bytes; and the error paths.
#include "cli/auth_command.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "admin/admin_server.h"
#include "auth/auth_handlers.h"
#include "auth/config_holder.h"
#include "cds/cds_server.h"
#include "cli/exit_codes.h"
#include "cli/test_support.h"  // tests/cli
#include "config/parser.h"
#include "daemon/dataplane_builder.h"
#include "k8s/manifest.h"
#include "stun/integrity.h"
#include "turn/authenticator.h"

namespace kturn::cli {
namespace {

using nlohmann::json;
using testing::TempFile;

constexpr int64_t kNowUnix = 1'800'000'000;
const auto kNow = std::chrono::system_clock::time_point(std::chrono::seconds(kNowUnix));

const std::string kEphemeralConfig = R"(version: v1
admin: {name: media/gw}
auth: {type: ephemeral, realm: kturn.test, credentials: {secret: "t0p-s3cret"}}
listeners:
  - {name: media/gw/udp, protocol: TURN-UDP, address: 127.0.0.1, port: 3478, routes: [media/backend]}
  - {name: media/gw/tcp, protocol: TURN-TCP, public_address: 198.51.100.7, public_port: 443,
     address: 0.0.0.0, port: 3478, routes: [media/backend]}
  - {name: other/gw/udp, protocol: TURN-UDP, address: 127.0.0.2, port: 3478}
clusters:
  - {name: media/backend, type: STATIC, endpoints: [10.244.0.0/16]}
)";

config::StunnerConfig parsed(const std::string& text) {
  auto c = config::parseConfig(text);
  EXPECT_TRUE(c) << c.error().message;
  return c ? *c : config::StunnerConfig{};
}

class AuthCommandTest : public ::testing::Test {
 protected:
  AuthCommandTest() { ::unsetenv("STUNNER_CONFIG_ORIGIN"); }

  int run(AuthCommand command) {
    command.clock = [] { return kNow; };
    out_.str("");
    err_.str("");
    return runAuth(command, out_, err_);
  }
  json printed() const { return json::parse(out_.str()); }

  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(AuthCommandTest, TurnCredentialFromAFile) {
  TempFile file(kEphemeralConfig);
  ASSERT_EQ(run({.origin = file.path(), .username = "alice", .ttl = 600}), kExitOk) << err_.str();
  EXPECT_EQ(err_.str(), "");
  const json j = printed();
  EXPECT_EQ(j.size(), 4u) << j;
  EXPECT_EQ(j["username"], "1800000600:alice");
  EXPECT_EQ(j["password"], turn::restPassword("t0p-s3cret", "1800000600:alice"));
  EXPECT_EQ(j["ttl"], 600);
  EXPECT_EQ(j["uris"],
            json::array({"turn:127.0.0.1:3478?transport=udp", "turn:198.51.100.7:443?transport=tcp",
                         "turn:127.0.0.2:3478?transport=udp"}));
}

// The credential is one kturnd accepts: its own dataplane builder and authenticator derive the
// same long-term key from the username as the client derives from the printed password.
TEST_F(AuthCommandTest, CredentialVerifiesWithKturndsHmac) {
  TempFile file(kEphemeralConfig);
  ASSERT_EQ(run({.origin = "file://" + file.path(), .username = "bob", .ttl = 3600}), kExitOk)
      << err_.str();
  const std::string username = printed()["username"];
  const std::string password = printed()["password"];
  daemon::DataplaneBuilder builder;
  auto dataplane = builder.build(parsed(kEphemeralConfig), {});
  ASSERT_TRUE(dataplane) << dataplane.error().message;
  const turn::ServerConfig& server = *(*dataplane)->turn;

  const auto valid = turn::Authenticator::lookup(server, username, kNowUnix + 10);
  ASSERT_TRUE(valid.key);
  const auto client_key = stun::longTermKey(username, "kturn.test", password);
  EXPECT_TRUE(std::equal(valid.key->span().begin(), valid.key->span().end(),
                         client_key.span().begin(), client_key.span().end()));
  const auto forged = stun::longTermKey(username, "kturn.test", password + "x");
  EXPECT_FALSE(std::equal(valid.key->span().begin(), valid.key->span().end(), forged.span().begin(),
                          forged.span().end()));
  const auto expired = turn::Authenticator::lookup(server, username, kNowUnix + 3601);
  EXPECT_FALSE(expired.key);
  EXPECT_EQ(expired.failure, turn::AuthFailure::kExpired);
}

TEST_F(AuthCommandTest, IceConfigWithFilters) {
  TempFile file(kEphemeralConfig);
  ASSERT_EQ(run({.origin = file.path(),
                 .service = "ice",
                 .username = "carol",
                 .namespace_ = "media",
                 .gateway = "gw",
                 .listener = "udp",
                 .public_addr = "203.0.113.9",
                 .ice_transport_policy = "relay"}),
            kExitOk)
      << err_.str();
  const json j = printed();
  EXPECT_EQ(j["iceTransportPolicy"], "relay");
  ASSERT_EQ(j["iceServers"].size(), 1u);
  const json& s = j["iceServers"][0];
  EXPECT_EQ(s["urls"], json::array({"turn:203.0.113.9:3478?transport=udp"}));
  EXPECT_EQ(s["username"], "1800086400:carol");
  EXPECT_EQ(s["credential"], turn::restPassword("t0p-s3cret", "1800086400:carol"));
}

TEST_F(AuthCommandTest, YamlOutput) {
  TempFile file(kEphemeralConfig);
  ASSERT_EQ(run({.origin = file.path(), .username = "dave", .output = "yaml"}), kExitOk);
  auto docs = k8s::readYamlDocuments(out_.str());
  ASSERT_TRUE(docs) << out_.str();
  ASSERT_EQ(docs->size(), 1u);
  const auto& y = (*docs)[0];
  EXPECT_EQ(y["username"], "1800086400:dave");
  EXPECT_EQ(y["password"], turn::restPassword("t0p-s3cret", "1800086400:dave"));
  EXPECT_EQ(y["ttl"], 86400);
  EXPECT_EQ(y["uris"].size(), 3u);
}

TEST_F(AuthCommandTest, StaticCredentialFromATurnUri) {
  ASSERT_EQ(run({.origin = "turn://user1:pass1@127.0.0.1:3478?transport=udp", .ttl = 60}), kExitOk)
      << err_.str();
  const json j = printed();
  EXPECT_EQ(j["username"], "user1");
  EXPECT_EQ(j["password"], "pass1");
  EXPECT_EQ(j["uris"], json::array({"turn:127.0.0.1:3478?transport=udp"}));
}

TEST_F(AuthCommandTest, FromAConfigDiscoveryServer) {
  auto server = cds::CdsServer::start({.address = "127.0.0.1", .port = 0});
  ASSERT_TRUE(server) << server.error().message;
  ASSERT_TRUE((*server)->upsert("media/gw", parsed(kEphemeralConfig)));
  const std::string url = "http://127.0.0.1:" + std::to_string((*server)->port());
  ASSERT_EQ(run({.origin = url, .id = "media/gw", .username = "erin"}), kExitOk) << err_.str();
  EXPECT_EQ(printed()["password"], turn::restPassword("t0p-s3cret", "1800086400:erin"));
  // A bare host:port is a discovery server too, as for kturnd.
  ASSERT_EQ(run({.origin = url.substr(7), .id = "media/gw"}), kExitOk) << err_.str();

  EXPECT_EQ(run({.origin = url, .id = "media/nope"}), kExitFailure);
  EXPECT_NE(err_.str().find("404"), std::string::npos) << err_.str();
  EXPECT_EQ(run({.origin = url}), kExitUsage);
  EXPECT_NE(err_.str().find("needs --id <namespace>/<name>"), std::string::npos) << err_.str();
  EXPECT_EQ(run({.origin = url, .id = "gw"}), kExitUsage);
}

// An in-process kturn-auth: its handlers on kturnd's admin HTTP server, with the same clock.
class AuthServer {
 public:
  explicit AuthServer(config::StunnerConfig config, std::string token = "")
      : server_(admin::HttpEndpoint{.host = "127.0.0.1"}) {
    configs_.set(std::move(config));
    const auth::AuthHandlerOptions options{.bearer_token = std::move(token),
                                           .clock = [] { return kNow; }};
    server_.handle("/", auth::turnAuthHandler(configs_, options));
    server_.handle("/ice", auth::iceAuthHandler(configs_, options));
    auto started = server_.start();
    EXPECT_TRUE(started) << started.error().message;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }

 private:
  auth::ConfigHolder configs_;
  admin::AdminServer server_;
};

TEST_F(AuthCommandTest, AuthServerAnswersTheSameBytesAsLocalMinting) {
  TempFile file(kEphemeralConfig);
  AuthServer server(parsed(kEphemeralConfig));
  for (const std::string service : {"turn", "ice"}) {
    AuthCommand command{.service = service,
                        .username = "frank",
                        .ttl = 1200,
                        .namespace_ = "media",
                        .ice_transport_policy = "public"};
    command.origin = file.path();
    ASSERT_EQ(run(command), kExitOk) << err_.str();
    const std::string local = out_.str();
    command.origin.clear();
    command.auth_server = server.url();
    ASSERT_EQ(run(command), kExitOk) << err_.str();
    EXPECT_EQ(out_.str(), local) << service;
    EXPECT_EQ(err_.str(), "");
  }
  EXPECT_EQ(printed()["iceServers"][0]["username"], "1800001200:frank");
  EXPECT_EQ(printed()["iceServers"][0]["urls"].size(), 2u) << "only namespace media";
}

TEST_F(AuthCommandTest, AuthServerWithABearerToken) {
  AuthServer server(parsed(kEphemeralConfig), "let-me-in");
  EXPECT_EQ(run({.auth_server = server.url()}), kExitFailure);
  EXPECT_EQ(err_.str(), "kturnctl auth: GET http://127.0.0.1:" + server.url().substr(17) +
                            "/?service=turn&ttl=86400: HTTP 401: missing or invalid bearer "
                            "token\n");
  TempFile token("  let-me-in\n");
  ASSERT_EQ(run({.auth_server = server.url(), .token_file = token.path()}), kExitOk) << err_.str();
  EXPECT_EQ(printed()["username"], "1800086400:");
  EXPECT_EQ(run({.auth_server = server.url(), .token_file = "/nonexistent/token"}), kExitUsage);
}

TEST_F(AuthCommandTest, AuthServerErrors) {
  AuthServer server(parsed(kEphemeralConfig));
  EXPECT_EQ(run({.auth_server = server.url(), .namespace_ = "nowhere"}), kExitFailure);
  EXPECT_NE(err_.str().find("HTTP 404: no valid listener found"), std::string::npos) << err_.str();
  EXPECT_EQ(run({.auth_server = "ftp://x"}), kExitUsage);
  const std::string closed = [] {
    AuthServer gone(config::StunnerConfig{});
    return gone.url();
  }();
  EXPECT_EQ(run({.auth_server = closed}), kExitFailure);
  EXPECT_NE(err_.str().find("Connection refused"), std::string::npos) << err_.str();
}

TEST_F(AuthCommandTest, LocalErrorsSayWhy) {
  TempFile file(kEphemeralConfig);
  EXPECT_EQ(run({.origin = file.path(), .namespace_ = "nowhere"}), kExitFailure);
  EXPECT_EQ(err_.str(), "kturnctl auth: " + file.path() + ": no valid listener found\n");

  TempFile none(
      "version: v1\nauth: {type: none}\n"
      "listeners: [{name: l, protocol: TURN-UDP, address: 127.0.0.1, port: 3478}]\n");
  // Auth type none checks no credential: an empty one, as kturn-auth answers.
  EXPECT_EQ(run({.origin = none.path()}), 0) << err_.str();
  EXPECT_EQ(printed()["username"], "") << out_.str();
  EXPECT_EQ(printed()["password"], "") << out_.str();

  EXPECT_EQ(run({.origin = "/nonexistent/kturn.yaml"}), kExitFailure);
  EXPECT_EQ(err_.str(), "kturnctl auth: /nonexistent/kturn.yaml: cannot open config file\n");

  TempFile invalid("version: v1\nauth: {type: none}\nlisteners: [{name: l, port: 70000}]\n");
  EXPECT_EQ(run({.origin = invalid.path()}), kExitFailure);
  EXPECT_NE(err_.str().find("listeners[0].port"), std::string::npos) << err_.str();

  EXPECT_EQ(run({}), kExitUsage);
  EXPECT_NE(err_.str().find("give a config origin"), std::string::npos) << err_.str();
  EXPECT_EQ(out_.str(), "");
}

TEST(AuthQueryTest, SendsOnlyWhatWasAskedPercentEncoded) {
  EXPECT_EQ(authQuery({}), "service=turn&ttl=86400");
  EXPECT_EQ(authQuery({.service = "ice", .username = "a b&c", .ttl = 5, .public_addr = "::1"}),
            "service=turn&username=a%20b%26c&ttl=5&public-addr=%3A%3A1");
}

}  // namespace
}  // namespace kturn::cli
