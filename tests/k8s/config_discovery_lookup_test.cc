// findConfigDiscoveryServer (kturnd -c k8s) against the real kube-apiserver: the pods labelled
// stunner.l7mp.io/config-discovery-service=enabled, the running one with an address chosen.
#include "k8s/config_discovery_lookup.h"

#include <gtest/gtest.h>

#include "k8s/test_cluster.h"

namespace kturn::k8s {
namespace {

using namespace std::chrono_literals;
using test::eventually;

class ConfigDiscoveryLookupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(scope_.ready());
    ns_ = scope_.ns("stunner-system");
    // The ServiceAccount admission plugin wants the namespace's default account, which
    // kube-controller-manager creates a moment after the namespace.
    ASSERT_TRUE(eventually(
        [&] {
          auto sa = scope_.admin().get(kturn::testing::serviceAccountType(), ns_, "default");
          return sa && sa->ok();
        },
        15s));
  }

  // A pod of the discovery server's, as the API server knows it: `phase` and `ip` in its status
  // ("" leaves the status as created).
  void pod(const std::string& name, bool labelled, const std::string& phase,
           const std::string& ip) {
    Json labels = Json::object();
    if (labelled) labels["stunner.l7mp.io/config-discovery-service"] = "enabled";
    auto created = scope_.admin().create(
        resources::pod(),
        {{"apiVersion", "v1"},
         {"kind", "Pod"},
         {"metadata", {{"name", name}, {"namespace", ns_}, {"labels", labels}}},
         {"spec",
          {{"containers",
            Json::array({{{"name", "operator"}, {"image", "kturn/kturn-operator"}}})}}}});
    ASSERT_TRUE(created && created->ok()) << (created ? created->describe() : "");
    if (phase.empty()) return;
    Json body = created->body;
    body["status"] = {{"phase", phase}};
    if (!ip.empty()) {
      body["status"]["podIP"] = ip;
      body["status"]["podIPs"] = Json::array({{{"ip", ip}}});
    }
    auto written =
        scope_.admin().request({.method = "PUT",
                                .target = resources::pod().objectPath(ns_, name, "status"),
                                .body = body.dump(),
                                .contentType = "application/json"});
    ASSERT_TRUE(written && written->ok()) << (written ? written->describe() : "");
  }

  kturn::testing::ClusterScope scope_;
  std::string ns_;
};

TEST_F(ConfigDiscoveryLookupTest, NoLabelledPodIsAnErrorNamingTheLabel) {
  pod("unrelated", /*labelled=*/false, "Running", "10.244.0.3");
  auto found = findConfigDiscoveryServer(scope_.admin(), ns_, 13478);
  ASSERT_FALSE(found);
  EXPECT_NE(found.error().message.find(std::string(kConfigDiscoveryLabel)), std::string::npos)
      << found.error().message;
  EXPECT_NE(found.error().message.find("namespace " + ns_), std::string::npos);
}

TEST_F(ConfigDiscoveryLookupTest, TheFirstRunningPodWithAnAddress) {
  pod("a-pending", true, "", "");                 // not scheduled yet: no address
  pod("b-failed", true, "Failed", "10.244.0.4");  // not running
  pod("c-running", true, "Running", "10.244.0.5");
  pod("d-running", true, "Running", "10.244.0.6");
  auto found = findConfigDiscoveryServer(scope_.admin(), ns_, 13478);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(*found, "http://10.244.0.5:13478");
  // Across namespaces too ("" asks every namespace); other scopes' pods may come first by
  // namespace, so only the form is checked.
  auto anywhere = findConfigDiscoveryServer(scope_.admin(), "", 13479);
  ASSERT_TRUE(anywhere) << anywhere.error().message;
  EXPECT_EQ(anywhere->rfind("http://", 0), 0u);
  EXPECT_EQ(anywhere->substr(anywhere->size() - 6), ":13479");
}

TEST_F(ConfigDiscoveryLookupTest, AnIpv6PodAddressIsBracketed) {
  pod("v6", true, "Running", "fd00:10:244::7");
  auto found = findConfigDiscoveryServer(scope_.admin(), ns_, 13478);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(*found, "http://[fd00:10:244::7]:13478");
}

}  // namespace
}  // namespace kturn::k8s
