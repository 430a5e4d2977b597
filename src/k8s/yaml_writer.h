// Writing JSON trees as block YAML, the way `kubectl get -o yaml` prints objects.
#pragma once

#include <string>

#include "k8s/object.h"

namespace kturn::k8s {

// One YAML document (no leading `---`), keys in the tree's order. Strings that a YAML reader
// would take for something else ("true", "3478", "", "null", "yes") are double-quoted, so the
// output reads back as the same tree.
std::string toYaml(const Json& tree);

}  // namespace kturn::k8s
