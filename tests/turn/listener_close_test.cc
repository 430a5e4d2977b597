// Server::closeListener: a listener removed from the config ends the allocations made through
// it, and only those.
#include <gtest/gtest.h>

#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

struct RecordingObserver : SessionObserver {
  void onAllocationEnd(const Allocation& a, SessionEnd reason, const Now&) override {
    ended.push_back({a.id, reason});
  }
  std::vector<std::pair<AllocationId, SessionEnd>> ended;
};

TEST_F(TurnTest, ClosingAListenerEndsItsAllocationsOnly) {
  RecordingObserver observer;
  server_->setSessionObserver(&observer);
  ASSERT_TRUE(allocate().cls() == stun::MessageClass::kSuccessResponse);
  const AllocationId id = server_->findAllocation(tuple_)->id;

  server_->closeListener(kListener + 1, now_);
  EXPECT_EQ(server_->allocationCount(), 1u);
  EXPECT_TRUE(observer.ended.empty());

  server_->closeListener(kListener, now_);
  EXPECT_EQ(server_->allocationCount(), 0u);
  ASSERT_EQ(observer.ended.size(), 1u);
  EXPECT_EQ(observer.ended[0].first, id);
  EXPECT_EQ(observer.ended[0].second, SessionEnd::kListenerClosed);
  EXPECT_EQ(toString(SessionEnd::kListenerClosed), "listener-closed");
  ASSERT_EQ(relays_.closed.size(), 1u);
  EXPECT_EQ(relays_.closed[0], id);
  EXPECT_EQ(server_->stats().allocations_closed, 1u);
  // The client may allocate again (through a listener that still exists).
  EXPECT_TRUE(allocate().cls() == stun::MessageClass::kSuccessResponse);
}

}  // namespace
}  // namespace kturn::turn::testing
