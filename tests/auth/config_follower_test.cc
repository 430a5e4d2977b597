#include "auth/config_follower.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
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

// The secret of the one config held; empty when there is none (or several).
std::string currentSecret(const ConfigHolder& holder) {
  const auto configs = holder.get();
  if (configs->size() != 1) return "";
  return std::string(configs->begin()->second->auth.secret().value_or(""));
}

// id -> secret of every config held.
std::map<std::string, std::string> secrets(const ConfigHolder& holder) {
  std::map<std::string, std::string> out;
  // Held for the loop: a range over `*holder.get()` would outlive the temporary pointer, and a
  // concurrent upsert could free the set under it.
  const auto configs = holder.get();
  for (const auto& [id, config] : *configs) {
    out[id] = std::string(config->auth.secret().value_or(""));
  }
  return out;
}

config::StunnerConfig cdsConfig(const std::string& id, const std::string& secret) {
  config::StunnerConfig c{
      .version = "v1",
      .admin = {.name = id},
      .auth = {.type = "ephemeral", .credentials = {{"secret", secret}}},
      .listeners = {{.name = id + "/udp", .protocol = "TURN-UDP", .address = "127.0.0.1"}},
  };
  EXPECT_TRUE(config::validate(c));
  return c;
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
  // The same for every config held: id -> secret.
  bool waitForSecrets(const std::map<std::string, std::string>& want) {
    for (int i = 0; i < 100; ++i) {
      if (secrets(holder_) == want) return true;
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
  EXPECT_TRUE(holder_.get()->empty());
  follower.stop();
  ConfigFollower every_gateway({.origin = "http://127.0.0.1:1"}, holder_);
  ASSERT_TRUE(every_gateway.start());
  EXPECT_TRUE(holder_.get()->empty());
  every_gateway.stop();
}

TEST_F(ConfigFollowerTest, CdsConfigsAreFollowed) {
  auto server = cds::CdsServer::start({.address = "127.0.0.1", .port = 0});
  ASSERT_TRUE(server) << server.error().message;
  ASSERT_TRUE((*server)->upsert("ns/gw", cdsConfig("ns/gw", "first")));
  ASSERT_TRUE((*server)->upsert("ns/other", cdsConfig("ns/other", "other")));
  ConfigFollower follower(
      {.origin = "http://127.0.0.1:" + std::to_string((*server)->port()), .id = "ns/gw"}, holder_);
  ASSERT_TRUE(follower.start());
  EXPECT_TRUE(waitForSecret("first"));
  ASSERT_TRUE((*server)->upsert("ns/gw", cdsConfig("ns/gw", "rotated")));
  EXPECT_TRUE(waitForSecret("rotated"));
  EXPECT_EQ(secrets(holder_), (std::map<std::string, std::string>{{"ns/gw", "rotated"}}));
  // The Gateway deleted: no credentials for it any more; created again: followed again.
  ASSERT_TRUE((*server)->remove("ns/gw"));
  EXPECT_TRUE(waitForSecrets({}));
  ASSERT_TRUE((*server)->upsert("ns/gw", cdsConfig("ns/gw", "again")));
  EXPECT_TRUE(waitForSecret("again"));
  follower.stop();
}

// Without --id: every gateway of the server, each under its id; added, rotated and deleted
// gateways are followed without a restart.
TEST_F(ConfigFollowerTest, CdsWithoutIdFollowsEveryGateway) {
  auto server = cds::CdsServer::start({.address = "127.0.0.1", .port = 0});
  ASSERT_TRUE(server) << server.error().message;
  ASSERT_TRUE((*server)->upsert("ns/a", cdsConfig("ns/a", "secret-a")));
  ASSERT_TRUE((*server)->upsert("other/b", cdsConfig("other/b", "secret-b")));
  ConfigFollower follower({.origin = "http://127.0.0.1:" + std::to_string((*server)->port())},
                          holder_);
  ASSERT_TRUE(follower.start());
  EXPECT_TRUE(waitForSecrets({{"ns/a", "secret-a"}, {"other/b", "secret-b"}}));

  ASSERT_TRUE((*server)->upsert("other/b", cdsConfig("other/b", "rotated-b")));
  ASSERT_TRUE((*server)->upsert("ns/c", cdsConfig("ns/c", "secret-c")));
  EXPECT_TRUE(
      waitForSecrets({{"ns/a", "secret-a"}, {"other/b", "rotated-b"}, {"ns/c", "secret-c"}}));
  ASSERT_TRUE((*server)->remove("ns/a"));
  EXPECT_TRUE(waitForSecrets({{"other/b", "rotated-b"}, {"ns/c", "secret-c"}}));
  follower.stop();
}

// synced(), kturn-auth's /ready: a file at once; a CDS origin once a session reached the
// server's state, which an operator replica that has not rendered yet (503) does not give.
TEST_F(ConfigFollowerTest, SyncedOnceTheOriginsStateIsRead) {
  writeByRename(path_, configWithSecret("s"));
  ConfigFollower file({.origin = path_.string()}, holder_);
  ASSERT_TRUE(file.start());
  EXPECT_TRUE(file.synced());
  file.stop();

  ConfigFollower nobody({.origin = "http://127.0.0.1:1"}, holder_);
  ASSERT_TRUE(nobody.start());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(nobody.synced());
  nobody.stop();

  auto server = cds::CdsServer::start({.address = "127.0.0.1", .port = 0, .wait_for_state = true});
  ASSERT_TRUE(server) << server.error().message;
  const std::string origin = "http://127.0.0.1:" + std::to_string((*server)->port());
  ConfigFollower every({.origin = origin}, holder_);
  ConfigFollower one({.origin = origin, .id = "ns/absent"}, holder_);
  ASSERT_TRUE(every.start());
  ASSERT_TRUE(one.start());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(every.synced());
  EXPECT_FALSE(one.synced());
  // The first render: an empty cluster is a state too, and a Gateway not there yet does not
  // hold a follower of one id back.
  ASSERT_TRUE((*server)->update({}));
  bool both = false;
  for (int i = 0; i < 60 && !both; ++i) {  // the clients retry once a second
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    both = every.synced() && one.synced();
  }
  EXPECT_TRUE(both);
  every.stop();
  one.stop();
}

}  // namespace
}  // namespace kturn::auth
