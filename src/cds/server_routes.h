// Request routing of the CDS server: the request target to an operation, as STUNner's generated
// OpenAPI server (pkg/config/server/api) and gorilla/mux route it. Pure; private to src/cds.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "cds/protocol.h"

namespace kturn::cds {

struct Route {
  enum class Kind {
    kNotFound,    // no such path: 404 "404 page not found" (Go's http.NotFound)
    kBadRequest,  // bad query string or `watch` value: 400, `error` says why
    kListAll,     // /api/v1/configs
    kListNamespace,
    kConfig,   // /api/v1/configs/{ns}/{name}
    kLicense,  // /api/v1/license
  };
  Kind kind = Kind::kNotFound;
  ConfigId id;  // kListNamespace: namespace_ only
  bool watch = false;
  std::string node;   // kConfig only
  std::string error;  // kBadRequest
};

Route routeTarget(std::string_view target);

}  // namespace kturn::cds
