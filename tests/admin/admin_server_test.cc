// AdminServer over real sockets on 127.0.0.1: routing, methods, keep-alive, limits, slow
// clients, bind errors and shutdown.
#include "admin/admin_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <string>

#include "admin/health_handlers.h"
#include "admin/health_state.h"
#include "admin/stunner_status.h"
#include "admin/test_http_client.h"

namespace kturn::admin {
namespace {

using std::chrono::milliseconds;
using testing::httpGet;
using testing::httpRequest;
using testing::TestConnection;

HttpEndpoint loopback() { return HttpEndpoint{.host = "127.0.0.1", .port = 0, .path = "/"}; }

class AdminServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.request_timeout = milliseconds(300);
    server_ = std::make_unique<AdminServer>(loopback(), options_);
    registerHealthRoutes(*server_, health_, [] {
      StatusDocument doc;
      doc.allocation_count = 3;
      doc.status = HealthStatus::kReady;
      doc.listeners.push_back(
          withStats({{"name", "udp"}}, TrafficStats{.rx = {.packets = 7}, .tx = {}}));
      return toJson(doc);
    });
    auto started = server_->start();
    ASSERT_TRUE(started) << started.error().message;
    ASSERT_NE(server_->port(), 0);
  }

  uint16_t port() const { return server_->port(); }

  AdminServer::Options options_;
  HealthState health_;
  std::unique_ptr<AdminServer> server_;
};

TEST_F(AdminServerTest, LiveAnswers200WithStunnerBody) {
  auto reply = httpGet(port(), "/live");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "{}\n");
  EXPECT_EQ(reply->headers["content-type"], "application/json; charset=utf-8");
}

TEST_F(AdminServerTest, ReadyFollowsHealthState) {
  auto reply = httpGet(port(), "/ready");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 503);
  EXPECT_EQ(reply->body, "{\"status\":503,\"message\":\"stunnerd not ready\"}\n");

  health_.setReady();
  reply = httpGet(port(), "/ready");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(nlohmann::json::parse(reply->body)["message"], "READY");

  health_.setTerminating();
  reply = httpGet(port(), "/ready");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 503);
}

TEST_F(AdminServerTest, ForceReadyKeepsReadyWhileTerminating) {
  health_.setForceReady(true);
  health_.setTerminating();
  auto reply = httpGet(port(), "/ready");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
}

TEST_F(AdminServerTest, StatusIsStunnerShapedJson) {
  auto reply = httpGet(port(), "/status");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->headers["content-type"], "application/json; charset=utf-8");
  const auto json = nlohmann::json::parse(reply->body);
  EXPECT_EQ(json["version"], "v1");
  EXPECT_EQ(json["allocationCount"], 3);
  EXPECT_EQ(json["status"], "READY");
  EXPECT_TRUE(json["admin"].is_object());
  EXPECT_TRUE(json["auth"].is_object());
  EXPECT_TRUE(json["clusters"].is_array());
  ASSERT_EQ(json["listeners"].size(), 1u);
  EXPECT_EQ(json["listeners"][0]["name"], "udp");
  EXPECT_EQ(json["listeners"][0]["stats"]["rx"]["pkts"], 7);
  EXPECT_EQ(json["listeners"][0]["stats"]["tx"]["bytes"], 0);
}

TEST_F(AdminServerTest, UnknownPathIs404AndQueryIsIgnoredForRouting) {
  auto reply = httpGet(port(), "/nope");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 404);
  reply = httpGet(port(), "/live?verbose=1");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
}

TEST_F(AdminServerTest, PostIs405WithAllow) {
  auto reply = httpRequest(port(), "POST", "/live");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 405);
  EXPECT_EQ(reply->headers["allow"], "GET, HEAD");
}

TEST_F(AdminServerTest, HeadHasLengthButNoBody) {
  TestConnection connection(port());
  ASSERT_TRUE(connection.send("HEAD /live HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto reply = connection.readReply(/*head=*/true);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->headers["content-length"], "3");
  EXPECT_TRUE(reply->body.empty());
  // No stray body bytes: the next response on the connection parses cleanly.
  ASSERT_TRUE(connection.send("GET /live HTTP/1.1\r\nHost: x\r\n\r\n"));
  reply = connection.readReply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "{}\n");
}

TEST_F(AdminServerTest, KeepAliveServesTwoRequestsOnOneConnection) {
  TestConnection connection(port());
  ASSERT_TRUE(connection.send("GET /live HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto first = connection.readReply();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  ASSERT_TRUE(connection.send("GET /ready HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto second = connection.readReply();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 503);
}

TEST_F(AdminServerTest, PipelinedRequestsAreAnsweredInOrder) {
  TestConnection connection(port());
  ASSERT_TRUE(connection.send(
      "GET /live HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto first = connection.readReply();
  auto second = connection.readReply();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(second->status, 404);
}

TEST_F(AdminServerTest, OversizedHeaderIsRejected) {
  TestConnection connection(port());
  const std::string big(10 * 1024, 'a');
  ASSERT_TRUE(connection.send("GET /live HTTP/1.1\r\nHost: x\r\nX-Big: " + big + "\r\n\r\n"));
  auto reply = connection.readReply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 431);
  EXPECT_TRUE(connection.waitClosed());
  // The server is still fine.
  auto after = httpGet(port(), "/live");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

TEST_F(AdminServerTest, GarbageIsBadRequest) {
  TestConnection connection(port());
  ASSERT_TRUE(connection.send("HELLO\r\n\r\n"));
  auto reply = connection.readReply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 400);
  EXPECT_TRUE(connection.waitClosed());
}

TEST_F(AdminServerTest, SlowClientDoesNotBlockOthersAndIsDropped) {
  TestConnection slow(port());
  ASSERT_TRUE(slow.connected());
  ASSERT_TRUE(slow.send("GET /live HTTP/1.1\r\nHost: x\r\n"));  // never finished

  const auto before = std::chrono::steady_clock::now();
  auto reply = httpGet(port(), "/live");
  const auto took = std::chrono::steady_clock::now() - before;
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_LT(took, milliseconds(1000));

  // Trickling more bytes does not extend the 300 ms request deadline.
  ASSERT_TRUE(slow.send("X-A: 1\r\n"));
  EXPECT_TRUE(slow.waitClosed());
  EXPECT_LT(std::chrono::steady_clock::now() - before, milliseconds(2000));
}

TEST_F(AdminServerTest, IdleKeepAliveConnectionIsClosedAfterTimeout) {
  TestConnection connection(port());
  ASSERT_TRUE(connection.send("GET /live HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_TRUE(connection.readReply());
  EXPECT_TRUE(connection.waitClosed());
}

TEST_F(AdminServerTest, StopReturnsPromptlyWithClientsConnected) {
  TestConnection idle(port());
  TestConnection half(port());
  ASSERT_TRUE(idle.connected() && half.connected());
  ASSERT_TRUE(half.send("GET /li"));
  const auto before = std::chrono::steady_clock::now();
  server_->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, milliseconds(200));
  EXPECT_FALSE(server_->running());
  EXPECT_EQ(server_->port(), 0);
  EXPECT_TRUE(half.waitClosed());
  EXPECT_TRUE(idle.waitClosed());
}

TEST_F(AdminServerTest, RestartsAfterStop) {
  server_->stop();
  ASSERT_TRUE(server_->start());
  auto reply = httpGet(port(), "/live");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
}

TEST(AdminServerBindTest, PortInUseIsReportedWithTheAddress) {
  AdminServer first(loopback());
  first.handle("/live", liveHandler());
  ASSERT_TRUE(first.start());

  AdminServer second(HttpEndpoint{.host = "127.0.0.1", .port = first.port(), .path = "/"});
  auto started = second.start();
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().code, Error::Code::kIo);
  const std::string expected = "http://127.0.0.1:" + std::to_string(first.port());
  EXPECT_NE(started.error().message.find(expected), std::string::npos) << started.error().message;
  EXPECT_NE(started.error().message.find("in use"), std::string::npos) << started.error().message;
  EXPECT_FALSE(second.running());
}

TEST(AdminServerBindTest, TwoServersRunSideBySide) {
  AdminServer health(loopback());
  AdminServer metrics(loopback());
  health.handle("/live", liveHandler());
  metrics.handle("/metrics", [](const Request&) { return Response{.body = "m\n"}; });
  ASSERT_TRUE(health.start());
  ASSERT_TRUE(metrics.start());
  EXPECT_EQ(httpGet(health.port(), "/live")->status, 200);
  EXPECT_EQ(httpGet(metrics.port(), "/metrics")->body, "m\n");
  EXPECT_EQ(httpGet(metrics.port(), "/live")->status, 404);
}

TEST(AdminServerBindTest, HandlerExceptionIs500) {
  AdminServer server(loopback());
  server.handle("/boom", [](const Request&) -> Response { throw std::runtime_error("kaput"); });
  ASSERT_TRUE(server.start());
  auto reply = httpGet(server.port(), "/boom");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 500);
}

TEST(AdminServerBindTest, StatusProviderFailureIsStunnerStyle500) {
  AdminServer server(loopback());
  server.handle("/status", statusHandler([]() -> nlohmann::json {
                  throw std::runtime_error("no config yet");
                }));
  ASSERT_TRUE(server.start());
  auto reply = httpGet(server.port(), "/status");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 500);
  EXPECT_EQ(nlohmann::json::parse(reply->body)["message"], "no config yet");
}

TEST(AdminServerBindTest, ConnectionsOverTheCapAreRefused) {
  AdminServer::Options options;
  options.max_connections = 1;
  AdminServer server(loopback(), options);
  server.handle("/live", liveHandler());
  ASSERT_TRUE(server.start());
  TestConnection holder(server.port());
  ASSERT_TRUE(holder.send("GET /live HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_TRUE(holder.readReply());  // the session is surely accepted and counted now
  TestConnection extra(server.port());
  EXPECT_TRUE(extra.waitClosed());
}

}  // namespace
}  // namespace kturn::admin
