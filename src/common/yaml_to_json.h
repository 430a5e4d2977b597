// YAML to JSON: the tree walk shared by the dataplane config reader (config/document.cc, scalars
// as their text, as sigs.k8s.io/yaml hands them to stunnerd) and the manifest reader
// (k8s/manifest.cc, scalars resolved as kubectl does). Bounded against hostile documents: nesting
// depth and the nodes that alias expansion makes ("billion laughs"). What a scalar becomes is the
// caller's `scalar` function. Header-only: its callers link yaml-cpp and nlohmann::json.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>
#include <utility>

#include "kturn/result.h"

namespace kturn {

inline constexpr int kYamlMaxDepth = 64;
inline constexpr size_t kYamlMaxNodes = 1'000'000;

// "line L, column C: " of a mark, "" without one: for error messages.
inline std::string yamlWhere(const YAML::Mark& mark) {
  if (mark.is_null()) return "";
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1) +
         ": ";
}

template <class Json, class Scalar>
class YamlToJson {
 public:
  explicit YamlToJson(Scalar scalar) : scalar_(std::move(scalar)) {}

  Result<Json> convert(const YAML::Node& node, int depth = 0) {
    if (depth > kYamlMaxDepth) return malformed("yaml: document nests deeper than 64 levels");
    if (++nodes_ > kYamlMaxNodes) return malformed("yaml: document expands to too many nodes");
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return Json(nullptr);
      case YAML::NodeType::Scalar:
        return scalar_(node);
      case YAML::NodeType::Sequence: {
        Json out = Json::array();
        for (const YAML::Node& item : node) {
          auto v = convert(item, depth + 1);
          if (!v) return v;
          out.push_back(std::move(*v));
        }
        return out;
      }
      case YAML::NodeType::Map: {
        Json out = Json::object();
        for (const auto& item : node) {
          if (!item.first.IsScalar()) {
            return malformed("yaml: " + yamlWhere(item.first.Mark()) +
                             "mapping keys must be scalars");
          }
          auto v = convert(item.second, depth + 1);
          if (!v) return v;
          out[item.first.Scalar()] = std::move(*v);
        }
        return out;
      }
    }
    return Json(nullptr);
  }

 private:
  static Error malformed(std::string message) {
    return makeError(Error::Code::kMalformed, std::move(message));
  }

  Scalar scalar_;
  size_t nodes_ = 0;
};

}  // namespace kturn
