// The CDS serving certificate's hosts, and the renewer's first certificate.
#include "operator/cds_tls.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace kturn::op {
namespace {

using namespace std::chrono_literals;

TEST(CdsServingHosts, AServiceNameGetsEveryFormOfIt) {
  EXPECT_EQ(
      cdsServingHosts("kturn-config-discovery.kturn-system.svc"),
      (std::vector<std::string>{"kturn-config-discovery.kturn-system.svc", "kturn-config-discovery",
                                "kturn-config-discovery.kturn-system",
                                "kturn-config-discovery.kturn-system.svc.cluster.local"}));
  EXPECT_EQ(cdsServingHosts("cds.ns.svc.cluster.local"),
            (std::vector<std::string>{"cds.ns.svc.cluster.local", "cds", "cds.ns", "cds.ns.svc"}));
  EXPECT_EQ(cdsServingHosts("10.96.0.12"), std::vector<std::string>{"10.96.0.12"});
  EXPECT_EQ(cdsServingHosts("cds.example.com"), std::vector<std::string>{"cds.example.com"});
  EXPECT_EQ(cdsServingHosts("cds"), std::vector<std::string>{"cds"});
}

TEST(CdsCertificateRenewer, SignsAtOnceAndRenewsOnItsPeriodUntilDestroyed) {
  auto ca = certificate::issue({.common_name = "CA", .ca = true});
  ASSERT_TRUE(ca);
  std::atomic<int> installed{0};
  {
    CdsCertificateRenewer renewer(*ca, {"cds.ns.svc"}, 50ms);
    ASSERT_TRUE(renewer.first()) << renewer.first().error().message;
    const std::string first = renewer.first()->cert_pem;
    renewer.start([&installed, first](const certificate::PemPair& pem) {
      EXPECT_NE(pem.cert_pem, first);
      ++installed;
    });
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (installed < 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);
    }
  }  // joins promptly although the period has not passed
  EXPECT_GE(installed, 2);
  const int after = installed;
  std::this_thread::sleep_for(120ms);
  EXPECT_EQ(installed, after) << "nothing is installed after the renewer is gone";
}

}  // namespace
}  // namespace kturn::op
