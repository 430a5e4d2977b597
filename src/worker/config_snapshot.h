// What a worker needs from a configuration: its listeners' sockets and the TURN core's snapshot.
// Built once per config on the main thread, shared read-only by every worker.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kturn/transport_address.h"
#include "net/interface_addresses.h"
#include "net/tls_context.h"
#include "turn/server_config.h"

namespace kturn::worker {

struct ListenerSpec {
  turn::ListenerId id = 0;
  std::string name;
  // TURN-UDP or TURN-TCP (a UDP and a TCP listener may share a port number); TURN-TLS is TCP
  // and TURN-DTLS is UDP, with `tls` set.
  TransportProtocol protocol = TransportProtocol::kUdp;
  // The certificate of a TURN-TLS or TURN-DTLS listener. A listener whose certificate changes keeps
  // its sockets and connections; new connections get the new context.
  net::TlsContextPtr tls;
  // Where the listener's sockets bind: every address ("::", or "0.0.0.0" on a host without
  // IPv6) unless the config names one (bind_address, or a loopback `address`).
  TransportAddress bind;
  // `address`, the relay address: unspecified for the address the client reached.
  IpAddress relay_ip;
  // Whether relay sockets can bind relay_ip, one of the host's addresses. If not (a 1:1 NAT's
  // public address), they bind the address the client reached and XOR-RELAYED-ADDRESS names
  // relay_ip with their port.
  bool relay_ip_local = true;
  // Relay ports: [min, max], or the kernel's ephemeral range when min is 0.
  uint16_t min_relay_port = 0;
  uint16_t max_relay_port = 0;
};

// Limits of TURN-TCP/TLS connections and TURN-DTLS sessions, per listener and worker
// (admin.limits; the process-wide connection cap is already divided among the workers).
struct ConnectionLimits {
  size_t max_connections = 8192;
  std::chrono::seconds idle_timeout{30};
  std::chrono::seconds handshake_timeout{10};
  friend bool operator==(const ConnectionLimits&, const ConnectionLimits&) = default;
};

struct ConfigSnapshot {
  std::vector<ListenerSpec> listeners;
  ConnectionLimits connections;
  turn::ServerConfigPtr turn;
  // The host's addresses when the config was built: where a relay of the family the client did
  // not reach kturnd with comes from.
  net::InterfaceAddresses interfaces;
  std::string region;  // admin.region, for kturn_dataplane_info
};

using ConfigSnapshotPtr = std::shared_ptr<const ConfigSnapshot>;

}  // namespace kturn::worker
