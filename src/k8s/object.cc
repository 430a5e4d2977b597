#include "k8s/object.h"

namespace kturn::k8s {
namespace {

std::string stringAt(const Json& obj, const char* key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

StringMap stringMapAt(const Json& obj, const char* key) {
  StringMap out;
  if (!obj.is_object()) return out;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_object()) return out;
  for (const auto& [k, v] : it->items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

}  // namespace

std::string ObjectMeta::group() const {
  const size_t slash = apiVersion.find('/');
  return slash == std::string::npos ? std::string() : apiVersion.substr(0, slash);
}

ObjectMeta readMeta(const Json& body) {
  ObjectMeta meta;
  meta.apiVersion = stringAt(body, "apiVersion");
  meta.kind = stringAt(body, "kind");
  if (!body.is_object()) return meta;
  auto it = body.find("metadata");
  if (it == body.end() || !it->is_object()) return meta;
  const Json& m = *it;
  meta.name = stringAt(m, "name");
  meta.ns = stringAt(m, "namespace");
  meta.uid = stringAt(m, "uid");
  meta.resourceVersion = stringAt(m, "resourceVersion");
  if (auto g = m.find("generation"); g != m.end() && g->is_number_integer()) {
    meta.generation = g->get<int64_t>();
  }
  meta.labels = stringMapAt(m, "labels");
  meta.annotations = stringMapAt(m, "annotations");
  return meta;
}

Object::Object(Json body) : body_(std::move(body)), meta_(readMeta(body_)) {}

const Json& Object::member(std::string_view key) const {
  static const Json kEmpty = Json::object();
  if (!body_.is_object()) return kEmpty;
  auto it = body_.find(std::string(key));
  if (it == body_.end() || !it->is_object()) return kEmpty;
  return *it;
}

bool sameContent(const Json& a, const Json& b) {
  if (a.is_object() && b.is_object()) {
    if (a.size() != b.size()) return false;
    for (const auto& [key, value] : a.items()) {
      const auto other = b.find(key);
      if (other == b.end() || !sameContent(value, *other)) return false;
    }
    return true;
  }
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!sameContent(a[i], b[i])) return false;
    }
    return true;
  }
  return a == b;
}

}  // namespace kturn::k8s
