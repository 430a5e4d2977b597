// Per-origin credentials of authenticated config discovery for a kturn-auth that follows the
// discovery servers of several clusters (one -c per region): each cluster reviews tokens of its
// own and signs its CDS certificate with a CA of its own, so one --cds-token-file and
// --cds-ca-file cannot serve them all (docs/auth.md#regions).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kturn/result.h"

namespace kturn::auth {

struct OriginCredentials {
  std::string token_file{};
  std::string ca_file{};  // empty: the CA of --cds-ca-file / $KTURN_CDS_CA
};

// The values of --cds-credentials, each `<origin>=<token-file>[,<ca-file>]` with <origin> one of
// `origins` exactly as given to -c (the longest that matches, so an origin may hold '='), against
// those origins: the credentials of each origin by its index, nullopt where none were given.
// kInvalidArgument, naming the value, when it names no origin of -c, has an empty token file or
// CA file, or names an origin a second time.
Result<std::vector<std::optional<OriginCredentials>>> parseOriginCredentials(
    const std::vector<std::string>& values, const std::vector<std::string>& origins);

}  // namespace kturn::auth
