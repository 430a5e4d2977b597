#include "common/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace kturn {
namespace {

TEST(Utf8, AcceptsEveryLengthUpToTheLastCodePoint) {
  EXPECT_TRUE(isValidUtf8(""));
  EXPECT_TRUE(isValidUtf8("stunner/udp-gateway"));
  EXPECT_TRUE(isValidUtf8("\xC3\xA9"));                  // é, U+00E9
  EXPECT_TRUE(isValidUtf8("\xE4\xB8\xAD\xE6\x96\x87"));  // 中文
  EXPECT_TRUE(isValidUtf8("\xF0\x9F\x93\x9E"));          // U+1F4DE
  EXPECT_TRUE(isValidUtf8("\xF4\x8F\xBF\xBF"));          // U+10FFFF
  EXPECT_TRUE(isValidUtf8(std::string("a\0b", 3)));
}

TEST(Utf8, NamesTheFirstBadByte) {
  EXPECT_EQ(firstInvalidUtf8("ab\xFF"), 2u);  // never a lead byte
  EXPECT_EQ(firstInvalidUtf8("x\x80"), 1u);   // stray continuation
  EXPECT_EQ(firstInvalidUtf8("xy\xC3"), 2u);  // truncated sequence
  EXPECT_EQ(firstInvalidUtf8("\xE4\xB8"
                             "a"),
            0u);                                        // continuation missing
  EXPECT_EQ(firstInvalidUtf8("ok\xC0\xAF"), 2u);        // overlong '/'
  EXPECT_EQ(firstInvalidUtf8("\xE0\x80\xAF"), 0u);      // overlong, three bytes
  EXPECT_EQ(firstInvalidUtf8("\xED\xA0\x80"), 0u);      // surrogate U+D800
  EXPECT_EQ(firstInvalidUtf8("\xF4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(firstInvalidUtf8("\xC3\xA9\xFE"), 2u);
}

}  // namespace
}  // namespace kturn
