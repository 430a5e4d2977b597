#include "cli/table.h"

#include <gtest/gtest.h>

namespace kturn::cli {
namespace {

TEST(FormatTable, AlignsColumnsThreeSpacesApart) {
  EXPECT_EQ(formatTable({{"NAME", "PORT", "ROUTES"}, {"udp-listener", "3478", "a,b"}, {"t", "5"}}),
            "NAME           PORT   ROUTES\n"
            "udp-listener   3478   a,b\n"
            "t              5\n");
}

TEST(FormatTable, EmptyIsEmpty) { EXPECT_EQ(formatTable({}), ""); }

}  // namespace
}  // namespace kturn::cli
