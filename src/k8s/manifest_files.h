// Manifests from files, for `kturnctl render -f` and the golden tests.
#pragma once

#include <filesystem>
#include <vector>

#include "k8s/object.h"
#include "kturn/result.h"

namespace kturn::k8s {

// `path` is a file, or a directory whose *.yaml, *.yml and *.json files are read in name order
// (not recursively). Errors name the file: "in/gw.yaml: yaml: line 3, column 7: ...".
Result<std::vector<Object>> loadManifestFiles(const std::filesystem::path& path);

}  // namespace kturn::k8s
