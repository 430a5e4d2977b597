// CapacityGate (src/admin/capacity_gate.h): each mark, the hysteresis, the rate window and what
// /capacity reports. Time is the test's: samples carry their own time points.
#include "admin/capacity_gate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

namespace kturn::admin {
namespace {

using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

class CapacityGateTest : public ::testing::Test {
 protected:
  // A sample `s` seconds after the start.
  CapacitySample at(int s, uint64_t allocations, uint64_t relayed_bytes = 0, double cpu = 0) {
    return {.at = start_ + seconds(s),
            .allocations = allocations,
            .relayed_bytes = relayed_bytes,
            .cpu_seconds = cpu};
  }
  const Clock::time_point start_ = Clock::time_point() + seconds(1000);
};

TEST_F(CapacityGateTest, WithoutMarksNeverOver) {
  CapacityGate gate(2);
  EXPECT_FALSE(gate.update(at(0, 0)));
  EXPECT_FALSE(gate.update(at(1, 1'000'000, 1'000'000'000'000, 2)));
  const CapacityReport r = gate.report();
  EXPECT_FALSE(r.over_capacity);
  EXPECT_EQ(r.allocations.mark, 0u);
  EXPECT_EQ(r.allocations.value, 1'000'000);
  EXPECT_FALSE(r.allocations.over);
  EXPECT_EQ(r.allocations.headroom, 0);
}

TEST_F(CapacityGateTest, AllocationsOverAtTheMarkAndBackUnderTheResumePoint) {
  CapacityGate gate(1);
  gate.setMarks({.allocations = 100, .resume_percent = 80});
  EXPECT_FALSE(gate.update(at(0, 99)));
  EXPECT_EQ(gate.report().allocations.headroom, 1);
  EXPECT_TRUE(gate.update(at(1, 100)));
  EXPECT_EQ(gate.report().allocations.headroom, 0);
  // Under the mark but not under 80 % of it: still over (hysteresis).
  EXPECT_TRUE(gate.update(at(2, 99)));
  EXPECT_TRUE(gate.update(at(3, 80)));
  EXPECT_FALSE(gate.update(at(4, 79)));
  // And over again only at the mark, not at the resume point.
  EXPECT_FALSE(gate.update(at(5, 95)));
  const CapacityReport r = gate.report();
  EXPECT_EQ(r.transitions, 2u);
  EXPECT_EQ(r.allocations.resume, 80);
  EXPECT_EQ(r.allocations.headroom, 5);
  EXPECT_EQ(r.seconds_in_state, 1);
}

TEST_F(CapacityGateTest, RelayBandwidthIsARateOverTheWindow) {
  CapacityGate gate(1);
  gate.setMarks({.relay_kbps = 1000, .resume_percent = 50});
  // 125,000 bytes a second is 1,000 kbit/s.
  EXPECT_FALSE(gate.update(at(0, 0, 0)));
  EXPECT_FALSE(gate.update(at(1, 0, 100'000)));  // 800 kbit/s
  EXPECT_NEAR(gate.report().relay_kbps.value, 800, 1e-9);
  EXPECT_TRUE(gate.update(at(2, 0, 250'000)));  // 1,000 kbit/s over 2 s
  // Traffic stops: the average over the window falls, and under 500 the gate lets go.
  uint64_t bytes = 250'000;
  bool over = true;
  int s = 2;
  while (over && s < 20) over = gate.update(at(++s, 0, bytes));
  EXPECT_FALSE(over);
  // The window from 0 s reads 500 kbit/s at 4 s (2,000,000 bits over 4 s: not under the
  // resume point) and 400 at 5 s.
  EXPECT_EQ(s, 5);
  EXPECT_LT(gate.report().relay_kbps.value, 500);
}

TEST_F(CapacityGateTest, CpuIsAShareOfTheAvailableCpus) {
  CapacityGate gate(2);
  gate.setMarks({.cpu_percent = 75, .resume_percent = 50});
  EXPECT_FALSE(gate.update(at(0, 0, 0, 10)));
  EXPECT_FALSE(gate.update(at(1, 0, 0, 11)));  // one of two CPUs: 50 %
  EXPECT_NEAR(gate.report().cpu_percent.value, 50, 1e-9);
  EXPECT_TRUE(gate.update(at(2, 0, 0, 13)));  // (13 - 10) / 2 s / 2 CPUs: 75 %
  EXPECT_NEAR(gate.report().cpus, 2, 1e-9);
}

TEST_F(CapacityGateTest, ResumeNeedsEveryMeasureUnderItsResumePoint) {
  CapacityGate gate(1);
  gate.setMarks({.allocations = 10, .relay_kbps = 1000, .resume_percent = 50});
  EXPECT_FALSE(gate.update(at(0, 0, 0)));
  EXPECT_TRUE(gate.update(at(1, 10, 0)));  // allocations at the mark
  // Allocations fall under 5, but relaying 600 kbit/s is over half its mark: still over.
  EXPECT_TRUE(gate.update(at(2, 4, 150'000)));
  EXPECT_TRUE(gate.report().over_capacity);
  EXPECT_FALSE(gate.report().relay_kbps.over);  // under its mark, over its resume point
  // The bandwidth falls too.
  bool over = true;
  for (int s = 3; over && s < 20; ++s) over = gate.update(at(s, 4, 150'000));
  EXPECT_FALSE(over);
}

TEST_F(CapacityGateTest, NewMarksShowAtOnceAgainstTheLatestMeasures) {
  CapacityGate gate(1);
  gate.setMarks({.allocations = 10, .resume_percent = 50});
  EXPECT_EQ(gate.report().allocations.mark, 10u);  // before any sample
  EXPECT_EQ(gate.report().allocations.headroom, 10);
  EXPECT_FALSE(gate.update(at(0, 6)));
  gate.setMarks({.allocations = 5, .resume_percent = 50});
  EXPECT_TRUE(gate.report().over_capacity);
  EXPECT_EQ(gate.report().allocations.resume, 2.5);
}

TEST_F(CapacityGateTest, RemovingTheMarksLetsGo) {
  CapacityGate gate(1);
  gate.setMarks({.allocations = 1});
  EXPECT_TRUE(gate.update(at(0, 5)));
  gate.setMarks({});
  EXPECT_FALSE(gate.update(at(1, 5)));
}

TEST_F(CapacityGateTest, JsonHasEveryMeasure) {
  CapacityGate gate(4);
  gate.setMarks({.allocations = 10, .resume_percent = 90});
  gate.update(at(0, 10));
  const nlohmann::json j = toJson(gate.report());
  EXPECT_EQ(j["over_capacity"], true);
  EXPECT_EQ(j["cpus"], 4.0);
  EXPECT_EQ(j["allocations"]["value"], 10.0);
  EXPECT_EQ(j["allocations"]["mark"], 10);
  EXPECT_EQ(j["allocations"]["resume"], 9.0);
  EXPECT_EQ(j["allocations"]["headroom"], 0.0);
  EXPECT_EQ(j["allocations"]["over"], true);
  EXPECT_TRUE(j["relay_kbps"]["mark"].is_null());
  EXPECT_TRUE(j["cpu_percent"]["mark"].is_null());
}

TEST(AvailableCpusTest, AtLeastOneAndAtMostTheMachine) {
  const double cpus = availableCpus();
  EXPECT_GT(cpus, 0);
  EXPECT_LE(cpus, std::max(1u, std::thread::hardware_concurrency()));
}

TEST(ProcessCpuSecondsTest, GrowsWithWork) {
  const double before = processCpuSeconds();
  volatile uint64_t x = 0;
  const double until = before + 0.05;
  // Bounded by the wall clock: a processCpuSeconds() that never grows fails, it does not hang.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (processCpuSeconds() < until && std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 100000; ++i) x = x + i;
  }
  EXPECT_GE(processCpuSeconds(), until);
}

}  // namespace
}  // namespace kturn::admin
