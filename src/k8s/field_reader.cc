#include "k8s/field_reader.h"

namespace kturn::k8s {

std::string indexPath(std::string_view path, size_t index) {
  return std::string(path) + "[" + std::to_string(index) + "]";
}

std::string fieldPath(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return std::string(path) + "." + std::string(key);
}

std::string_view describeType(const Json& value) {
  switch (value.type()) {
    case Json::value_t::object:
      return "a mapping";
    case Json::value_t::array:
      return "a list";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    default:
      return "null";
  }
}

const Json* FieldReader::find(const Json& parent, std::string_view key) {
  if (!parent.is_object()) return nullptr;
  auto it = parent.find(std::string(key));
  if (it == parent.end() || it->is_null()) return nullptr;
  return &*it;
}

void FieldReader::wrongType(std::string_view path, std::string_view key, std::string_view want,
                            const Json& got) {
  problems_.push_back(fieldPath(path, key) + ": expected " + std::string(want) + ", got " +
                      std::string(describeType(got)));
}

std::optional<std::string> FieldReader::string(const Json& parent, std::string_view key,
                                               std::string_view path) {
  const Json* v = find(parent, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    wrongType(path, key, "a string", *v);
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::optional<int64_t> FieldReader::integer(const Json& parent, std::string_view key,
                                            std::string_view path) {
  const Json* v = find(parent, key);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(u);
  }
  wrongType(path, key, "an integer", *v);
  return std::nullopt;
}

std::optional<bool> FieldReader::boolean(const Json& parent, std::string_view key,
                                         std::string_view path) {
  const Json* v = find(parent, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) {
    wrongType(path, key, "a boolean", *v);
    return std::nullopt;
  }
  return v->get<bool>();
}

const Json* FieldReader::object(const Json& parent, std::string_view key, std::string_view path) {
  const Json* v = find(parent, key);
  if (v == nullptr) return nullptr;
  if (!v->is_object()) {
    wrongType(path, key, "a mapping", *v);
    return nullptr;
  }
  return v;
}

const Json* FieldReader::array(const Json& parent, std::string_view key, std::string_view path) {
  const Json* v = find(parent, key);
  if (v == nullptr) return nullptr;
  if (!v->is_array()) {
    wrongType(path, key, "a list", *v);
    return nullptr;
  }
  return v;
}

std::vector<std::string> FieldReader::stringList(const Json& parent, std::string_view key,
                                                 std::string_view path) {
  std::vector<std::string> out;
  const Json* list = array(parent, key, path);
  if (list == nullptr) return out;
  const std::string base = fieldPath(path, key);
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& item = (*list)[i];
    if (item.is_string()) {
      out.push_back(item.get<std::string>());
    } else {
      problems_.push_back(indexPath(base, i) + ": expected a string, got " +
                          std::string(describeType(item)));
    }
  }
  return out;
}

StringMap FieldReader::stringMap(const Json& parent, std::string_view key, std::string_view path) {
  StringMap out;
  const Json* map = object(parent, key, path);
  if (map == nullptr) return out;
  const std::string base = fieldPath(path, key);
  for (const auto& [k, v] : map->items()) {
    if (v.is_string()) {
      out[k] = v.get<std::string>();
    } else {
      problems_.push_back(base + "." + k + ": expected a string, got " +
                          std::string(describeType(v)));
    }
  }
  return out;
}

}  // namespace kturn::k8s
