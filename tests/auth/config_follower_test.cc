#include "auth/config_follower.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cds/cds_server.h"
#include "config/validator.h"

namespace kturn::auth {
namespace {

namespace fs = std::filesystem;

std::string configWithSecret(const std::string& secret) {
  return "version: v1\nauth: {type: ephemeral, credentials: {secret: " + secret +
         "}}\nlisteners: [{name: l, protocol: TURN-UDP, address: 127.0.0.1, port: 3478}]\n";
}

void writeByRename(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".new";
  std::ofstream(tmp) << text;
  fs::rename(tmp, path);
}

std::string currentSecret(const ConfigHolder& holder) {
  const auto config = holder.get();
  return config ? std::string(config->auth.secret().value_or("")) : "";
}

class ConfigFollowerTest : public ::testing::Test {
 protected:
  ConfigFollowerTest() {
    dir_ = fs::temp_directory_path() / ("kturn-auth-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    path_ = dir_ / "stunnerd.conf";
  }
  ~ConfigFollowerTest() override { fs::remove_all(dir_); }

  // Polls (bounded) until the holder serves `secret`: the watcher runs on its own thread.
  bool waitForSecret(const std::string& secret) {
    for (int i = 0; i < 100; ++i) {
      if (currentSecret(holder_) == secret) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  fs::path dir_;
  fs::path path_;
  ConfigHolder holder_;
};

TEST_F(ConfigFollowerTest, FileIsLoadedAtStartAndFollowed) {
  writeByRename(path_, configWithSecret("first"));
  ConfigFollower follower({.origin = "file://" + path_.string()}, holder_);
  ASSERT_TRUE(follower.start());
  EXPECT_EQ(currentSecret(holder_), "first");

  writeByRename(path_, configWithSecret("second"));
  EXPECT_TRUE(waitForSecret("second"));

  // A broken config is refused; the previous one stays in force.
  writeByRename(path_, "version: v1\nlisteners: [{name: l, protocol: TURN-SCTP}]\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_EQ(currentSecret(holder_), "second");
  follower.stop();
}

TEST_F(ConfigFollowerTest, MissingFileFailsTheStart) {
  ConfigFollower follower({.origin = (dir_ / "absent.conf").string()}, holder_);
  EXPECT_FALSE(follower.start());
  ConfigFollower no_origin({}, holder_);
  EXPECT_FALSE(no_origin.start());
}

TEST_F(ConfigFollowerTest, CdsOriginWaitsForTheServer) {
  // Nothing listens there: the start succeeds, requests see no config until one arrives.
  ConfigFollower follower({.origin = "http://127.0.0.1:1", .id = "ns/gw"}, holder_);
  ASSERT_TRUE(follower.start());
  EXPECT_EQ(holder_.get(), nullptr);
  follower.stop();
}

TEST_F(ConfigFollowerTest, CdsConfigsAreFollowed) {
  auto server = cds::CdsServer::start({.address = "127.0.0.1", .port = 0});
  ASSERT_TRUE(server) << server.error().message;
  const auto makeConfig = [](const std::string& secret) {
    config::StunnerConfig c{
        .version = "v1",
        .admin = {.name = "ns/gw"},
        .auth = {.type = "ephemeral", .credentials = {{"secret", secret}}},
        .listeners = {{.name = "ns/gw/udp", .protocol = "TURN-UDP", .address = "127.0.0.1"}},
    };
    EXPECT_TRUE(config::validate(c));
    return c;
  };
  ASSERT_TRUE((*server)->upsert("ns/gw", makeConfig("first")));
  ASSERT_TRUE((*server)->upsert("ns/other", makeConfig("other")));
  ConfigFollower follower(
      {.origin = "http://127.0.0.1:" + std::to_string((*server)->port()), .id = "ns/gw"}, holder_);
  ASSERT_TRUE(follower.start());
  EXPECT_TRUE(waitForSecret("first"));
  ASSERT_TRUE((*server)->upsert("ns/gw", makeConfig("rotated")));
  EXPECT_TRUE(waitForSecret("rotated"));
  follower.stop();
}

}  // namespace
}  // namespace kturn::auth
