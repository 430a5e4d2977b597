// Feeds rendered dataplane configs to the CDS server under "<namespace>/<gateway>", the id
// stunnerd/kturnd ask for. A dataplane only ever sees validated configs: each config is
// validated on its own first, and one that fails keeps the Gateway's previous config in place
// (or none) instead of reaching the dataplane; other Gateways are unaffected. Gateways no
// longer rendered are removed (their watchers get the zero config, as from STUNner).
#pragma once

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
  Outcome publish(const std::vector<GatewayOutput>& gateways);

 private:
  cds::CdsServer& server_;
};

}  // namespace kturn::op
