#include "config/document.h"

#include <yaml-cpp/yaml.h>

#include <string>

#include "common/nesting.h"

namespace kturn::config {
namespace {

// Bounds on what a hostile document can make us do: nesting (stack depth) and alias expansion
// ("billion laughs": a few anchors referenced from each other expand exponentially).
constexpr int kMaxDepth = 64;
constexpr size_t kMaxNodes = 1'000'000;

Error malformed(std::string message) {
  return makeError(Error::Code::kMalformed, std::move(message));
}

class YamlConverter {
 public:
  Result<Json> convert(const YAML::Node& node, int depth) {
    if (depth > kMaxDepth) return malformed("yaml: document nests deeper than 64 levels");
    if (++nodes_ > kMaxNodes) return malformed("yaml: document expands to too many nodes");
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return Json(nullptr);
      case YAML::NodeType::Scalar:
        return Json(node.Scalar());
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
            return malformed(at(item.first) + "mapping keys must be scalars");
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
  static std::string at(const YAML::Node& node) {
    const YAML::Mark mark = node.Mark();
    if (mark.is_null()) return "yaml: ";
    return "yaml: line " + std::to_string(mark.line + 1) + ", column " +
           std::to_string(mark.column + 1) + ": ";
  }

  size_t nodes_ = 0;
};

Result<Json> readYaml(std::string_view text) {
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    return YamlConverter().convert(root, 0);
  } catch (const YAML::Exception& e) {
    std::string where;
    if (!e.mark.is_null()) {
      where = "line " + std::to_string(e.mark.line + 1) + ", column " +
              std::to_string(e.mark.column + 1) + ": ";
    }
    return malformed("yaml: " + where + e.msg);
  } catch (const std::exception& e) {
    return malformed(std::string("yaml: ") + e.what());
  }
}

Result<Json> readJson(std::string_view text) {
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return malformed(std::string("json: ") + e.what());
  }
}

}  // namespace

Result<Json> readDocument(std::string_view text) {
  if (nestsTooDeep(text, 4 * kMaxDepth)) return malformed("config: brackets nest too deeply");
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    auto json = readJson(text);
    if (json) return json;
    // stunnerd tries YAML too, so a YAML flow mapping ("{version: v1, ...}") is fine.
    auto yaml = readYaml(text);
    if (yaml) return yaml;
    return json.error();
  }
  return readYaml(text);
}

}  // namespace kturn::config
