// A render result as text: the YAML stream `kturnctl render` prints and the golden tests compare.
//
// For each Gateway, in order of namespace/name:
//   # Gateway <ns>/<name>: dataplane config       the STUNner v1 config stunnerd/kturnd read
//   # Gateway <ns>/<name>: Deployment             (or DaemonSet)
//   # Gateway <ns>/<name>: Service
//   (a Gateway that is not rendered gets a comment saying its owned objects are to be removed)
// then one document per status update: apiVersion, kind, metadata (name, namespace) and status,
// the body of a status subresource update. Every document starts with `---`.
#pragma once

#include <string>

#include "operator/render_result.h"

namespace kturn::op {

std::string toYamlStream(const RenderResult& result);

}  // namespace kturn::op
