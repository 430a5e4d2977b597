// RFC 8016 mobility: the MOBILITY-TICKET codec (src/turn/mobility_ticket.h) and the core moving
// an allocation to a client's new address, within one core and between two (as between the
// daemon's workers: turn/allocation_move.h). coturn's turnutils_uclient -M does the same against
// kturnd in interop_uclient_mobility.
#include <algorithm>
#include <cctype>

#include "stun/channel_data.h"
#include "turn/mobility_ticket.h"
#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

std::array<uint8_t, 32> key(uint8_t seed) {
  std::array<uint8_t, 32> k;
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(seed + i * 13);
  return k;
}

TEST(MobilityTicketTest, RoundTripsInThirtyTwoPrintableCharacters) {
  const MobilityTickets tickets(key(1));
  const MobilityTicket t{.id = 0x0123456789ABCDEFULL, .owner = 3, .generation = 0xABCDEF};
  const std::string sealed = tickets.seal(t);
  // coturn's client keeps the ticket as a C string of at most 32 characters.
  ASSERT_EQ(sealed.size(), MobilityTickets::kEncodedSize);
  EXPECT_TRUE(std::all_of(sealed.begin(), sealed.end(), [](char c) { return std::isgraph(c); }));
  EXPECT_EQ(tickets.open(sealed), t);
}

TEST(MobilityTicketTest, AnotherKeyAnAlteredCharacterOrAnotherSizeFails) {
  const MobilityTickets tickets(key(1));
  const std::string sealed = tickets.seal({.id = 42, .owner = 0, .generation = 1});
  EXPECT_FALSE(MobilityTickets(key(2)).open(sealed));
  for (size_t i = 0; i < sealed.size(); ++i) {
    std::string forged = sealed;
    forged[i] = forged[i] == 'A' ? 'B' : 'A';
    EXPECT_FALSE(tickets.open(forged)) << "character " << i;
  }
  EXPECT_FALSE(tickets.open(sealed.substr(0, 31)));
  EXPECT_FALSE(tickets.open(sealed + "A"));
  EXPECT_FALSE(tickets.open(""));
}

// Records the moves a core asks for, as the daemon's worker would post them.
struct RecordingRouter : MobilityRouter {
  bool requestMove(uint8_t owner, MoveRequest request) override {
    owners.push_back(owner);
    requests.push_back(std::move(request));
    return true;
  }
  std::vector<uint8_t> owners;
  std::vector<MoveRequest> requests;
};

class MobilityTest : public TurnTest {
 protected:
  void SetUp() override { resetWith(mobileConfig()); }

  static ServerConfig mobileConfig(bool mobility = true) {
    ServerConfig c = staticConfig();
    c.mobility = mobility;
    return c;
  }
  void resetWith(ServerConfig config) {
    reset(config);
    server_ = makeCore(std::move(config), relays_, 0);
  }
  // A core as a worker of index `index` has it: the process's keys.
  std::unique_ptr<Server> makeCore(ServerConfig config, RelayAllocator& relays, uint8_t index) {
    Server::Options options;
    for (size_t i = 0; i < options.nonce_key.size(); ++i) options.nonce_key[i] = uint8_t(i * 7);
    options.mobility_key = key(9);
    options.connection_id_prefix = index;
    return std::make_unique<Server>(std::make_shared<const ServerConfig>(std::move(config)), relays,
                                    options);
  }

  static Fill askForMobility() {
    return [](stun::MessageBuilder& b) { b.add(stun::attr::kMobilityTicket, {}); };
  }
  static Fill withTicket(const std::string& ticket) {
    return [ticket](stun::MessageBuilder& b) { b.addString(stun::attr::kMobilityTicket, ticket); };
  }
  // A Refresh carrying `ticket` from the current tuple_.
  Reply refreshWith(const std::string& ticket) {
    return request(stun::Method::kRefresh, withTicket(ticket));
  }
  void moveClientTo(const char* address) { tuple_.client = addr(address); }

  // A mobile allocation with a channel to kPeer; returns its ticket.
  std::string mobileAllocation() {
    const Reply r = allocate(askForMobility());
    EXPECT_EQ(r.cls(), stun::MessageClass::kSuccessResponse) << r.errorCode();
    EXPECT_EQ(channelBind(0x4001, kPeer).cls(), stun::MessageClass::kSuccessResponse);
    return r.string(stun::attr::kMobilityTicket);
  }

  void sendChannelData(const std::vector<uint8_t>& data) {
    std::vector<uint8_t> frame(4 + data.size());
    stun::writeChannelDataHeader(frame.data(), 0x4001, static_cast<uint16_t>(data.size()));
    std::copy(data.begin(), data.end(), frame.begin() + 4);
    fromClient(frame);
  }

  const TransportAddress kPeer = addr("10.2.3.4:5000");
  const std::vector<uint8_t> kPayload{1, 2, 3, 4, 5};
};

TEST_F(MobilityTest, AnAllocateAskingForMobilityGetsATicketAndItsRetransmissionTheSame) {
  const Reply r = allocate(askForMobility());
  ASSERT_EQ(r.cls(), stun::MessageClass::kSuccessResponse) << r.errorCode();
  const std::string ticket = r.string(stun::attr::kMobilityTicket);
  EXPECT_EQ(ticket.size(), MobilityTickets::kEncodedSize);
  const auto again = retransmitAllocate(askForMobility());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->string(stun::attr::kMobilityTicket), ticket);
  // An Allocate that does not ask gets none.
  moveClientTo("192.0.2.10:40001");
  const Reply plain = allocate();
  ASSERT_EQ(plain.cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_FALSE(plain.view().has(stun::attr::kMobilityTicket));
}

TEST_F(MobilityTest, OffTheAskIsMobilityForbidden) {
  resetWith(mobileConfig(false));
  EXPECT_EQ(allocate(askForMobility()).errorCode(), 405);
  EXPECT_EQ(server_->stats().mobility_refused, 1u);
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(refreshWith(std::string(32, 'A')).errorCode(), 405);
}

TEST_F(MobilityTest, ATicketInTheAllocateIsABadRequest) {
  EXPECT_EQ(allocate(withTicket(std::string(32, 'A'))).errorCode(), 400);
  EXPECT_EQ(server_->allocationCount(), 0u);
}

TEST_F(MobilityTest, TurnOverTcpGetsNoTicket) {
  tuple_.protocol = TransportProtocol::kTcp;
  const Reply r = allocate(askForMobility());
  ASSERT_EQ(r.cls(), stun::MessageClass::kSuccessResponse) << r.errorCode();
  EXPECT_FALSE(r.view().has(stun::attr::kMobilityTicket));
}

TEST_F(MobilityTest, ARefreshFromTheNewAddressTakesTheAllocationAlong) {
  const std::string ticket = mobileAllocation();
  const FiveTuple old_tuple = tuple_;
  const TransportAddress relayed = server_->findAllocation(tuple_)->relayed;

  moveClientTo("203.0.113.7:50000");  // Wi-Fi to cellular
  const Reply moved = refreshWith(ticket);
  ASSERT_EQ(moved.cls(), stun::MessageClass::kSuccessResponse) << moved.errorCode();
  const std::string next = moved.string(stun::attr::kMobilityTicket);
  EXPECT_EQ(next.size(), MobilityTickets::kEncodedSize);
  EXPECT_NE(next, ticket);
  EXPECT_EQ(server_->stats().mobility_moves, 1u);
  ASSERT_EQ(relays_.moves.size(), 1u);

  // Same relayed address and channel: the peer's data reaches the new address.
  const Allocation* a = server_->findAllocation(tuple_);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->relayed, relayed);
  EXPECT_EQ(server_->findAllocation(old_tuple), nullptr);
  EXPECT_EQ(server_->allocationCount(), 1u);
  const auto back = fromPeer(kPeer, kPayload);
  ASSERT_TRUE(back);
  EXPECT_EQ(stun::parseChannelData(*back)->channel, 0x4001);
  sendChannelData(kPayload);
  ASSERT_EQ(sentToPeers().size(), 1u);
  EXPECT_EQ(sentToPeers()[0].first, kPeer);

  // The old address has nothing left.
  tuple_ = old_tuple;
  EXPECT_EQ(refresh(600).errorCode(), 437);
}

TEST_F(MobilityTest, TheMovingRefreshRetransmittedIsAnsweredAndTheNextMoveTakesTheNewTicket) {
  const std::string ticket = mobileAllocation();
  moveClientTo("203.0.113.7:50000");
  const Reply moved = refreshWith(ticket);
  ASSERT_EQ(moved.cls(), stun::MessageClass::kSuccessResponse);
  // coturn's client sends its moving Refresh twice and reads the second answer.
  const auto again = fromClient(buildRequest(stun::Method::kRefresh, withTicket(ticket), true,
                                             stun::MessageClass::kRequest, last_txid_));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->cls(), stun::MessageClass::kSuccessResponse) << again->errorCode();
  EXPECT_EQ(again->string(stun::attr::kMobilityTicket), moved.string(stun::attr::kMobilityTicket));

  moveClientTo("198.51.100.200:1234");
  const Reply second = refreshWith(moved.string(stun::attr::kMobilityTicket));
  ASSERT_EQ(second.cls(), stun::MessageClass::kSuccessResponse) << second.errorCode();
  EXPECT_EQ(server_->stats().mobility_moves, 2u);
  EXPECT_TRUE(fromPeer(kPeer, kPayload));
}

TEST_F(MobilityTest, AStaleTicketIsAllocationMismatchAndMovesNothing) {
  const std::string ticket = mobileAllocation();
  moveClientTo("203.0.113.7:50000");
  ASSERT_EQ(refreshWith(ticket).cls(), stun::MessageClass::kSuccessResponse);
  const FiveTuple holder = tuple_;

  // The first ticket again, from a third address: the allocation moved since.
  moveClientTo("203.0.113.99:7000");
  EXPECT_EQ(refreshWith(ticket).errorCode(), 437);
  EXPECT_EQ(server_->findAllocation(tuple_), nullptr);
  EXPECT_NE(server_->findAllocation(holder), nullptr);
  EXPECT_EQ(server_->stats().mobility_refused, 1u);

  // Nor does the ticket of an allocation that ended.
  tuple_ = holder;
  const std::string last = refreshWith(ticket).string(stun::attr::kMobilityTicket);
  ASSERT_EQ(refresh(0).cls(), stun::MessageClass::kSuccessResponse);
  moveClientTo("203.0.113.99:7001");
  EXPECT_EQ(refreshWith(last).errorCode(), 437);
}

TEST_F(MobilityTest, AForgedTicketIsABadRequest) {
  const std::string ticket = mobileAllocation();
  const FiveTuple holder = tuple_;
  moveClientTo("203.0.113.7:50000");
  std::string forged = ticket;
  forged[5] = forged[5] == 'x' ? 'y' : 'x';
  EXPECT_EQ(refreshWith(forged).errorCode(), 400);
  EXPECT_EQ(refreshWith(std::string(32, 'Q')).errorCode(), 400);
  EXPECT_EQ(refreshWith("short").errorCode(), 400);
  EXPECT_NE(server_->findAllocation(holder), nullptr);
  EXPECT_EQ(server_->stats().mobility_moves, 0u);
}

TEST_F(MobilityTest, TheTicketAloneMovesNothing) {
  const std::string ticket = mobileAllocation();
  const FiveTuple holder = tuple_;
  moveClientTo("203.0.113.7:50000");
  password_ = "wrong";
  EXPECT_EQ(refreshWith(ticket).errorCode(), 401);
  // Unauthenticated: no MESSAGE-INTEGRITY at all.
  const auto bare = fromClient(buildRequest(stun::Method::kRefresh, withTicket(ticket), false));
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->errorCode(), 401);
  EXPECT_NE(server_->findAllocation(holder), nullptr);
  EXPECT_EQ(server_->findAllocation(tuple_), nullptr);
  EXPECT_EQ(server_->stats().mobility_moves, 0u);
}

TEST_F(MobilityTest, FromItsOwnAddressATicketMustNameTheAllocation) {
  const std::string mine = mobileAllocation();
  const FiveTuple first = tuple_;
  moveClientTo("192.0.2.10:40001");
  const std::string other = mobileAllocation();
  EXPECT_EQ(refreshWith(mine).errorCode(), 400);
  tuple_ = first;
  EXPECT_EQ(refreshWith(mine).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(refreshWith(other).errorCode(), 400);
}

TEST_F(MobilityTest, BetweenTwoCoresTheOwnerGivesTheAllocationUpAndTheOtherAnswers) {
  const std::string ticket = mobileAllocation();  // on core 0 (server_)
  const FiveTuple old_tuple = tuple_;
  const TransportAddress relayed = server_->findAllocation(tuple_)->relayed;

  // The new address (a new port behind the same NAT, so the nonce still holds) hashes to worker
  // 1, whose core asks worker 0's.
  FakeRelays relays1;
  auto core1 = makeCore(mobileConfig(), relays1, 1);
  RecordingRouter router;
  core1->setMobilityRouter(&router);
  const FiveTuple new_tuple{TransportProtocol::kUdp, addr("192.0.2.10:50000"), tuple_.server};
  moveClientTo("192.0.2.10:50000");
  const auto packet = buildRequest(stun::Method::kRefresh, withTicket(ticket));
  Actions out1;
  core1->onClientPacket(kListener, new_tuple, packet, now_, out1);
  EXPECT_TRUE(out1.to_clients.empty());  // the owner answers, through worker 1
  ASSERT_EQ(router.requests.size(), 1u);
  EXPECT_EQ(router.owners[0], 0);
  EXPECT_EQ(router.requests[0].five_tuple, new_tuple);

  Actions out0;
  auto moved = server_->releaseForMove(router.requests[0], now_, out0);
  ASSERT_TRUE(moved);
  EXPECT_TRUE(out0.to_clients.empty());
  EXPECT_EQ(server_->findAllocation(old_tuple), nullptr);
  EXPECT_EQ(server_->allocationCount(), 0u);
  EXPECT_TRUE(relays_.open_relays.empty());  // the relay left core 0's allocator, not closed
  EXPECT_TRUE(relays_.closed.empty());

  core1->adoptMoved(std::move(*moved), router.requests[0], now_, out1);
  ASSERT_EQ(out1.to_clients.size(), 1u);
  EXPECT_EQ(out1.to_clients[0].client, new_tuple.client);
  const Reply answer{{out1.to_clients[0].data.begin(), out1.to_clients[0].data.end()}};
  ASSERT_EQ(answer.cls(), stun::MessageClass::kSuccessResponse) << answer.errorCode();
  const auto next = MobilityTickets(key(9)).open(answer.string(stun::attr::kMobilityTicket));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->owner, 1);  // worker 1 holds it now
  const Allocation* a = core1->findAllocation(new_tuple);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->relayed, relayed);
  EXPECT_EQ(relays1.open_relays.at(a->id.index), relayed);
  EXPECT_EQ(core1->stats().mobility_moves, 1u);
  ASSERT_EQ(a->channels.size(), 1u);
  EXPECT_EQ(a->channels[0].peer, kPeer);
}

TEST_F(MobilityTest, BetweenTwoCoresARefusalGoesToTheClientFromTheOwner) {
  const std::string ticket = mobileAllocation();
  const FiveTuple old_tuple = tuple_;
  FakeRelays relays1;
  auto core1 = makeCore(mobileConfig(), relays1, 1);
  RecordingRouter router;
  core1->setMobilityRouter(&router);
  moveClientTo("192.0.2.10:50000");
  password_ = "wrong";
  Actions out1;
  core1->onClientPacket(kListener, tuple_, buildRequest(stun::Method::kRefresh, withTicket(ticket)),
                        now_, out1);
  ASSERT_EQ(router.requests.size(), 1u);
  Actions out0;
  EXPECT_FALSE(server_->releaseForMove(router.requests[0], now_, out0));
  ASSERT_EQ(out0.to_clients.size(), 1u);
  EXPECT_EQ(out0.to_clients[0].client, tuple_.client);
  EXPECT_EQ((Reply{{out0.to_clients[0].data.begin(), out0.to_clients[0].data.end()}}.errorCode()),
            401);
  EXPECT_NE(server_->findAllocation(old_tuple), nullptr);
}

TEST_F(MobilityTest, WithoutARouteToTheOwnerTheAnswerIsAllocationMismatch) {
  const std::string ticket = mobileAllocation();
  FakeRelays relays1;
  auto core1 = makeCore(mobileConfig(), relays1, 1);  // no router
  moveClientTo("203.0.113.7:50000");
  Actions out1;
  core1->onClientPacket(kListener, tuple_, buildRequest(stun::Method::kRefresh, withTicket(ticket)),
                        now_, out1);
  ASSERT_EQ(out1.to_clients.size(), 1u);
  EXPECT_EQ((Reply{{out1.to_clients[0].data.begin(), out1.to_clients[0].data.end()}}.errorCode()),
            437);
}

}  // namespace
}  // namespace kturn::turn::testing
