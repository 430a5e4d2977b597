// Typed views of the Gateway API (gateway.networking.k8s.io) objects kturn reads: GatewayClass,
// Gateway and ReferenceGrant, with the field names of the Gateway API spec. Each view keeps the
// problems found while reading it (see field_reader.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "k8s/object.h"

namespace kturn::k8s {

inline constexpr std::string_view kGatewayGroup = "gateway.networking.k8s.io";

// A reference to a Secret (Gateway API SecretObjectReference): group "" and kind "Secret" when
// omitted, namespace of the referring object when omitted.
struct SecretObjectReference {
  std::optional<std::string> group{};
  std::optional<std::string> kind{};
  std::optional<std::string> ns{};
  std::string name{};
};

struct ParametersReference {
  std::string group{};
  std::string kind{};
  std::string name{};
  std::optional<std::string> ns{};
};

struct GatewayClass {
  ObjectMeta meta{};
  std::string controllerName{};
  std::optional<ParametersReference> parametersRef{};
  std::vector<std::string> problems{};
};

struct GatewayAddress {
  std::optional<std::string> type{};  // "IPAddress" when omitted
  std::string value{};
};

struct ListenerTls {
  std::optional<std::string> mode{};  // "Terminate" when omitted
  std::vector<SecretObjectReference> certificateRefs{};
};

struct AllowedRoutes {
  std::string from = "Same";  // Same | All | Selector
  std::optional<Json> selector{};
};

struct GatewayListener {
  std::string name{};
  std::string protocol{};
  int64_t port = 0;
  std::optional<ListenerTls> tls{};
  AllowedRoutes allowedRoutes{};
};

struct Gateway {
  ObjectMeta meta{};
  std::string gatewayClassName{};
  std::vector<GatewayAddress> addresses{};
  std::vector<GatewayListener> listeners{};
  std::vector<std::string> problems{};
};

struct ReferenceGrantFrom {
  std::string group{};
  std::string kind{};
  std::string ns{};
};

struct ReferenceGrantTo {
  std::string group{};
  std::string kind{};
  std::optional<std::string> name{};  // any object of the kind when omitted
};

struct ReferenceGrant {
  ObjectMeta meta{};
  std::vector<ReferenceGrantFrom> from{};
  std::vector<ReferenceGrantTo> to{};
  std::vector<std::string> problems{};
};

GatewayClass readGatewayClass(const Object& object);
Gateway readGateway(const Object& object);
ReferenceGrant readReferenceGrant(const Object& object);

class FieldReader;
// Shared with the STUNner views: GatewayConfig.spec.authRef has the same shape.
SecretObjectReference readSecretReference(FieldReader& reader, const Json& ref,
                                          std::string_view path);

}  // namespace kturn::k8s
