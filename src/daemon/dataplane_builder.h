// Turns a validated STUNner dataplane config into the snapshot the workers run: listener sockets
// to bind and the TURN core's ServerConfig with each listener's peer allow-list.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/stunner_config.h"
#include "daemon/dataplane.h"
#include "kturn/result.h"

namespace kturn::daemon {

// Resolved addresses of STRICT_DNS cluster hosts, by host name.
using DnsCache = std::map<std::string, std::vector<IpAddress>>;

class DataplaneBuilder {
 public:
  // `config` must have passed config::validate().
  Result<DataplanePtr> build(const config::StunnerConfig& config, const DnsCache& dns);

  // Host names of every STRICT_DNS cluster, for the resolver.
  static std::vector<std::string> dnsHosts(const config::StunnerConfig& config);

 private:
  // Listener ids stay the same for a listener name across rebuilds.
  turn::ListenerId idFor(const std::string& name);
  std::map<std::string, turn::ListenerId> ids_;
  turn::ListenerId next_id_ = 1;
};

}  // namespace kturn::daemon
