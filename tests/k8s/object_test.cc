// Object trees: sameContent() is equality up to the order of object members.
#include "k8s/object.h"

#include <gtest/gtest.h>

namespace kturn::k8s {
namespace {

TEST(SameContent, IgnoresMemberOrderAtEveryDepth) {
  const Json rendered = Json::parse(
      R"({"conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted"}],
          "addresses": [{"type": "IPAddress", "value": "198.51.100.10"}]})");
  // As the API server writes a custom resource back: members sorted.
  const Json stored = Json::parse(
      R"({"addresses": [{"type": "IPAddress", "value": "198.51.100.10"}],
          "conditions": [{"reason": "Accepted", "status": "True", "type": "Accepted"}]})");
  EXPECT_NE(rendered, stored);  // what `==` on ordered trees says
  EXPECT_TRUE(sameContent(rendered, stored));
}

TEST(SameContent, SeesEveryRealDifference) {
  const Json a = Json::parse(R"({"x": [1, 2], "y": {"z": "s"}})");
  EXPECT_FALSE(sameContent(a, Json::parse(R"({"x": [2, 1], "y": {"z": "s"}})")));  // order of items
  EXPECT_FALSE(sameContent(a, Json::parse(R"({"x": [1, 2], "y": {"z": "t"}})")));
  EXPECT_FALSE(sameContent(a, Json::parse(R"({"x": [1, 2], "y": {"z": "s", "w": 1}})")));
  EXPECT_FALSE(sameContent(a, Json::parse(R"({"x": [1, 2]})")));
  EXPECT_FALSE(sameContent(a, Json::parse(R"({"x": [1, 2], "w": {"z": "s"}})")));
  EXPECT_FALSE(sameContent(Json::parse("1"), Json::parse(R"("1")")));
  EXPECT_TRUE(sameContent(a, a));
}

}  // namespace
}  // namespace kturn::k8s
