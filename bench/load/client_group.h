// A thread's share of the simulated clients: their sockets, the TURN state machine that sets up,
// refreshes and releases their allocations, the paced sender and the receiver that matches echoes
// to stamps. Everything is preallocated when the group opens; the traffic loop allocates nothing.
#pragma once

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "client/stream_connection.h"
#include "histogram.h"
#include "kturn/result.h"
#include "options.h"
#include "turn_client.h"

namespace kturn::bench {

using client::ClientTlsContext;
using client::StreamConnection;

// Shared by the main thread and every group.
struct RunControl {
  std::atomic<size_t> setup_finished{0};     // groups done with setup
  std::atomic<int64_t> traffic_start_ns{0};  // set by the main thread once every group is set up
  std::atomic<bool> abort{false};
};

struct GroupResult {
  size_t allocated = 0;  // allocations that reached Ready in setup
  size_t failed = 0;     // clients whose setup failed
  double setup_seconds = 0;
  uint64_t sent_total = 0;         // traffic datagrams sent, warmup included
  uint64_t received_total = 0;     // echoes received, warmup and drain included
  uint64_t sent_measured = 0;      // sent inside the measured window
  uint64_t received_measured = 0;  // of those, echoes received before the drain ended
  uint64_t send_failed = 0;        // traffic datagrams the client socket refused (EAGAIN...)
  uint64_t foreign = 0;            // datagrams that were neither a response nor a stamped echo
  uint64_t cycles = 0;             // alloc-rate: Allocate + Refresh(0) cycles in the window
  uint64_t transactions = 0;       // requests answered
  uint64_t retransmissions = 0;
  uint64_t timeouts = 0;
  uint64_t refreshes = 0;          // allocations refreshed (Refresh answered with success)
  uint64_t released = 0;           // allocations released with Refresh(0) at the end
  uint64_t abandoned = 0;          // allocations left for the server to expire (--release-fraction)
  uint64_t connections_lost = 0;   // TURN-TCP/TLS connections the server closed or that failed
  std::string tls;                 // negotiated TLS version and cipher suite (first client)
  std::map<int, uint64_t> errors;  // error code -> count (0: timeout)
  LatencyHistogram rtt;
  LatencyHistogram transaction_rtt;
};

class ClientGroup {
 public:
  // `first`..`first + count` are the global client numbers this group owns.
  ClientGroup(const BenchOptions& options, size_t group, size_t groups, size_t first, size_t count,
              TransportAddress peer);
  ~ClientGroup();
  ClientGroup(const ClientGroup&) = delete;
  ClientGroup& operator=(const ClientGroup&) = delete;

  Result<void> open();
  void run(RunControl& control);
  const GroupResult& result() const { return result_; }

 private:
  static constexpr size_t kBatch = 64;
  static constexpr size_t kSlot = 2048;

  // Setup, teardown and alloc-rate all use the windowed transaction engine.
  void enqueue(uint32_t local, Step step);
  void fillWindow(int64_t now);
  void begin(TurnClient& c, Step step, int64_t now);
  void transmit(TurnClient& c, int64_t now);
  void checkTimers(int64_t now);
  void finish(TurnClient& c, Step final_step);
  void onResponse(TurnClient& c, std::span<const uint8_t> bytes, int64_t now);
  void afterSuccess(TurnClient& c, int64_t now);
  // alloc-rate: a fresh client port for the next cycle.
  bool reopenSocket(TurnClient& c);

  // Waits up to `timeout_ns` for readable sockets and drains them.
  void poll(int64_t timeout_ns);
  void drainSocket(uint32_t local, int64_t now);
  // One datagram (UDP) or frame (TCP, TLS) from the server: a response, or an echo.
  void dispatch(TurnClient& c, std::span<const uint8_t> bytes, int64_t now);
  void onEcho(TurnClient& c, std::span<const uint8_t> payload, int64_t now);

  // TURN-TCP/TLS.
  Result<void> openStream(TurnClient& c, size_t local);
  void drainStream(uint32_t local, int64_t now);
  // Writes what the connection has queued; a connection left with output joins backlog_.
  void flushStream(uint32_t local);
  void flushBacklog();
  void sendStreamBurst(TurnClient& c, size_t n, int64_t now, bool measured);
  // The server closed the connection (or it failed): the client and its allocation are gone.
  void connectionLost(TurnClient& c);

  void runSetup(RunControl& control);
  void runTraffic(RunControl& control, int64_t start_ns);
  void runAllocRate(RunControl& control, int64_t start_ns);
  void runTeardown(RunControl& control);
  void sendBurst(TurnClient& c, size_t n, int64_t now, bool measured);
  bool windowIdle() const { return inflight_count_ == 0 && pending_.empty(); }
  // Whether client `index` releases its allocation at the end (--release-fraction), spread
  // evenly over the client numbers.
  bool releasesAtEnd(uint32_t index) const;

  const BenchOptions& opts_;
  size_t group_;
  size_t groups_;
  size_t first_;
  RequestParams params_;
  std::vector<TurnClient> clients_;
  std::vector<uint32_t> active_;  // local indices of clients that send traffic
  int epoll_fd_ = -1;
  uint64_t txid_counter_ = 0;

  // Transaction window.
  std::vector<std::pair<uint32_t, Step>> pending_;
  size_t pending_head_ = 0;
  std::vector<uint32_t> inflight_;  // may hold stale entries; compacted by checkTimers()
  size_t inflight_count_ = 0;
  int64_t next_timer_check_ns_ = 0;
  bool cycling_ = false;  // alloc-rate: a released client allocates again
  int64_t cycle_window_start_ns_ = 0;
  int64_t cycle_window_end_ns_ = 0;

  // Traffic.
  int64_t measure_start_ns_ = 0;
  int64_t measure_end_ns_ = 0;
  int64_t drain_end_ns_ = 0;
  std::vector<uint8_t> filler_;
  std::array<mmsghdr, kBatch> tx_msgs_{};
  std::array<std::array<iovec, 3>, kBatch> tx_iov_{};
  std::array<std::array<uint8_t, 24>, kBatch> tx_stamps_{};
  std::unique_ptr<uint8_t[]> rx_buffer_;
  std::array<mmsghdr, kBatch> rx_msgs_{};
  std::array<iovec, kBatch> rx_iov_{};

  // TURN-TCP/TLS: one connection per client (indexed like clients_), the clients whose
  // connection still holds output, and the TLS client context.
  std::unique_ptr<ClientTlsContext> tls_;
  std::vector<std::unique_ptr<StreamConnection>> streams_;
  std::vector<uint32_t> backlog_;

  GroupResult result_;
};

}  // namespace kturn::bench
