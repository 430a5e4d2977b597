// Command-line options of kturn-bench, shared by the client groups and the echo peer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "kturn/transport_address.h"

namespace kturn::bench {

enum class Mode : uint8_t {
  kTraffic,    // allocate, bind, then paced ChannelData (or Send) through an echo peer
  kAllocRate,  // authenticated Allocate + Refresh(0) cycles, as many per second as answered
  kMany,       // hold many allocations (refreshed as needed), traffic on a subset
};

// How the clients reach the server (RFC 8656 §3.1); the relay leg is UDP in every case.
enum class Transport : uint8_t {
  kUdp,
  kTcp,  // TURN-TCP: one connection per client, STUN and padded ChannelData framed on it
  kTls,  // TURN-TLS: the same over TLS 1.2/1.3
};

struct BenchOptions {
  Mode mode = Mode::kTraffic;
  Transport transport = Transport::kUdp;
  // TLS: the highest version the clients offer (0: the highest OpenSSL has), e.g. 0x0303 for
  // TLS 1.2 to compare servers on the same protocol and cipher suite.
  int tls_max_version = 0;
  TransportAddress server;
  // --raw: no TURN at all. Clients send ChannelData frames to a udp-forwarder, which strips the
  // 4-byte header towards the peer and adds it back towards the client.
  bool raw = false;
  // --direct: no relay at all. Clients send the bare payload straight to the echo peer, which
  // echoes it back: the same packets the generator and peer exchange through a relay, without
  // it, so that bench/compare can subtract their cost from the machine's (the marginal cost).
  bool direct = false;
  // --send: Send indications out, Data indications back (no ChannelBind).
  bool send_indications = false;

  std::string auth = "static";  // static | rest
  std::string username = "user1";
  std::string password = "pass1";
  std::string secret;  // rest: shared secret; usernames are "<expiry>:bench<i>"
  uint32_t rest_ttl = 86400;

  size_t clients = 10;     // allocations (one UDP socket each)
  size_t active = 0;       // clients that send traffic; 0: all (traffic) or min(100, all) (many)
  double rate = 10000;     // offered aggregate packets per second, client -> peer
  size_t payload = 100;    // UDP payload bytes relayed to the peer (>= 24)
  double warmup = 1.0;     // seconds of traffic not measured
  double duration = 10.0;  // measured seconds
  double drain = 0.5;      // seconds to wait for echoes after the last measured send
  uint64_t max_packets = 200'000'000;  // hard bound on packets sent per run

  size_t threads = 1;                    // client threads (clients are split among them)
  size_t peer_threads = 1;               // built-in echo peer threads (SO_REUSEPORT sockets)
  std::optional<TransportAddress> peer;  // external echo peer; else the built-in one
  TransportAddress peer_bind;            // where the built-in peer listens (port 0: any)
  // The network namespace (a path such as /run/netns/NAME) the built-in peer's sockets are made
  // in; empty: the generator's own. For bench/compare's offload scenario, where client, server
  // and peer sit in namespaces of their own.
  std::string peer_netns;
  // Source address of the clients' sockets (default: loopback of the server's family). A soak
  // gives each run its own (127.0.0.x), so a new client's 5-tuple never meets an allocation an
  // earlier run abandoned, and failed authentications of one run never throttle the next.
  std::optional<IpAddress> client_bind;

  uint32_t lifetime = 600;       // requested allocation lifetime; refreshed at half of it
  size_t window = 256;           // transactions in flight per thread (setup, teardown)
  size_t concurrency = 64;       // alloc-rate: clients cycling in parallel
  double setup_timeout = 120.0;  // seconds for every allocation to be set up
  double refresh_after = 0;      // seconds from (re)allocation to the next Refresh; 0: lifetime/2
  // Share of the allocations released with Refresh(0) at the end; the others are abandoned
  // (their sockets closed) for the server to expire: churn for soak tests.
  double release_fraction = 1.0;

  bool json = false;
  bool quiet = false;

  size_t activeClients() const;
  bool stream() const { return transport != Transport::kUdp; }
  // No TURN transactions: --raw (a udp-forwarder) or --direct (the peer itself).
  bool noTurn() const { return raw || direct; }
};

}  // namespace kturn::bench
