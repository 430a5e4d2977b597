#include "turn/timer_wheel.h"

#include <gtest/gtest.h>

#include <vector>

namespace kturn::turn {
namespace {

TEST(TimerWheel, FiresAtDeadlineNotBefore) {
  TimerWheel<int> wheel(8);
  wheel.advance(100, [](int, int64_t) { FAIL(); });
  wheel.schedule(1, 103);
  wheel.schedule(2, 101);
  std::vector<int> fired;
  auto record = [&](int h, int64_t) { fired.push_back(h); };
  wheel.advance(100, record);
  EXPECT_TRUE(fired.empty());
  wheel.advance(101, record);
  EXPECT_EQ(fired, std::vector<int>({2}));
  wheel.advance(105, record);
  EXPECT_EQ(fired, std::vector<int>({2, 1}));
  EXPECT_EQ(wheel.size(), 0u);
}

TEST(TimerWheel, DeadlinesBeyondOneLapWaitForTheirTime) {
  TimerWheel<int> wheel(8);
  wheel.advance(0, [](int, int64_t) {});
  wheel.schedule(1, 20);  // 2.5 laps away
  int fired = 0;
  for (int64_t t = 1; t < 20; ++t) wheel.advance(t, [&](int, int64_t) { ++fired; });
  EXPECT_EQ(fired, 0);
  wheel.advance(20, [&](int, int64_t) { ++fired; });
  EXPECT_EQ(fired, 1);
}

TEST(TimerWheel, AJumpFiresEverythingDueOnce) {
  TimerWheel<int> wheel(8);
  wheel.advance(0, [](int, int64_t) {});
  for (int i = 1; i <= 5; ++i) wheel.schedule(i, i * 3);
  int fired = 0;
  wheel.advance(1000, [&](int, int64_t) { ++fired; });
  EXPECT_EQ(fired, 5);
}

TEST(TimerWheel, HandlersMayRescheduleWhileFiring) {
  TimerWheel<int> wheel(8);
  wheel.advance(0, [](int, int64_t) {});
  wheel.schedule(1, 1);
  int fired = 0;
  auto again = [&](int h, int64_t d) {
    ++fired;
    if (fired < 3) wheel.schedule(h, d + 1);
  };
  for (int64_t t = 1; t <= 10; ++t) wheel.advance(t, again);
  EXPECT_EQ(fired, 3);
}

TEST(TimerWheel, CompactDropsOnlyWhatTheOwnerDisowns) {
  TimerWheel<int> wheel(16);
  for (int h = 0; h < 10; ++h) wheel.schedule(h, 5 + h);
  wheel.compact([](int h, int64_t) { return h % 2 == 0; });
  EXPECT_EQ(wheel.size(), 5u);
  std::vector<int> fired;
  wheel.advance(100, [&](int h, int64_t) { fired.push_back(h); });
  EXPECT_EQ(fired, (std::vector<int>{0, 2, 4, 6, 8}));
}

}  // namespace
}  // namespace kturn::turn
