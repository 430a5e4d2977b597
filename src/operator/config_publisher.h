// Feeds rendered dataplane configs to the CDS server under "<namespace>/<gateway>", the id
// stunnerd/kturnd ask for. A dataplane only ever sees validated configs: each config is
// validated on its own first, and one that fails keeps the Gateway's previous config in place
// (or none) instead of reaching the dataplane; other Gateways are unaffected. Gateways no
// longer rendered are removed (their watchers get the zero config, as from STUNner).
//
// Secret rotation without failed calls (kturn extension): when a Gateway's ephemeral shared
// secret changes, the config served next also carries the replaced secret as
// `previous_secret`, valid until now + the Gateway's credential lifetime, so credentials minted
// just before the change keep working. Later renders carry it on until that expiry. It lives in
// the served configs only: an operator restarted during the overlap serves the new secret alone.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cds/cds_server.h"
#include "operator/render_result.h"

namespace kturn::op {

class ConfigPublisher {
 public:
  explicit ConfigPublisher(cds::CdsServer& server) : server_(server) {}

  struct Outcome {
    int served = 0;
    int rejected = 0;
    std::vector<std::string> problems{};
  };
  // The whole desired state: Gateways not in `gateways` lose their config. `now_unix`: the wall
  // clock, for the expiry of a replaced secret.
  Outcome publish(const std::vector<GatewayOutput>& gateways, int64_t now_unix);
  // Part of it (IncrementalRenderer's delta): these Gateways' configs as now rendered (one not
  // accepted loses its config), and the removed Gateways' configs gone. A config equal to the
  // one served reaches no watcher (CdsServer::upsert).
  Outcome publishChanges(const std::vector<GatewayOutput>& changed,
                         const std::vector<k8s::ObjectKey>& removed, int64_t now_unix);

 private:
  // The config to serve for `gw`: the rendered one, validated, carrying a replaced secret; or
  // nullopt when it fails validation (counted and reported in `outcome`).
  std::optional<config::StunnerConfig> candidate(const GatewayOutput& gw, int64_t now_unix,
                                                 Outcome& outcome);

  cds::CdsServer& server_;
  std::set<std::string> open_;  // the ids served without a token, as last set
};

}  // namespace kturn::op
