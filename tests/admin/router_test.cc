#include "admin/router.h"

#include <gtest/gtest.h>

namespace kturn::admin {
namespace {

Handler tagged(std::string tag) {
  return [tag](const Request&) { return Response{.body = tag}; };
}

std::string route(const Router& router, std::string_view path) {
  const Handler* handler = router.find(path);
  return handler == nullptr ? "<none>" : (*handler)(Request{}).body;
}

TEST(RouterTest, ExactPatternsMatchExactly) {
  Router router;
  router.add("/live", tagged("live"));
  EXPECT_EQ(route(router, "/live"), "live");
  EXPECT_EQ(route(router, "/live/"), "<none>");
  EXPECT_EQ(route(router, "/liveness"), "<none>");
  EXPECT_EQ(route(router, "/"), "<none>");
}

TEST(RouterTest, SlashPatternsMatchSubtreesLongestFirst) {
  Router router;
  router.add("/", tagged("root"));  // stunnerd's metrics_endpoint "http://:8080"
  router.add("/api/", tagged("api"));
  router.add("/api/v1", tagged("v1"));
  EXPECT_EQ(route(router, "/metrics"), "root");
  EXPECT_EQ(route(router, "/api/x/y"), "api");
  EXPECT_EQ(route(router, "/api/v1"), "v1");
  EXPECT_EQ(route(router, "/api/v1/z"), "api");
}

TEST(RouterTest, EmptyPatternIsRootAndLaterAddReplaces) {
  Router router;
  router.add("", tagged("a"));
  router.add("/", tagged("b"));
  EXPECT_EQ(route(router, "/anything"), "b");
}

}  // namespace
}  // namespace kturn::admin
