// The sans-I/O TURN server core (RFC 8656 over UDP, RFC 8489 STUN Binding): bytes, addresses and
// time in; datagrams to send out. It never touches a socket, a clock or an RNG
// (docs/architecture.md); relayed transport addresses come from an injected RelayAllocator. One
// instance per worker: not thread-safe, no locks.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kturn/function_ref.h"
#include "kturn/transport_address.h"
#include "stun/data_indication.h"
#include "stun/message.h"
#include "stun/message_builder.h"
#include "turn/actions.h"
#include "turn/allocation_move.h"
#include "turn/allocation_table.h"
#include "turn/bandwidth_caps.h"
#include "turn/channel_offload.h"
#include "turn/mobility_ticket.h"
#include "turn/peer_connections.h"
#include "turn/peer_policy.h"
#include "turn/relay_allocator.h"
#include "turn/request_auth.h"
#include "turn/server_config.h"
#include "turn/server_stats.h"
#include "turn/session_observer.h"
#include "turn/timer_wheel.h"
#include "turn/user_quota.h"

namespace kturn::turn {

// A datagram received on a relay socket, in a buffer with room around it: the core writes the
// ChannelData or Data indication header into the `headroom` bytes before the payload and up to 3
// bytes of padding after it, so relaying to the client copies nothing.
struct PeerPacket {
  static constexpr size_t kHeadroom = stun::dataIndicationHeadroom(AddressFamily::kIPv6);
  static constexpr size_t kTailroom = 4;
  std::span<uint8_t> buffer;  // headroom + payload + tailroom
  size_t offset = 0;          // payload start, >= kHeadroom
  size_t length = 0;          // payload size
};

class Server {
 public:
  struct Options {
    // Random, drawn by the caller once for the process: every core must take the nonces and
    // MOBILITY-TICKETs of the others (a client's new address may reach another worker).
    std::array<uint8_t, 32> nonce_key{};
    std::array<uint8_t, 32> mobility_key{};
    uint64_t seed = 1;  // for Data indication transaction IDs and mobility ids
    // The daemon's worker index: the top 8 bits of this core's CONNECTION-IDs (RFC 6062), and the
    // owner its MOBILITY-TICKETs name (RFC 8016).
    uint8_t connection_id_prefix = 0;
    // Allocations per username, shared by every core of the process so that admin.user_quota
    // holds per process; not owned, must outlive the Server. Null: this core's own.
    UserQuota* user_quota = nullptr;
    // Whether the process is over its capacity marks (admin.capacity, with their hysteresis),
    // written by the daemon's capacity thread; not owned, must outlive the Server. Read with one
    // relaxed load per new Allocate, never per packet: over the marks, an Allocate on a listener
    // with an alternate server of the client's family is redirected there (300), as one refused
    // for hard capacity is. Null: never over.
    const std::atomic<bool>* over_capacity = nullptr;
  };

  Server(ServerConfigPtr config, RelayAllocator& relays, const Options& options);
  // Observes allocation ends (session records); optional, not owned.
  void setSessionObserver(SessionObserver* observer) { observer_ = observer; }
  // Hands qualifying channels to a kernel fast path (channel_offload.h); null takes every
  // channel back. Offers the channels already bound at once. Not owned; must outlive the Server
  // or be replaced first.
  void setChannelOffload(ChannelOffload* offload);
  // Takes the sources that use up their authentication failures (source_blocker.h); null: none.
  // Not owned; must outlive the Server or be replaced first.
  void setSourceBlocker(SourceBlocker* blocker) { auth_.setSourceBlocker(blocker); }
  // Reaches the cores of the other workers for RFC 8016 moves (allocation_move.h); null: a
  // ticket naming another worker is answered 437. Not owned.
  void setMobilityRouter(MobilityRouter* router) { router_ = router; }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // A datagram from a client to `listener`; `five_tuple.server` is the address it arrived at.
  void onClientPacket(ListenerId listener, const FiveTuple& five_tuple,
                      std::span<const uint8_t> packet, const Now& now, Actions& out);

  // A datagram from `peer` to the relayed address of `allocation`.
  void onPeerPacket(AllocationId allocation, const TransportAddress& peer, PeerPacket packet,
                    const Now& now, Actions& out);

  // RFC 8016 moves between cores (allocation_move.h). On the core the ticket names: checks the
  // Refresh (ticket, credentials) against the allocation and gives it up, or answers the client
  // with the error (in `out`, to the listener of the request) and returns nullopt.
  std::optional<MovedAllocation> releaseForMove(const MoveRequest& request, const Now& now,
                                                Actions& out);
  // On the core of the worker that received the request: adopts the allocation under the
  // request's 5-tuple and answers the Refresh.
  void adoptMoved(MovedAllocation moved, const MoveRequest& request, const Now& now, Actions& out);

  // Expires allocations, permissions and channels. Call at least once a second.
  void onTick(const Now& now);

  // Swaps in a new configuration. Allocations stay; every permission and channel re-checks its
  // peer against the new routes before it relays its next packet.
  void applyConfig(ServerConfigPtr config);

  // Ends every allocation made through `listener` (session end kListenerClosed): called when
  // the listener's socket goes away, since its clients can no longer reach them.
  void closeListener(ListenerId listener, const Now& now);
  // TURN over TCP/TLS: the connection of `five_tuple` closed, and with it its allocation, if
  // any (RFC 8656 §3.1: the allocation is tied to the connection).
  void onClientClosed(const FiveTuple& five_tuple, const Now& now);

  // Traffic the kernel fast path relayed for `channel` of the allocation of `five_tuple`, read
  // from its counters by the daemon (once a second): counted as if the core had relayed it.
  void onOffloadedTraffic(const FiveTuple& five_tuple, uint16_t channel,
                          const OffloadedTraffic& traffic);

  // RFC 6062 TCP allocations: what became of the peer connections the core asked for.
  // The connection a Connect asked for is up (or failed, or took over 30 s): answers the Connect
  // with its CONNECTION-ID, or 447.
  void onPeerConnected(ConnectionId id, bool connected, const Now& now, Actions& out);
  // `peer` connected to the relayed address of TCP allocation `allocation`. With a permission
  // for the peer, sends the client a ConnectionAttempt and returns the new connection's id;
  // otherwise returns 0 and the I/O layer closes the connection (RFC 6062 §5.3).
  ConnectionId onPeerConnectionAccepted(AllocationId allocation, const TransportAddress& peer,
                                        const Now& now, Actions& out);
  // Peer connection `id`, or the client data connection bound to it, closed: the I/O layer
  // closed both. Its peer may be connected again.
  void onConnectionClosed(ConnectionId id);
  // Counts the bytes every peer connection relayed since last asked (RelayAllocator::
  // takeConnectionTraffic): into the allocation's session record, the listener's relayed bytes
  // and the admitting TCP cluster's. Once a second or so, and before stats are read.
  void countConnectionTraffic();
  // Bandwidth caps on peer connections, which are paced rather than dropped: the I/O layer reads
  // at most connectionAllowance() bytes of a connection of `allocation` (toward the peer or the
  // client), the least of what the allocation's and its listener's caps hold now (UINT64_MAX
  // without caps), then spends what it read. Zero holds the connection's reads back; each such
  // hold counts in connection_reads_held.
  uint64_t connectionAllowance(AllocationId allocation, bool to_peer, MonoTime now);
  void spendConnectionAllowance(AllocationId allocation, bool to_peer, uint64_t bytes);

  // The method of the request the last onClientPacket() answered or refused (0 if the packet
  // was not a request): the daemon times request handling per method with it.
  uint16_t lastRequestMethod() const { return last_request_method_; }

  const ServerConfig& config() const { return *config_; }
  // Counters per listener, indexed by ListenerId (slot 0: peer packets for unknown allocations).
  const std::vector<ServerStats>& statsByListener() const { return stats_; }
  // Relayed traffic per cluster, indexed by ClusterId (slot 0: not attributed).
  const std::vector<TrafficCounters>& statsByCluster() const { return cluster_stats_; }
  // All listeners summed.
  ServerStats stats() const;
  size_t allocationCount() const { return allocations_.size(); }
  // Timer entries held, live and stale (for tests of the memory bound under churn).
  size_t timerEntries() const { return timers_.size(); }
  // For tests and status pages.
  Allocation* findAllocation(const FiveTuple& five_tuple) { return allocations_.find(five_tuple); }

 private:
  // One request being answered: the parsed message plus where to send the response and which
  // counters it moves (its listener's).
  struct Request {
    ListenerId listener;
    ServerStats& stats;
    const FiveTuple& five_tuple;
    const stun::MessageView& message;
    const Now& now;
    Actions& out;
    const stun::IntegrityKey* key = nullptr;  // set once authenticated
    stun::IntegrityKey key_storage;           // what `key` points at for new allocations
    bool oauth = false;                       // authenticated with an ACCESS-TOKEN
  };

  // The counters of `listener`, grown when a new listener id appears: called at the entry points
  // only, so the references handed down stay valid while an input is handled.
  ServerStats& statsFor(ListenerId listener);
  // The counters of the listener `a` was made through (sized when it was made).
  ServerStats& statsOf(const Allocation& a) { return stats_[a.listener]; }

  void onStun(ServerStats& stats, ListenerId listener, const FiveTuple& five_tuple,
              std::span<const uint8_t> packet, const Now& now, Actions& out);
  void onMalformedStun(ServerStats& stats, ListenerId listener, const FiveTuple& five_tuple,
                       std::span<const uint8_t> packet, Actions& out);

  // The data path (data_path.cc): relays client datagrams (peer datagrams: onPeerPacket).
  void onChannelData(ServerStats& stats, const FiveTuple& five_tuple,
                     std::span<const uint8_t> packet, const Now& now, Actions& out);
  void handleSend(ServerStats& stats, const FiveTuple& five_tuple, const stun::MessageView& message,
                  const Now& now, Actions& out);
  // The bandwidth caps for `bytes` relayed one way; counts a drop.
  bool underCaps(ServerStats& stats, Allocation& a, bool to_peer, size_t bytes, MonoTime now);
  // The one place relayed traffic is counted, whoever relayed it (this core, the kernel fast
  // path, a peer connection): the listener's counters, the cluster's (grown when a new cluster
  // id appears) and the allocation's session record.
  void countRelayed(ServerStats& stats, Allocation& a, ClusterId cluster, bool to_peer,
                    uint64_t bytes, uint64_t packets = 1);

  // Handlers, one per method, each in handlers/<method>.cc.
  void handleBinding(Request& req);
  void handleAllocate(Request& req);
  void handleRefresh(Request& req);
  // Refresh of the request's own allocation `a` (or none: 437).
  void refreshAllocation(Request& req, Allocation* a);
  void handleCreatePermission(Request& req);
  void handleChannelBind(Request& req);
  void handleConnect(Request& req);
  void handleConnectionBind(Request& req);
  // An Allocate on a 5-tuple that holds `existing`: the same answer for a retransmission, else
  // 437.
  void answerAgain(Request& req, const Allocation& existing);
  // The per-user, per-source and per-core allocation limits, then the process's capacity marks:
  // false after the refusal or redirect. The user's quota is taken on true; the caller gives it
  // back if the allocation is not made. `reserved`: the Allocate names a RESERVATION-TOKEN, which
  // the marks do not redirect.
  bool withinQuotas(Request& req, std::string_view username, bool reserved);
  // An Allocate this core has no room for: 300 Try Alternate naming the listener's alternate
  // server of the client's family (RFC 8489 §10), or 508 without one.
  void refuseForCapacity(Request& req);
  // The request's listener's first alternate server of the client's family, or null.
  const TransportAddress* alternateServer(const Request& req) const;
  // 300 Try Alternate naming `alternate` (ALTERNATE-DOMAIN too on TLS and DTLS listeners).
  void redirect(Request& req, const TransportAddress& alternate);

  // RFC 8016 (handlers/refresh.cc). A Refresh with MOBILITY-TICKET from a 5-tuple without an
  // allocation: moves the allocation the ticket names here, from this core or another.
  void moveToThisAddress(Request& req, std::span<const uint8_t> ticket_attr);
  // Checks the ticket and the request against the allocation it names and takes it out of this
  // core; nullopt after answering the error.
  std::optional<MovedAllocation> release(Request& req, const MobilityTicket& ticket);
  // Puts a moved allocation in under the request's 5-tuple.
  Allocation& adopt(MovedAllocation moved, Request& req);
  // The MOBILITY-TICKET naming `a` as it is now.
  std::string ticketFor(const Allocation& a) const;
  // Whether an allocation made through `listener` over `protocol` may move (TURN-UDP only).
  bool mobileTransport(ListenerId listener, TransportProtocol protocol) const;
  uint64_t nextRandom();

  // Checks the request's credentials (request_auth.h). Returns false after answering the
  // refusal, if it gets one; on success sets req.key. `allocation` is the 5-tuple's, if any.
  bool authenticate(Request& req, Allocation* allocation);
  // 420 for unknown comprehension-required attributes; true if it answered.
  bool rejectUnknownAttributes(Request& req);

  // A response or indication to the client of `five_tuple` on `listener`: `fill` adds the method's
  // attributes; then SOFTWARE, MESSAGE-INTEGRITY (or -SHA256 with `sha256`) when `key` is set,
  // FINGERPRINT with `fingerprint`.
  struct Reply {
    ListenerId listener;
    const FiveTuple& five_tuple;
    uint16_t method_bits;
    stun::MessageClass cls;
    std::span<const uint8_t, stun::kTransactionIdSize> transaction;
    const stun::IntegrityKey* key = nullptr;
    bool sha256 = false;
    bool fingerprint = false;
  };
  void send(const Reply& reply, ServerStats& stats, Actions& out,
            FunctionRef<void(stun::MessageBuilder&)> fill);
  // Response helpers. `fill` adds method-specific attributes to the builder.
  void respond(Request& req, stun::MessageClass cls, FunctionRef<void(stun::MessageBuilder&)> fill);
  void respondSuccess(Request& req);
  void respondError(Request& req, int code);
  // 401/438: REALM and a fresh NONCE, no MESSAGE-INTEGRITY.
  void respondChallenge(Request& req, int code);

  // Allocation lifecycle.
  Seconds grantedLifetime(const stun::MessageView& message) const;
  void deleteAllocation(Allocation& allocation, SessionEnd reason, const Now& now);
  // Closes the `family` relay of a dual allocation with its permissions and channels.
  void releaseFamily(Allocation& allocation, AddressFamily family);
  void rearm(Allocation& allocation);
  void onAllocationTimer(AllocationId id, int64_t deadline, const Now& now);
  // RFC 6062 (server_tcp_relay.cc): takes and counts what connection `c` of `a` relayed since
  // last asked.
  void countConnection(Allocation& a, const PeerConnection& c);

  // The kernel fast path (server_offload.cc): offers `channel` if it qualifies, else withdraws it.
  void offerChannel(Allocation& a, ChannelBinding& channel);
  void offerChannels(Allocation& a);
  void withdrawChannel(Allocation& a, ChannelBinding& channel);
  void withdrawChannels(Allocation& a);
  bool offloadable(Allocation& a, ChannelBinding& channel);
  void countOffloaded(Allocation& a, const ChannelBinding& channel, const OffloadedTraffic& t);

  stun::TransactionId nextTransactionId();

  ServerConfigPtr config_;
  PeerPolicy policy_;   // over *config_
  BandwidthCaps caps_;  // with *config_'s rates
  RelayAllocator& relays_;
  SessionObserver* observer_ = nullptr;
  ChannelOffload* offload_ = nullptr;
  MobilityRouter* router_ = nullptr;
  RequestAuth auth_;
  MobilityTickets tickets_;
  // RFC 8016: the allocations a MOBILITY-TICKET may name, by mobility id.
  std::unordered_map<uint64_t, AllocationId> by_mobility_;
  uint64_t rng_state_;
  AllocationTable allocations_;
  std::unique_ptr<UserQuota> own_user_quota_;  // when Options::user_quota is null
  UserQuota& user_quota_;
  const std::atomic<bool>& over_capacity_;  // Options::over_capacity, or a flag never set
  TimerWheel<AllocationId> timers_;
  PeerConnections connections_;  // RFC 6062
  uint8_t worker_index_;         // Options::connection_id_prefix

  std::vector<ServerStats> stats_;              // by ListenerId
  std::vector<TrafficCounters> cluster_stats_;  // by ClusterId
  uint16_t last_request_method_ = 0;
};

}  // namespace kturn::turn
