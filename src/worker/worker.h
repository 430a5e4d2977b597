// One data-plane worker: a thread with its own event loop, its own SO_REUSEPORT socket per
// listener, its own relay sockets, TURN core and stats — shared nothing (docs/architecture.md §3).
// Other threads reach it only through post().
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "net/event_loop.h"
#include "net/raw_udp_sender.h"
#include "net/udp_receive_batch.h"
#include "net/udp_send_batch.h"
#include "net/udp_socket.h"
#include "turn/server.h"
#include "worker/channel_offloader.h"
#include "worker/config_snapshot.h"
#include "worker/dtls_listener.h"
#include "worker/relay_sockets.h"
#include "worker/request_times.h"
#include "worker/session_log.h"
#include "worker/shared_relay_ports.h"
#include "worker/source_block_list.h"
#include "worker/stream_listener.h"

namespace kturn::worker {

// Client-side traffic of one listener, seen from kturnd: rx from clients, tx to clients.
struct ListenerTraffic : turn::TrafficCounters {
  // TURN-TCP listeners: open connections now, and accepted since start (UDP: always 0).
  uint64_t connections = 0;
  uint64_t connections_total = 0;
  // Connections the listener closed itself, by reason (kturn_connections_closed_total).
  uint64_t closed_limit = 0;
  uint64_t closed_idle = 0;
  uint64_t closed_handshake = 0;
  uint64_t closed_tls = 0;
  uint64_t closed_framing = 0;
  // RFC 6062: ConnectionBinds this worker handed to the worker owning their allocation.
  uint64_t handed_over = 0;
  ListenerTraffic& operator+=(const ListenerTraffic& o) {
    turn::TrafficCounters::operator+=(o);
    connections += o.connections;
    connections_total += o.connections_total;
    closed_limit += o.closed_limit;
    closed_idle += o.closed_idle;
    closed_handshake += o.closed_handshake;
    closed_tls += o.closed_tls;
    closed_framing += o.closed_framing;
    handed_over += o.handed_over;
    return *this;
  }
};

struct WorkerStats {
  turn::ServerStats turn;                           // all listeners
  std::vector<turn::ServerStats> turn_by_listener;  // indexed by ListenerId
  std::vector<ListenerTraffic> traffic;             // indexed by ListenerId
  std::vector<turn::TrafficCounters> clusters;      // indexed by ClusterId
  uint64_t allocations = 0;
  // UDP datagrams, listeners and relays (each of a GRO train counts); of them, truncated.
  uint64_t datagrams_received = 0;
  uint64_t datagrams_truncated = 0;
  uint64_t datagrams_sent = 0;
  uint64_t send_dropped = 0;
  uint64_t send_syscalls = 0;
  uint64_t send_gso_trains = 0;     // trains of datagrams sent as one UDP GSO message
  uint64_t send_gso_fallbacks = 0;  // trains the kernel refused, sent datagram by datagram
  uint64_t receive_syscalls = 0;
  uint64_t receive_gro_trains = 0;  // datagrams that held a train of a client's (UDP GRO)
  RequestTimes request_times;
  uint64_t offload_channels = 0;           // channels the kernel fast path holds now
  std::vector<uint64_t> offload_outcomes;  // the program's kturn_stats (daemon-wide, not summed)
};

class Worker : public turn::MobilityRouter {
 public:
  struct Options {
    size_t index = 0;
    // Keys of the process, the same for every worker (turn::Server::Options); all zero: drawn
    // for this worker alone (a worker without siblings).
    std::array<uint8_t, 32> nonce_key{};
    std::array<uint8_t, 32> mobility_key{};
    size_t batch_size = 64;  // datagrams per recvmmsg/sendmmsg
    size_t max_datagram = 65535;
    int socket_buffer = 4 << 20;  // SO_RCVBUF/SO_SNDBUF of listener sockets
    // UDP GSO trains on send (UDP_SEGMENT) and UDP GRO on TURN-UDP listeners (UDP_GRO).
    bool udp_segmentation = true;
    SessionLogOptions session_log;
    // The process's allocations per username, shared by every worker (admin.user_quota holds
    // per process); not owned. Null: the worker's TURN core counts its own.
    turn::UserQuota* user_quota = nullptr;
    // Whether the process is over its admin.capacity marks (admin::HealthState, set by the
    // daemon's capacity thread); not owned. Null: never over (turn::Server::Options).
    const std::atomic<bool>* over_capacity = nullptr;
    // Shared relay sockets (`--relay-sockets shared`): the process's relayed-address table and
    // lookup, not owned. Null: a socket per allocation.
    SharedRelayPorts* shared_relays = nullptr;
  };

  Worker(const Options& options, ConfigSnapshotPtr dataplane, ReservationPool& reservations);
  ~Worker() override;
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // A listener socket bound for this worker (SO_REUSEPORT, so every worker binds its own on the
  // same address). Bound by the control thread before a config is committed, so that a port that
  // is taken rejects the config instead of half-applying it.
  struct BoundListener {
    ListenerSpec spec;
    net::UdpSocket socket;     // TURN-UDP and TURN-DTLS
    net::UdpSocket socket_v4;  // the IPv4 half of a TURN-UDP/DTLS listener on "::"
    net::FileDescriptor tcp;   // TURN-TCP and TURN-TLS: listening (on "::", dual stack)
  };
  // `gro`: UDP_GRO on a TURN-UDP listener's sockets (Options::udp_segmentation).
  static Result<BoundListener> bindListener(const ListenerSpec& spec, int socket_buffer, bool gro);

  void start();
  void stop();  // any thread; joins

  // Runs `fn` on the worker's thread, with its TURN core and stats.
  void post(std::function<void()> fn) { loop_.post(std::move(fn)); }
  // Applies a configuration on the worker's thread: stops serving the listeners in `removed`
  // (ending the allocations made through them), starts serving `added`, then swaps in
  // `dataplane`. Listeners in neither list, and their allocations, are untouched.
  void reconfigure(ConfigSnapshotPtr dataplane, std::vector<BoundListener> added,
                   std::vector<turn::ListenerId> removed);
  // A copy of the worker's counters, taken on its thread; `done` runs there too.
  void collectStats(std::function<void(const WorkerStats&)> done);
  // Hands this worker's qualifying channels to the kernel fast path through `maps`, with counter
  // slots [first_slot, first_slot + slots); null takes them all back. Any thread: runs on the
  // worker's. `maps` must outlive the worker or a later setOffload(nullptr).
  void setOffload(xdp::OffloadMaps* maps, uint32_t first_slot, uint32_t slots);
  // Every worker of the daemon, indexed by Options::index, this one included: where a
  // ConnectionBind goes when another worker's core owns its CONNECTION-ID (RFC 6062). Set once,
  // before start().
  void setSiblings(std::vector<Worker*> siblings) { siblings_ = std::move(siblings); }

  // RFC 8016 (turn/allocation_move.h), on this worker's thread: its core asks worker `owner`'s
  // core for the allocation a MOBILITY-TICKET names. Until the answer comes back, datagrams
  // from the request's 5-tuple wait here (at most kMaxHeld).
  bool requestMove(uint8_t owner, turn::MoveRequest request) override;

 private:
  struct Listener {
    turn::ListenerId id;
    TransportAddress address;
    net::UdpSocket socket;                   // TURN-UDP and TURN-DTLS
    net::UdpSocket socket_v4;                // on "::": the IPv4 socket beside the IPv6-only one
    std::unique_ptr<StreamListener> stream;  // TURN-TCP and TURN-TLS
    std::unique_ptr<DtlsListener> dtls;      // TURN-DTLS
    // The UDP socket that reaches `client`.
    int fdFor(const TransportAddress& client) const {
      return client.ip.isV4() && socket_v4.fd() >= 0 ? socket_v4.fd() : socket.fd();
    }
    // The source address of a datagram to a client that reached `local`: `local` itself on a
    // wildcard address (where the kernel would choose by route, and a multi-homed client or an
    // Anycast address on a loopback would see answers from an address it never sent to);
    // unspecified on a bound address, which is the source anyway and costs no control message.
    IpAddress sourceFor(const IpAddress& local) const {
      return address.ip.isUnspecified() ? local : IpAddress{};
    }
  };

  void addListener(BoundListener bound, const ConnectionLimits& limits);
  // Owns `listener` from now on and indexes it by id (findListener()).
  void keepListener(std::unique_ptr<Listener> listener);
  void removeListener(turn::ListenerId id);
  void onListenerReadable(const Listener& listener, int fd);
  // The TURN messages inside one receive batch of a TURN-DTLS listener.
  // A peer's datagrams that arrived as one train (UDP GRO), `segment` bytes each but the last,
  // relayed one by one.
  void relayTrain(turn::AllocationId allocation, const TransportAddress& peer,
                  std::span<const uint8_t> train, size_t segment, const turn::Now& t);
  // One client datagram of a TURN-UDP listener: counted, handed to the core.
  void onClientDatagram(const Listener& listener, const FiveTuple& tuple,
                        std::span<const uint8_t> payload, const turn::Now& t);
  void onDtlsDatagrams(const Listener& listener, size_t count, const turn::Now& t);
  // Encrypts an answer for a DTLS client, making room in the output first if it is full.
  void sendDtls(const Listener& listener, const TransportAddress& client,
                std::span<const uint8_t> data);
  // Moves a DTLS listener's queued datagrams into the send batch (which must be flushed before
  // the listener's output is cleared).
  void queueDtlsOutput(const Listener& listener);
  void onRelayReadable(turn::AllocationId allocation, int fd);
  // The worker's shared relay socket: datagrams to any of its allocations' relayed addresses.
  void onSharedRelayReadable(int fd);
  // Opens the shared relay sockets and the raw sender; false (logged) leaves a socket per
  // allocation.
  bool openSharedRelays(SharedRelayPorts& ports);
  // One peer datagram of a UDP allocation (batch slot i), counted, to the core.
  void onPeerDatagram(turn::AllocationId allocation, size_t i, const turn::Now& t);
  // RFC 6062: a peer connecting to a TCP relay.
  void onRelayAcceptable(turn::AllocationId allocation, int fd);
  // Hand-overs between workers (worker_handover.cc): onDetached, adopt, requestMove, moveOut,
  // moveIn. The worker whose core owns the CONNECTION-ID of a ConnectionBind request, else nullopt.
  static std::optional<size_t> connectionBindOwner(std::span<const uint8_t> frame);
  // A data connection left stream listener `id` after requestDetach(): joined to its peer
  // connection, or handed to the worker that owns it.
  void onDetached(turn::ListenerId id, std::unique_ptr<StreamListener::Connection> c);
  // On the owner: a data connection handed over from another worker's listener `id`.
  void adopt(turn::ListenerId id, std::unique_ptr<StreamListener::Connection> c);
  // Sends what the core produced for the current receive batch, then clears it.
  void flush();
  const Listener* findListener(turn::ListenerId id) const;  // O(1)
  // A frame from a TURN-TCP or TURN-TLS connection (stream framing done).
  void onStreamFrame(turn::ListenerId id, const FiveTuple& tuple, std::span<const uint8_t> frame);
  ListenerTraffic& traffic(turn::ListenerId id) {
    if (id >= traffic_.size()) traffic_.resize(id + 1);
    return traffic_[id];
  }
  turn::Now now() const;
  // Counts what the kernel relayed for this worker's channels into its core.
  void collectOffloaded();
  // RFC 8016, on the owner: its core gives the allocation up (or answers the client), and the
  // outcome goes back to worker `to`.
  void moveOut(turn::MoveRequest request, Worker* to);
  // Back on the requesting worker: its core adopts the allocation, if any, and answers the
  // Refresh; then the datagrams held meanwhile go to the core.
  void moveIn(std::optional<turn::MovedAllocation> moved, turn::MoveRequest request);
  static constexpr size_t kMaxHeld = 16;

  Options options_;
  ConfigSnapshotPtr dataplane_;
  net::EventLoop loop_;
  RelaySockets relays_;
  SessionLog session_log_;
  std::unique_ptr<ChannelOffloader> offloader_;  // before server_, which points at it
  std::unique_ptr<SourceBlockList> blocker_;     // before server_, which points at it
  std::unique_ptr<turn::Server> server_;
  std::vector<std::unique_ptr<Listener>> listeners_;  // stable addresses for the callbacks
  // listeners_ by ListenerId (null: none): flush() finds each answer's listener in O(1).
  std::vector<const Listener*> listener_by_id_;
  net::UdpReceiveBatch rx_;
  net::UdpSendBatch tx_;
  // Shared relay sockets: the IPv4 and IPv6 sockets the lookup hands peer datagrams to, and
  // the raw sender that sends from the relayed addresses.
  net::UdpSocket shared_v4_;
  net::UdpSocket shared_v6_;
  std::optional<net::RawUdpSender> raw_;
  std::vector<uint8_t> train_slots_;  // relayTrain()'s copies, one slot per datagram
  turn::Actions actions_;
  WorkerStats io_stats_;
  std::vector<ListenerTraffic> traffic_;  // by ListenerId; grows only when a listener is added
  std::vector<Worker*> siblings_;
  // Data connections being detached (RFC 6062), by client address: to join to this peer
  // connection, or to hand to another worker with this ConnectionBind frame.
  std::unordered_map<TransportAddress, turn::ConnectionId> binds_;
  std::unordered_map<TransportAddress, std::vector<uint8_t>> handoffs_;
  // RFC 8016: 5-tuples whose allocation is on its way here, with the datagrams they sent since.
  std::unordered_map<FiveTuple, std::vector<std::vector<uint8_t>>> moving_;
  std::thread thread_;
};

}  // namespace kturn::worker
