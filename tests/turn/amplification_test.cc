// No amplification (RFC 8656 §21, RFC 8489 §6.3): whatever a client sends without valid
// credentials, the core answers with at most one datagram of at most
//
//   max(request bytes, N),  N = 88 + pad4(|realm|) + (4 + pad4(|software|) if software is set)
//
// N is the size of the largest such answer, the 401/438 challenge: header 20, ERROR-CODE 20
// ("Unauthorized" and "Stale Nonce" both pad to 12), REALM 4 + pad4(realm), NONCE 4 + 32,
// SOFTWARE 4 + pad4(software), FINGERPRINT 8 (only if the request had one). With kturnd's
// defaults (realm "stunner.l7mp.io", software "kturn") N = 116; with this fixture's realm
// "kturn.test" N = 112. No answer ever exceeds 512 bytes (server.cc kMaxResponseSize): a response
// that would is dropped, not truncated. The UNKNOWN-ATTRIBUTES list of a 420 holds at most 16
// types, and a message with more than 40 attributes is malformed (400), so many unknown
// attributes cannot draw a big 420. docs/security.md cites these tests.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "stun/byte_order.h"
#include "stun/channel_data.h"
#include "turn/authenticator.h"
#include "turn/nonce.h"
#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

// The largest STUN message that fits one IPv4 UDP datagram (65,507 bytes of payload), rounded
// down to the 4-byte multiple every STUN message is.
constexpr size_t kLargestRequest = 65504;
// server.cc's kMaxResponseSize: the scratch space one response may use.
constexpr size_t kMaxResponse = 512;
constexpr uint16_t kUnknownRequired = 0x7F31;  // comprehension-required, unknown to kturn
constexpr uint16_t kFiller = 0xBF31;           // comprehension-optional: ignored, pads requests

constexpr size_t pad4(size_t n) { return (n + 3) & ~size_t{3}; }

// N above, for a configuration.
size_t amplificationBound(const ServerConfig& c) {
  constexpr size_t kFixed = stun::kHeaderSize + 20 + 4 + 4 + NonceGenerator::kSize + 8;
  return kFixed + pad4(c.realm.size()) + (c.software.empty() ? 0 : 4 + pad4(c.software.size()));
}

enum class Creds : uint8_t {
  kNone,           // no USERNAME/REALM/NONCE/MESSAGE-INTEGRITY
  kIntegrity,      // all four, with the fixture's username_, password_ and nonce_
  kIntegrityOnly,  // USERNAME and MESSAGE-INTEGRITY, no REALM or NONCE
};

class AmplificationTest : public TurnTest {
 protected:
  void TearDown() override {
    std::printf("  %-58s %8s %8s %5s\n", "request", "bytes", "answer", "code");
    for (const Measured& m : measured_) {
      std::printf("  %-58s %8zu %8zu %5s\n", m.name.c_str(), m.request, m.response,
                  m.response == 0 ? "drop" : std::to_string(m.code).c_str());
    }
  }

  // A request of `method` bits and class `cls`: `fill`'s attributes, then a comprehension-
  // optional filler bringing the whole message to exactly `size` bytes (if it is larger than the
  // request would be without it), then credentials, then FINGERPRINT.
  std::vector<uint8_t> craft(uint16_t method, const Fill& fill, Creds creds, bool fingerprint,
                             size_t size = 0,
                             stun::MessageClass cls = stun::MessageClass::kRequest) {
    auto build = [&](size_t filler) {
      std::vector<uint8_t> buf(kLargestRequest + 64);
      stun::TransactionId txid{};
      txid[0] = static_cast<uint8_t>(++txid_counter_);
      txid[1] = static_cast<uint8_t>(txid_counter_ >> 8);
      txid[11] = 0xA5;
      stun::MessageBuilder b(buf, method, cls, txid);
      if (fill) fill(b);
      if (filler > 0) b.add(kFiller, std::vector<uint8_t>(filler - 4, 0x5A));
      if (creds != Creds::kNone) b.addString(stun::attr::kUsername, username_);
      if (creds == Creds::kIntegrity) {
        b.addString(stun::attr::kRealm, realm_).addString(stun::attr::kNonce, nonce_);
      }
      if (creds != Creds::kNone) {
        b.addMessageIntegrity(stun::longTermKey(username_, realm_, password_).span());
      }
      if (fingerprint) b.addFingerprint();
      const auto out = b.finish();
      EXPECT_TRUE(out) << "request does not fit";
      return out ? std::vector<uint8_t>(out->begin(), out->end()) : std::vector<uint8_t>{};
    };
    auto bytes = build(0);
    if (size > bytes.size()) {
      EXPECT_GE(size - bytes.size(), 4u);
      bytes = build(size - bytes.size());
      EXPECT_EQ(bytes.size(), size);
    }
    return bytes;
  }

  std::vector<uint8_t> craft(stun::Method method, const Fill& fill, Creds creds, bool fingerprint,
                             size_t size = 0) {
    return craft(static_cast<uint16_t>(method), fill, creds, fingerprint, size);
  }

  // Feeds `bytes`, checks the bound, and remembers the numbers for the table.
  std::optional<Reply> measure(const std::string& name, const std::vector<uint8_t>& bytes) {
    const size_t bound = amplificationBound(server_->config());
    auto reply = fromClient(bytes);
    const size_t answer = reply ? reply->bytes.size() : 0;
    EXPECT_LE(answer, std::max(bytes.size(), bound)) << name;
    EXPECT_LE(answer, kMaxResponse) << name;
    // Nothing else is sent for a request: no relayed datagram, no second answer.
    EXPECT_TRUE(actions_.to_peers.empty()) << name;
    measured_.push_back({name, bytes.size(), answer, reply ? reply->errorCode() : 0});
    largest_ = std::max(largest_, answer);
    return reply;
  }

  // Like measure(), and expects an error response with `code`.
  void expectError(const std::string& name, const std::vector<uint8_t>& bytes, int code) {
    const auto reply = measure(name, bytes);
    ASSERT_TRUE(reply) << name;
    EXPECT_EQ(reply->cls(), stun::MessageClass::kErrorResponse) << name;
    EXPECT_EQ(reply->errorCode(), code) << name;
  }

  void expectDrop(const std::string& name, const std::vector<uint8_t>& bytes) {
    EXPECT_FALSE(measure(name, bytes)) << name;
  }

  // A current nonce for this client, as a 401 hands it out.
  void learnNonce() {
    const auto reply = fromClient(craft(stun::Method::kAllocate, {}, Creds::kNone, true));
    ASSERT_TRUE(reply);
    nonce_ = reply->string(stun::attr::kNonce);
    ASSERT_EQ(nonce_.size(), NonceGenerator::kSize);
  }

  static Fill unknownAttributes(size_t count, size_t value_size = 0) {
    return [=](stun::MessageBuilder& b) {
      const std::vector<uint8_t> value(value_size, 0x11);
      for (size_t i = 0; i < count; ++i) b.add(static_cast<uint16_t>(kUnknownRequired + i), value);
    };
  }

  struct Measured {
    std::string name;
    size_t request;
    size_t response;  // 0: nothing sent
    int code;
  };
  std::vector<Measured> measured_;
  size_t largest_ = 0;
};

const stun::Method kTurnMethods[] = {stun::Method::kAllocate, stun::Method::kRefresh,
                                     stun::Method::kCreatePermission, stun::Method::kChannelBind};

TEST_F(AmplificationTest, BindingSuccessIsBounded) {
  for (const bool fp : {false, true}) {
    const std::string tag = fp ? " +FP" : "";
    auto r =
        measure("Binding, header only" + tag, craft(stun::Method::kBinding, {}, Creds::kNone, fp));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->cls(), stun::MessageClass::kSuccessResponse);
    EXPECT_EQ(r->bytes.size(), fp ? 52u : 44u);  // + XOR-MAPPED-ADDRESS 12, SOFTWARE 12, FP 8
    r = measure("Binding, largest" + tag,
                craft(stun::Method::kBinding, {}, Creds::kNone, fp, kLargestRequest));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->bytes.size(), fp ? 52u : 44u);
  }
  // An IPv6 client's XOR-MAPPED-ADDRESS is 12 bytes longer.
  tuple_.client = addr("[2001:db8::10]:40000");
  tuple_.server = addr("[2001:db8::1]:3478");
  const auto r = measure("Binding from IPv6, header only +FP",
                         craft(stun::Method::kBinding, {}, Creds::kNone, true));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->bytes.size(), 64u);
}

TEST_F(AmplificationTest, UnknownAttributesCannotDrawABig420) {
  // Binding is the one method that reaches the 420 check without credentials.
  expectError("Binding, 1 unknown attribute",
              craft(stun::Method::kBinding, unknownAttributes(1), Creds::kNone, false), 420);
  // 39 unknown attributes + FINGERPRINT = 40, the most a message may carry; their values fill
  // the largest datagram. The answer lists 16 of them (32 bytes), whatever the request holds.
  const size_t value = (kLargestRequest - stun::kHeaderSize - 8) / 39 / 4 * 4 - 4;
  for (const size_t n : {size_t{16}, size_t{17}, size_t{39}}) {
    const auto bytes = craft(stun::Method::kBinding, unknownAttributes(n, n == 39 ? value : 0),
                             Creds::kNone, true);
    const auto reply = measure("Binding, " + std::to_string(n) + " unknown attributes +FP", bytes);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->errorCode(), 420);
    const auto listed = reply->view().value(stun::attr::kUnknownAttributes);
    ASSERT_TRUE(listed);
    EXPECT_EQ(listed->size(), 2 * std::min<size_t>(n, 16));
    EXPECT_LE(reply->bytes.size(), 104u);  // 20 + 28 + 36 + SOFTWARE 12 + FP 8
  }
  // 41 attributes are more than a message may hold: malformed, a 40-byte 400.
  expectError("Binding, 41 unknown attributes",
              craft(stun::Method::kBinding, unknownAttributes(41), Creds::kNone, false), 400);
  // TURN methods authenticate first: unknown attributes without credentials draw the 401.
  expectError("Allocate, 39 unknown attributes, largest +FP",
              craft(stun::Method::kAllocate, unknownAttributes(39, value), Creds::kNone, true),
              401);
}

TEST_F(AmplificationTest, MalformedRequestsAndUnknownMethodsDrawA400) {
  // A sound header whose length field disagrees with the datagram: the smallest request the
  // core answers at all (anything shorter than a header, or without the magic cookie, is
  // dropped).
  std::vector<uint8_t> header = craft(stun::Method::kAllocate, {}, Creds::kNone, false);
  header[3] = 4;
  expectError("malformed: header claiming 4 more bytes", header, 400);
  // The largest datagram whose first attribute overruns the message.
  std::vector<uint8_t> overrun = craft(stun::Method::kBinding, {}, Creds::kNone, false, 1024);
  overrun.resize(kLargestRequest, 0x33);
  stun::store16(overrun.data() + 2, static_cast<uint16_t>(kLargestRequest - stun::kHeaderSize));
  stun::store16(overrun.data() + 22, 0xFFFF);
  expectError("malformed: largest, attribute overruns", overrun, 400);

  for (const uint16_t method : {uint16_t{0x0FF}, static_cast<uint16_t>(stun::Method::kConnect)}) {
    const std::string name = method == 0x0FF ? "unknown method" : "Connect over UDP (TCP only)";
    expectError(name + ", header only", craft(method, {}, Creds::kNone, false), 400);
    expectError(name + ", largest +FP", craft(method, {}, Creds::kNone, true, kLargestRequest),
                400);
  }
}

TEST_F(AmplificationTest, ChallengeIsTheLargestAnswerAndMeetsTheBoundExactly) {
  const size_t bound = amplificationBound(server_->config());
  ASSERT_EQ(bound, 112u);
  for (const stun::Method method : kTurnMethods) {
    const std::string name(stun::methodName(method));
    expectError(name + ", header only", craft(method, {}, Creds::kNone, false), 401);
    expectError(name + ", header only +FP", craft(method, {}, Creds::kNone, true), 401);
    expectError(name + ", largest +FP", craft(method, {}, Creds::kNone, true, kLargestRequest),
                401);
  }
  // The bound is tight: the challenge to a request with FINGERPRINT is exactly N.
  EXPECT_EQ(largest_, bound);
  // The largest ratio is the challenge to a bare 20-byte header: 104 bytes here, 108 (5.4x) with
  // kturnd's default realm. It is the handshake every TURN server answers (coturn's and
  // STUNner's 401 carry the same attributes).
  EXPECT_EQ(measured_.front().response, bound - 8);
  EXPECT_EQ(measured_.front().request, stun::kHeaderSize);
}

TEST_F(AmplificationTest, RejectedCredentialsAreBounded) {
  learnNonce();
  password_ = "wrong";
  expectError("Allocate, wrong password",
              craft(stun::Method::kAllocate, {}, Creds::kIntegrity, false), 401);
  expectError("Allocate, wrong password, largest +FP",
              craft(stun::Method::kAllocate, {}, Creds::kIntegrity, true, kLargestRequest), 401);
  password_ = "pass1";
  username_ = "nobody";
  expectError("Allocate, unknown user",
              craft(stun::Method::kAllocate, {}, Creds::kIntegrity, false), 401);
  username_ = "user1";
  expectError("Allocate, integrity without REALM/NONCE",
              craft(stun::Method::kAllocate, {}, Creds::kIntegrityOnly, false), 400);
  expectError("Allocate, bad PASSWORD-ALGORITHM +FP",
              craft(
                  stun::Method::kAllocate,
                  [](stun::MessageBuilder& b) {
                    const uint8_t sha512[] = {0, 3, 0, 0};
                    b.add(stun::attr::kPasswordAlgorithm, sha512);
                  },
                  Creds::kIntegrity, true),
              400);
  // The right password with a nonce this server never made for this client: 438 and a fresh
  // nonce, the same size as a 401.
  nonce_ = std::string(NonceGenerator::kSize, 'a');
  expectError("Allocate, forged nonce +FP",
              craft(stun::Method::kAllocate, {}, Creds::kIntegrity, true), 438);
  EXPECT_EQ(measured_.back().response, amplificationBound(server_->config()));
}

TEST_F(AmplificationTest, WrongUserOnAnotherClientsAllocationIsBounded) {
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  // Someone on (or spoofing) this 5-tuple with another username and no valid key: 441.
  username_ = "mallory";
  password_ = "guess";
  expectError("Refresh on an allocation, other user +FP",
              craft(stun::Method::kRefresh, {}, Creds::kIntegrity, true), 441);
  expectError("Refresh on an allocation, other user, largest +FP",
              craft(stun::Method::kRefresh, {}, Creds::kIntegrity, true, kLargestRequest), 441);
}

TEST_F(AmplificationTest, AuthNoneRefusesTurnWithASmall403) {
  ServerConfig c = staticConfig();
  c.auth_mode = AuthMode::kNone;
  reset(c);
  for (const stun::Method method : kTurnMethods) {
    expectError(std::string(stun::methodName(method)) + ", auth none",
                craft(method, {}, Creds::kNone, false), 403);
    expectError(std::string(stun::methodName(method)) + ", auth none, largest +FP",
                craft(method, {}, Creds::kNone, true, kLargestRequest), 403);
  }
}

TEST_F(AmplificationTest, NothingAnswersWhatIsNotARequest) {
  // Bad FINGERPRINT: not STUN at all.
  auto bad_fp = craft(stun::Method::kBinding, {}, Creds::kNone, true, kLargestRequest);
  bad_fp.back() ^= 0xFF;
  expectDrop("Binding, largest, bad FINGERPRINT", bad_fp);
  // Responses and indications; Send without an allocation.
  const std::pair<stun::MessageClass, const char*> not_requests[] = {
      {stun::MessageClass::kSuccessResponse, "Binding success response, largest"},
      {stun::MessageClass::kErrorResponse, "Binding error response, largest"},
      {stun::MessageClass::kIndication, "Binding indication, largest"}};
  for (const auto& [cls, name] : not_requests) {
    expectDrop(name, craft(static_cast<uint16_t>(stun::Method::kBinding), {}, Creds::kNone, true,
                           kLargestRequest, cls));
  }
  expectDrop("Send indication without allocation, largest",
             craft(
                 static_cast<uint16_t>(stun::Method::kSend),
                 [](stun::MessageBuilder& b) {
                   b.addXorAddress(stun::attr::kXorPeerAddress, addr("10.2.3.4:5000"));
                 },
                 Creds::kNone, false, kLargestRequest, stun::MessageClass::kIndication));
  // ChannelData without an allocation, and bytes that are neither STUN nor ChannelData.
  std::vector<uint8_t> channel_data(kLargestRequest, 0);
  stun::writeChannelDataHeader(channel_data.data(), 0x4001,
                               static_cast<uint16_t>(kLargestRequest - 4));
  expectDrop("ChannelData without allocation, largest", channel_data);
  expectDrop("not STUN (0xFF...), 1 byte", {0xFF});
  expectDrop("header without magic cookie", std::vector<uint8_t>(stun::kHeaderSize, 0));
  auto short_header = craft(stun::Method::kBinding, {}, Creds::kNone, false);
  short_header.resize(stun::kHeaderSize - 1);
  expectDrop("19 bytes of a header", short_header);
}

TEST_F(AmplificationTest, ThrottledSourceIsNotAnswered) {
  ServerConfig c = staticConfig();
  c.auth_failures_per_window = 2;
  reset(c);
  learnNonce();
  password_ = "wrong";
  expectError("wrong password 1", craft(stun::Method::kAllocate, {}, Creds::kIntegrity, false),
              401);
  expectError("wrong password 2", craft(stun::Method::kAllocate, {}, Creds::kIntegrity, false),
              401);
  expectDrop("wrong password 3 (throttled), largest",
             craft(stun::Method::kAllocate, {}, Creds::kIntegrity, true, kLargestRequest));
}

TEST_F(AmplificationTest, BoundFollowsRealmAndSoftware) {
  // kturnd's defaults: realm stunner.l7mp.io (16 padded), software kturn.
  ServerConfig c = staticConfig();
  c.realm = ServerConfig{}.realm;
  reset(c);
  ASSERT_EQ(amplificationBound(server_->config()), 116u);
  expectError("Allocate, default realm +FP", craft(stun::Method::kAllocate, {}, Creds::kNone, true),
              401);
  EXPECT_EQ(largest_, 116u);
  // No SOFTWARE attribute: 12 bytes less.
  c.software.clear();
  reset(c);
  ASSERT_EQ(amplificationBound(server_->config()), 104u);
  expectError("Allocate, default realm, no SOFTWARE +FP",
              craft(stun::Method::kAllocate, {}, Creds::kNone, true), 401);
  EXPECT_EQ(measured_.back().response, 104u);
}

TEST_F(AmplificationTest, AnswerThatWouldExceed512BytesIsDroppedNotTruncated) {
  // RFC 8489 limits REALM to 763 bytes; a realm this long cannot fit the 512-byte response cap,
  // so the challenge is not sent at all (counted as drop_no_buffer). The config validator does
  // not limit the realm today: docs/security.md tells operators to keep it short.
  ServerConfig c = staticConfig();
  c.realm = std::string(420, 'r');
  reset(c);
  expectDrop("Allocate, realm of 420 bytes +FP",
             craft(stun::Method::kAllocate, {}, Creds::kNone, true));
  EXPECT_EQ(server_->stats().drop_no_buffer, 1u);
  c.realm = std::string(400, 'r');  // N = 88 + 400 + 12 = 500: still fits
  reset(c);
  expectError("Allocate, realm of 400 bytes +FP",
              craft(stun::Method::kAllocate, {}, Creds::kNone, true), 401);
  EXPECT_EQ(measured_.back().response, 500u);
}

class AmplificationEphemeralTest : public AmplificationTest {
 protected:
  AmplificationEphemeralTest() {
    ServerConfig c = staticConfig();
    c.auth_mode = AuthMode::kEphemeral;
    reset(c);
  }
};

TEST_F(AmplificationEphemeralTest, RestCredentialsThatFailAreBounded) {
  learnNonce();
  username_ = std::to_string(now_.unix_seconds - 1) + ":alice";  // expired
  password_ = restPassword("s3cret", username_);
  expectError("Allocate, expired REST credential +FP",
              craft(stun::Method::kAllocate, {}, Creds::kIntegrity, true), 401);
  username_ = "alice";  // no timestamp
  expectError("Allocate, REST username without expiry, largest +FP",
              craft(stun::Method::kAllocate, {}, Creds::kIntegrity, true, kLargestRequest), 401);
  username_ = std::to_string(now_.unix_seconds + 3600) + ":alice";
  password_ = restPassword("other-secret", username_);
  expectError("Allocate, REST credential of another secret",
              craft(stun::Method::kAllocate, {}, Creds::kIntegrity, false), 401);
  EXPECT_LE(largest_, amplificationBound(server_->config()));
}

}  // namespace
}  // namespace kturn::turn::testing
