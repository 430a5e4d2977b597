#include "config/config_source.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace kturn::config {
namespace {

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    path_ = std::filesystem::temp_directory_path() /
            ("kturn-config-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(ConfigSource, EmbeddedDefaultHasAGeneratedSecret) {
  auto a = loadConfig("");
  auto b = loadConfig("");
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a->generated_secret);
  EXPECT_EQ(a->config.auth.authType(), config::AuthType::kEphemeral);
  EXPECT_NE(a->config.auth.secret(), b->config.auth.secret());
  ASSERT_EQ(a->config.listeners.size(), 1u);
  EXPECT_EQ(a->config.listeners[0].address, "127.0.0.1");
  EXPECT_EQ(a->config.listeners[0].port, 3478);
}

TEST(ConfigSource, ReadsAFileByPathOrFileUri) {
  TempFile f("version: v1\nauth: {type: none}\nlisteners: [{name: l, port: 3478}]\n");
  auto by_path = loadConfig(f.path());
  auto by_uri = loadConfig("file://" + f.path());
  ASSERT_TRUE(by_path) << by_path.error().message;
  ASSERT_TRUE(by_uri);
  EXPECT_EQ(by_uri->config.listeners[0].name, "l");
  EXPECT_TRUE(isReloadable(f.path()));
  EXPECT_TRUE(isReloadable("file://" + f.path()));
  EXPECT_FALSE(isReloadable(""));
  EXPECT_FALSE(isReloadable("turn://u:p@127.0.0.1:3478"));
}

TEST(ConfigSource, ErrorsNameTheFileAndTheField) {
  auto missing = loadConfig("/nonexistent/kturn.yaml");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("/nonexistent/kturn.yaml"), std::string::npos);

  TempFile bad("version: v1\nauth: {type: none}\nlisteners: [{name: l, port: 70000}]\n");
  auto invalid = loadConfig(bad.path());
  ASSERT_FALSE(invalid);
  EXPECT_NE(invalid.error().message.find(bad.path()), std::string::npos);
  EXPECT_NE(invalid.error().message.find("listeners[0].port"), std::string::npos)
      << invalid.error().message;
}

TEST(ConfigSource, TurnUriBuildsAStaticConfig) {
  auto c = loadConfig("turn://user1:pass1@127.0.0.1:3478?transport=udp");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->config.auth.authType(), config::AuthType::kStatic);
  EXPECT_EQ(c->config.auth.username(), "user1");
}

TEST(ConfigSource, DiscoveryOriginsAreLeftToTheCdsClient) {
  auto c = loadConfig("http://stunner-config-discovery:13478");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("config discovery server"), std::string::npos);
}

TEST(ConfigSource, BareHostPortIsADiscoveryServer) {
  EXPECT_EQ(normalizeOrigin("10.0.0.1:13478"), "http://10.0.0.1:13478");
  EXPECT_EQ(normalizeOrigin("stunner-cds:13478"), "http://stunner-cds:13478");
  EXPECT_EQ(normalizeOrigin("ws://cds:13478"), "ws://cds:13478");
  EXPECT_EQ(normalizeOrigin("/etc/kturn/stunnerd.conf"), "/etc/kturn/stunnerd.conf");
  EXPECT_EQ(normalizeOrigin("./dir:1/conf"), "./dir:1/conf");
  EXPECT_EQ(normalizeOrigin("stunnerd.conf"), "stunnerd.conf");
  EXPECT_EQ(normalizeOrigin("host:"), "host:");
  EXPECT_EQ(normalizeOrigin("turn:127.0.0.1:3478"), "turn:127.0.0.1:3478");
  EXPECT_EQ(normalizeOrigin(""), "");
}

}  // namespace
}  // namespace kturn::config
