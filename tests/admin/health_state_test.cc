#include "admin/health_state.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace kturn::admin {
namespace {

TEST(HealthStateTest, StartsNotReady) {
  HealthState state;
  EXPECT_EQ(state.status(), HealthStatus::kNotReady);
  EXPECT_FALSE(state.ready());
  EXPECT_EQ(toString(state.status()), "NOT-READY");
}

TEST(HealthStateTest, ReadyAndBack) {
  HealthState state;
  state.setReady();
  EXPECT_TRUE(state.ready());
  EXPECT_EQ(toString(state.status()), "READY");
  state.setNotReady();
  EXPECT_FALSE(state.ready());
}

TEST(HealthStateTest, TerminatingIsSticky) {
  HealthState state;
  state.setReady();
  state.setTerminating();
  state.setReady();
  state.setNotReady();
  EXPECT_EQ(state.status(), HealthStatus::kTerminating);
  EXPECT_EQ(toString(state.status()), "TERMINATING");
  EXPECT_FALSE(state.ready());
}

TEST(HealthStateTest, ForceReadyOverridesProbeOnly) {
  HealthState state;
  state.setForceReady(true);
  EXPECT_TRUE(state.ready());
  state.setTerminating();
  EXPECT_TRUE(state.ready());
  EXPECT_EQ(state.status(), HealthStatus::kTerminating);
}

// --ready-while-draining: TERMINATING answers as READY did, and nothing else changes.
TEST(HealthStateTest, ReadyWhileDrainingKeepsOnlyTheDrainReady) {
  HealthState state;
  state.setReadyWhileDraining(true);
  EXPECT_FALSE(state.ready());  // no config yet
  state.setReady();
  EXPECT_TRUE(state.ready());
  state.setTerminating();
  EXPECT_TRUE(state.ready());
  EXPECT_EQ(state.status(), HealthStatus::kTerminating);
  state.setOverCapacity(true);
  EXPECT_FALSE(state.ready());  // the capacity marks still count

  HealthState unready;  // SIGTERM before the first config: nothing to drain, not ready
  unready.setReadyWhileDraining(true);
  unready.setTerminating();
  EXPECT_FALSE(unready.ready());
  unready.setTerminating();  // a second SIGTERM changes nothing
  EXPECT_FALSE(unready.ready());
}

TEST(HealthStateTest, OverCapacityFailsTheProbeWithoutLeavingReady) {
  HealthState state;
  state.setReady();
  state.setOverCapacity(true);
  EXPECT_FALSE(state.ready());
  EXPECT_EQ(state.status(), HealthStatus::kReady);
  state.setOverCapacity(false);
  EXPECT_TRUE(state.ready());
}

TEST(HealthStateTest, ForceReadyOverridesOverCapacity) {
  HealthState state;
  state.setForceReady(true);
  state.setReady();
  state.setOverCapacity(true);
  EXPECT_TRUE(state.ready());
}

TEST(HealthStateTest, RacingSetReadyNeverUndoesTerminating) {
  HealthState state;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) state.setReady();
    });
  }
  state.setTerminating();
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(state.status(), HealthStatus::kTerminating);
}

}  // namespace
}  // namespace kturn::admin
