// A Kubernetes object as read from a manifest or the API server: a JSON tree with typed access to
// the parts every object has (apiVersion, kind, metadata). The typed views of the kinds kturn
// understands (gateway_api.h, stunner_api.h, core_api.h) are built from it; everything else in the
// tree is kept as written so nothing is lost on the way through.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kturn::k8s {

// Ordered: keys keep the order they were written (or built) in, so output reads like the input.
using Json = nlohmann::ordered_json;
using StringMap = std::map<std::string, std::string>;

// namespace/name, the identity of a namespaced object ("" namespace for cluster-scoped ones).
struct ObjectKey {
  std::string ns{};
  std::string name{};

  // "ns/name", or "name" for a cluster-scoped object: STUNner's store.GetObjectKey format.
  std::string str() const { return ns.empty() ? name : ns + "/" + name; }
  friend auto operator<=>(const ObjectKey&, const ObjectKey&) = default;
  friend bool operator==(const ObjectKey&, const ObjectKey&) = default;
};

// The metadata kturn reads. Fields of the wrong type read as empty: the API server would have
// rejected such an object, and a manifest on disk must not crash the renderer.
struct ObjectMeta {
  std::string apiVersion{};
  std::string kind{};
  std::string name{};
  std::string ns{};
  std::string uid{};
  std::string resourceVersion{};
  int64_t generation = 0;
  StringMap labels{};
  StringMap annotations{};

  ObjectKey key() const { return {ns, name}; }
  // "gateway.networking.k8s.io" from "gateway.networking.k8s.io/v1"; "" for the core group.
  std::string group() const;
};

class Object {
 public:
  Object() : body_(Json::object()) {}
  explicit Object(Json body);

  const Json& body() const { return body_; }
  Json& body() { return body_; }
  const ObjectMeta& meta() const { return meta_; }

  std::string_view apiVersion() const { return meta_.apiVersion; }
  std::string_view kind() const { return meta_.kind; }
  std::string group() const { return meta_.group(); }
  const std::string& name() const { return meta_.name; }
  const std::string& namespaceName() const { return meta_.ns; }
  ObjectKey key() const { return meta_.key(); }

  // spec and status, or an empty object when absent or not an object.
  const Json& spec() const { return member("spec"); }
  const Json& status() const { return member("status"); }

 private:
  const Json& member(std::string_view key) const;

  Json body_{};
  ObjectMeta meta_{};
};

// Reads apiVersion, kind and metadata out of an object tree.
ObjectMeta readMeta(const Json& body);

// Whether two trees hold the same content, whatever the order of their object members: Json
// keeps the order it read or built, and the API server writes members in an order of its own
// (Go struct fields, or sorted for custom resources), so `==` would call a status read back
// from the server different from the same status rendered here.
bool sameContent(const Json& a, const Json& b);

}  // namespace kturn::k8s
