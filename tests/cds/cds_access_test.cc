// CdsServer's access control (kturn's authenticated config discovery, cds/access.h) against
// CdsClient over loopback, with a scripted Authorizer standing in for the operator's (which is
// tested against the real API server in tests/operator/cds_authorizer_test.cc): 401 without a
// token, open configs, one config per token, the decision cache, watches closed at the token's
// expiry, TLS beside plain HTTP on one port, and floods that stay bounded.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "admin/test_http_client.h"  // tests/admin: a blocking HTTP client with bounded reads
#include "cds/cds_client.h"
#include "cds/cds_list_client.h"
#include "cds/cds_server.h"
#include "cds/test_support.h"  // tests/cds
#include "common/certificate.h"

namespace kturn::cds {
namespace {

using namespace std::chrono_literals;
using admin::testing::TestConnection;
using testing::eventually;
using testing::Inbox;
using testing::makeConfig;

// The tokens the scripted Authorizer knows:
//   "pod-a"    a dataplane pod of media/gw: get and watch media/gw only
//   "reader"   anything (kturn-auth's role)
//   "brief"    like pod-a, valid for one more second
//   "slow"     like reader, but the decision waits until release()
// Any other token is not valid.
class ScriptedAuthorizer {
 public:
  Decision operator()(const std::string& token, const AccessRequest& request) {
    ++calls;
    Decision d;
    if (token == "slow") {
      std::unique_lock lock(mutex_);
      cv_.wait_for(lock, 5s, [this] { return released_; });
    }
    if (token == "flaky") {  // the API server did not answer
      d.transient = true;
      d.reason = "TokenReview failed: connect: Connection refused";
      return d;
    }
    if (token == "reader" || token == "slow") {
      d.authenticated = d.allowed = true;
      d.who = "reader";
      return d;
    }
    if (token == "pod-a" || token == "brief") {
      d.authenticated = true;
      d.who = "pod media/gw-1";
      d.allowed = request.verb != AccessRequest::Verb::kList && request.namespace_ == "media" &&
                  request.name == "gw";
      if (!d.allowed) d.reason = "a pod of Gateway media/gw may read only that Gateway's config";
      if (token == "brief") d.expires = std::chrono::system_clock::now() + 1s;
      return d;
    }
    d.reason = "token not valid";
    return d;
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    cv_.notify_all();
  }
  std::atomic<int> calls{0};

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool released_ = false;
};

// A file holding `token`, removed with the object.
class TokenFile {
 public:
  explicit TokenFile(const std::string& token) {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("kturn-cds-token-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
    std::ofstream(path_) << token << "\n";
  }
  ~TokenFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

class CdsAccessTest : public ::testing::Test {
 protected:
  void start(CdsServerOptions options = {}) {
    options.address = "127.0.0.1";
    options.port = 0;
    if (!options.authorizer) options.authorizer = std::ref(authorizer_);
    auto server = CdsServer::start(std::move(options));
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(server).value();
    ASSERT_TRUE(server_->upsert("media/gw", makeConfig("media/gw", 3478)));
    ASSERT_TRUE(server_->upsert("media/other", makeConfig("media/other", 3479)));
    ASSERT_TRUE(server_->upsert("media/open", makeConfig("media/open", 3480)));
  }
  std::string origin(const char* scheme = "http") const {
    return std::string(scheme) + "://127.0.0.1:" + std::to_string(server_->port());
  }
  CdsClientOptions client(const std::string& id, const TokenFile* token,
                          const char* scheme = "http") const {
    return {.origin = origin(scheme),
            .id = id,
            .retry_period = 100ms,
            .request_timeout = 2000ms,
            .bearer_token_file = token != nullptr ? token->path() : ""};
  }
  // A raw GET with this Authorization header ("" for none): the status and headers as sent.
  std::optional<admin::testing::HttpReply> rawGet(const std::string& target,
                                                  const std::string& authorization = "") {
    TestConnection connection(server_->port());
    if (!connection.connected()) return std::nullopt;
    std::string request = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    if (!authorization.empty()) request += "Authorization: " + authorization + "\r\n";
    request += "Connection: close\r\n\r\n";
    if (!connection.send(request)) return std::nullopt;
    return connection.readReply();
  }

  ScriptedAuthorizer authorizer_;
  std::unique_ptr<CdsServer> server_;
};

TEST_F(CdsAccessTest, WithoutATokenARequestIs401WithABearerChallenge) {
  start();
  for (const std::string target : {"/api/v1/configs/media/gw", "/api/v1/configs/media",
                                   "/api/v1/configs", "/api/v1/configs/media/gw?watch=true"}) {
    auto reply = rawGet(target);
    ASSERT_TRUE(reply) << target;
    EXPECT_EQ(reply->status, 401) << target;
    EXPECT_EQ(reply->headers["www-authenticate"], R"(Bearer realm="kturn-cds")") << target;
    EXPECT_EQ(nlohmann::json::parse(reply->body)["code"], 401) << target;
    EXPECT_EQ(reply->body.find("s3cr3t"), std::string::npos) << target;
  }
  // A scheme other than Bearer is no token either; the license and unknown paths are as before.
  EXPECT_EQ(rawGet("/api/v1/configs/media/gw", "Basic cG9kLWE6")->status, 401);
  EXPECT_EQ(rawGet("/api/v1/license")->status, 200);
  EXPECT_EQ(rawGet("/api/v1/nothing")->status, 404);
  EXPECT_EQ(authorizer_.calls, 0);
  EXPECT_EQ(server_->accessStats().unauthenticated, 5u);
}

TEST_F(CdsAccessTest, AnOpenConfigIsServedWithoutATokenAndOnlyThatOne) {
  Inbox inbox;  // before the clients: their watcher threads deliver into it
  start();
  server_->setOpen({"media/open"});
  auto open = CdsClient::create(client("media/open", nullptr));
  ASSERT_TRUE(open);
  auto got = (*open)->get();
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->admin.name, "media/open");
  ASSERT_TRUE((*open)->watch({.on_config = [&](config::StunnerConfig c) { inbox.onConfig(c); }}));
  ASSERT_TRUE(inbox.waitConfigs(1));

  auto closed = CdsClient::create(client("media/gw", nullptr));
  ASSERT_TRUE(closed);
  auto refused = (*closed)->get();
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("401"), std::string::npos) << refused.error().message;
  // An open config does not open the lists that hold it.
  EXPECT_EQ(rawGet("/api/v1/configs/media")->status, 401);
  EXPECT_FALSE(listConfigs({.origin = origin()}));

  // Closed again: refused from now on, and the open watch gets no later config: it is closed
  // before the next one would be sent.
  server_->setOpen({});
  EXPECT_FALSE((*open)->get());
  EXPECT_GE(server_->accessStats().open, 2u);
  ASSERT_TRUE(server_->upsert("media/open", makeConfig("media/open", 4100)));
  EXPECT_TRUE(eventually([&] { return (*open)->stats().disconnects >= 1; }));
  EXPECT_FALSE(inbox.waitFor(
      [](const auto& configs, const auto&) {
        return !configs.empty() && configs.back().listeners[0].port == 4100;
      },
      500ms))
      << "a config pushed after the Gateway stopped being open reached the open watch";
}

TEST_F(CdsAccessTest, APodsTokenGetsAndWatchesItsGatewaysConfigOnly) {
  Inbox inbox;  // before the clients: their watcher threads deliver into it
  start();
  TokenFile token("pod-a");
  auto own = CdsClient::create(client("media/gw", &token));
  ASSERT_TRUE(own);
  auto got = (*own)->get();
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, makeConfig("media/gw", 3478));

  ASSERT_TRUE((*own)->watch({.on_config = [&](config::StunnerConfig c) { inbox.onConfig(c); },
                             .on_error = [&](const Error& e) { inbox.onError(e); }}));
  ASSERT_TRUE(inbox.waitConfigs(1));
  ASSERT_TRUE(server_->upsert("media/gw", makeConfig("media/gw", 4000)));
  ASSERT_TRUE(inbox.waitConfigs(2));
  EXPECT_EQ(inbox.configs()[1].listeners[0].port, 4000);

  auto other = CdsClient::create(client("media/other", &token));
  ASSERT_TRUE(other);
  auto refused = (*other)->get();
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("403"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("may read only"), std::string::npos);
  EXPECT_FALSE(listConfigs({.origin = origin(), .bearer_token_file = token.path()}));

  TokenFile bogus("forged");
  auto forged = CdsClient::create(client("media/gw", &bogus));
  ASSERT_TRUE(forged);
  auto unauthenticated = (*forged)->get();
  ASSERT_FALSE(unauthenticated);
  EXPECT_NE(unauthenticated.error().message.find("401"), std::string::npos);

  const AccessStats stats = server_->accessStats();
  EXPECT_GE(stats.allowed, 2u);
  EXPECT_EQ(stats.forbidden, 2u);
  EXPECT_EQ(stats.unauthenticated, 1u);
}

TEST_F(CdsAccessTest, AReaderListsAndWatchesEveryConfig) {
  start();
  TokenFile token("reader");
  auto all = listConfigs({.origin = origin(), .bearer_token_file = token.path()});
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->size(), 3u);
  auto watcher = CdsListClient::create(
      {.origin = origin(), .retry_period = 100ms, .bearer_token_file = token.path()});
  ASSERT_TRUE(watcher);
  std::mutex mutex;
  std::set<std::string> seen;
  auto watched = (*watcher)->watch({.on_config =
                                        [&](const std::string& id, config::StunnerConfig) {
                                          std::lock_guard lock(mutex);
                                          seen.insert(id);
                                        },
                                    .on_delete = [](const std::string&) {}});
  ASSERT_TRUE(watched) << watched.error().message;
  EXPECT_TRUE(eventually([&] {
    std::lock_guard lock(mutex);
    return seen.size() == 3;
  }));
}

TEST_F(CdsAccessTest, DecisionsAreKeptForTheCacheTimeThenAskedAgain) {
  start({.authorization_cache_ttl = 300ms});
  TokenFile token("pod-a");
  auto own = CdsClient::create(client("media/gw", &token));
  ASSERT_TRUE(own);
  ASSERT_TRUE((*own)->get());
  ASSERT_TRUE((*own)->get());
  EXPECT_EQ(authorizer_.calls, 1);
  std::this_thread::sleep_for(400ms);
  ASSERT_TRUE((*own)->get());
  EXPECT_EQ(authorizer_.calls, 2);
  EXPECT_EQ(server_->accessStats().reviews, 2u);
}

TEST_F(CdsAccessTest, AWatchEndsWhenItsTokenExpiresAndTheClientComesBack) {
  Inbox inbox;  // before the clients: their watcher threads deliver into it
  start({.authorization_cache_ttl = 100ms});
  TokenFile token("brief");  // valid for 1 s after each review
  auto own = CdsClient::create(client("media/gw", &token));
  ASSERT_TRUE(own);
  ASSERT_TRUE((*own)->watch({.on_config = [&](config::StunnerConfig c) { inbox.onConfig(c); },
                             .on_error = [&](const Error& e) { inbox.onError(e); }}));
  ASSERT_TRUE(inbox.waitConfigs(1));
  // Closed at the expiry; the client connects again and the new review grants another second.
  ASSERT_TRUE(eventually([&] { return server_->accessStats().watches_expired >= 1; }, 3s));
  ASSERT_TRUE(eventually([&] { return (*own)->stats().connects >= 2; }, 3s));
  ASSERT_TRUE(server_->upsert("media/gw", makeConfig("media/gw", 4001)));
  EXPECT_TRUE(inbox.waitFor(
      [](const auto& configs, const auto&) {
        return !configs.empty() && configs.back().listeners[0].port == 4001;
      },
      3s));
  EXPECT_GE(authorizer_.calls, 2);
}

TEST_F(CdsAccessTest, AWatchIsAuthorizedAgainAfterItsMaximumAge) {
  Inbox inbox;  // before the clients: their watcher threads deliver into it
  start({.authorization_cache_ttl = 50ms, .max_watch_age = 300ms});
  TokenFile token("pod-a");  // no expiry of its own
  auto own = CdsClient::create(client("media/gw", &token));
  ASSERT_TRUE(own);
  ASSERT_TRUE((*own)->watch({.on_config = [&](config::StunnerConfig c) { inbox.onConfig(c); }}));
  ASSERT_TRUE(inbox.waitConfigs(1));
  EXPECT_TRUE(eventually([&] { return (*own)->stats().connects >= 3; }, 3s));
  EXPECT_GE(authorizer_.calls, 3) << "each new session is authorized again";
  EXPECT_GE(server_->accessStats().watches_expired, 2u);
}

TEST_F(CdsAccessTest, AnUndecidableRequestIs503AndNotCached) {
  start();
  for (int i = 1; i <= 2; ++i) {
    auto reply = rawGet("/api/v1/configs/media/gw", "Bearer flaky");
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 503);
    EXPECT_NE(reply->body.find("TokenReview failed"), std::string::npos);
    EXPECT_EQ(authorizer_.calls, i) << "not kept in the cache";
  }
}

TEST_F(CdsAccessTest, TooManyDecisionsInFlightAre503) {
  start({.max_pending_reviews = 1});
  TokenFile slow("slow");
  std::thread first([&] {
    EXPECT_TRUE(listConfigs(
        {.origin = origin(), .request_timeout = 5000ms, .bearer_token_file = slow.path()}));
  });
  ASSERT_TRUE(eventually([&] { return authorizer_.calls == 1; }));
  auto busy = rawGet("/api/v1/configs/media/gw", "Bearer pod-a");
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->status, 503);
  authorizer_.release();
  first.join();
  EXPECT_EQ(rawGet("/api/v1/configs/media/gw", "Bearer pod-a")->status, 200);
  EXPECT_EQ(server_->accessStats().busy, 1u);
}

// A CA and a serving certificate for 127.0.0.1, as kturn-operator makes them.
struct TestPki {
  certificate::PemPair ca;
  certificate::PemPair leaf;
};
TestPki makePki() {
  auto ca = certificate::issue({.common_name = "test CA", .ca = true});
  EXPECT_TRUE(ca) << ca.error().message;
  auto leaf = certificate::issue({.common_name = "127.0.0.1", .hosts = {"127.0.0.1"}}, &*ca);
  EXPECT_TRUE(leaf) << leaf.error().message;
  return {*ca, *leaf};
}

TEST_F(CdsAccessTest, TlsAndPlainHttpShareThePortAndTokensNeedTls) {
  Inbox inbox;  // before the clients: their watcher threads deliver into it
  const TestPki pki = makePki();
  start({.tls_cert_pem = pki.leaf.cert_pem, .tls_key_pem = pki.leaf.key_pem});
  server_->setOpen({"media/open"});
  TokenFile token("pod-a");

  CdsClientOptions https = client("media/gw", &token, "https");
  https.tls_ca_pem = pki.ca.cert_pem;
  auto secure = CdsClient::create(https);
  ASSERT_TRUE(secure);
  auto got = (*secure)->get();
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_TRUE((*secure)->watch({.on_config = [&](config::StunnerConfig c) { inbox.onConfig(c); }}));
  ASSERT_TRUE(inbox.waitConfigs(1));

  // Another CA's client does not trust the server.
  CdsClientOptions strangers = https;
  strangers.tls_ca_pem = makePki().ca.cert_pem;
  EXPECT_FALSE((*CdsClient::create(strangers))->get());

  // The same token over plain HTTP: refused before it is looked at.
  const int calls = authorizer_.calls;
  auto plain = (*CdsClient::create(client("media/gw", &token)))->get();
  ASSERT_FALSE(plain);
  EXPECT_NE(plain.error().message.find("401"), std::string::npos) << plain.error().message;
  EXPECT_EQ(authorizer_.calls, calls);
  // An open config is still served over plain HTTP (stunnerd), and over https.
  EXPECT_TRUE((*CdsClient::create(client("media/open", nullptr)))->get());
  CdsClientOptions openHttps = client("media/open", nullptr, "https");
  openHttps.tls_ca_pem = pki.ca.cert_pem;
  EXPECT_TRUE((*CdsClient::create(openHttps))->get());

  // A renewed certificate serves new connections; the open watch keeps its connection.
  const TestPki renewed = makePki();
  ASSERT_TRUE(server_->setCertificate(renewed.leaf.cert_pem, renewed.leaf.key_pem));
  EXPECT_FALSE((*CdsClient::create(https))->get());
  CdsClientOptions renewedHttps = https;
  renewedHttps.tls_ca_pem = renewed.ca.cert_pem;
  EXPECT_TRUE((*CdsClient::create(renewedHttps))->get());
  ASSERT_TRUE(server_->upsert("media/gw", makeConfig("media/gw", 4002)));
  EXPECT_TRUE(inbox.waitConfigs(2));
  EXPECT_FALSE(server_->setCertificate("not a certificate", "not a key"));
}

TEST_F(CdsAccessTest, WithoutPlaintextOnlyTlsIsServed) {
  const TestPki pki = makePki();
  start({.tls_cert_pem = pki.leaf.cert_pem,
         .tls_key_pem = pki.leaf.key_pem,
         .allow_plaintext = false});
  server_->setOpen({"media/open"});
  auto plain = (*CdsClient::create(client("media/open", nullptr)))->get();
  ASSERT_FALSE(plain);
  EXPECT_EQ(plain.error().code, Error::Code::kIo);  // the connection is closed unanswered
  CdsClientOptions https = client("media/open", nullptr, "https");
  https.tls_ca_pem = pki.ca.cert_pem;
  EXPECT_TRUE((*CdsClient::create(https))->get());
}

TEST_F(CdsAccessTest, AFloodOfConnectionsAndOversizedFramesLeavesTheWatchUpdated) {
  Inbox inbox;  // before the clients: their watcher threads deliver into it
  start({.request_timeout = 1000ms, .max_connections_per_source = 16});
  server_->setOpen({"media/open"});
  TokenFile token("pod-a");
  auto own = CdsClient::create(client("media/gw", &token));
  ASSERT_TRUE(own);
  ASSERT_TRUE((*own)->watch({.on_config = [&](config::StunnerConfig c) { inbox.onConfig(c); }}));
  ASSERT_TRUE(inbox.waitConfigs(1));

  // 60 idle connections from the same address: the watch holds one slot, 15 more are taken and
  // the rest are closed at once.
  std::vector<std::unique_ptr<TestConnection>> idle;
  for (int i = 0; i < 60; ++i) idle.push_back(std::make_unique<TestConnection>(server_->port()));
  EXPECT_TRUE(eventually([&] { return server_->accessStats().connections_refused >= 45; }));
  // Oversized frames on open watches: each watch is closed, nothing is buffered.
  idle.clear();
  ASSERT_TRUE(eventually([&] { return server_->watcherCount() == 1; }));
  for (int i = 0; i < 5; ++i) {
    testing::WsTestClient ws(server_->port(), "/api/v1/configs/media/open?watch=true");
    ASSERT_TRUE(ws.ok());
    ASSERT_TRUE(ws.read());  // the open config
    EXPECT_TRUE(ws.closedAfterSending(std::string(1 << 20, 'x')));
  }
  // An oversized request header is refused as well.
  {
    TestConnection big(server_->port());
    ASSERT_TRUE(big.connected());
    big.send("GET /api/v1/configs/media/gw HTTP/1.1\r\nHost: x\r\nX-Big: " +
             std::string(64 << 10, 'a') + "\r\n\r\n");
    auto reply = big.readReply();
    EXPECT_TRUE(!reply || reply->status == 400 || reply->status == 431);
  }

  ASSERT_TRUE(server_->upsert("media/gw", makeConfig("media/gw", 4003)));
  ASSERT_TRUE(inbox.waitConfigs(2));
  EXPECT_EQ(inbox.configs().back().listeners[0].port, 4003);
  EXPECT_EQ((*own)->stats().connects, 1u);  // never disconnected
  // The slots are free again.
  EXPECT_EQ(rawGet("/api/v1/configs/media/gw", "Bearer pod-a")->status, 200);
}

}  // namespace
}  // namespace kturn::cds
