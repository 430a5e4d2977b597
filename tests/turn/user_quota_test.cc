// UserQuota: allocations per username for the whole process, shared by the workers' cores.
#include "turn/user_quota.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace kturn::turn {
namespace {

TEST(UserQuota, CountsUpToTheLimitAndFreesOnRelease) {
  UserQuota q;
  EXPECT_TRUE(q.tryAcquire("alice", 2));
  EXPECT_TRUE(q.tryAcquire("alice", 2));
  EXPECT_FALSE(q.tryAcquire("alice", 2));
  EXPECT_TRUE(q.tryAcquire("bob", 2));  // per user
  EXPECT_EQ(q.count("alice"), 2u);
  q.release("alice");
  EXPECT_EQ(q.count("alice"), 1u);
  EXPECT_TRUE(q.tryAcquire("alice", 2));
  EXPECT_EQ(q.count("carol"), 0u);
  EXPECT_TRUE(q.tryAcquire("carol", 0));  // 0: no limit
  EXPECT_EQ(q.count("carol"), 1u);
  q.release("carol");
  q.release("carol");  // a release beyond the count changes nothing
  EXPECT_EQ(q.count("carol"), 0u);
}

TEST(UserQuota, HoldsUnderConcurrentWorkers) {
  UserQuota q;
  constexpr uint32_t kLimit = 5;
  std::atomic<int> admitted{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if (q.tryAcquire("alice", kLimit)) ++admitted;
      }
    });
  }
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(admitted.load(), static_cast<int>(kLimit));
  EXPECT_EQ(q.count("alice"), kLimit);
}

}  // namespace
}  // namespace kturn::turn
