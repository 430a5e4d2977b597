#include "config/document.h"

#include <yaml-cpp/yaml.h>

#include <string>

#include "common/nesting.h"
#include "common/yaml_to_json.h"

namespace kturn::config {
namespace {

Error malformed(std::string message) {
  return makeError(Error::Code::kMalformed, std::move(message));
}

Result<Json> readYaml(std::string_view text) {
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    // Scalars stay text: the decoder converts them to each field's type, as stunnerd's does.
    auto scalar = [](const YAML::Node& node) { return Json(node.Scalar()); };
    return YamlToJson<Json, decltype(scalar)>(scalar).convert(root);
  } catch (const YAML::Exception& e) {
    return malformed("yaml: " + yamlWhere(e.mark) + e.msg);
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
  if (nestsTooDeep(text, 4 * kYamlMaxDepth)) return malformed("config: brackets nest too deeply");
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
