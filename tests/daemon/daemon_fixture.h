// Starting a whole Daemon on a config file for in-process daemon tests.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "daemon/daemon.h"

namespace kturn::daemon::testing {

// A Daemon with `workers` workers on the config file at `path` (a file:// origin), started; null
// (and the test failed) if it did not start.
inline std::unique_ptr<Daemon> startDaemonOn(const std::filesystem::path& path, size_t workers = 2,
                                             bool udp_segmentation = true) {
  Daemon::Options options;
  options.origin = "file://" + path.string();
  options.workers = workers;
  options.udp_segmentation = udp_segmentation;
  auto daemon = std::make_unique<Daemon>(options);
  auto started = daemon->start();
  EXPECT_TRUE(started) << started.error().message;
  return started ? std::move(daemon) : nullptr;
}

}  // namespace kturn::daemon::testing
