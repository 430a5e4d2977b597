#include "auth/credential.h"

#include <gtest/gtest.h>

#include "turn/authenticator.h"

namespace kturn::auth {
namespace {

using std::chrono::seconds;
const auto kNow = std::chrono::system_clock::time_point(seconds(1'800'000'000));

TEST(MintCredential, EphemeralUsernameCarriesExpiryAndUserId) {
  const config::Auth auth{.type = "ephemeral", .credentials = {{"secret", "s3cret"}}};
  const auto c = mintCredential(auth, "alice", kNow, seconds(600));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->username, "1800000600:alice");
  EXPECT_EQ(c->password, turn::restPassword("s3cret", "1800000600:alice"));
}

TEST(MintCredential, EphemeralWithoutUserIdKeepsTheColonAsStunner) {
  const config::Auth auth{.type = "timewindowed", .credentials = {{"secret", "s3cret"}}};
  const auto c = mintCredential(auth, "", kNow, kDefaultTtl);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->username, "1800086400:");
}

TEST(MintCredential, EphemeralUsesTheCurrentSecretDuringRotation) {
  const config::Auth auth{
      .type = "ephemeral",
      .credentials = {
          {"secret", "new"}, {"previous_secret", "old"}, {"previous_secret_expiry", "1900000000"}}};
  const auto c = mintCredential(auth, "u", kNow, seconds(60));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->password, turn::restPassword("new", c->username));
}

TEST(MintCredential, StaticReturnsTheConfiguredPair) {
  const config::Auth auth{.type = "static",
                          .credentials = {{"username", "user1"}, {"password", "pass1"}}};
  const auto c = mintCredential(auth, "ignored", kNow, seconds(60));
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (Credential{"user1", "pass1"}));
}

// Auth type none checks no credential: the answer is an empty one, as stunner-auth-service's.
TEST(MintCredential, NoneIsAnEmptyCredential) {
  const auto c = mintCredential({.type = "none"}, "u", kNow, seconds(1));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(*c, (Credential{"", ""}));
}

TEST(MintCredential, IncompleteConfigsAreErrors) {
  EXPECT_FALSE(mintCredential({.type = "ephemeral"}, "u", kNow, seconds(1)));
  EXPECT_FALSE(mintCredential({.type = "static", .credentials = {{"username", "u"}}}, "u", kNow,
                              seconds(1)));
}

}  // namespace
}  // namespace kturn::auth
