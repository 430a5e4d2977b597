// Allocate and Refresh (RFC 8656 §7), with every error the RFC names for them.
#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

TEST_F(TurnTest, AllocateReturnsRelayedMappedAndDefaultLifetime) {
  auto reply = allocate();
  ASSERT_EQ(reply.cls(), stun::MessageClass::kSuccessResponse) << reply.errorCode();
  EXPECT_EQ(reply.xorAddress(stun::attr::kXorRelayedAddress), addr("10.1.0.1:49152"));
  EXPECT_EQ(reply.xorAddress(stun::attr::kXorMappedAddress), tuple_.client);
  EXPECT_EQ(reply.uint32(stun::attr::kLifetime), 600u);
  EXPECT_EQ(server_->allocationCount(), 1u);
  ASSERT_EQ(relays_.requests.size(), 1u);
  EXPECT_EQ(relays_.requests[0].listener, kListener);
  EXPECT_EQ(relays_.requests[0].family, AddressFamily::kIPv4);
}

TEST_F(TurnTest, AllocateLifetimeIsClampedBetweenDefaultAndMaximum) {
  EXPECT_EQ(allocate([](auto& b) {
              b.addUint32(stun::attr::kLifetime, 1200);
            }).uint32(stun::attr::kLifetime),
            1200u);
  EXPECT_EQ(refresh(30).uint32(stun::attr::kLifetime), 600u);       // below default → default
  EXPECT_EQ(refresh(999999).uint32(stun::attr::kLifetime), 3600u);  // above max → max
}

TEST_F(TurnTest, RetransmittedAllocateGetsTheSameAnswer) {
  auto first = allocate();
  ASSERT_EQ(first.cls(), stun::MessageClass::kSuccessResponse);
  // Resend the identical request (same transaction ID): same relayed address, no new allocation.
  auto again = retransmitAllocate();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(again->xorAddress(stun::attr::kXorRelayedAddress),
            first.xorAddress(stun::attr::kXorRelayedAddress));
  EXPECT_EQ(relays_.requests.size(), 1u);
}

TEST_F(TurnTest, SecondAllocateOnTheSameFiveTupleIs437) {
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(allocate().errorCode(), 437);
}

TEST_F(TurnTest, AllocateWithoutRequestedTransportIs400) {
  EXPECT_EQ(request(stun::Method::kAllocate).errorCode(), 400);
}

TEST_F(TurnTest, AllocateForTcpOverUdpIs400) {
  // RFC 6062 §5.1: a TCP allocation is made over TCP or TLS (tcp_allocation_test.cc).
  auto reply = request(stun::Method::kAllocate, [](stun::MessageBuilder& b) {
    const uint8_t tcp[] = {6, 0, 0, 0};
    b.add(stun::attr::kRequestedTransport, tcp);
  });
  EXPECT_EQ(reply.errorCode(), 400);
}

TEST_F(TurnTest, UnknownAddressFamilyIs440AndUnavailableFamilyIs440) {
  const uint8_t bogus[] = {0x03, 0, 0, 0};
  EXPECT_EQ(
      allocate([&](auto& b) { b.add(stun::attr::kRequestedAddressFamily, bogus); }).errorCode(),
      440);
  const uint8_t v6[] = {0x02, 0, 0, 0};
  EXPECT_EQ(allocate([&](auto& b) { b.add(stun::attr::kRequestedAddressFamily, v6); }).errorCode(),
            440);
  EXPECT_EQ(server_->allocationCount(), 0u);
}

TEST_F(TurnTest, ReservationTokenWithEvenPortIs400) {
  const uint8_t token[8] = {0, 0, 0, 0, 0, 0, 0xAB, 0xCD};
  const uint8_t even[] = {0x80};
  auto reply = allocate([&](auto& b) {
    b.add(stun::attr::kReservationToken, token).add(stun::attr::kEvenPort, even);
  });
  EXPECT_EQ(reply.errorCode(), 400);
}

TEST_F(TurnTest, EvenPortWithReserveReturnsAReservationToken) {
  const uint8_t even[] = {0x80};
  auto reply = allocate([&](auto& b) { b.add(stun::attr::kEvenPort, even); });
  ASSERT_EQ(reply.cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_TRUE(relays_.requests.back().even_port);
  EXPECT_TRUE(relays_.requests.back().reserve_next);
  const auto token = reply.view().value(stun::attr::kReservationToken);
  ASSERT_TRUE(token);
  EXPECT_EQ(token->size(), 8u);
}

TEST_F(TurnTest, UnknownReservationTokenIs508) {
  const uint8_t token[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(allocate([&](auto& b) { b.add(stun::attr::kReservationToken, token); }).errorCode(),
            508);
}

TEST_F(TurnTest, UnknownComprehensionRequiredAttributeIs420) {
  const uint8_t value[] = {1, 2, 3, 4};
  auto reply = allocate([&](auto& b) { b.add(0x0031, value); });
  EXPECT_EQ(reply.errorCode(), 420);
  const auto unknown = reply.view().value(stun::attr::kUnknownAttributes);
  ASSERT_TRUE(unknown);
  ASSERT_EQ(unknown->size(), 2u);
  EXPECT_EQ(((*unknown)[0] << 8) | (*unknown)[1], 0x0031);
  // Comprehension-optional unknowns are ignored.
  EXPECT_EQ(allocate([&](auto& b) { b.add(0x8031, value); }).cls(),
            stun::MessageClass::kSuccessResponse);
}

TEST_F(TurnTest, PerUserQuotaIs486) {
  ServerConfig c = staticConfig();
  c.max_allocations_per_user = 1;
  reset(c);
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  tuple_.client.port += 1;
  nonce_.clear();
  EXPECT_EQ(allocate().errorCode(), 486);
  EXPECT_EQ(server_->stats().allocations_rejected_quota, 1u);
  // Freeing the first allocation frees the quota.
  tuple_.client.port -= 1;
  nonce_.clear();
  ASSERT_EQ(refresh(0).cls(), stun::MessageClass::kSuccessResponse);
  tuple_.client.port += 1;
  nonce_.clear();
  EXPECT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
}

// admin.user_quota holds per process: the daemon's workers' cores count into one UserQuota, so a
// user cannot hold the quota once per worker.
TEST_F(TurnTest, PerUserQuotaHoldsAcrossCores) {
  UserQuota shared;
  ServerConfig c = staticConfig();
  c.max_allocations_per_user = 1;
  reset(c, &shared);
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);  // on core A
  EXPECT_EQ(shared.count("user1"), 1u);
  std::unique_ptr<Server> coreA = std::move(server_);
  reset(c, &shared);  // core B, another worker
  tuple_.client.port += 1;
  EXPECT_EQ(allocate().errorCode(), 486);
  EXPECT_EQ(server_->stats().allocations_rejected_quota, 1u);
  EXPECT_EQ(shared.count("user1"), 1u);  // a refused Allocate holds nothing
  // The allocation on core A ends: core B admits the user again.
  std::unique_ptr<Server> coreB = std::move(server_);
  server_ = std::move(coreA);
  tuple_.client.port -= 1;
  nonce_.clear();
  ASSERT_EQ(refresh(0).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(shared.count("user1"), 0u);
  server_ = std::move(coreB);
  tuple_.client.port += 1;
  nonce_.clear();
  EXPECT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(shared.count("user1"), 1u);
}

// admin.limits.source_quota: allocations per client source IP address, every port counted.
class SourceQuotaTest : public TurnTest {
 protected:
  void withSourceQuota(uint32_t quota) {
    ServerConfig c = staticConfig();
    c.max_allocations_per_source = quota;
    reset(c);
  }
  // Switches the simulated client to another source transport address (a new 5-tuple; its
  // nonce is bound to the address, so the next request fetches a fresh one).
  void from(const char* client) {
    tuple_.client = addr(client);
    nonce_.clear();
  }
};

TEST_F(SourceQuotaTest, QuotaIs486WhileAnotherSourceStillAllocates) {
  withSourceQuota(2);
  from("192.0.2.10:40000");
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  from("192.0.2.10:40001");
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  from("192.0.2.10:40002");
  EXPECT_EQ(allocate().errorCode(), 486);
  EXPECT_EQ(server_->stats().allocations_rejected_source_quota, 1u);
  EXPECT_EQ(server_->stats().allocations_rejected_quota, 0u);  // not the per-user quota
  EXPECT_EQ(relays_.requests.size(), 2u);                      // refused before any relay port
  // Another address, same username and even the same port: its own quota.
  from("192.0.2.11:40002");
  EXPECT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  from("[2001:db8::10]:40002");
  EXPECT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(server_->allocationCount(), 4u);
}

TEST_F(SourceQuotaTest, FreedAllocationFreesTheSlot) {
  withSourceQuota(1);
  from("192.0.2.10:40000");
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  from("192.0.2.10:40001");
  ASSERT_EQ(allocate().errorCode(), 486);
  // Deleted by Refresh with lifetime 0.
  from("192.0.2.10:40000");
  ASSERT_EQ(refresh(0).cls(), stun::MessageClass::kSuccessResponse);
  from("192.0.2.10:40001");
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  // Expired at its lifetime (600 s).
  from("192.0.2.10:40002");
  ASSERT_EQ(allocate().errorCode(), 486);
  advance(Seconds(601));
  ASSERT_EQ(server_->allocationCount(), 0u);
  EXPECT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(server_->stats().allocations_rejected_source_quota, 2u);
}

TEST_F(SourceQuotaTest, AllocateThatFindsNoRelayPortLeavesTheSlotFree) {
  withSourceQuota(1);
  relays_.exhausted = true;
  ASSERT_EQ(allocate().errorCode(), 508);
  relays_.exhausted = false;
  from("192.0.2.10:40001");
  EXPECT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
}

TEST_F(SourceQuotaTest, ZeroIsUnlimited) {
  withSourceQuota(0);
  for (uint16_t port = 40000; port < 40100; ++port) {
    tuple_.client.port = port;
    nonce_.clear();
    ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse) << port;
  }
  EXPECT_EQ(server_->allocationCount(), 100u);
  EXPECT_EQ(server_->stats().allocations_rejected_source_quota, 0u);
}

TEST_F(SourceQuotaTest, LoweredOnReloadRefusesNewAllocationsAndEndsNone) {
  withSourceQuota(0);
  for (const char* client : {"192.0.2.10:40000", "192.0.2.10:40001", "192.0.2.10:40002"}) {
    from(client);
    ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  }
  ServerConfig c = staticConfig();
  c.max_allocations_per_source = 2;
  applyConfig(c);
  EXPECT_EQ(server_->allocationCount(), 3u);
  from("192.0.2.10:40003");
  EXPECT_EQ(allocate().errorCode(), 486);
  from("192.0.2.10:40000");  // an allocation over the new quota still refreshes
  EXPECT_EQ(refresh(600).cls(), stun::MessageClass::kSuccessResponse);
}

TEST_F(TurnTest, NoRelayPortIs508) {
  relays_.exhausted = true;
  EXPECT_EQ(allocate().errorCode(), 508);
  EXPECT_EQ(server_->allocationCount(), 0u);
}

TEST_F(TurnTest, ServerWideLimitIs508) {
  ServerConfig c = staticConfig();
  c.max_allocations = 1;
  reset(c);
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  tuple_.client.port += 1;
  nonce_.clear();
  EXPECT_EQ(allocate().errorCode(), 508);
}

// listeners[].alternate_servers: an Allocate refused for capacity is redirected (RFC 8489 §10).
class RedirectTest : public TurnTest {
 protected:
  void withAlternates(std::vector<const char*> alternates, uint32_t max_allocations,
                      bool secure = false) {
    ServerConfig c = staticConfig();
    c.max_allocations = max_allocations;
    for (const char* a : alternates) c.listeners[0].alternate_servers.push_back(addr(a));
    c.listeners[0].alternate_domain = "turn-fra.example.com";
    c.listeners[0].secure = secure;
    reset(c, nullptr, &over_capacity_);
  }
  Reply allocateFromAnotherPort() {
    tuple_.client.port += 1;
    nonce_.clear();
    return allocate();
  }
  static std::optional<TransportAddress> alternateServer(const Reply& reply) {
    const auto v = reply.view().value(stun::attr::kAlternateServer);
    return v ? stun::decodeAddress(*v) : std::nullopt;
  }
  // A 300 naming `alternate`, authenticated with the requester's key (coturn's client checks
  // it), without ALTERNATE-DOMAIN (plain UDP).
  static void expectRedirectTo(const Reply& reply, const char* alternate) {
    EXPECT_EQ(reply.errorCode(), 300);
    EXPECT_EQ(alternateServer(reply), addr(alternate));
    EXPECT_EQ(stun::checkMessageIntegrity(reply.view(),
                                          stun::longTermKey("user1", "kturn.test", "pass1").span()),
              stun::IntegrityCheck::kValid);
    EXPECT_FALSE(reply.view().has(stun::attr::kAlternateDomain));
  }
  // What the daemon's capacity thread sets over the admin.capacity marks (HealthState).
  std::atomic<bool> over_capacity_{false};
};

TEST_F(RedirectTest, FullServerAnswers300WithTheAlternateOfTheClientsFamily) {
  withAlternates({"[2001:db8::7]:3478", "198.51.100.7:3478", "198.51.100.8:3478"}, 1);
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  expectRedirectTo(allocateFromAnotherPort(), "198.51.100.7:3478");
  EXPECT_EQ(server_->allocationCount(), 1u);
  EXPECT_EQ(server_->stats().allocations_redirected, 1u);
  EXPECT_EQ(server_->stats().allocations_rejected_capacity, 0u);
}

TEST_F(RedirectTest, NoRelayPortLeftRedirectsToo) {
  withAlternates({"198.51.100.7:3478"}, 0);
  relays_.exhausted = true;
  const Reply reply = allocate();
  EXPECT_EQ(reply.errorCode(), 300);
  EXPECT_EQ(alternateServer(reply), addr("198.51.100.7:3478"));
  EXPECT_EQ(server_->allocationCount(), 0u);
}

TEST_F(RedirectTest, AnUnknownReservationTokenIsNotRedirected) {
  withAlternates({"198.51.100.7:3478"}, 0);
  const uint8_t token[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(allocate([&](auto& b) { b.add(stun::attr::kReservationToken, token); }).errorCode(),
            508);
  EXPECT_EQ(server_->stats().allocations_redirected, 0u);
}

TEST_F(RedirectTest, SecureListenersAddTheAlternateDomain) {
  withAlternates({"198.51.100.7:5349"}, 1, true);
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  const Reply reply = allocateFromAnotherPort();
  EXPECT_EQ(reply.errorCode(), 300);
  EXPECT_EQ(reply.string(stun::attr::kAlternateDomain), "turn-fra.example.com");
}

TEST_F(RedirectTest, NoAlternateOfTheClientsFamilyIs508) {
  withAlternates({"[2001:db8::7]:3478"}, 1);
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(allocateFromAnotherPort().errorCode(), 508);
  EXPECT_EQ(server_->stats().allocations_redirected, 0u);
  EXPECT_EQ(server_->stats().allocations_rejected_capacity, 1u);
}

TEST_F(RedirectTest, QuotasAreNotRedirected) {
  // Over the per-user quota the client is refused wherever it goes: 486 stays.
  ServerConfig c = staticConfig();
  c.max_allocations_per_user = 1;
  c.listeners[0].alternate_servers.push_back(addr("198.51.100.7:3478"));
  reset(c);
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(allocateFromAnotherPort().errorCode(), 486);
}

// Over the admin.capacity marks (no max_allocations reached): a new Allocate on a listener with
// an alternate server is redirected as a full server's is; the allocations held are untouched.
TEST_F(RedirectTest, OverTheMarksANewAllocateIsRedirected) {
  withAlternates({"[2001:db8::7]:3478", "198.51.100.7:3478"}, 0);
  over_capacity_ = true;
  expectRedirectTo(allocate(), "198.51.100.7:3478");
  EXPECT_EQ(server_->allocationCount(), 0u);
  EXPECT_TRUE(relays_.requests.empty());  // no relay port taken for it
  EXPECT_EQ(server_->stats().allocations_redirected, 1u);
  EXPECT_EQ(server_->stats().allocations_rejected_capacity, 0u);
  EXPECT_EQ(server_->stats().allocations_created, 0u);
}

TEST_F(RedirectTest, OverTheMarksAnIpv6ClientGoesToTheIpv6Alternate) {
  withAlternates({"198.51.100.7:3478", "[2001:db8::7]:3478"}, 0);
  over_capacity_ = true;
  tuple_ = {TransportProtocol::kUdp, addr("[2001:db8::10]:40000"), addr("[2001:db8::1]:3478")};
  const Reply reply = allocate();
  EXPECT_EQ(reply.errorCode(), 300);
  EXPECT_EQ(alternateServer(reply), addr("[2001:db8::7]:3478"));
}

TEST_F(RedirectTest, OverTheMarksSecureListenersAddTheAlternateDomain) {
  withAlternates({"198.51.100.7:5349"}, 0, true);
  over_capacity_ = true;
  const Reply reply = allocate();
  EXPECT_EQ(reply.errorCode(), 300);
  EXPECT_EQ(reply.string(stun::attr::kAlternateDomain), "turn-fra.example.com");
}

TEST_F(RedirectTest, OverTheMarksWithoutAlternatesGrants) {
  // The marks only steer readiness on a listener with nowhere to send clients.
  withAlternates({}, 0);
  over_capacity_ = true;
  EXPECT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(server_->allocationCount(), 1u);
  EXPECT_EQ(server_->stats().allocations_redirected, 0u);
}

TEST_F(RedirectTest, OverTheMarksWithoutAnAlternateOfTheClientsFamilyGrants) {
  // Not 508 as when full: this server still has room.
  withAlternates({"[2001:db8::7]:3478"}, 0);
  over_capacity_ = true;
  EXPECT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(server_->stats().allocations_redirected, 0u);
  EXPECT_EQ(server_->stats().allocations_rejected_capacity, 0u);
}

TEST_F(RedirectTest, UnderTheMarksGrantsAndTheFlagIsReadOnEachAllocate) {
  withAlternates({"198.51.100.7:3478"}, 0);
  EXPECT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  over_capacity_ = true;
  EXPECT_EQ(allocateFromAnotherPort().errorCode(), 300);
  over_capacity_ = false;  // back under the resume point
  EXPECT_EQ(allocateFromAnotherPort().cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(server_->allocationCount(), 2u);
  EXPECT_EQ(server_->stats().allocations_redirected, 1u);
}

TEST_F(RedirectTest, OverTheMarksTheAllocationsHeldAreServed) {
  withAlternates({"198.51.100.7:3478"}, 0);
  const Reply first = allocate();
  ASSERT_EQ(first.cls(), stun::MessageClass::kSuccessResponse);
  over_capacity_ = true;
  // A retransmitted Allocate gets its original answer, not a redirect.
  const auto again = retransmitAllocate();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(again->xorAddress(stun::attr::kXorRelayedAddress),
            first.xorAddress(stun::attr::kXorRelayedAddress));
  // Another Allocate on the same 5-tuple is 437 as ever.
  EXPECT_EQ(allocate().errorCode(), 437);
  EXPECT_EQ(refresh(600).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(createPermission({addr("10.2.0.5:5000")}).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(channelBind(0x4001, addr("10.2.0.5:5000")).cls(), stun::MessageClass::kSuccessResponse);
  const auto relayed = fromPeer(addr("10.2.0.5:5000"), {1, 2, 3});
  EXPECT_TRUE(relayed);
  EXPECT_EQ(server_->allocationCount(), 1u);
  EXPECT_EQ(server_->stats().allocations_redirected, 0u);
}

TEST_F(RedirectTest, OverTheMarksAReservationTokenIsHonoured) {
  // The second of an EVEN-PORT pair: its reserved port is on this server, not the alternate.
  withAlternates({"198.51.100.7:3478"}, 0);
  const uint8_t even[] = {0x80};
  const Reply first = allocate([&](auto& b) { b.add(stun::attr::kEvenPort, even); });
  ASSERT_EQ(first.cls(), stun::MessageClass::kSuccessResponse);
  const auto token = first.view().value(stun::attr::kReservationToken);
  ASSERT_TRUE(token);
  const std::vector<uint8_t> held(token->begin(), token->end());
  over_capacity_ = true;
  tuple_.client.port += 1;
  nonce_.clear();
  EXPECT_EQ(allocate([&](auto& b) { b.add(stun::attr::kReservationToken, held); }).cls(),
            stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(server_->stats().allocations_redirected, 0u);
}

TEST_F(RedirectTest, OverTheMarksQuotasComeFirstAndARedirectHoldsNoQuota) {
  ServerConfig c = staticConfig();
  c.max_allocations_per_user = 1;
  c.listeners[0].alternate_servers.push_back(addr("198.51.100.7:3478"));
  reset(c, nullptr, &over_capacity_);
  over_capacity_ = true;
  EXPECT_EQ(allocate().errorCode(), 300);
  EXPECT_EQ(allocateFromAnotherPort().errorCode(), 300);
  over_capacity_ = false;
  // The redirects gave the user's one allocation back.
  ASSERT_EQ(allocateFromAnotherPort().cls(), stun::MessageClass::kSuccessResponse);
  over_capacity_ = true;
  // Over the per-user quota the client is refused wherever it goes: 486, not 300.
  EXPECT_EQ(allocateFromAnotherPort().errorCode(), 486);
}

TEST_F(RedirectTest, OverTheMarksAndFullIsOneRedirect) {
  withAlternates({"198.51.100.7:3478"}, 1);
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  over_capacity_ = true;
  EXPECT_EQ(allocateFromAnotherPort().errorCode(), 300);
  EXPECT_EQ(server_->stats().allocations_redirected, 1u);
}

TEST_F(TurnTest, RefreshWithLifetimeZeroDeletesAndClosesTheRelay) {
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  auto reply = refresh(0);
  ASSERT_EQ(reply.cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(reply.uint32(stun::attr::kLifetime), 0u);
  EXPECT_EQ(server_->allocationCount(), 0u);
  EXPECT_EQ(relays_.closed.size(), 1u);
  EXPECT_TRUE(relays_.open_relays.empty());
  // The allocation is gone: a further refresh is 437.
  EXPECT_EQ(refresh(600).errorCode(), 437);
}

TEST_F(TurnTest, RefreshWithoutAllocationIs437) { EXPECT_EQ(refresh(600).errorCode(), 437); }

TEST_F(TurnTest, RefreshWithMismatchedAddressFamilyIs443) {
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  const uint8_t v6[] = {0x02, 0, 0, 0};
  auto reply = request(stun::Method::kRefresh,
                       [&](auto& b) { b.add(stun::attr::kRequestedAddressFamily, v6); });
  EXPECT_EQ(reply.errorCode(), 443);
}

TEST_F(TurnTest, AdditionalFamilyIpv4OrWithRequestedFamilyIs400) {
  const uint8_t v4[] = {0x01, 0, 0, 0};
  const uint8_t v6[] = {0x02, 0, 0, 0};
  EXPECT_EQ(allocate([&](auto& b) { b.add(stun::attr::kAdditionalAddressFamily, v4); }).errorCode(),
            400);
  EXPECT_EQ(allocate([&](auto& b) {
              b.add(stun::attr::kRequestedAddressFamily, v4)
                  .add(stun::attr::kAdditionalAddressFamily, v6);
            }).errorCode(),
            400);
}

TEST_F(TurnTest, UnknownMethodRequestIs400) {
  auto reply = fromClient(buildRequest(static_cast<stun::Method>(0x00FF), {}, false));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->errorCode(), 400);
}

}  // namespace
}  // namespace kturn::turn::testing
