#include "k8s/manifest.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "common/nesting.h"
#include "common/utf8.h"
#include "common/yaml_to_json.h"

namespace kturn::k8s {
namespace {

Error malformed(std::string message) {
  return makeError(Error::Code::kMalformed, std::move(message));
}

bool isOneOf(const std::string& s, std::initializer_list<const char*> options) {
  for (const char* o : options) {
    if (s == o) return true;
  }
  return false;
}

bool allDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// A plain (unquoted, untagged) scalar resolved as go-yaml v2 does, which is what kubectl and the
// STUNner operator read manifests with: YAML 1.1 booleans, decimal/hex/octal integers, floats.
Json resolvePlain(const std::string& s) {
  if (isOneOf(s, {"", "~", "null", "Null", "NULL"})) return Json(nullptr);
  if (isOneOf(s, {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y"})) {
    return Json(true);
  }
  if (isOneOf(s, {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N"})) {
    return Json(false);
  }
  std::string_view body = s;
  bool negative = false;
  if (body.front() == '-' || body.front() == '+') {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  int base = 10;
  if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) {
    base = 16;
    body.remove_prefix(2);
  }
  const bool hexDigits = base == 16 && !body.empty() &&
                         body.find_first_not_of("0123456789abcdefABCDEF") == std::string_view::npos;
  if (allDigits(body) || hexDigits) {
    errno = 0;
    const std::string digits(body);
    char* end = nullptr;
    const unsigned long long v = std::strtoull(digits.c_str(), &end, base);
    if (errno == 0 && *end == '\0' && v <= 0x7fffffffffffffffULL) {
      const auto value = static_cast<int64_t>(v);
      return Json(negative ? -value : value);
    }
  }
  if (isOneOf(s, {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"})) {
    return Json(std::numeric_limits<double>::infinity());
  }
  if (isOneOf(s, {"-.inf", "-.Inf", "-.INF"}))
    return Json(-std::numeric_limits<double>::infinity());
  // Floats: digits with a '.' or an exponent, nothing else.
  if (s.find_first_not_of("0123456789.eE+-") == std::string::npos &&
      s.find_first_of("0123456789") != std::string::npos) {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end != nullptr && *end == '\0') return Json(v);
  }
  return Json(s);
}

Json resolveScalar(const YAML::Node& node) {
  const std::string& tag = node.Tag();
  const std::string& text = node.Scalar();
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return Json(text);  // quoted or !!str
  if (tag == "?" || tag.empty()) return resolvePlain(text);
  // Other explicit tags (!!int, !!bool, custom): resolve the text as if plain.
  return resolvePlain(text);
}

// The documents of a YAML stream, cut at the document markers: a line that is `---` or starts
// with `--- `, and `...` lines. At column 0 these end any document, even inside a block scalar
// (YAML 1.2 §9.1.4), so cutting there is exact. yaml-cpp's own LoadAll is not used: on a stream
// that starts with a stray `,` it never advances and allocates until memory runs out
// (k8s_manifest_fuzz). Each document is padded with the newlines before it, so error marks keep
// the line numbers of the whole stream.
std::vector<std::string> splitDocuments(std::string_view text) {
  std::vector<std::string> documents;
  std::string current;
  size_t line = 0;
  size_t start = 0;
  auto flush = [&](size_t first_line) {
    documents.push_back(std::move(current));
    current.assign(first_line, '\n');
  };
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(start, end - start);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    const auto isMarker = [&](std::string_view m) {
      return l.substr(0, 3) == m && (l.size() == 3 || l[3] == ' ' || l[3] == '\t');
    };
    if (isMarker("---")) {
      flush(line);
      current += l.substr(3);  // `--- {kind: A}`: content may follow the marker
      current += '\n';
    } else if (isMarker("...")) {
      flush(line + 1);
    } else {
      current += l;
      current += '\n';
    }
    ++line;
    start = end + 1;
  }
  documents.push_back(std::move(current));
  return documents;
}

bool looksLikeJson(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && (text[first] == '{' || text[first] == '[');
}

// Appends the objects of one decoded document, flattening lists.
Result<void> collect(Json doc, size_t index, std::vector<Object>& out) {
  const std::string at = "document " + std::to_string(index + 1);
  if (doc.is_null()) return {};
  if (doc.is_array()) {
    for (Json& item : doc) {
      if (auto ok = collect(std::move(item), index, out); !ok) return ok;
    }
    return {};
  }
  if (!doc.is_object()) return malformed(at + ": not a Kubernetes object (expected a mapping)");
  auto kind = doc.find("kind");
  const bool isList = kind != doc.end() && kind->is_string() &&
                      kind->get<std::string>().ends_with("List") && doc.contains("items");
  if (isList) {
    Json items = std::move(doc["items"]);
    if (!items.is_array()) return malformed(at + ": items: expected a list");
    for (Json& item : items) {
      if (auto ok = collect(std::move(item), index, out); !ok) return ok;
    }
    return {};
  }
  Object object(std::move(doc));
  // kubectl refuses these too ("resource name may not be empty"); rendered, such a Gateway
  // would give a Deployment and a Service without a name.
  if (object.kind().empty()) return malformed(at + ": kind: required");
  if (object.name().empty()) return malformed(at + ": metadata.name: required");
  out.push_back(std::move(object));
  return {};
}

}  // namespace

Result<std::vector<Json>> readYamlDocuments(std::string_view text) {
  if (nestsTooDeep(text, 4 * kYamlMaxDepth)) return malformed("yaml: brackets nest too deeply");
  // go-yaml (and so kubectl) refuses text that is not UTF-8; yaml-cpp would pass the bytes
  // through into names that no API server could hold.
  if (const std::optional<size_t> bad = firstInvalidUtf8(text)) {
    const std::string_view before = text.substr(0, *bad);
    const size_t lineStart = before.rfind('\n');
    const size_t line = static_cast<size_t>(std::count(before.begin(), before.end(), '\n')) + 1;
    const size_t column = *bad - (lineStart == std::string_view::npos ? 0 : lineStart + 1) + 1;
    return malformed("yaml: line " + std::to_string(line) + ", column " + std::to_string(column) +
                     ": invalid UTF-8");
  }
  std::vector<Json> docs;
  try {
    for (const std::string& document : splitDocuments(text)) {
      const YAML::Node node = YAML::Load(document);
      if (node.IsNull()) continue;  // an empty document, or only comments
      // Each document has the node budget of YamlToJson to itself.
      auto doc = YamlToJson<Json, decltype(&resolveScalar)>(&resolveScalar).convert(node);
      if (!doc) return doc.error();
      docs.push_back(std::move(*doc));
    }
  } catch (const YAML::Exception& e) {
    return malformed("yaml: " + yamlWhere(e.mark) + e.msg);
  } catch (const std::exception& e) {
    return malformed(std::string("yaml: ") + e.what());
  }
  return docs;
}

Result<std::vector<Object>> loadManifests(std::string_view text) {
  if (nestsTooDeep(text, 4 * kYamlMaxDepth)) return malformed("yaml: brackets nest too deeply");
  std::vector<Json> docs;
  if (looksLikeJson(text)) {
    try {
      docs.push_back(Json::parse(text));
    } catch (const nlohmann::json::exception&) {
      docs.clear();  // YAML flow style is a superset: let the YAML reader name the error
    }
  }
  if (docs.empty()) {
    auto yaml = readYamlDocuments(text);
    if (!yaml) return yaml.error();
    docs = std::move(*yaml);
  }
  std::vector<Object> objects;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (auto ok = collect(std::move(docs[i]), i, objects); !ok) return ok.error();
  }
  return objects;
}

}  // namespace kturn::k8s
