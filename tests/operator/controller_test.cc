// The operator's control loop against the real kube-apiserver of the test control plane and a
// real CdsServer on 127.0.0.1: rendered configs served, owned objects applied once (and accepted
// by the API server's validation), statuses written back, endpoint changes pushed; and the pieces
// (transition times, config validation before publishing) on their own.
#include "operator/controller.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "k8s/api_client.h"
#include "k8s/rest_config.h"
#include "operator/config_publisher.h"
#include "operator/status_writer.h"
#include "support/control_plane.h"

namespace kturn::op {
namespace {

using namespace std::chrono_literals;
using k8s::Json;

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 15s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return done();
}

std::string seedManifests() {
  return (std::filesystem::path(__FILE__).parent_path().parent_path() / "golden" / "seed000" /
          "input")
      .string();
}

TEST(KeepTransitionTimes, OnlyAConditionWhoseStatusChangedGetsTheNewTime) {
  const Json current = Json::parse(R"({
    "conditions": [{"type": "Accepted", "status": "True", "lastTransitionTime": "old"},
                   {"type": "Programmed", "status": "False", "lastTransitionTime": "old"}],
    "listeners": [{"name": "udp", "conditions": [
        {"type": "Accepted", "status": "True", "lastTransitionTime": "old"}]}],
    "parents": [{"parentRef": {"name": "gw"}, "conditions": [
        {"type": "ResolvedRefs", "status": "True", "lastTransitionTime": "old"}]}]})");
  const Json rendered = Json::parse(R"({
    "conditions": [{"type": "Accepted", "status": "True", "lastTransitionTime": "new"},
                   {"type": "Programmed", "status": "True", "lastTransitionTime": "new"}],
    "listeners": [{"name": "udp", "conditions": [
                      {"type": "Accepted", "status": "True", "lastTransitionTime": "new"}]},
                  {"name": "tcp", "conditions": [
                      {"type": "Accepted", "status": "True", "lastTransitionTime": "new"}]}],
    "parents": [{"parentRef": {"name": "gw"}, "conditions": [
        {"type": "ResolvedRefs", "status": "True", "lastTransitionTime": "new"}]}]})");
  const Json out = keepTransitionTimes(rendered, current);
  EXPECT_EQ(out["conditions"][0]["lastTransitionTime"], "old");
  EXPECT_EQ(out["conditions"][1]["lastTransitionTime"], "new");  // False -> True
  EXPECT_EQ(out["listeners"][0]["conditions"][0]["lastTransitionTime"], "old");
  EXPECT_EQ(out["listeners"][1]["conditions"][0]["lastTransitionTime"], "new");  // new listener
  EXPECT_EQ(out["parents"][0]["conditions"][0]["lastTransitionTime"], "old");
}

config::StunnerConfig configWithEndpoint(const std::string& endpoint) {
  return config::StunnerConfig{
      .version = "v1",
      .auth = {.type = "static", .credentials = {{"username", "u"}, {"password", "p"}}},
      .listeners = {{.name = "udp", .address = "$STUNNER_ADDR", .routes = {"r"}}},
      .clusters = {{.name = "r", .endpoints = {endpoint}}},
  };
}

constexpr int64_t kNow = 1'800'000'000;

TEST(ConfigPublisher, AnInvalidConfigNeverReachesTheDataplane) {
  auto cds = cds::CdsServer::start({.address = "127.0.0.1", .port = 0});
  ASSERT_TRUE(cds) << cds.error().message;
  ConfigPublisher publisher(**cds);
  std::vector<GatewayOutput> out(2);
  out[0].gateway = {"ns", "a"};
  out[0].config = configWithEndpoint("10.0.0.1");
  out[1].gateway = {"ns", "b"};
  out[1].config = configWithEndpoint("10.0.0.2");
  auto first = publisher.publish(out, kNow);
  EXPECT_EQ(first.served, 2);
  EXPECT_EQ(first.rejected, 0);
  EXPECT_EQ((*cds)->get("ns/a")->listeners[0].address, "$STUNNER_ADDR");  // served as written

  out[0].config = configWithEndpoint("10.0.0.300");  // invalid: a keeps its previous config
  out[1].config = configWithEndpoint("10.0.0.3");    // b is unaffected
  auto second = publisher.publish(out, kNow);
  EXPECT_EQ(second.rejected, 1);
  ASSERT_EQ(second.problems.size(), 1u);
  EXPECT_NE(second.problems[0].find("Gateway ns/a"), std::string::npos) << second.problems[0];
  EXPECT_EQ((*cds)->get("ns/a")->clusters[0].endpoints, std::vector<std::string>{"10.0.0.1"});
  EXPECT_EQ((*cds)->get("ns/b")->clusters[0].endpoints, std::vector<std::string>{"10.0.0.3"});

  out.erase(out.begin() + 1);  // Gateway b gone: its config is removed
  (void)publisher.publish(out, kNow);
  EXPECT_FALSE((*cds)->get("ns/b"));
}

TEST(ConfigPublisher, ChangesTouchOnlyTheGatewaysNamed) {
  auto cds = cds::CdsServer::start({.address = "127.0.0.1", .port = 0});
  ASSERT_TRUE(cds) << cds.error().message;
  ConfigPublisher publisher(**cds);
  std::vector<GatewayOutput> out(2);
  out[0].gateway = {"ns", "a"};
  out[0].config = configWithEndpoint("10.0.0.1");
  out[1].gateway = {"ns", "b"};
  out[1].config = configWithEndpoint("10.0.0.2");
  (void)publisher.publish(out, kNow);

  GatewayOutput a = out[0];
  a.config = configWithEndpoint("10.0.0.300");  // invalid: a keeps its config
  auto rejected = publisher.publishChanges({a}, {}, kNow);
  EXPECT_EQ(rejected.rejected, 1);
  EXPECT_EQ((*cds)->get("ns/a")->clusters[0].endpoints, std::vector<std::string>{"10.0.0.1"});

  a.config = configWithEndpoint("10.0.0.9");
  auto changed = publisher.publishChanges({a}, {}, kNow);
  EXPECT_EQ(changed.served, 2);
  EXPECT_EQ((*cds)->get("ns/a")->clusters[0].endpoints, std::vector<std::string>{"10.0.0.9"});
  EXPECT_EQ((*cds)->get("ns/b")->clusters[0].endpoints, std::vector<std::string>{"10.0.0.2"});

  a.config.reset();  // no longer accepted: its config goes
  (void)publisher.publishChanges({a}, {{"ns", "b"}}, kNow);
  EXPECT_FALSE((*cds)->get("ns/a"));
  EXPECT_FALSE((*cds)->get("ns/b"));
}

config::StunnerConfig ephemeral(const std::string& secret) {
  config::StunnerConfig c = configWithEndpoint("10.0.0.1");
  c.auth = {.type = "ephemeral", .credentials = {{"secret", secret}}};
  return c;
}

// Secret rotation on an operator-managed Gateway: the replaced secret keeps validating for the
// Gateway's credential lifetime, so credentials minted just before the change still work.
TEST(ConfigPublisher, AChangedSecretKeepsThePreviousOneForTheCredentialLifetime) {
  auto cds = cds::CdsServer::start({.address = "127.0.0.1", .port = 0});
  ASSERT_TRUE(cds) << cds.error().message;
  ConfigPublisher publisher(**cds);
  std::vector<GatewayOutput> out(1);
  out[0].gateway = {"ns", "a"};
  out[0].credential_lifetime = std::chrono::seconds(3600);
  out[0].config = ephemeral("old");
  (void)publisher.publish(out, kNow);
  EXPECT_FALSE((*cds)->get("ns/a")->auth.previousSecret()) << "nothing was replaced yet";

  out[0].config = ephemeral("new");
  (void)publisher.publish(out, kNow + 10);
  config::Auth served = (*cds)->get("ns/a")->auth;
  EXPECT_EQ(served.secret(), "new");
  EXPECT_EQ(served.previousSecret(), "old");
  EXPECT_EQ(served.previousSecretExpiry(), kNow + 10 + 3600);

  // Renders in between (an endpoint moved) carry it on, with the same expiry.
  out[0].config->clusters[0].endpoints = {"10.0.0.2"};
  (void)publisher.publish(out, kNow + 600);
  served = (*cds)->get("ns/a")->auth;
  EXPECT_EQ(served.previousSecret(), "old");
  EXPECT_EQ(served.previousSecretExpiry(), kNow + 10 + 3600);

  // Past the expiry it is dropped.
  (void)publisher.publish(out, kNow + 10 + 3600);
  EXPECT_FALSE((*cds)->get("ns/a")->auth.previousSecret());
}

TEST(ConfigPublisher, OnlyEphemeralSecretsOverlap) {
  auto cds = cds::CdsServer::start({.address = "127.0.0.1", .port = 0});
  ASSERT_TRUE(cds) << cds.error().message;
  ConfigPublisher publisher(**cds);
  std::vector<GatewayOutput> out(1);
  out[0].gateway = {"ns", "a"};
  out[0].config = configWithEndpoint("10.0.0.1");  // static u/p
  (void)publisher.publish(out, kNow);
  out[0].config->auth.credentials["password"] = "p2";
  (void)publisher.publish(out, kNow + 1);
  EXPECT_FALSE((*cds)->get("ns/a")->auth.previousSecret());
  // From static to ephemeral: there was no secret to keep.
  out[0].config = ephemeral("s");
  (void)publisher.publish(out, kNow + 2);
  EXPECT_FALSE((*cds)->get("ns/a")->auth.previousSecret());
  // The default lifetime is a day.
  out[0].config = ephemeral("s2");
  (void)publisher.publish(out, kNow + 3);
  EXPECT_EQ((*cds)->get("ns/a")->auth.previousSecretExpiry(), kNow + 3 + 86400);
}

class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(scope_.ready());
    ASSERT_TRUE(scope_.apply(seedManifests()));
    client_ = scope_.serviceAccountClient("kturn-operator");
    ASSERT_TRUE(client_);
    auto cds = cds::CdsServer::start({.address = "127.0.0.1", .port = 0});
    ASSERT_TRUE(cds) << cds.error().message;
    cds_ = std::move(cds).value();
    auto service =
        scope_.admin().get(k8s::resources::service(), scope_.ns("media"), "media-server");
    ASSERT_TRUE(service && service->ok());
    clusterIp_ = service->body["spec"]["clusterIP"];
  }

  // The operator's own GatewayClass and namespaces; watches the server ends every second, and a
  // resync every half second, so that "settled" is tested against both.
  ControllerOptions options() {
    ControllerOptions o;
    o.render.controllerName = scope_.controllerName();
    o.resync = 500ms;
    o.informer.watchTimeout = 1s;
    return o;
  }
  std::string gateway() { return scope_.ns("media") + "/media-server-gateway"; }
  std::vector<std::string> endpoints() const {
    auto config = cds_->get(gatewayId_);
    return config && !config->clusters.empty() ? config->clusters[0].endpoints
                                               : std::vector<std::string>{};
  }
  // What the operator wrote, from the API server's audit log.
  int patches(const std::string& resource, const std::string& subresource = "") {
    return kturn::testing::auditCount(operator_, "patch", resource, subresource);
  }
  int statusWrites() {
    int n = 0;
    for (const char* r : {"gatewayclasses", "gateways", "udproutes"}) n += patches(r, "status");
    return n;
  }
  int writes() {
    int n = 0;
    for (const Json& e : kturn::testing::auditEvents(operator_)) {
      const std::string verb = e.value("verb", "");
      n += verb == "create" || verb == "update" || verb == "patch" || verb == "delete";
    }
    return n;
  }

  kturn::testing::ClusterScope scope_;
  const std::string operator_ = scope_.serviceAccountUser("kturn-operator");
  const std::string gatewayId_ = gateway();
  std::unique_ptr<k8s::ApiClient> client_;
  std::unique_ptr<cds::CdsServer> cds_;
  std::string clusterIp_;
};

TEST_F(ControllerTest, RendersAppliesWritesStatusAndFollowsEndpoints) {
  Controller controller(*client_, *cds_, options());
  controller.setLeading(true);
  controller.start();
  ASSERT_TRUE(eventually([&] { return !endpoints().empty(); }));
  EXPECT_EQ(endpoints(), (std::vector<std::string>{"10.244.1.17", "10.244.2.9", clusterIp_}));
  const std::string ns = scope_.ns("media");
  ASSERT_TRUE(eventually([&] {
    auto d = scope_.admin().get(k8s::resources::deployment(), ns, "media-server-gateway");
    return d && d->status == 200;
  }));
  ASSERT_TRUE(eventually([&] {
    auto s = scope_.admin().get(k8s::resources::service(), ns, "media-server-gateway");
    return s && s->status == 200;
  })) << "the Service the operator applied";
  ASSERT_TRUE(eventually([&] {
    auto gw = scope_.admin().get(k8s::resources::gateway(), ns, "media-server-gateway");
    if (!gw || !gw->ok()) return false;
    for (const Json& c : gw->body["status"].value("conditions", Json::array())) {
      if (c["type"] == "Accepted") return c["status"] == "True";
    }
    return false;
  }));
  // GatewayClass, Gateway, UDPRoute.
  ASSERT_TRUE(eventually([&] { return controller.stats().statusesWritten >= 3; }));
  std::this_thread::sleep_for(500ms);
  const int deploymentApplies = patches("deployments");
  const int written = statusWrites();
  EXPECT_EQ(deploymentApplies, 1);
  EXPECT_GE(written, 3);
  EXPECT_EQ(controller.stats().configsRejected, 0u);
  // Settled: further renders (our own status writes come back as watch events, the watches the
  // server ends, the resyncs) write nothing.
  std::this_thread::sleep_for(2500ms);
  EXPECT_EQ(statusWrites(), written);
  EXPECT_EQ(patches("deployments"), deploymentApplies);

  // An endpoint change: new config on CDS, nothing else written.
  auto slice = scope_.admin().get(k8s::resources::endpointSlice(), ns, "media-server-x7k2p");
  ASSERT_TRUE(slice && slice->ok());
  Json updated = slice->body;
  updated["endpoints"] = Json::array({{{"addresses", {"10.244.3.3"}}}});
  auto put = scope_.admin().update(k8s::resources::endpointSlice(), updated);
  ASSERT_TRUE(put && put->ok()) << (put ? put->describe() : put.error().message);
  ASSERT_TRUE(eventually([&] {
    return endpoints() == std::vector<std::string>{"10.244.3.3", clusterIp_};
  }));
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(patches("deployments"), deploymentApplies);
  EXPECT_EQ(statusWrites(), written);
  controller.stop();
}

TEST_F(ControllerTest, AFollowerServesCdsButWritesNothing) {
  Controller controller(*client_, *cds_, options());
  controller.setLeading(false);
  controller.start();
  ASSERT_TRUE(eventually([&] { return !endpoints().empty(); }));
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(writes(), 0);
  controller.setLeading(true);  // gains leadership: applies and writes
  ASSERT_TRUE(eventually([&] { return patches("deployments") == 1; }));
  controller.stop();
}

}  // namespace
}  // namespace kturn::op
