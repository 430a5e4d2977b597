// TCP allocations in the core (RFC 6062): Allocate with REQUESTED-TRANSPORT TCP, Connect and its
// 446/447, ConnectionAttempt for peers that connect in, ConnectionBind on a data connection, the
// 30 s bind timeout, and TCP clusters as the only peers of TCP allocations.
#include "turn/authenticator.h"
#include "turn_test_support.h"

namespace kturn::turn::testing {
namespace {

constexpr uint8_t kTcp = 6;

class TcpAllocationTest : public TurnTest {
 protected:
  TcpAllocationTest() {
    tuple_.protocol = TransportProtocol::kTcp;
    control_ = tuple_;
    ServerConfig c = staticConfig();
    // Media servers reached over TCP on 10.4.0.0/16 (a cluster with protocol TCP); the UDP
    // clusters of staticConfig() (10.2.0.0/16, 10.3.0.5) are not theirs to reach.
    c.listeners[0].peers.push_back(
        PeerRange{*IpAddress::parse("10.4.0.0"), 16, 0, 65535, 2, TransportProtocol::kTcp});
    reset(c);
  }

  static Fill tcpTransport(const Fill& extra = {}) {
    return [extra](stun::MessageBuilder& b) {
      const uint8_t tcp[] = {kTcp, 0, 0, 0};
      b.add(stun::attr::kRequestedTransport, tcp);
      if (extra) extra(b);
    };
  }
  Reply allocateTcp(const Fill& extra = {}) {
    return request(stun::Method::kAllocate, tcpTransport(extra));
  }
  // A Connect; returns its reply, if the core answered at once.
  std::optional<Reply> connect(const TransportAddress& peer) {
    std::optional<Reply> reply;
    for (int attempt = 0; attempt < 2; ++attempt) {
      reply = fromClient(buildRequest(stun::Method::kConnect, [&](stun::MessageBuilder& b) {
        b.addXorAddress(stun::attr::kXorPeerAddress, peer);
      }));
      if (!reply || (reply->errorCode() != 401 && reply->errorCode() != 438)) break;
      nonce_ = reply->string(stun::attr::kNonce);
    }
    return reply;
  }
  // The answer to the pending Connect once the I/O layer reports on `id`.
  std::optional<Reply> peerConnected(ConnectionId id, bool connected) {
    actions_.clear();
    server_->onPeerConnected(id, connected, now_, actions_);
    EXPECT_LE(actions_.to_clients.size(), 1u);
    if (actions_.to_clients.empty()) return std::nullopt;
    EXPECT_EQ(actions_.to_clients[0].client, control_.client);
    const auto& data = actions_.to_clients[0].data;
    return Reply{{data.begin(), data.end()}};
  }
  // A TCP allocation with a peer connection to `peer` made through Connect: its id.
  ConnectionId connected(const TransportAddress& peer) {
    EXPECT_EQ(allocateTcp().cls(), stun::MessageClass::kSuccessResponse);
    EXPECT_FALSE(connect(peer));
    EXPECT_FALSE(relays_.connecting.empty());
    const ConnectionId id = relays_.connecting.back().id;
    const auto reply = peerConnected(id, true);
    EXPECT_TRUE(reply && reply->cls() == stun::MessageClass::kSuccessResponse);
    return id;
  }
  // ConnectionBind for `id` on a new data connection from the client's next port.
  Reply connectionBind(ConnectionId id) {
    tuple_ = data_;
    const Reply reply = request(stun::Method::kConnectionBind, [id](stun::MessageBuilder& b) {
      b.addUint32(stun::attr::kConnectionId, id);
    });
    tuple_ = control_;
    return reply;
  }

  FiveTuple control_;
  FiveTuple data_{TransportProtocol::kTcp, *TransportAddress::parse("192.0.2.10:40001"),
                  *TransportAddress::parse("198.51.100.1:3478")};
  const TransportAddress tcp_peer_ = addr("10.4.0.7:8080");
};

TEST_F(TcpAllocationTest, AllocateOverTcpWithRequestedTransportTcpOpensATcpRelay) {
  const Reply reply = allocateTcp();
  ASSERT_EQ(reply.cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_TRUE(reply.xorAddress(stun::attr::kXorRelayedAddress));
  ASSERT_EQ(relays_.requests.size(), 1u);
  EXPECT_EQ(relays_.requests[0].protocol, TransportProtocol::kTcp);
  EXPECT_EQ(server_->findAllocation(tuple_)->relay_protocol, TransportProtocol::kTcp);
}

TEST_F(TcpAllocationTest, AllocateTcpOverUdpIsRefused) {
  tuple_.protocol = TransportProtocol::kUdp;
  EXPECT_EQ(allocateTcp().errorCode(), 400);  // RFC 6062 §5.1
  EXPECT_TRUE(relays_.requests.empty());
}

TEST_F(TcpAllocationTest, AllocateTcpWithUdpOnlyAttributesIsRefused) {
  const uint8_t even[] = {0x80};
  const uint8_t token[8] = {0, 0, 0, 0, 0, 0, 0xAB, 0xCD};
  const uint8_t ipv6[] = {0x02, 0, 0, 0};
  const std::vector<Fill> extras = {
      [](stun::MessageBuilder& b) { b.add(stun::attr::kDontFragment, {}); },
      [&](stun::MessageBuilder& b) { b.add(stun::attr::kEvenPort, even); },
      [&](stun::MessageBuilder& b) { b.add(stun::attr::kReservationToken, token); },
      [&](stun::MessageBuilder& b) { b.add(stun::attr::kAdditionalAddressFamily, ipv6); },
  };
  for (size_t i = 0; i < extras.size(); ++i) {
    EXPECT_EQ(allocateTcp(extras[i]).errorCode(), 400) << "case " << i;
  }
  EXPECT_TRUE(relays_.requests.empty());
}

TEST_F(TcpAllocationTest, AnotherTransportIs442) {
  const Reply reply = request(stun::Method::kAllocate, [](stun::MessageBuilder& b) {
    const uint8_t sctp[] = {132, 0, 0, 0};
    b.add(stun::attr::kRequestedTransport, sctp);
  });
  EXPECT_EQ(reply.errorCode(), 442);
}

TEST_F(TcpAllocationTest, ConnectAnswersWithAConnectionIdOnceThePeerConnectionIsUp) {
  ASSERT_EQ(allocateTcp().cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_FALSE(connect(tcp_peer_));  // nothing yet: the I/O layer is connecting
  const stun::TransactionId connect_txid = last_txid_;
  ASSERT_EQ(relays_.connecting.size(), 1u);
  const FakeRelays::Connecting& c = relays_.connecting[0];
  EXPECT_EQ(c.peer, tcp_peer_);
  EXPECT_EQ(c.allocation, server_->findAllocation(tuple_)->id);
  EXPECT_NE(c.id, 0u);

  const auto reply = peerConnected(c.id, true);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(reply->view().method(), stun::Method::kConnect);
  EXPECT_TRUE(
      std::equal(connect_txid.begin(), connect_txid.end(), reply->view().transactionId().begin()));
  EXPECT_EQ(reply->uint32(stun::attr::kConnectionId), c.id);
  EXPECT_EQ(stun::checkMessageIntegrity(reply->view(),
                                        stun::longTermKey("user1", "kturn.test", "pass1").span()),
            stun::IntegrityCheck::kValid);
  EXPECT_EQ(server_->stats().peer_connections_connected, 1u);
}

TEST_F(TcpAllocationTest, AFailedPeerConnectionIs447AndThePeerMayBeTriedAgain) {
  ASSERT_EQ(allocateTcp().cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_FALSE(connect(tcp_peer_));
  const auto reply = peerConnected(relays_.connecting.at(0).id, false);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->errorCode(), 447);
  EXPECT_EQ(reply->view().method(), stun::Method::kConnect);

  EXPECT_FALSE(connect(tcp_peer_));  // not 446: the failed connection is gone
  EXPECT_EQ(relays_.connecting.size(), 2u);
}

TEST_F(TcpAllocationTest, AConnectThatCannotStartIs447AtOnce) {
  ASSERT_EQ(allocateTcp().cls(), stun::MessageClass::kSuccessResponse);
  relays_.refuse_connect = true;
  const auto reply = connect(tcp_peer_);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->errorCode(), 447);
}

TEST_F(TcpAllocationTest, ASecondConnectToTheSamePeerIs446WhileTheFirstLives) {
  const ConnectionId id = connected(tcp_peer_);
  auto reply = connect(tcp_peer_);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->errorCode(), 446);
  // Another port of the same host is another peer.
  EXPECT_FALSE(connect(addr("10.4.0.7:8081")));

  ASSERT_EQ(connectionBind(id).cls(), stun::MessageClass::kSuccessResponse);
  reply = connect(tcp_peer_);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->errorCode(), 446);  // bound and active

  server_->onConnectionClosed(id);
  EXPECT_FALSE(connect(tcp_peer_));  // closed: a new connection may be made
}

TEST_F(TcpAllocationTest, ConnectIsForTcpAllocationsAndTcpClusters) {
  // No allocation on this connection: 437.
  auto reply = connect(tcp_peer_);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->errorCode(), 437);

  ASSERT_EQ(allocateTcp().cls(), stun::MessageClass::kSuccessResponse);
  // A peer of a UDP cluster, a peer in no cluster and a restricted address: 403.
  for (const char* peer : {"10.2.0.9:8080", "192.0.2.200:8080", "127.0.0.1:8080"}) {
    reply = connect(addr(peer));
    ASSERT_TRUE(reply) << peer;
    EXPECT_EQ(reply->errorCode(), 403) << peer;
  }
  // No XOR-PEER-ADDRESS: 400.
  reply = fromClient(buildRequest(stun::Method::kConnect, {}));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->errorCode(), 400);
  EXPECT_TRUE(relays_.connecting.empty());
}

TEST_F(TcpAllocationTest, ConnectOnAUdpAllocationIs403) {
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);  // REQUESTED-TRANSPORT UDP
  const auto reply = connect(tcp_peer_);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->errorCode(), 403);
  EXPECT_TRUE(relays_.connecting.empty());
}

TEST_F(TcpAllocationTest, ConnectionBindOnADataConnectionJoinsItToThePeerConnection) {
  const ConnectionId id = connected(tcp_peer_);
  const Reply reply = connectionBind(id);
  ASSERT_EQ(reply.cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(reply.view().method(), stun::Method::kConnectionBind);
  EXPECT_EQ(stun::checkMessageIntegrity(reply.view(),
                                        stun::longTermKey("user1", "kturn.test", "pass1").span()),
            stun::IntegrityCheck::kValid);
  ASSERT_EQ(relays_.bound.size(), 1u);
  EXPECT_EQ(relays_.bound[0].first, id);
  EXPECT_EQ(relays_.bound[0].second, data_);
  EXPECT_EQ(server_->stats().peer_connections_bound, 1u);

  // Bound: it no longer times out.
  advance(Seconds(60));
  EXPECT_TRUE(relays_.closed_connections.empty());
}

TEST_F(TcpAllocationTest, ConnectionBindIsRefusedFor400Cases) {
  const ConnectionId id = connected(tcp_peer_);
  // On the control connection, which holds the allocation.
  auto reply = request(stun::Method::kConnectionBind, [id](stun::MessageBuilder& b) {
    b.addUint32(stun::attr::kConnectionId, id);
  });
  EXPECT_EQ(reply.errorCode(), 400);
  // Over UDP.
  data_.protocol = TransportProtocol::kUdp;
  EXPECT_EQ(connectionBind(id).errorCode(), 400);
  data_.protocol = TransportProtocol::kTcp;
  // An id nobody handed out, and none at all.
  EXPECT_EQ(connectionBind(id + 1).errorCode(), 400);
  tuple_ = data_;
  reply = request(stun::Method::kConnectionBind, {});
  EXPECT_EQ(reply.errorCode(), 400);
  tuple_ = control_;
  // Twice.
  ASSERT_EQ(connectionBind(id).cls(), stun::MessageClass::kSuccessResponse);
  data_.client.port = 40002;
  EXPECT_EQ(connectionBind(id).errorCode(), 400);
  EXPECT_EQ(relays_.bound.size(), 1u);
}

TEST_F(TcpAllocationTest, ConnectionBindMustUseTheAllocationsCredentials) {
  ServerConfig c = staticConfig();
  c.auth_mode = AuthMode::kEphemeral;
  c.listeners[0].peers.push_back(
      PeerRange{*IpAddress::parse("10.4.0.0"), 16, 0, 65535, 2, TransportProtocol::kTcp});
  reset(c);
  const auto restUser = [&](const std::string& user) {
    username_ = std::to_string(now_.unix_seconds + 3600) + ":" + user;
    password_ = restPassword("s3cret", username_);
  };
  restUser("alice");
  const ConnectionId id = connected(tcp_peer_);
  restUser("mallory");  // valid credentials, but not the allocation's
  EXPECT_EQ(connectionBind(id).errorCode(), 441);
  EXPECT_TRUE(relays_.bound.empty());
  restUser("alice");
  EXPECT_EQ(connectionBind(id).cls(), stun::MessageClass::kSuccessResponse);
}

TEST_F(TcpAllocationTest, APeerConnectionNotBoundWithinThirtySecondsIsClosed) {
  const ConnectionId id = connected(tcp_peer_);
  advance(Seconds(29));
  EXPECT_TRUE(relays_.closed_connections.empty());
  advance(Seconds(2));
  ASSERT_EQ(relays_.closed_connections.size(), 1u);
  EXPECT_EQ(relays_.closed_connections[0], id);
  EXPECT_EQ(server_->stats().peer_connections_unbound, 1u);
  EXPECT_EQ(connectionBind(id).errorCode(), 400);
  EXPECT_FALSE(connect(tcp_peer_));  // the peer may be connected again
}

TEST_F(TcpAllocationTest, APeerWithAPermissionConnectingInIsOfferedWithAConnectionAttempt) {
  ASSERT_EQ(allocateTcp().cls(), stun::MessageClass::kSuccessResponse);
  const AllocationId allocation = server_->findAllocation(tuple_)->id;
  const TransportAddress peer = addr("10.4.0.9:51000");

  // No permission yet: refused, nothing said to the client.
  actions_.clear();
  EXPECT_EQ(server_->onPeerConnectionAccepted(allocation, peer, now_, actions_), 0u);
  EXPECT_TRUE(actions_.to_clients.empty());
  EXPECT_EQ(server_->stats().peer_connections_refused, 1u);

  ASSERT_EQ(createPermission({addr("10.4.0.9:0")}).cls(), stun::MessageClass::kSuccessResponse);
  actions_.clear();
  const ConnectionId id = server_->onPeerConnectionAccepted(allocation, peer, now_, actions_);
  ASSERT_NE(id, 0u);
  ASSERT_EQ(actions_.to_clients.size(), 1u);
  EXPECT_EQ(actions_.to_clients[0].client, tuple_.client);
  const Reply attempt{{actions_.to_clients[0].data.begin(), actions_.to_clients[0].data.end()}};
  EXPECT_EQ(attempt.cls(), stun::MessageClass::kIndication);
  EXPECT_EQ(attempt.view().method(), stun::Method::kConnectionAttempt);
  EXPECT_EQ(attempt.xorAddress(stun::attr::kXorPeerAddress), peer);
  EXPECT_EQ(attempt.uint32(stun::attr::kConnectionId), id);

  EXPECT_EQ(connectionBind(id).cls(), stun::MessageClass::kSuccessResponse);
  ASSERT_EQ(relays_.bound.size(), 1u);
  EXPECT_EQ(relays_.bound[0].first, id);
}

TEST_F(TcpAllocationTest, TcpAllocationsTakePermissionsOnlyForTcpClusterPeers) {
  ASSERT_EQ(allocateTcp().cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(createPermission({addr("10.2.0.9:0")}).errorCode(), 403);  // a UDP cluster's pod
  EXPECT_EQ(createPermission({addr("10.4.0.9:0")}).cls(), stun::MessageClass::kSuccessResponse);
}

TEST_F(TcpAllocationTest, TcpAllocationsHaveNoChannelsAndDropSendIndications) {
  ASSERT_EQ(allocateTcp().cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(channelBind(0x4001, tcp_peer_).errorCode(), 403);
  ASSERT_EQ(createPermission({tcp_peer_}).cls(), stun::MessageClass::kSuccessResponse);
  const auto send = buildRequest(
      stun::Method::kSend,
      [&](stun::MessageBuilder& b) {
        const uint8_t data[] = {1, 2, 3};
        b.addXorAddress(stun::attr::kXorPeerAddress, tcp_peer_).add(stun::attr::kData, data);
      },
      false, stun::MessageClass::kIndication);
  EXPECT_FALSE(fromClient(send));
  EXPECT_TRUE(actions_.to_peers.empty());
  EXPECT_EQ(server_->stats().drop_ignored, 1u);
}

TEST_F(TcpAllocationTest, UdpAllocationsStillRelayToEveryCluster) {
  tuple_.protocol = TransportProtocol::kUdp;
  ASSERT_EQ(allocate().cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(createPermission({addr("10.4.0.9:0")}).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(createPermission({addr("10.2.0.9:0")}).cls(), stun::MessageClass::kSuccessResponse);
}

TEST_F(TcpAllocationTest, TheAllocationsEndClosesItsPeerConnections) {
  const ConnectionId id = connected(tcp_peer_);
  const AllocationId allocation = server_->findAllocation(tuple_)->id;
  ASSERT_EQ(refresh(0).cls(), stun::MessageClass::kSuccessResponse);
  ASSERT_EQ(relays_.closed.size(), 1u);
  EXPECT_EQ(relays_.closed[0], allocation);  // the I/O layer closes its connections with it
  EXPECT_EQ(connectionBind(id).errorCode(), 400);
  advance(Seconds(31));
  EXPECT_TRUE(relays_.closed_connections.empty());  // nothing left to time out
}

TEST_F(TcpAllocationTest, BytesAPeerConnectionRelayedAreCountedLikeRelayedDatagrams) {
  struct EndObserver : SessionObserver {
    void onAllocationEnd(const Allocation& a, SessionEnd, const Now&) override {
      to_peers = a.bytes_to_peers;
      to_client = a.bytes_to_client;
    }
    uint64_t to_peers = 0, to_client = 0;
  } observer;
  server_->setSessionObserver(&observer);
  const ConnectionId id = connected(tcp_peer_);
  ASSERT_EQ(connectionBind(id).cls(), stun::MessageClass::kSuccessResponse);

  relays_.traffic[id] = {.to_peer = 1000, .to_client = 3000};
  server_->countConnectionTraffic();
  ServerStats s = server_->stats();
  EXPECT_EQ(s.client_bytes_relayed, 1000u);
  EXPECT_EQ(s.peer_bytes_relayed, 3000u);
  EXPECT_EQ(s.client_packets_relayed + s.peer_packets_relayed, 0u);  // a stream has no packets
  ASSERT_GT(server_->statsByCluster().size(), 2u);
  EXPECT_EQ(server_->statsByCluster()[2].tx_bytes, 1000u);  // the admitting TCP cluster's
  EXPECT_EQ(server_->statsByCluster()[2].rx_bytes, 3000u);

  // Bytes not counted yet when the allocation ends go into its session record.
  relays_.traffic[id] = {.to_peer = 5, .to_client = 7};
  ASSERT_EQ(refresh(0).cls(), stun::MessageClass::kSuccessResponse);
  EXPECT_EQ(observer.to_peers, 1005u);
  EXPECT_EQ(observer.to_client, 3007u);
  EXPECT_EQ(server_->stats().client_bytes_relayed, 1005u);
}

TEST_F(TcpAllocationTest, AClosingConnectionsLastBytesAreCounted) {
  const ConnectionId id = connected(tcp_peer_);
  ASSERT_EQ(connectionBind(id).cls(), stun::MessageClass::kSuccessResponse);
  relays_.traffic[id] = {.to_peer = 40, .to_client = 60};
  server_->onConnectionClosed(id);
  EXPECT_EQ(server_->stats().client_bytes_relayed, 40u);
  EXPECT_EQ(server_->stats().peer_bytes_relayed, 60u);
}

// A stream is paced rather than dropped: the I/O layer reads no more than the allowance, the
// least of what the allocation's and the listener's buckets hold, and spends what it read.
TEST_F(TcpAllocationTest, PeerConnectionsArePacedByTheAllocationAndListenerCaps) {
  const ConnectionId id = connected(tcp_peer_);
  ASSERT_EQ(connectionBind(id).cls(), stun::MessageClass::kSuccessResponse);
  const AllocationId allocation = server_->findAllocation(tuple_)->id;
  EXPECT_EQ(server_->connectionAllowance(allocation, true, now_.mono), UINT64_MAX);  // no caps

  ServerConfig c = server_->config();
  c.allocation_bytes_per_second = 64'000;  // a 32,000 B burst
  c.listener_bytes_per_second = 32'000;    // a 16 KiB burst (the minimum)
  server_->applyConfig(std::make_shared<const ServerConfig>(c));
  const MonoTime t = now_.mono;
  EXPECT_EQ(server_->connectionAllowance(allocation, true, t), 16'384u);  // the listener's
  server_->spendConnectionAllowance(allocation, true, 16'384);
  EXPECT_EQ(server_->connectionAllowance(allocation, true, t), 0u);
  EXPECT_EQ(server_->stats().connection_reads_held, 1u);
  EXPECT_EQ(server_->connectionAllowance(allocation, false, t), 16'384u);  // its own budget
  // 100 ms refill 3,200 B at the listener's rate (and 6,400 B at the allocation's).
  const MonoTime later = t + std::chrono::milliseconds(100);
  EXPECT_EQ(server_->connectionAllowance(allocation, true, later), 3'200u);
  server_->spendConnectionAllowance(allocation, true, 3'200);
  EXPECT_EQ(server_->connectionAllowance(allocation, true, later), 0u);

  // The listener's budget is shared: what the first allocation spent, a second one lacks, and
  // with the listener's cap lifted the second's own budget is whole.
  tuple_.client = addr("192.0.2.20:40000");
  control_ = tuple_;
  ASSERT_EQ(allocateTcp().cls(), stun::MessageClass::kSuccessResponse);
  const AllocationId second = server_->findAllocation(tuple_)->id;
  EXPECT_EQ(server_->connectionAllowance(second, true, later), 0u);
  c.listener_bytes_per_second = 0;
  server_->applyConfig(std::make_shared<const ServerConfig>(c));
  EXPECT_EQ(server_->connectionAllowance(second, true, later), 32'000u);
  // The first's: its burst, less what it spent, plus 100 ms at its own rate.
  EXPECT_EQ(server_->connectionAllowance(allocation, true, later),
            32'000u - 16'384u - 3'200u + 6'400u);
  EXPECT_EQ(server_->connectionAllowance(AllocationId{999, 1}, true, t), UINT64_MAX);  // gone
}

TEST_F(TcpAllocationTest, ConnectionIdsCarryTheOwningWorkerInTheirTopByte) {
  connection_prefix_ = 5;
  ServerConfig c = staticConfig();
  c.listeners[0].peers.push_back(
      PeerRange{*IpAddress::parse("10.4.0.0"), 16, 0, 65535, 2, TransportProtocol::kTcp});
  reset(c);
  const ConnectionId first = connected(tcp_peer_);
  EXPECT_FALSE(connect(addr("10.4.0.8:8080")));
  const ConnectionId second = relays_.connecting.back().id;
  EXPECT_EQ(connectionOwner(first), 5);
  EXPECT_EQ(connectionOwner(second), 5);
  EXPECT_NE(first, second);
}

}  // namespace
}  // namespace kturn::turn::testing
