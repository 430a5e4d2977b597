// Allocation churn does not grow the timer wheel without bound: entries of deleted allocations
// are shed once they outnumber the live ones, instead of staying until their deadline (up to an
// hour, some 40 B each, found by the soak test).
#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

TEST_F(TurnTest, TimerEntriesOfDeletedAllocationsAreShedUnderChurn) {
  size_t peak = 0;
  for (uint16_t i = 0; i < 20000; ++i) {
    tuple_.client.port = static_cast<uint16_t>(10000 + i);
    ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse) << i;
    ASSERT_EQ(refresh(0).cls(), stun::MessageClass::kSuccessResponse) << i;
    peak = std::max(peak, server_->timerEntries());
  }
  EXPECT_EQ(server_->allocationCount(), 0u);
  EXPECT_LE(peak, 4096u + 2);  // the compaction slack, never the 20,000 churned
}

}  // namespace
}  // namespace kturn::turn::testing
