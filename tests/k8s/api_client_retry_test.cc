// ApiClient's retries, as client-go's rest client makes them: a 429 (API Priority and Fairness
// has no seat for the request) or a 5xx that carries Retry-After is sent again after that many
// seconds, up to 10 times; anything else, or an answer without Retry-After, is returned as it is.
#include <gtest/gtest.h>

#include "k8s/api_client.h"
#include "k8s/rest_config.h"
#include "k8s/scripted_api_server.h"

namespace kturn::k8s {
namespace {

using Response = kturn::testing::ScriptedApiServer::Response;

std::unique_ptr<ApiClient> clientOf(const kturn::testing::ScriptedApiServer& server) {
  auto config = parseServerUrl(server.url());
  EXPECT_TRUE(config) << config.error().message;
  auto client = ApiClient::create(*config);
  EXPECT_TRUE(client);
  return std::move(*client);
}

TEST(ApiClientRetry, A429WithRetryAfterIsSentAgainAfterThatLong) {
  kturn::testing::ScriptedApiServer server(
      {{.status = 429, .retryAfter = "1"}, {.status = 429, .retryAfter = "0"}});
  auto response = clientOf(server)->list(resources::gateway());
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_EQ(response->status, 200);
  const auto seen = server.seen();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].target, seen[2].target);
  EXPECT_GE(seen[1].at - seen[0].at, std::chrono::seconds(1));
}

TEST(ApiClientRetry, A5xxWithRetryAfterIsRetriedTooButNotOtherErrors) {
  kturn::testing::ScriptedApiServer unavailable({{.status = 503, .retryAfter = "0"}});
  auto retried = clientOf(unavailable)->get(resources::gateway(), "media", "gw");
  ASSERT_TRUE(retried);
  EXPECT_EQ(retried->status, 200);
  EXPECT_EQ(unavailable.seen().size(), 2u);

  kturn::testing::ScriptedApiServer conflict({{.status = 409, .retryAfter = "0"}});
  auto returned = clientOf(conflict)->get(resources::gateway(), "media", "gw");
  ASSERT_TRUE(returned);
  EXPECT_EQ(returned->status, 409);
  EXPECT_EQ(conflict.seen().size(), 1u);
}

TEST(ApiClientRetry, WithoutANumericRetryAfterTheAnswerIsReturned) {
  kturn::testing::ScriptedApiServer server({{.status = 429},
                                            {.status = 429, .retryAfter = "soon"},
                                            {.status = 500, .retryAfter = "-1"}});
  auto client = clientOf(server);
  for (int expected : {429, 429, 500}) {
    auto response = client->list(resources::gateway());
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, expected);
    EXPECT_EQ(response->body["message"], "scripted");
  }
  EXPECT_EQ(server.seen().size(), 3u);
}

TEST(ApiClientRetry, TenRetriesThenTheLastAnswer) {
  std::vector<Response> script(ApiClient::kMaxRetries + 2, {.status = 429, .retryAfter = "0"});
  kturn::testing::ScriptedApiServer server(script);
  auto response = clientOf(server)->list(resources::gateway());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 429);
  EXPECT_EQ(server.seen().size(), static_cast<size_t>(ApiClient::kMaxRetries + 1));
}

TEST(ApiClientRetry, AWaitPastTheLimitIsNotWaited) {
  kturn::testing::ScriptedApiServer server({{.status = 429, .retryAfter = "3600"}});
  auto client = clientOf(server);
  client->setMaxRetryWait(std::chrono::seconds(5));
  auto response = client->list(resources::gateway());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 429);
  EXPECT_EQ(server.seen().size(), 1u);
}

}  // namespace
}  // namespace kturn::k8s
