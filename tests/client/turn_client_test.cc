// TurnClient against a scripted TURN server on a loopback UDP socket: the long-term credential
// dance (401 challenge, 438 stale nonce, a second 401 final), integrity checks on answers,
// retransmission of a lost request, and the peer data path (Send indication before a channel,
// ChannelData after; Data indications and ChannelData to the handler).
#include "client/turn_client.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/sockaddr.h"
#include "stun/attributes.h"
#include "stun/channel_data.h"
#include "stun/integrity.h"
#include "stun/message_builder.h"

namespace kturn::client {
namespace {

using Bytes = std::vector<uint8_t>;
constexpr std::string_view kUser = "alice";
constexpr std::string_view kPass = "secret";
constexpr std::string_view kRealm = "example.org";

const TransportAddress kRelayed = *TransportAddress::parse("127.0.0.1:50000");
const TransportAddress kPeer = *TransportAddress::parse("10.1.2.3:9000");

stun::IntegrityKey key() { return stun::longTermKey(kUser, kRealm, kPass); }

// A UDP socket on loopback that answers each datagram with what the script returns.
class ScriptedServer {
 public:
  using Script = std::function<std::vector<Bytes>(const Bytes& received, size_t index)>;

  explicit ScriptedServer(Script script) : script_(std::move(script)) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_storage ss;
    const socklen_t len = net::toSockaddr(*TransportAddress::parse("127.0.0.1:0"), ss);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&ss), len), 0);
    address_ = *net::localAddress(fd_);
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  const TransportAddress& address() const { return address_; }
  std::vector<Bytes> received() const {
    std::lock_guard lock(mutex_);
    return received_;
  }
  // Sends `bytes` to the last client heard from.
  void push(const Bytes& bytes) {
    std::lock_guard lock(mutex_);
    (void)::sendto(fd_, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&client_),
                   client_len_);
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      Bytes buffer(65536);
      sockaddr_storage from;
      socklen_t len = sizeof from;
      const ssize_t n = ::recvfrom(fd_, buffer.data(), buffer.size(), 0,
                                   reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 0) continue;
      buffer.resize(static_cast<size_t>(n));
      size_t index;
      {
        std::lock_guard lock(mutex_);
        client_ = from;
        client_len_ = len;
        received_.push_back(buffer);
        index = received_.size() - 1;
      }
      for (const Bytes& answer : script_(buffer, index)) {
        (void)::sendto(fd_, answer.data(), answer.size(), 0, reinterpret_cast<sockaddr*>(&from),
                       len);
      }
    }
  }

  Script script_;
  int fd_ = -1;
  TransportAddress address_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<Bytes> received_;
  sockaddr_storage client_{};
  socklen_t client_len_ = 0;
};

stun::MessageView view(const Bytes& b) { return *stun::MessageView::parse(b); }

std::string text(const stun::MessageView& m, uint16_t type) {
  auto v = m.value(type);
  return v ? std::string(stun::decodeString(*v)) : std::string();
}

// An answer to `request`: `build` adds attributes; `sign` adds MESSAGE-INTEGRITY with `k`.
Bytes answer(const stun::MessageView& request, stun::MessageClass cls,
             const std::function<void(stun::MessageBuilder&)>& build,
             std::optional<stun::IntegrityKey> k = std::nullopt) {
  Bytes out(2048);
  stun::TransactionId txid;
  std::copy(request.transactionId().begin(), request.transactionId().end(), txid.begin());
  stun::MessageBuilder b(out, request.methodBits(), cls, txid);
  build(b);
  if (k) b.addMessageIntegrity(k->span());
  b.addFingerprint();
  out.resize(b.finish()->size());
  return out;
}

Bytes challenge(const stun::MessageView& request, int code, std::string_view nonce) {
  return answer(request, stun::MessageClass::kErrorResponse, [&](stun::MessageBuilder& b) {
    b.addErrorCode(code).addString(stun::attr::kRealm, kRealm).addString(stun::attr::kNonce, nonce);
  });
}

Bytes allocateSuccess(const stun::MessageView& request) {
  return answer(
      request, stun::MessageClass::kSuccessResponse,
      [](stun::MessageBuilder& b) {
        b.addXorAddress(stun::attr::kXorRelayedAddress, kRelayed)
            .addXorAddress(stun::attr::kXorMappedAddress,
                           *TransportAddress::parse("127.0.0.1:40000"))
            .addUint32(stun::attr::kLifetime, 300);
      },
      key());
}

bool authenticated(const stun::MessageView& m, std::string_view nonce) {
  return text(m, stun::attr::kUsername) == kUser && text(m, stun::attr::kRealm) == kRealm &&
         text(m, stun::attr::kNonce) == nonce &&
         stun::checkMessageIntegrity(m, key().span()) == stun::IntegrityCheck::kValid;
}

std::unique_ptr<TurnClient> clientFor(const ScriptedServer& server, std::string password,
                                      int timeout_ms = 3000) {
  auto link = ServerLink::open(server.address(), LinkTransport::kUdp, {});
  EXPECT_TRUE(link) << link.error().message;
  return std::make_unique<TurnClient>(std::move(*link),
                                      TurnClientOptions{.username = std::string(kUser),
                                                        .password = std::move(password),
                                                        .transaction_timeout_ms = timeout_ms});
}

TEST(TurnClient, AllocateAnswersTheChallengeAndReadsTheAllocation) {
  ScriptedServer server([](const Bytes& in, size_t) -> std::vector<Bytes> {
    const auto m = view(in);
    if (!m.value(stun::attr::kMessageIntegrity)) return {challenge(m, 401, "n1")};
    if (!authenticated(m, "n1")) return {};
    return {allocateSuccess(m)};
  });
  auto client = clientFor(server, std::string(kPass));
  auto allocation = client->allocate();
  ASSERT_TRUE(allocation) << allocation.error().message;
  EXPECT_EQ(allocation->relayed, kRelayed);
  EXPECT_EQ(allocation->mapped, *TransportAddress::parse("127.0.0.1:40000"));
  EXPECT_EQ(allocation->lifetime, 300u);
  const auto received = server.received();
  ASSERT_EQ(received.size(), 2u);
  // The retry is a new transaction (RFC 8489 §9.2.3), asking for UDP relaying.
  EXPECT_FALSE(std::equal(view(received[0]).transactionId().begin(),
                          view(received[0]).transactionId().end(),
                          view(received[1]).transactionId().begin()));
  auto transport = view(received[1]).value(stun::attr::kRequestedTransport);
  ASSERT_TRUE(transport);
  EXPECT_EQ(stun::decodeRequestedTransport(*transport), 17);
}

TEST(TurnClient, StaleNonceIsRetriedWithTheNewNonce) {
  ScriptedServer server([](const Bytes& in, size_t) -> std::vector<Bytes> {
    const auto m = view(in);
    if (!m.value(stun::attr::kMessageIntegrity)) return {challenge(m, 401, "old")};
    if (authenticated(m, "old")) return {challenge(m, 438, "new")};
    if (authenticated(m, "new")) return {allocateSuccess(m)};
    return {};
  });
  auto client = clientFor(server, std::string(kPass));
  auto allocation = client->allocate();
  ASSERT_TRUE(allocation) << allocation.error().message;
  EXPECT_EQ(server.received().size(), 3u);
}

TEST(TurnClient, UnauthorizedAfterCredentialsIsFinal) {
  ScriptedServer server([](const Bytes& in, size_t) -> std::vector<Bytes> {
    return {challenge(view(in), 401, "n1")};
  });
  auto client = clientFor(server, "wrong");
  auto allocation = client->allocate();
  ASSERT_FALSE(allocation);
  EXPECT_NE(allocation.error().message.find("401"), std::string::npos)
      << allocation.error().message;
  ASSERT_TRUE(client->lastRefusal());
  EXPECT_EQ(client->lastRefusal()->code, 401);
  EXPECT_EQ(server.received().size(), 2u);  // the challenge, then one try with credentials
}

TEST(TurnClient, AnswerFailingTheIntegrityCheckIsDiscarded) {
  ScriptedServer server([](const Bytes& in, size_t) -> std::vector<Bytes> {
    const auto m = view(in);
    if (!m.value(stun::attr::kMessageIntegrity)) return {challenge(m, 401, "n1")};
    // A forged success (another key) first, then the real one: only the real one counts.
    auto forged = answer(
        m, stun::MessageClass::kSuccessResponse,
        [](stun::MessageBuilder& b) {
          b.addXorAddress(stun::attr::kXorRelayedAddress,
                          *TransportAddress::parse("192.0.2.66:6666"));
        },
        stun::longTermKey(kUser, kRealm, "forger"));
    return {forged, allocateSuccess(m)};
  });
  auto client = clientFor(server, std::string(kPass));
  auto allocation = client->allocate();
  ASSERT_TRUE(allocation) << allocation.error().message;
  EXPECT_EQ(allocation->relayed, kRelayed);
}

TEST(TurnClient, LostRequestIsRetransmittedOnUdp) {
  ScriptedServer server([](const Bytes& in, size_t index) -> std::vector<Bytes> {
    const auto m = view(in);
    if (index == 0) return {};  // the first datagram is "lost"
    if (!m.value(stun::attr::kMessageIntegrity)) return {challenge(m, 401, "n1")};
    return {allocateSuccess(m)};
  });
  auto client = clientFor(server, std::string(kPass));
  auto allocation = client->allocate();
  ASSERT_TRUE(allocation) << allocation.error().message;
  const auto received = server.received();
  ASSERT_EQ(received.size(), 3u);
  // The retransmission is the same transaction.
  EXPECT_EQ(received[0], received[1]);
}

TEST(TurnClient, NoAnswerTimesOutNamingTheRequest) {
  ScriptedServer server([](const Bytes&, size_t) -> std::vector<Bytes> { return {}; });
  auto client = clientFor(server, std::string(kPass), 800);
  auto allocation = client->allocate();
  ASSERT_FALSE(allocation);
  EXPECT_NE(allocation.error().message.find("Allocate: no answer"), std::string::npos)
      << allocation.error().message;
  // 500 ms RTO: sent at 0 and 500 ms within the 800 ms budget.
  EXPECT_EQ(server.received().size(), 2u);
}

TEST(TurnClient, PeerDataUsesTheChannelOnceBoundAndReachesTheHandler) {
  ScriptedServer server([](const Bytes& in, size_t) -> std::vector<Bytes> {
    if (stun::isChannelDataByte(in[0])) return {};
    const auto m = view(in);
    if (m.isIndication()) return {};
    if (!m.value(stun::attr::kMessageIntegrity)) return {challenge(m, 401, "n1")};
    if (m.method() == stun::Method::kAllocate) return {allocateSuccess(m)};
    return {answer(
        m, stun::MessageClass::kSuccessResponse, [](stun::MessageBuilder&) {}, key())};
  });
  auto client = clientFor(server, std::string(kPass));
  std::vector<std::pair<TransportAddress, std::string>> got;
  client->setDataHandler([&got](const TransportAddress& peer, std::span<const uint8_t> data) {
    got.emplace_back(peer, std::string(data.begin(), data.end()));
  });
  ASSERT_TRUE(client->allocate());

  const std::string before = "before the channel";
  ASSERT_TRUE(
      client->send(kPeer, {reinterpret_cast<const uint8_t*>(before.data()), before.size()}));
  auto channel = client->bindChannel(kPeer);
  ASSERT_TRUE(channel) << channel.error().message;
  EXPECT_EQ(*channel, 0x4000);
  const std::string after = "on the channel";
  ASSERT_TRUE(client->send(kPeer, {reinterpret_cast<const uint8_t*>(after.data()), after.size()}));

  // Wait until the server saw both data packets, then check what they were.
  for (int i = 0; i < 200 && server.received().size() < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto received = server.received();
  ASSERT_EQ(received.size(), 5u);  // Allocate x2, Send, ChannelBind, ChannelData
  const auto send = view(received[2]);
  EXPECT_EQ(send.method(), stun::Method::kSend);
  EXPECT_EQ(stun::decodeXorAddress(*send.value(stun::attr::kXorPeerAddress), send.xorPad()), kPeer);
  EXPECT_EQ(stun::decodeString(*send.value(stun::attr::kData)), before);
  auto cd = stun::parseChannelData(received[4]);
  ASSERT_TRUE(cd);
  EXPECT_EQ(cd->channel, 0x4000);
  EXPECT_EQ(std::string(cd->data.begin(), cd->data.end()), after);

  // From the server: ChannelData on the bound channel, and a Data indication from another peer.
  const std::string echoed = "echo";
  Bytes channel_data(4 + echoed.size());
  stun::writeChannelDataHeader(channel_data.data(), 0x4000, static_cast<uint16_t>(echoed.size()));
  std::copy(echoed.begin(), echoed.end(), channel_data.begin() + 4);
  server.push(channel_data);
  const TransportAddress other = *TransportAddress::parse("10.1.2.4:9001");
  Bytes data_indication(256);
  stun::MessageBuilder b(data_indication, stun::Method::kData, stun::MessageClass::kIndication,
                         stun::TransactionId{});
  b.addXorAddress(stun::attr::kXorPeerAddress, other).addString(stun::attr::kData, "hi");
  data_indication.resize(b.finish()->size());
  server.push(data_indication);

  for (int i = 0; i < 200 && got.size() < 2; ++i) {
    pollfd p{client->fd(), POLLIN, 0};
    ::poll(&p, 1, 10);
    ASSERT_TRUE(client->receive());
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::make_pair(kPeer, echoed));
  EXPECT_EQ(got[1], std::make_pair(other, std::string("hi")));
}

TEST(TurnClient, MaintenanceIsDueAtHalfTheGrantedLifetime) {
  ScriptedServer server([](const Bytes& in, size_t) -> std::vector<Bytes> {
    const auto m = view(in);
    if (!m.value(stun::attr::kMessageIntegrity)) return {challenge(m, 401, "n1")};
    return {allocateSuccess(m)};  // lifetime 300
  });
  auto client = clientFor(server, std::string(kPass));
  EXPECT_EQ(client->nextMaintenance(), TurnClient::Clock::time_point::max());
  const auto before = TurnClient::Clock::now();
  ASSERT_TRUE(client->allocate());
  const auto due = client->nextMaintenance();
  EXPECT_GE(due, before + std::chrono::seconds(150));
  EXPECT_LE(due, TurnClient::Clock::now() + std::chrono::seconds(150));
}

// maintain() at simulated times after the allocation: nothing before half its lifetime, then a
// Refresh; permissions after 240 s, channels (which also renew their peer's permission) after
// 540 s, each with the peer it was made for.
TEST(TurnClient, MaintainRefreshesTheAllocationPermissionsAndChannelsWhenDue) {
  ScriptedServer server([](const Bytes& in, size_t) -> std::vector<Bytes> {
    const auto m = view(in);
    if (!m.value(stun::attr::kMessageIntegrity)) return {challenge(m, 401, "n1")};
    if (m.method() == stun::Method::kAllocate) return {allocateSuccess(m)};  // lifetime 300
    return {answer(
        m, stun::MessageClass::kSuccessResponse,
        [&](stun::MessageBuilder& b) {
          if (m.method() == stun::Method::kRefresh) b.addUint32(stun::attr::kLifetime, 300);
        },
        key())};
  });
  auto client = clientFor(server, std::string(kPass));
  const auto t0 = TurnClient::Clock::now();
  ASSERT_TRUE(client->allocate());
  const IpAddress permitted = *IpAddress::parse("10.1.2.4");
  ASSERT_TRUE(client->createPermission(permitted));
  ASSERT_TRUE(client->bindChannel(kPeer));
  size_t seen = server.received().size();  // Allocate x2, CreatePermission, ChannelBind

  // The requests maintain(t0 + s) sent, as "Method peer" strings.
  const auto maintainAt = [&](int s) {
    EXPECT_TRUE(client->maintain(t0 + std::chrono::seconds(s)));
    const auto received = server.received();
    std::vector<std::string> sent;
    for (; seen < received.size(); ++seen) {
      const auto m = view(received[seen]);
      std::string line(stun::methodName(m.method()));
      if (const auto p = m.value(stun::attr::kXorPeerAddress)) {
        line += " " + stun::decodeXorAddress(*p, m.xorPad())->ip.toString();
      }
      if (const auto l = m.value(stun::attr::kLifetime)) {
        line += " " + std::to_string(*stun::decodeUint32(*l));
      }
      sent.push_back(line);
    }
    return sent;
  };
  using Sent = std::vector<std::string>;
  EXPECT_EQ(maintainAt(100), Sent{});
  EXPECT_EQ(maintainAt(151), Sent{"Refresh 600"});
  // The channel's peer holds a permission of its own, which lapses after 300 s.
  EXPECT_EQ(maintainAt(241), (Sent{"CreatePermission 10.1.2.4", "CreatePermission 10.1.2.3"}));
  EXPECT_EQ(maintainAt(300), Sent{});
  EXPECT_EQ(maintainAt(481),
            (Sent{"Refresh 600", "CreatePermission 10.1.2.4", "CreatePermission 10.1.2.3"}));
  // ChannelBind renews its peer's permission: no CreatePermission for it as well.
  EXPECT_EQ(maintainAt(541), Sent{"ChannelBind 10.1.2.3"});
}

}  // namespace
}  // namespace kturn::client
