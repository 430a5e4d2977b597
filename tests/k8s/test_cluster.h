// Shared by the k8s tests: a started test API server with the seed 000 manifests and a client
// for it, and a bounded wait.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <thread>

#include "k8s/api_client.h"
#include "k8s/rest_config.h"
#include "support/k8s_api_server/test_api_server.h"

namespace kturn::k8s::test {

// tests/golden/seed000/input, found from this header's own path.
inline std::string seedManifests() {
  return (std::filesystem::path(__FILE__).parent_path().parent_path() / "golden" / "seed000" /
          "input")
      .string();
}

// Polls `done` every 10 ms for up to `limit`.
inline bool eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

inline std::unique_ptr<ApiClient> clientFor(const testing::TestApiServer& server) {
  auto config = loadKubeconfig(server.kubeconfig());
  EXPECT_TRUE(config) << config.error().message;
  if (!config) return nullptr;
  auto client = ApiClient::create(*config);
  EXPECT_TRUE(client) << client.error().message;
  return client ? std::move(client).value() : nullptr;
}

}  // namespace kturn::k8s::test
