#include "admin/http_endpoint.h"

#include <gtest/gtest.h>

namespace kturn::admin {
namespace {

HttpEndpoint parseOk(std::string_view url, uint16_t default_port = kDefaultHealthCheckPort) {
  auto result = parseHttpEndpoint(url, default_port);
  EXPECT_TRUE(result) << url << ": " << (result ? "" : result.error().message);
  if (!result || !*result) return {};
  return **result;
}

TEST(HttpEndpointTest, EmptyDisables) {
  auto result = parseHttpEndpoint("", kDefaultHealthCheckPort);
  ASSERT_TRUE(result);
  EXPECT_FALSE(result->has_value());
}

TEST(HttpEndpointTest, StunnerDefaults) {
  // No host: every address, and the endpoint says it named none (kturnd --admin-address).
  EXPECT_EQ(parseOk("http://:8086"),
            (HttpEndpoint{.host = "0.0.0.0", .port = 8086, .path = "/", .host_omitted = true}));
  EXPECT_EQ(parseOk("http://", kDefaultMetricsPort),
            (HttpEndpoint{.host = "0.0.0.0", .port = 8080, .path = "/", .host_omitted = true}));
  EXPECT_EQ(parseOk("http://0.0.0.0:8080/metrics"),
            (HttpEndpoint{.host = "0.0.0.0", .port = 8080, .path = "/metrics"}));
  EXPECT_EQ(
      parseOk("http://:8080/metrics"),
      (HttpEndpoint{.host = "0.0.0.0", .port = 8080, .path = "/metrics", .host_omitted = true}));
}

TEST(HttpEndpointTest, HostPortPathVariants) {
  EXPECT_EQ(parseOk("http://127.0.0.1:0"),
            (HttpEndpoint{.host = "127.0.0.1", .port = 0, .path = "/"}));
  EXPECT_EQ(parseOk("http://10.0.0.1"), (HttpEndpoint{.host = "10.0.0.1", .port = 8086}));
  EXPECT_EQ(parseOk("http://10.0.0.1:"), (HttpEndpoint{.host = "10.0.0.1", .port = 8086}));
  EXPECT_EQ(parseOk("HTTP://localhost:9/x/y?q=1#f"),
            (HttpEndpoint{.host = "localhost", .port = 9, .path = "/x/y"}));
  EXPECT_EQ(parseOk("http://[::1]:8086/live"),
            (HttpEndpoint{.host = "::1", .port = 8086, .path = "/live"}));
  EXPECT_EQ(parseOk("http://[::]"), (HttpEndpoint{.host = "::", .port = 8086}));
}

TEST(HttpEndpointTest, Formatting) {
  EXPECT_EQ(parseOk("http://:8086").hostPort(), "0.0.0.0:8086");
  EXPECT_EQ(parseOk("http://[::1]:80/m").toString(), "http://[::1]:80/m");
}

TEST(HttpEndpointTest, Rejects) {
  for (std::string_view bad : {"https://:8086", ":8086", "8086", "http://:99999", "http://:80a",
                               "http://::1:80", "http://[::1", "http://[::1]x", "http://u@h:1"}) {
    auto result = parseHttpEndpoint(bad, kDefaultHealthCheckPort);
    ASSERT_FALSE(result) << bad;
    EXPECT_EQ(result.error().code, Error::Code::kInvalidArgument);
    EXPECT_NE(result.error().message.find(std::string(bad)), std::string::npos)
        << result.error().message;
  }
}

}  // namespace
}  // namespace kturn::admin
