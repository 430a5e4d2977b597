// Shared by the k8s tests: the seed 000 manifests, the real control plane's scope and clients
// (tests/support/control_plane.h), and a bounded wait.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "support/control_plane.h"

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

}  // namespace kturn::k8s::test
