// Long-term credentials, nonces and the auth modes (RFC 8489 §9.2, STUNner's static/ephemeral).
#include "turn/authenticator.h"
#include "turn/nonce.h"
#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

TEST_F(TurnTest, BindingNeedsNoCredentialsAndReportsTheMappedAddress) {
  auto reply = fromClient(buildRequest(stun::Method::kBinding, {}, /*auth=*/false));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(reply->xorAddress(stun::attr::kXorMappedAddress), tuple_.client);
  EXPECT_EQ(stun::checkFingerprint(reply->view()), stun::IntegrityCheck::kValid);
  EXPECT_EQ(server_->stats().requests_binding, 1u);
}

TEST_F(TurnTest, AllocateWithoutIntegrityIsChallengedWithRealmAndNonce) {
  auto reply = fromClient(buildRequest(stun::Method::kAllocate, {}, /*auth=*/false));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->errorCode(), 401);
  EXPECT_EQ(reply->string(stun::attr::kRealm), "kturn.test");
  EXPECT_EQ(reply->string(stun::attr::kNonce).size(), NonceGenerator::kSize);
  EXPECT_FALSE(reply->view().has(stun::attr::kMessageIntegrity));
  EXPECT_EQ(server_->stats().auth_missing, 1u);
}

TEST_F(TurnTest, SuccessResponsesCarryAValidMessageIntegrity) {
  auto reply = allocate();
  ASSERT_EQ(reply.cls(), stun::MessageClass::kSuccessResponse) << reply.errorCode();
  const auto key = stun::longTermKey("user1", "kturn.test", "pass1");
  EXPECT_EQ(stun::checkMessageIntegrity(reply.view(), key.span()), stun::IntegrityCheck::kValid);
}

TEST_F(TurnTest, WrongPasswordAndUnknownUserAreRefusedWith401) {
  password_ = "wrong";
  EXPECT_EQ(allocate().errorCode(), 401);
  EXPECT_EQ(server_->stats().auth_bad_integrity, 2u);  // the try and the retry with a nonce
  password_ = "pass1";
  username_ = "nobody";
  EXPECT_EQ(allocate().errorCode(), 401);
  EXPECT_EQ(server_->stats().auth_unknown_user, 2u);
  EXPECT_EQ(server_->allocationCount(), 0u);
}

TEST_F(TurnTest, MissingRealmOrNonceWithIntegrityIs400) {
  auto bytes = buildRequest(
      stun::Method::kAllocate,
      [](stun::MessageBuilder& b) {
        const uint8_t udp[] = {17, 0, 0, 0};
        b.add(stun::attr::kRequestedTransport, udp)
            .addString(stun::attr::kUsername, "user1")
            .addMessageIntegrity(stun::longTermKey("user1", "kturn.test", "pass1").span());
      },
      /*auth=*/false);
  auto reply = fromClient(bytes);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->errorCode(), 400);
}

TEST_F(TurnTest, ExpiredNonceDraws438WithAFreshNonce) {
  ASSERT_EQ(allocate([](auto& b) { b.addUint32(stun::attr::kLifetime, 1200); }).cls(),
            stun::MessageClass::kSuccessResponse);
  const std::string old_nonce = nonce_;
  advance(Seconds(601));  // past the 600 s nonce lifetime, within the allocation's
  auto reply = fromClient(buildRequest(stun::Method::kRefresh, {}));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->errorCode(), 438);
  EXPECT_NE(reply->string(stun::attr::kNonce), old_nonce);
  EXPECT_EQ(reply->string(stun::attr::kRealm), "kturn.test");
  // The client retries with the new nonce and succeeds.
  EXPECT_EQ(refresh(std::nullopt).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_GE(server_->stats().auth_stale_nonce, 1u);
}

TEST_F(TurnTest, NonceIsBoundToTheClientAddress) {
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  tuple_.client.ip = *IpAddress::parse("192.0.2.99");  // another client reusing the nonce
  auto reply = fromClient(buildRequest(stun::Method::kAllocate, [](stun::MessageBuilder& b) {
    const uint8_t udp[] = {17, 0, 0, 0};
    b.add(stun::attr::kRequestedTransport, udp);
  }));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->errorCode(), 438);
}

TEST_F(TurnTest, NonceServesEveryPortOfTheClientsAddress) {
  // RFC 6062 data connections and reconnects come from new ports of the same host.
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  tuple_.client.port += 1;
  auto reply = fromClient(buildRequest(stun::Method::kAllocate, [](stun::MessageBuilder& b) {
    const uint8_t udp[] = {17, 0, 0, 0};
    b.add(stun::attr::kRequestedTransport, udp);
  }));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->cls(), stun::MessageClass::kSuccessResponse);
}

TEST_F(TurnTest, ForgedNonceIsNotAccepted) {
  nonce_ = std::string(NonceGenerator::kSize, 'a');
  auto reply = fromClient(buildRequest(stun::Method::kAllocate, {}));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->errorCode(), 438);
}

TEST_F(TurnTest, RequestsOnAnAllocationMustUseItsUsername) {
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  ServerConfig c = staticConfig();
  c.static_username = "user2";  // a second valid user would be needed; reuse via static swap
  applyConfig(c);
  username_ = "user2";
  EXPECT_EQ(refresh(std::nullopt).errorCode(), 441);
}

class EphemeralTest : public TurnTest {
 protected:
  EphemeralTest() {
    ServerConfig c = staticConfig();
    c.auth_mode = AuthMode::kEphemeral;
    reset(c);
  }
  void useRestCredential(int64_t expiry, const std::string& user) {
    username_ = std::to_string(expiry) + ":" + user;
    password_ = restPassword("s3cret", username_);
  }
};

TEST(RestCredentials, PasswordIsBase64OfHmacSha1OfTheUsername) {
  // base64(HMAC-SHA1("s3cret", "1800000000:alice")), computed independently with openssl:
  //   printf %s 1800000000:alice | openssl dgst -sha1 -hmac s3cret -binary | base64
  EXPECT_EQ(restPassword("s3cret", "1800000000:alice"), "3i66Yob+5ER4xVxIRXhvnAp6moo=");
  EXPECT_EQ(restUsernameExpiry("1800000000:alice"), 1800000000);
  EXPECT_EQ(restUsernameExpiry("1800000000"), 1800000000);
  EXPECT_FALSE(restUsernameExpiry("alice:1800000000"));
  EXPECT_FALSE(restUsernameExpiry(""));
}

TEST_F(EphemeralTest, ValidRestCredentialAllocates) {
  useRestCredential(now_.unix_seconds + 3600, "alice");
  EXPECT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
}

TEST_F(EphemeralTest, ExpiredRestCredentialIsRefused) {
  useRestCredential(now_.unix_seconds - 1, "alice");
  EXPECT_EQ(allocate().errorCode(), 401);
  EXPECT_EQ(server_->stats().auth_expired, 2u);  // the try and the retry with a nonce
  EXPECT_EQ(server_->allocationCount(), 0u);
}

TEST_F(EphemeralTest, UsernameWithoutTimestampIsRefused) {
  username_ = "alice";
  password_ = restPassword("s3cret", username_);
  EXPECT_EQ(allocate().errorCode(), 401);
}

TEST_F(EphemeralTest, CredentialMintedWithAnotherSecretIsRefused) {
  username_ = std::to_string(now_.unix_seconds + 3600) + ":alice";
  password_ = restPassword("other-secret", username_);
  EXPECT_EQ(allocate().errorCode(), 401);
}

TEST_F(EphemeralTest, AllocationOutlivesSecretRotationUntilItsCredentialExpires) {
  useRestCredential(now_.unix_seconds + 1200, "alice");
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  ServerConfig rotated = staticConfig();
  rotated.auth_mode = AuthMode::kEphemeral;
  rotated.shared_secret = "new-secret";
  applyConfig(rotated);
  // Refreshing the existing allocation still works with the credential it was made with.
  EXPECT_EQ(refresh(600).cls(), stun::MessageClass::kSuccessResponse);
  // Past the credential's embedded expiry, it stops.
  advance(Seconds(1201));
  EXPECT_EQ(refresh(600).errorCode(), 401);
}

TEST_F(TurnTest, AuthNoneServesStunButRefusesTurn) {
  ServerConfig c = staticConfig();
  c.auth_mode = AuthMode::kNone;
  reset(c);
  auto binding = fromClient(buildRequest(stun::Method::kBinding, {}, false));
  ASSERT_TRUE(binding);
  EXPECT_EQ(binding->cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(allocate().errorCode(), 403);
}

}  // namespace
}  // namespace kturn::turn::testing

namespace kturn::turn::testing {
namespace {

// Shared-secret rotation without failed calls (kturn extension): during the overlap credentials
// minted with the old and the new secret both work; after it only the new one does.
class RotationTest : public TurnTest {
 protected:
  RotationTest() {
    ServerConfig c = staticConfig();
    c.auth_mode = AuthMode::kEphemeral;
    c.shared_secret = "old-secret";
    reset(c);
  }
  ServerConfig rotated(int64_t overlap_until) {
    ServerConfig c = staticConfig();
    c.auth_mode = AuthMode::kEphemeral;
    c.shared_secret = "new-secret";
    c.previous_secrets.push_back({"old-secret", overlap_until});
    return c;
  }
  stun::MessageClass allocateWith(const std::string& secret, uint16_t client_port) {
    tuple_.client.port = client_port;
    nonce_.clear();
    username_ = std::to_string(now_.unix_seconds + 3600) + ":alice";
    password_ = restPassword(secret, username_);
    return allocate().cls();
  }
};

TEST_F(RotationTest, BeforeDuringAndAfterTheOverlap) {
  EXPECT_EQ(allocateWith("old-secret", 1001), stun::MessageClass::kSuccessResponse);  // before
  EXPECT_EQ(allocateWith("new-secret", 1002), stun::MessageClass::kErrorResponse);

  applyConfig(rotated(now_.unix_seconds + 600));  // during: both secrets mint valid credentials
  EXPECT_EQ(allocateWith("old-secret", 1003), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(allocateWith("new-secret", 1004), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(allocateWith("other", 1005), stun::MessageClass::kErrorResponse);

  advance(Seconds(601));  // after: old-secret credentials fail, new ones work
  EXPECT_EQ(allocateWith("old-secret", 1006), stun::MessageClass::kErrorResponse);
  EXPECT_EQ(allocateWith("new-secret", 1007), stun::MessageClass::kSuccessResponse);
}

}  // namespace
}  // namespace kturn::turn::testing

namespace kturn::turn::testing {
namespace {

TEST_F(TurnTest, AuthFailureFloodFromOneAddressIsThrottledWithoutHurtingOthers) {
  ServerConfig c = staticConfig();
  c.auth_failures_per_window = 5;
  c.auth_failure_window_seconds = 10;
  reset(c);
  password_ = "wrong";
  ASSERT_EQ(allocate().errorCode(), 401);  // learns the nonce; 2 failures
  for (int i = 0; i < 3; ++i) {
    auto reply = fromClient(buildRequest(stun::Method::kAllocate, {}));
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->errorCode(), 401);
  }
  // The 6th attempt, even with the right password, is dropped unanswered.
  password_ = "pass1";
  EXPECT_FALSE(fromClient(buildRequest(stun::Method::kAllocate, {})));
  EXPECT_GE(server_->stats().auth_throttled, 1u);

  // Another source is unaffected.
  const FiveTuple flooder = tuple_;
  tuple_.client = addr("192.0.2.99:5000");
  nonce_.clear();
  EXPECT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);

  // The flooder is served again after the window.
  tuple_ = flooder;
  nonce_.clear();
  advance(Seconds(11));
  EXPECT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
}

// admin.limits.block_seconds: the source that uses up its failures goes to the SourceBlocker.
struct RecordingBlocker : SourceBlocker {
  struct Call {
    ListenerId listener;
    FiveTuple five_tuple;
    MonoTime until;
  };
  bool block(ListenerId listener, const FiveTuple& five_tuple, MonoTime until) override {
    calls.push_back({listener, five_tuple, until});
    return listed;
  }
  bool listed = true;
  std::vector<Call> calls;
};

class SourceBlockTest : public TurnTest {
 protected:
  void withBlocking(int64_t block_seconds, std::vector<IpPrefix> trusted = {}) {
    ServerConfig c = staticConfig();
    c.auth_failures_per_window = 3;
    c.auth_failure_window_seconds = 10;
    c.block_seconds = block_seconds;
    c.trusted_sources = std::move(trusted);
    reset(c);
    server_->setSourceBlocker(&blocker_);
  }
  // Sends `n` Allocates with a wrong password (the first learns the nonce); returns how many were
  // answered.
  int failAuthentication(int n) {
    password_ = "wrong";
    int answered = 0;
    for (int i = 0; i < n; ++i) {
      if (nonce_.empty()) {
        answered += allocate().errorCode() == 401;
      } else if (auto reply = fromClient(buildRequest(stun::Method::kAllocate, {}))) {
        answered += reply->errorCode() == 401;
      }
    }
    password_ = "pass1";
    return answered;
  }
  RecordingBlocker blocker_;
};

TEST_F(SourceBlockTest, TheFailureThatUsesUpTheAllowanceBlocksTheSourceOnce) {
  withBlocking(60);
  failAuthentication(10);
  ASSERT_EQ(blocker_.calls.size(), 1u);
  EXPECT_EQ(blocker_.calls[0].listener, kListener);
  EXPECT_EQ(blocker_.calls[0].five_tuple, tuple_);
  EXPECT_EQ(blocker_.calls[0].until, now_.mono + Seconds(60));
  EXPECT_EQ(server_->stats().sources_blocked, 1u);
  // The next window's flood blocks it again.
  advance(Seconds(11));
  nonce_.clear();
  failAuthentication(10);
  EXPECT_EQ(blocker_.calls.size(), 2u);
}

TEST_F(SourceBlockTest, ASourceTheBlockerCouldNotListIsNotCounted) {
  withBlocking(60);
  blocker_.listed = false;  // a TCP source, or a write the kernel refused
  failAuthentication(10);
  EXPECT_EQ(blocker_.calls.size(), 1u);
  EXPECT_EQ(server_->stats().sources_blocked, 0u);
  EXPECT_GE(server_->stats().auth_throttled, 1u);  // the throttle holds alone
}

TEST_F(SourceBlockTest, BlockSecondsZeroBlocksNothingAndTheThrottleStillHolds) {
  withBlocking(0);
  failAuthentication(10);
  EXPECT_TRUE(blocker_.calls.empty());
  EXPECT_GE(server_->stats().auth_throttled, 1u);
}

TEST_F(SourceBlockTest, TrustedSourcesAreNeitherThrottledNorBlocked) {
  withBlocking(60, {IpPrefix{tuple_.client.ip, 32}});
  EXPECT_EQ(failAuthentication(10), 10);  // every attempt answered
  EXPECT_TRUE(blocker_.calls.empty());
  EXPECT_EQ(server_->stats().auth_throttled, 0u);
  EXPECT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
}

}  // namespace
}  // namespace kturn::turn::testing
