// Reading Kubernetes manifests: the multi-document YAML (or JSON) that `kubectl apply -f` takes.
#pragma once

#include <string_view>
#include <vector>

#include "k8s/object.h"
#include "kturn/result.h"

namespace kturn::k8s {

// Every object in `text`: YAML documents separated by `---`, or JSON (one object, an array of
// objects). `kind: List` and `kind: *List` objects are flattened into their items; empty
// documents are skipped. Scalars are typed the way kubectl's YAML reader (YAML 1.1 via
// sigs.k8s.io/yaml) types them: `3478` is an integer, `"3478"` a string, `yes`/`on`/`true`
// booleans. Never throws; a syntax error names the document, line and column. A document that is
// not a mapping is an error too: it cannot be a Kubernetes object, nor can one without a kind or
// a metadata.name.
Result<std::vector<Object>> loadManifests(std::string_view text);

// One JSON tree per YAML document, typed as above (no List flattening, no object check). Exposed
// for tests and for tools that read arbitrary YAML.
Result<std::vector<Json>> readYamlDocuments(std::string_view text);

}  // namespace kturn::k8s
