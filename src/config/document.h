// Reads config text, YAML or JSON, into one JSON tree: the shape stunnerd decodes from, since its
// YAML reader (sigs.k8s.io/yaml) converts YAML to JSON first. Private to src/config.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "kturn/result.h"

namespace kturn::config {

// Ordered, so keys are decoded in document order and a repeated key wins as in Go's decoder.
using Json = nlohmann::ordered_json;

// YAML scalars become JSON strings (their text, uninterpreted: the decoder converts them to the
// field's type), YAML nulls become null. Text starting with '{' is read as JSON first, then as
// YAML. Never throws; a syntax error names the line and column.
Result<Json> readDocument(std::string_view text);

}  // namespace kturn::config
