// Turns a validated STUNner dataplane config into the snapshot the workers run: listener sockets
// to bind and the TURN core's ServerConfig with each listener's peer allow-list.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/stunner_config.h"
#include "config/validator.h"
#include "kturn/result.h"
#include "net/interface_addresses.h"
#include "worker/config_snapshot.h"

namespace kturn::daemon {

// Resolved addresses of STRICT_DNS cluster hosts, by host name.
using DnsCache = std::map<std::string, std::vector<IpAddress>>;

class DataplaneBuilder {
 public:
  // `workers`: how many TURN cores share the process-wide limits (admin.limits): each gets its
  // share of max_allocations, source_quota, listener_kbps and max_connections.
  explicit DataplaneBuilder(size_t workers = 1) : workers_(std::max<size_t>(1, workers)) {}

  // Where the host's interface addresses come from (getifaddrs by default); tests inject theirs.
  // Read once per build: they pick relay addresses of the other family and tell which addresses
  // a wildcard listener really listens on.
  void setInterfaceSource(std::function<net::InterfaceAddresses()> source) {
    interfaces_ = std::move(source);
  }

  // Permission and channel lifetimes (RFC 8656 §9, §12: 300 s and 600 s), as coturn's
  // --permission-lifetime and --channel-lifetime: kturnd's flags of the same names.
  void setLifetimes(turn::Seconds permission, turn::Seconds channel) {
    permission_lifetime_ = permission;
    channel_lifetime_ = channel;
  }

  // `config` must have passed config::validate() (or validateIsolating()). A listener that
  // cannot be built (a certificate or key that does not load, a port that another listener of
  // the config already takes) fails the build, or, given `faults`, is left out of the snapshot
  // and added there.
  Result<worker::ConfigSnapshotPtr> build(const config::StunnerConfig& config, const DnsCache& dns,
                                          std::vector<config::ConfigFault>* faults = nullptr);

  // Host names of every STRICT_DNS cluster, for the resolver.
  static std::vector<std::string> dnsHosts(const config::StunnerConfig& config);

 private:
  // The TURN core's config but for its listeners: auth, limits (process-wide ones shared out to
  // the workers) and lifetimes.
  std::shared_ptr<turn::ServerConfig> serverConfig(const config::StunnerConfig& config,
                                                   const config::Limits& limits);
  // The socket side of listener `l` (`field` names it in errors): bind address, relay address,
  // TLS context. Refused when it would share a port with one of `dataplane`'s listeners.
  Result<worker::ListenerSpec> listenerSpec(const config::Listener& l, const std::string& field,
                                            const worker::ConfigSnapshot& dataplane);
  // The peers `l`'s routes admit: its clusters' endpoints, STRICT_DNS hosts as `dns` resolved
  // them.
  turn::ListenerPolicy listenerPolicy(const config::Listener& l, const worker::ListenerSpec& spec,
                                      const config::StunnerConfig& config, const DnsCache& dns);
  // Every transport address the listeners of `dataplane` are reached at, none of which may be a
  // peer.
  static std::vector<TransportAddress> ownAddresses(const worker::ConfigSnapshot& dataplane);
  // A worker's share of a process-wide limit, rounded up so that a small limit still admits
  // something everywhere.
  uint64_t share(uint64_t total) const { return (total + workers_ - 1) / workers_; }

  // Listener ids stay the same for a listener name across rebuilds.
  turn::ListenerId idFor(const std::string& name);
  turn::ClusterId clusterIdFor(const std::string& name);
  // The TLS context of a listener, built again only when its certificate or key changed: an
  // unchanged listener keeps its context (and the session ticket keys inside it) across configs.
  Result<net::TlsContextPtr> tlsFor(const config::Listener& l, const std::string& field,
                                    net::TlsKind kind);
  struct TlsEntry {
    std::string cert;
    std::string key;
    net::TlsContextPtr context;
  };
  size_t workers_;
  turn::Seconds permission_lifetime_ = turn::Lifetimes{}.permission;
  turn::Seconds channel_lifetime_ = turn::Lifetimes{}.channel;
  std::function<net::InterfaceAddresses()> interfaces_ = net::InterfaceAddresses::current;
  std::map<std::string, TlsEntry> tls_;  // by listener name
  std::map<std::string, turn::ListenerId> ids_;
  turn::ListenerId next_id_ = 1;
  std::map<std::string, turn::ClusterId> cluster_ids_;
};

}  // namespace kturn::daemon
