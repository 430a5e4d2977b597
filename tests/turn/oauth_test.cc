// Third-party authorization (RFC 7635): the ACCESS-TOKEN codec (src/turn/access_token.h) and
// the core authenticating with it. Tokens are built here with encodeAccessToken, the
// authorization server's side; coturn's client does the same in interop_uclient_oauth.
#include "support/turn_request.h"
#include "turn/access_token.h"
#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

const std::vector<uint8_t> kKey256(32, 0x42);  // the key shared with the authorization server
const std::vector<uint8_t> kKey128(16, 0x17);
constexpr std::array<uint8_t, kAccessTokenNonceSize> kNonce{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

AccessToken sessionToken(int64_t issued, uint32_t lifetime, uint8_t mac_size = 20) {
  AccessToken t;
  for (uint8_t i = 0; i < mac_size; ++i) t.mac_key[i] = static_cast<uint8_t>(0xA0 + i);
  t.mac_key_size = mac_size;
  t.issued_unix = issued;
  t.lifetime = lifetime;
  return t;
}

std::vector<uint8_t> encode(const AccessToken& t, std::string_view server,
                            const std::vector<uint8_t>& key) {
  std::vector<uint8_t> out(128);
  out.resize(encodeAccessToken(t, server, key, kNonce, out));
  return out;
}

TEST(AccessTokenTest, RoundTripsWithEitherKeySize) {
  for (const auto* key : {&kKey256, &kKey128}) {
    for (uint8_t mac : {20, 32}) {
      const auto token = encode(sessionToken(1'800'000'000, 3600, mac), "turn.example", *key);
      ASSERT_EQ(token.size(), 2u + 12 + 2 + mac + 12 + 16);
      const auto got = decodeAccessToken(token, "turn.example", *key);
      ASSERT_TRUE(got);
      EXPECT_EQ(got->mac_key_size, mac);
      EXPECT_EQ(got->mac_key[0], 0xA0);
      EXPECT_EQ(got->issued_unix, 1'800'000'000);
      EXPECT_EQ(got->lifetime, 3600u);
    }
  }
}

TEST(AccessTokenTest, AnotherKeyServerNameOrAnyFlippedByteFails) {
  const auto token = encode(sessionToken(1, 2), "turn.example", kKey256);
  EXPECT_FALSE(decodeAccessToken(token, "turn.example", kKey128));
  EXPECT_FALSE(decodeAccessToken(token, "other.example", kKey256));
  for (size_t i = 0; i < token.size(); ++i) {
    auto forged = token;
    forged[i] ^= 0x01;
    EXPECT_FALSE(decodeAccessToken(forged, "turn.example", kKey256)) << "byte " << i;
  }
  for (size_t n = 0; n < token.size(); ++n) {
    EXPECT_FALSE(decodeAccessToken({token.data(), n}, "turn.example", kKey256)) << n;
  }
}

class OAuthTest : public TurnTest {
 protected:
  void SetUp() override {
    ServerConfig c = staticConfig();
    c.oauth_server_name = "turn.example";
    c.oauth_keys = {{"north", kKey256}, {"union", kKey128}};
    reset(c);
  }
  // A request signed the RFC 7635 way: USERNAME the kid, MESSAGE-INTEGRITY keyed with the
  // token's mac-key, and the token (if any) in ACCESS-TOKEN.
  std::optional<Reply> send(stun::Method method, const Fill& fill, std::string_view kid,
                            const std::vector<uint8_t>& token, const AccessToken& session) {
    stun::TransactionId txid{};
    txid[0] = static_cast<uint8_t>(++counter_);
    const auto attributes = [&](stun::MessageBuilder& b) {
      if (fill) fill(b);
      if (!token.empty()) b.add(stun::attr::kAccessToken, token);
    };
    ::kturn::testing::TurnRequest request{
        .method = method, .transaction_id = txid, .fill = attributes, .fingerprint = false};
    request.credentials = {.username = kid,
                           .realm = realm_,
                           .nonce = nonce_,
                           .key = {session.mac_key.data(), session.mac_key_size}};
    return fromClient(*::kturn::testing::buildRequest(request));
  }
  Reply challenge() {
    auto reply = fromClient(buildRequest(stun::Method::kAllocate, allocateFill({}), false));
    nonce_ = reply->string(stun::attr::kNonce);
    return *reply;
  }
  int counter_ = 0;
};

TEST_F(OAuthTest, TheChallengeNamesTheServerAndATokenAllocates) {
  const Reply c = challenge();
  EXPECT_EQ(c.errorCode(), 401);
  EXPECT_EQ(c.string(stun::attr::kThirdPartyAuthorization), "turn.example");
  const AccessToken session = sessionToken(now_.unix_seconds - 10, 3600);
  auto reply = send(stun::Method::kAllocate, allocateFill({}), "north",
                    encode(session, "turn.example", kKey256), session);
  ASSERT_TRUE(reply);
  ASSERT_EQ(reply->cls(), stun::MessageClass::kSuccessResponse) << reply->errorCode();
  // The response is signed with the session key, which the client holds.
  EXPECT_EQ(stun::checkMessageIntegrity(reply->view(), {session.mac_key.data(), 20}),
            stun::IntegrityCheck::kValid);
  // Later requests need no token: the allocation keeps the mac-key, under any kid.
  auto permission = send(
      stun::Method::kCreatePermission,
      [](stun::MessageBuilder& b) {
        b.addXorAddress(stun::attr::kXorPeerAddress, addr("10.2.0.9:1"));
      },
      "union", {}, session);
  ASSERT_TRUE(permission);
  EXPECT_EQ(permission->cls(), stun::MessageClass::kSuccessResponse) << permission->errorCode();
  // A Refresh with a new token under the other key switches the session key.
  const AccessToken next = sessionToken(now_.unix_seconds, 3600, 32);
  auto refresh = send(
      stun::Method::kRefresh,
      [](stun::MessageBuilder& b) { b.addUint32(stun::attr::kLifetime, 600); }, "union",
      encode(next, "turn.example", kKey128), next);
  ASSERT_TRUE(refresh);
  EXPECT_EQ(refresh->cls(), stun::MessageClass::kSuccessResponse) << refresh->errorCode();
  auto stale = send(
      stun::Method::kRefresh,
      [](stun::MessageBuilder& b) { b.addUint32(stun::attr::kLifetime, 600); }, "north", {},
      session);
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->errorCode(), 401);  // the old session key no longer signs
}

TEST_F(OAuthTest, CoturnsSixteenByteHmacKeyIsAcceptedAndAnsweredInKind) {
  challenge();
  const AccessToken session = sessionToken(now_.unix_seconds, 3600);
  AccessToken coturn_key = session;  // what turnutils_uclient -J signs with
  coturn_key.mac_key_size = 16;
  auto reply = send(stun::Method::kAllocate, allocateFill({}), "north",
                    encode(session, "turn.example", kKey256), coturn_key);
  ASSERT_TRUE(reply);
  ASSERT_EQ(reply->cls(), stun::MessageClass::kSuccessResponse) << reply->errorCode();
  EXPECT_EQ(stun::checkMessageIntegrity(reply->view(), {session.mac_key.data(), 16}),
            stun::IntegrityCheck::kValid);
}

TEST_F(OAuthTest, ForgedExpiredOrUnknownTokensAre401) {
  challenge();
  const AccessToken session = sessionToken(now_.unix_seconds, 3600);
  // Encrypted for another server.
  EXPECT_EQ(send(stun::Method::kAllocate, allocateFill({}), "north",
                 encode(session, "evil.example", kKey256), session)
                ->errorCode(),
            401);
  // Named by an unknown kid.
  EXPECT_EQ(send(stun::Method::kAllocate, allocateFill({}), "south",
                 encode(session, "turn.example", kKey256), session)
                ->errorCode(),
            401);
  // Past its lifetime, or issued in the future.
  const AccessToken old = sessionToken(now_.unix_seconds - 7200, 3600);
  EXPECT_EQ(send(stun::Method::kAllocate, allocateFill({}), "north",
                 encode(old, "turn.example", kKey256), old)
                ->errorCode(),
            401);
  const AccessToken future = sessionToken(now_.unix_seconds + 3600, 3600);
  EXPECT_EQ(send(stun::Method::kAllocate, allocateFill({}), "north",
                 encode(future, "turn.example", kKey256), future)
                ->errorCode(),
            401);
  // A valid token, but the request signed with another key.
  const AccessToken other = sessionToken(now_.unix_seconds, 3600);
  AccessToken wrong = other;
  wrong.mac_key[0] ^= 1;
  EXPECT_EQ(send(stun::Method::kAllocate, allocateFill({}), "north",
                 encode(other, "turn.example", kKey256), wrong)
                ->errorCode(),
            401);
  EXPECT_EQ(server_->allocationCount(), 0u);
  EXPECT_GE(server_->stats().auth_bad_integrity, 2u);
  EXPECT_GE(server_->stats().auth_expired, 2u);
}

TEST_F(OAuthTest, ATokenCannotTakeOverAnAllocationMadeWithAPassword) {
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);  // static credentials
  const AccessToken session = sessionToken(now_.unix_seconds, 3600);
  auto reply = send(
      stun::Method::kRefresh,
      [](stun::MessageBuilder& b) { b.addUint32(stun::attr::kLifetime, 0); }, "north",
      encode(session, "turn.example", kKey256), session);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->errorCode(), 441);
  EXPECT_EQ(server_->allocationCount(), 1u);
}

TEST_F(TurnTest, AccessTokenWithoutOAuthKeysIs420) {
  allocate();
  const std::vector<uint8_t> token(40, 1);
  auto reply = fromClient(buildRequest(stun::Method::kRefresh, [&](stun::MessageBuilder& b) {
    b.add(stun::attr::kAccessToken, token);
  }));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->errorCode(), 420);
}

}  // namespace
}  // namespace kturn::turn::testing
