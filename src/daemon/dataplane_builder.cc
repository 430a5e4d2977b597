#include "daemon/dataplane_builder.h"

#include <algorithm>

#include "config/base64.h"
#include "config/endpoint.h"
#include "turn/restricted_peers.h"

namespace kturn::daemon {
namespace {

// Whether sockets bound to `a` and to `b` on one port would take each other's packets: the same
// address, or a wildcard covering the other ("::" covers IPv4 too).
bool overlaps(const IpAddress& a, const IpAddress& b) {
  if (a == b) return true;
  const auto covers = [](const IpAddress& wide, const IpAddress& other) {
    return wide.isUnspecified() && (!wide.isV4() || other.isV4());
  };
  return covers(a, b) || covers(b, a);
}

}  // namespace

turn::ListenerId DataplaneBuilder::idFor(const std::string& name) {
  auto [it, inserted] = ids_.emplace(name, next_id_);
  if (inserted) ++next_id_;
  return it->second;
}

turn::ClusterId DataplaneBuilder::clusterIdFor(const std::string& name) {
  // Ids are never reused, so counters of a removed cluster never show under another name. A
  // process would need 65535 distinct cluster names to run out; past that, traffic is counted
  // unattributed (id 0).
  auto [it, inserted] = cluster_ids_.emplace(name, turn::ClusterId{0});
  if (inserted && cluster_ids_.size() < 0xFFFF)
    it->second = static_cast<turn::ClusterId>(cluster_ids_.size());
  return it->second;
}

Result<net::TlsContextPtr> DataplaneBuilder::tlsFor(const config::Listener& l,
                                                    const std::string& field, net::TlsKind kind) {
  TlsEntry& entry = tls_[l.name];
  if (entry.context && entry.context->kind() == kind && entry.cert == l.cert &&
      entry.key == l.key) {
    return entry.context;
  }
  // validate() checked that both decode.
  const std::string cert = config::decodeBase64(l.cert).value_or("");
  const std::string key = config::decodeBase64(l.key).value_or("");
  auto context = net::TlsContext::server(cert, key, kind);
  if (!context) {
    // "cert: ..." or "key: ..." from the TLS layer becomes listeners[i].cert / .key.
    return makeError(context.error().code, field + "." + context.error().message);
  }
  entry = TlsEntry{l.cert, l.key, *context};
  return entry.context;
}

std::vector<std::string> DataplaneBuilder::dnsHosts(const config::StunnerConfig& config) {
  std::vector<std::string> hosts;
  for (const config::Cluster& c : config.clusters) {
    if (c.clusterType() != config::ClusterType::kStrictDns) continue;
    if (auto endpoints = c.dnsEndpoints()) {
      for (const auto& e : *endpoints) hosts.push_back(e.host);
    }
  }
  return hosts;
}

std::shared_ptr<turn::ServerConfig> DataplaneBuilder::serverConfig(
    const config::StunnerConfig& config, const config::Limits& limits) {
  auto turn_config = std::make_shared<turn::ServerConfig>();
  switch (config.auth.authType()) {
    case config::AuthType::kStatic:
      turn_config->auth_mode = turn::AuthMode::kStatic;
      turn_config->static_username = std::string(config.auth.username().value_or(""));
      turn_config->static_password = std::string(config.auth.password().value_or(""));
      break;
    case config::AuthType::kEphemeral:
      turn_config->auth_mode = turn::AuthMode::kEphemeral;
      turn_config->shared_secret = std::string(config.auth.secret().value_or(""));
      if (const auto previous = config.auth.previousSecret()) {
        turn_config->previous_secrets.push_back(
            {std::string(*previous), config.auth.previousSecretExpiry().value_or(0)});
      }
      break;
    default:
      turn_config->auth_mode = turn::AuthMode::kNone;
      break;
  }
  turn_config->realm = config.auth.realm;
  turn_config->oauth_server_name =
      config.auth.oauth_server_name.empty() ? config.auth.realm : config.auth.oauth_server_name;
  for (const std::string& text : config.auth.oauth_keys) {
    if (auto key = config::parseOAuthKey(text)) {  // validate() checked each
      turn_config->oauth_keys.push_back(
          {key->kid, std::vector<uint8_t>(key->key.begin(), key->key.end())});
    }
  }
  turn_config->max_allocations_per_user = static_cast<uint32_t>(config.admin.user_quota);
  for (const config::Cluster& c : config.clusters) {
    const turn::ClusterId id = clusterIdFor(c.name);
    if (id == 0) continue;
    if (id >= turn_config->cluster_names.size()) turn_config->cluster_names.resize(id + 1);
    turn_config->cluster_names[id] = c.name;
  }
  turn_config->max_allocations = static_cast<uint32_t>(share(limits.max_allocations));
  // Each worker counts only its own allocations, and the kernel spreads a source's 5-tuples over
  // the workers (SO_REUSEPORT hashes ports too), so the quota is split like max_allocations: a
  // source holds at most share x workers (the quota, rounded up to a multiple of the workers).
  turn_config->max_allocations_per_source = static_cast<uint32_t>(share(limits.source_quota));
  // Per allocation, and an allocation lives on one worker: not shared.
  turn_config->max_permissions_per_allocation = static_cast<uint32_t>(limits.max_permissions);
  turn_config->max_channels_per_allocation = static_cast<uint32_t>(limits.max_channels);
  turn_config->allocation_bytes_per_second = uint64_t(limits.allocation_kbps) * 1000 / 8;
  turn_config->listener_bytes_per_second = share(uint64_t(limits.listener_kbps) * 1000 / 8);
  turn_config->auth_failures_per_window = static_cast<uint32_t>(limits.auth_failures);
  turn_config->auth_failure_window_seconds = limits.auth_failure_window;
  turn_config->block_seconds = limits.block_seconds;
  turn_config->mobility = config.admin.mobility;
  for (const std::string& network : limits.trusted_networks) {
    if (auto e = config::parseEndpoint(network)) {  // validate() checked each
      turn_config->trusted_sources.push_back({e->prefix, e->prefix_len});
    }
  }
  turn_config->lifetimes.nonce = turn::Seconds(limits.nonce_lifetime);
  turn_config->lifetimes.permission = permission_lifetime_;
  turn_config->lifetimes.channel = channel_lifetime_;
  return turn_config;
}

Result<worker::ListenerSpec> DataplaneBuilder::listenerSpec(
    const config::Listener& l, const std::string& field, const worker::ConfigSnapshot& dataplane) {
  const auto protocol = l.protocolType();
  const auto ip = IpAddress::parse(l.address.empty() ? "0.0.0.0" : l.address);
  if (!ip) {
    return makeError(Error::Code::kInvalidArgument,
                     field + ".address: invalid address \"" + l.address + "\"");
  }
  const auto bind_ip =
      l.bind_address.empty() ? std::optional<IpAddress>() : IpAddress::parse(l.bind_address);
  if (!l.bind_address.empty() && !bind_ip) {
    return makeError(Error::Code::kInvalidArgument,
                     field + ".bind_address: invalid address \"" + l.bind_address + "\"");
  }
  const auto& interfaces = dataplane.interfaces.entries();
  // stunnerd listens on every address and only names `address` in XOR-RELAYED-ADDRESS; "::"
  // takes IPv4 clients too (Worker::bindListener), so it is the default wherever IPv6 is up.
  const bool has_ipv6 =
      std::any_of(interfaces.begin(), interfaces.end(),
                  [](const net::InterfaceAddresses::Entry& e) { return !e.ip.isV4(); });
  const IpAddress every_address = has_ipv6 ? *IpAddress::parse("::") : IpAddress{};

  worker::ListenerSpec spec;
  spec.id = idFor(l.name);
  spec.name = l.name;
  const bool datagram = protocol == config::ListenerProtocol::kTurnUdp ||
                        protocol == config::ListenerProtocol::kTurnDtls;
  spec.protocol = datagram ? TransportProtocol::kUdp : TransportProtocol::kTcp;
  if (config::needsCertificate(protocol)) {
    auto tls = tlsFor(l, field, datagram ? net::TlsKind::kDtls : net::TlsKind::kTls);
    if (!tls) return tls.error();
    spec.tls = std::move(*tls);
  }
  // A loopback relay address is unreachable from anywhere else, so such a listener stays on
  // loopback (the local default and the tests never listen beyond it).
  const IpAddress bound = bind_ip ? *bind_ip : ip->isLoopback() ? *ip : every_address;
  spec.bind = TransportAddress{bound, static_cast<uint16_t>(l.port)};
  spec.relay_ip = *ip;
  spec.relay_ip_local =
      ip->isUnspecified() || ip->isLoopback() ||
      std::any_of(interfaces.begin(), interfaces.end(),
                  [&](const net::InterfaceAddresses::Entry& e) { return e.ip == *ip; });
  for (size_t j = 0; j < dataplane.listeners.size(); ++j) {
    const worker::ListenerSpec& other = dataplane.listeners[j];
    if (other.protocol == spec.protocol && other.bind.port == spec.bind.port &&
        overlaps(other.bind.ip, spec.bind.ip)) {
      return makeError(Error::Code::kInvalidArgument,
                       field + ".port: " + std::to_string(l.port) +
                           (spec.protocol == TransportProtocol::kUdp ? "/udp" : "/tcp") +
                           " is also listeners[" + std::to_string(j) +
                           "]'s, on overlapping addresses (" + other.bind.ip.toString() + ", " +
                           spec.bind.ip.toString() + "): give each its own bind_address or port");
    }
  }
  spec.min_relay_port = static_cast<uint16_t>(l.min_relay_port);
  spec.max_relay_port = static_cast<uint16_t>(l.max_relay_port);
  return spec;
}

turn::ListenerPolicy DataplaneBuilder::listenerPolicy(const config::Listener& l,
                                                      const worker::ListenerSpec& spec,
                                                      const config::StunnerConfig& config,
                                                      const DnsCache& dns) {
  turn::ListenerPolicy policy;
  policy.id = spec.id;
  policy.name = l.name;
  policy.offloadable = spec.protocol == TransportProtocol::kUdp && !spec.tls;  // TURN-UDP
  policy.secure = spec.tls != nullptr;
  policy.alternate_domain = l.alternate_domain;
  for (const std::string& alternate : l.alternate_servers) {
    if (auto address = TransportAddress::parse(alternate)) {  // validate() checked each
      policy.alternate_servers.push_back(*address);
    }
  }
  for (const std::string& route : l.routes) {
    const config::Cluster* cluster = config.findCluster(route);
    if (cluster == nullptr) continue;  // a dangling route admits nothing, as in STUNner
    const TransportProtocol peer_protocol =
        cluster->clusterProtocol() == config::ClusterProtocol::kTcp ? TransportProtocol::kTcp
                                                                    : TransportProtocol::kUdp;
    const turn::ClusterId cluster_id = clusterIdFor(cluster->name);
    if (cluster->clusterType() == config::ClusterType::kStrictDns) {
      auto endpoints = cluster->dnsEndpoints();
      if (!endpoints) continue;
      for (const auto& e : *endpoints) {
        const auto it = dns.find(e.host);
        if (it == dns.end()) continue;
        for (const IpAddress& addr : it->second) {
          const uint8_t len = addr.isV4() ? 32 : 128;
          policy.peers.push_back(
              turn::PeerRange{addr, len, e.min_port, e.max_port, cluster_id, peer_protocol});
        }
      }
      continue;
    }
    auto endpoints = cluster->staticEndpoints();
    if (!endpoints) continue;  // validate() already reported it
    for (const auto& e : *endpoints) {
      policy.peers.push_back(turn::PeerRange{e.prefix, e.prefix_len, e.min_port, e.max_port,
                                             cluster_id, peer_protocol});
    }
  }
  return policy;
}

std::vector<TransportAddress> DataplaneBuilder::ownAddresses(
    const worker::ConfigSnapshot& dataplane) {
  // No listener may relay to any listener of this server (a TURN-in-TURN loop). A wildcard
  // listener listens on every interface address, so each of those is its address too ("::"
  // serves both families). Restricted ones (loopback, the link-local address of every veth)
  // are left out: the wildcard entry already refuses them on its port, and the list is scanned
  // for peers that port-restricted endpoints admit, per packet.
  // A relay address of a 1:1 NAT leads back to the listener too (hairpin).
  std::vector<TransportAddress> own;
  for (const worker::ListenerSpec& spec : dataplane.listeners) {
    own.push_back(spec.bind);
    if (!spec.relay_ip_local) own.push_back(TransportAddress{spec.relay_ip, spec.bind.port});
    if (!spec.bind.ip.isUnspecified()) continue;
    for (const net::InterfaceAddresses::Entry& e : dataplane.interfaces.entries()) {
      if ((spec.bind.ip.isV4() && !e.ip.isV4()) || turn::restrictedRangeOf(e.ip)) continue;
      own.push_back(TransportAddress{e.ip, spec.bind.port});
    }
  }
  std::sort(own.begin(), own.end());
  own.erase(std::unique(own.begin(), own.end()), own.end());
  return own;
}

Result<worker::ConfigSnapshotPtr> DataplaneBuilder::build(
    const config::StunnerConfig& config, const DnsCache& dns,
    std::vector<config::ConfigFault>* faults) {
  const config::Limits limits = config.admin.limits.value_or(config::Limits{});
  std::shared_ptr<turn::ServerConfig> turn_config = serverConfig(config, limits);

  auto dataplane = std::make_shared<worker::ConfigSnapshot>();
  dataplane->region = config.admin.region;
  if (limits.max_connections > 0) {
    dataplane->connections.max_connections = share(static_cast<uint64_t>(limits.max_connections));
  }
  dataplane->connections.idle_timeout = std::chrono::seconds(limits.idle_timeout);
  dataplane->connections.handshake_timeout = std::chrono::seconds(limits.handshake_timeout);
  dataplane->interfaces = interfaces_();
  for (size_t i = 0; i < config.listeners.size(); ++i) {
    const config::Listener& l = config.listeners[i];
    auto spec = listenerSpec(l, "listeners[" + std::to_string(i) + "]", *dataplane);
    if (!spec && faults == nullptr) return spec.error();
    if (!spec) {
      faults->push_back({"listener", l.name, spec.error().message});
      continue;
    }
    turn_config->listeners.push_back(listenerPolicy(l, *spec, config, dns));
    dataplane->listeners.push_back(std::move(*spec));
  }
  const std::vector<TransportAddress> own = ownAddresses(*dataplane);
  for (turn::ListenerPolicy& policy : turn_config->listeners) policy.own_addresses = own;
  dataplane->turn = std::move(turn_config);
  return worker::ConfigSnapshotPtr(std::move(dataplane));
}

}  // namespace kturn::daemon
