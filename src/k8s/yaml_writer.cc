#include "k8s/yaml_writer.h"

#include <yaml-cpp/yaml.h>

#include <cmath>

#include "k8s/manifest.h"

namespace kturn::k8s {
namespace {

// True when the plain text of `s` would not read back as the string `s`.
bool needsQuotes(const std::string& s) {
  auto docs = readYamlDocuments(s);
  if (!docs || docs->size() != 1) return true;
  const Json& back = (*docs)[0];
  return !back.is_string() || back.get<std::string>() != s;
}

void emit(YAML::Emitter& out, const Json& v) {
  switch (v.type()) {
    case Json::value_t::object:
      if (v.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      out << YAML::BeginMap;
      for (const auto& [k, item] : v.items()) {
        out << YAML::Key;
        if (needsQuotes(k)) out << YAML::DoubleQuoted;
        out << k << YAML::Value;
        emit(out, item);
      }
      out << YAML::EndMap;
      return;
    case Json::value_t::array:
      if (v.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      out << YAML::BeginSeq;
      for (const Json& item : v) emit(out, item);
      out << YAML::EndSeq;
      return;
    case Json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      if (s.find('\n') != std::string::npos) {
        out << YAML::Literal << s;
      } else {
        if (needsQuotes(s)) out << YAML::DoubleQuoted;
        out << s;
      }
      return;
    }
    case Json::value_t::boolean:
      out << v.get<bool>();
      return;
    case Json::value_t::number_integer:
      out << v.get<int64_t>();
      return;
    case Json::value_t::number_unsigned:
      out << v.get<uint64_t>();
      return;
    case Json::value_t::number_float:
      out << v.dump();
      return;
    case Json::value_t::null:
    case Json::value_t::discarded:
    case Json::value_t::binary:
      out << YAML::Null;
      return;
  }
}

}  // namespace

std::string toYaml(const Json& tree) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetSeqFormat(YAML::Block);
  out.SetMapFormat(YAML::Block);
  emit(out, tree);
  std::string text = out.c_str();
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

}  // namespace kturn::k8s
