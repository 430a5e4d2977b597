// AllocationTable's bookkeeping: the per-source count that admin.limits.source_quota reads.
#include "turn/allocation_table.h"

#include <gtest/gtest.h>

namespace kturn::turn {
namespace {

FiveTuple tupleFrom(const char* client) {
  return FiveTuple{TransportProtocol::kUdp, *TransportAddress::parse(client),
                   *TransportAddress::parse("198.51.100.1:3478")};
}

TEST(AllocationTable, SourceCountFollowsCreateAndEraseAcrossPortsAndTransports) {
  AllocationTable table;
  const IpAddress source = *IpAddress::parse("192.0.2.10");
  EXPECT_EQ(table.sourceCount(source), 0u);
  const AllocationId a = table.create(tupleFrom("192.0.2.10:40000")).id;
  FiveTuple tcp = tupleFrom("192.0.2.10:40000");
  tcp.protocol = TransportProtocol::kTcp;
  const AllocationId b = table.create(tcp).id;
  table.create(tupleFrom("192.0.2.11:40000"));
  table.create(tupleFrom("[2001:db8::10]:40000"));
  EXPECT_EQ(table.sourceCount(source), 2u);
  EXPECT_EQ(table.sourceCount(*IpAddress::parse("192.0.2.11")), 1u);
  EXPECT_EQ(table.sourceCount(*IpAddress::parse("2001:db8::10")), 1u);
  EXPECT_EQ(table.sourceCount(*IpAddress::parse("2001:db8::11")), 0u);

  table.erase(a);
  EXPECT_EQ(table.sourceCount(source), 1u);
  table.erase(a);  // a stale id changes nothing
  EXPECT_EQ(table.sourceCount(source), 1u);
  table.erase(b);
  EXPECT_EQ(table.sourceCount(source), 0u);
  table.create(tupleFrom("192.0.2.10:40001"));
  EXPECT_EQ(table.sourceCount(source), 1u);
}

}  // namespace
}  // namespace kturn::turn
