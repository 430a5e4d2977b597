// Lease-based leader election between two candidates on the real Lease API (coordination.k8s.io/v1
// of the test control plane's kube-apiserver).
#include "k8s/leader_elector.h"

#include <gtest/gtest.h>

#include "k8s/test_cluster.h"

namespace kturn::k8s {
namespace {

using namespace std::chrono_literals;
using test::eventually;

LeaderElectionOptions fast(const std::string& ns, const std::string& identity) {
  return {.ns = ns,
          .name = "kturn-operator",
          .identity = identity,
          .leaseDuration = 1000ms,
          .renewDeadline = 700ms,
          .retryPeriod = 100ms};
}

std::string holder(ApiClient& client, const std::string& ns) {
  auto lease = client.get(resources::lease(), ns, "kturn-operator");
  if (!lease || !lease->ok()) return "<none>";
  return lease->body["spec"].value("holderIdentity", "");
}

TEST(LeaderElector, OneLeaderAtATimeAndHandOverOnStop) {
  kturn::testing::ClusterScope scope;
  ASSERT_TRUE(scope.ready());
  const std::string ns = scope.ns("stunner-system");
  auto client = scope.serviceAccountClient("operator", "cluster-admin", "stunner-system");
  ASSERT_TRUE(client);
  std::atomic<int> aChanges{0};
  LeaderElector a(*client, fast(ns, "a"), [&](bool) { ++aChanges; });
  LeaderElector b(*client, fast(ns, "b"), nullptr);
  a.start();
  ASSERT_TRUE(eventually([&] { return a.isLeader(); }));
  b.start();
  // b keeps trying for longer than a lease duration while a renews: it never leads.
  for (int i = 0; i < 15; ++i) {
    std::this_thread::sleep_for(100ms);
    ASSERT_FALSE(a.isLeader() && b.isLeader());
    ASSERT_FALSE(b.isLeader());
  }
  EXPECT_EQ(holder(*client, ns), "a");
  auto lease = client->get(resources::lease(), ns, "kturn-operator");
  ASSERT_TRUE(lease && lease->ok());
  EXPECT_EQ(lease->body["spec"]["leaseDurationSeconds"], 1);
  EXPECT_FALSE(lease->body["spec"].value("renewTime", "").empty());

  a.stop();  // releases the lease
  EXPECT_FALSE(a.isLeader());
  EXPECT_EQ(aChanges, 2);
  ASSERT_TRUE(eventually([&] { return b.isLeader(); }, 5s));
  EXPECT_EQ(holder(*client, ns), "b");
  lease = client->get(resources::lease(), ns, "kturn-operator");
  EXPECT_EQ(lease->body["spec"]["leaseTransitions"], 1);
  b.stop();
}

TEST(LeaderElector, TakesOverAnExpiredLeaseOfACrashedHolder) {
  kturn::testing::ClusterScope scope;
  ASSERT_TRUE(scope.ready());
  const std::string ns = scope.ns("stunner-system");
  ApiClient* client = &scope.admin();
  // A lease held by a replica that died without releasing it.
  Json lease = {
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata", {{"name", "kturn-operator"}, {"namespace", ns}}},
      {"spec",
       {{"holderIdentity", "dead"}, {"leaseDurationSeconds", 1}, {"renewTime", microTimeNow()}}}};
  ASSERT_TRUE(client->create(resources::lease(), lease));
  LeaderElector b(*client, fast(ns, "b"), nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  b.start();
  ASSERT_TRUE(eventually([&] { return b.isLeader(); }, 5s));
  // Not before the lease duration has passed on b's own clock.
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1000ms);
  EXPECT_EQ(holder(*client, ns), "b");
}

TEST(LeaderElector, StepsDownWhenItCannotRenew) {
  kturn::testing::ClusterScope scope;
  ASSERT_TRUE(scope.ready());
  const std::string ns = scope.ns("stunner-system");
  // A server of its own on the same cluster, so that it can go away.
  auto server = std::make_unique<kturn::testing::ExtraApiServer>();
  ASSERT_TRUE(server->ready()) << server->error();
  auto client = kturn::testing::clientFromKubeconfig(server->kubeconfig());
  ASSERT_TRUE(client);
  client->setTimeout(200ms);
  LeaderElector a(*client, fast(ns, "a"), nullptr);
  a.start();
  ASSERT_TRUE(eventually([&] { return a.isLeader(); }));
  server->stop();  // the API server goes away: renewals fail
  ASSERT_TRUE(eventually([&] { return !a.isLeader(); }, 3s));
}

}  // namespace
}  // namespace kturn::k8s
