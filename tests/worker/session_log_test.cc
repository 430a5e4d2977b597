#include "worker/session_log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace kturn::worker {
namespace {

turn::Allocation sampleAllocation() {
  turn::Allocation a;
  a.id = {3, 1};
  a.listener = 1;
  a.five_tuple.client = *TransportAddress::parse("192.0.2.77:40000");
  a.relayed = *TransportAddress::parse("10.1.0.1:50000");
  a.username = "1800000000:alice";
  a.permissions.push_back({*IpAddress::parse("10.2.3.4"), {}, {}, {}});
  a.created = turn::MonoTime(std::chrono::seconds(100));
  a.created_unix = 1'800'000'000;
  a.packets_to_peers = 10;
  a.bytes_to_peers = 1000;
  a.packets_to_client = 9;
  a.bytes_to_client = 900;
  return a;
}

TEST(SessionLog, RecordCarriesTheSessionFacts) {
  auto dataplane = std::make_shared<ConfigSnapshot>();
  ListenerSpec listener;
  listener.id = 1;
  listener.name = "default/gw/udp";
  dataplane->listeners.push_back(listener);
  SessionLog log({}, 0);
  log.setDataplane(dataplane);
  const turn::Now now{turn::MonoTime(std::chrono::seconds(160)), 1'800'000'060};
  const auto j =
      nlohmann::json::parse(log.record(sampleAllocation(), turn::SessionEnd::kExpired, now));
  EXPECT_EQ(j["event"], "session-end");
  EXPECT_EQ(j["listener"], "default/gw/udp");
  EXPECT_EQ(j["client"], "192.0.2.77:40000");
  EXPECT_EQ(j["user"], "1800000000:alice");
  EXPECT_EQ(j["relay"], "10.1.0.1:50000");
  EXPECT_EQ(j["peers"][0], "10.2.3.4");
  EXPECT_EQ(j["packets_to_peers"], 10);
  EXPECT_EQ(j["bytes_to_client"], 900);
  EXPECT_DOUBLE_EQ(j["duration_s"].get<double>(), 60.0);
  EXPECT_EQ(j["reason"], "expired");
}

TEST(SessionLog, PrivacyFlagsAnonymizeClientAndHashUser) {
  SessionLog log({true, true, true}, 0);
  const turn::Now now{turn::MonoTime(std::chrono::seconds(160)), 0};
  const std::string text = log.record(sampleAllocation(), turn::SessionEnd::kDeleted, now);
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["client"], "192.0.2.0");
  EXPECT_EQ(text.find("alice"), std::string::npos);
  EXPECT_EQ(j["user"].get<std::string>().size(), 16u);
  // The same user hashes the same within a process, so sessions can still be correlated.
  EXPECT_EQ(nlohmann::json::parse(
                log.record(sampleAllocation(), turn::SessionEnd::kDeleted, now))["user"],
            j["user"]);
  EXPECT_EQ(anonymize(*IpAddress::parse("2001:db8:1:2::5")).toString(), "2001:db8:1::");
}

}  // namespace
}  // namespace kturn::worker
