#include "operator/route_attachment.h"

#include <algorithm>

namespace kturn::op {

const k8s::Gateway* parentGateway(const k8s::Route& route, const k8s::ParentReference& parent,
                                  const ClusterSnapshot& snapshot) {
  if (parent.group && *parent.group != k8s::kGatewayGroup) return nullptr;
  if (parent.kind && *parent.kind != "Gateway") return nullptr;
  return snapshot.findGateway({parent.ns.value_or(route.meta.ns), parent.name});
}

namespace {

std::string allowsNamespace(const k8s::Route& route, const k8s::Gateway& gateway,
                            const k8s::GatewayListener& listener, const ClusterSnapshot& snapshot) {
  const k8s::AllowedRoutes& allowed = listener.allowedRoutes;
  if (allowed.from == "All") return "";
  if (allowed.from == "Selector") {
    if (!allowed.selector) return "listener " + listener.name + ": Selector missing";
    auto labels = snapshot.namespaceLabels(route.meta.ns);
    if (!labels) return "namespace " + route.meta.ns + " of the route not found";
    auto match = selectorMatches(*allowed.selector, *labels);
    if (!match) return "listener " + listener.name + ": invalid namespace selector";
    if (!*match) return "labels of namespace " + route.meta.ns + " do not match the Selector";
    return "";
  }
  // Same, and anything unknown (STUNner's default branch).
  if (gateway.meta.ns != route.meta.ns) {
    return "listener " + listener.name + " admits routes from namespace " + gateway.meta.ns +
           " only";
  }
  return "";
}

}  // namespace

std::string rejectReason(const k8s::Route& route, const k8s::ParentReference& parent,
                         const k8s::Gateway& gateway, const k8s::GatewayListener& listener,
                         const ClusterSnapshot& snapshot) {
  if (parent.group && *parent.group != k8s::kGatewayGroup) return "parent group is not Gateway's";
  if (parent.kind && *parent.kind != "Gateway") return "parent kind is not Gateway";
  if (parent.ns.value_or(route.meta.ns) != gateway.meta.ns || parent.name != gateway.meta.name) {
    return "parent is another Gateway";
  }
  if (std::string why = allowsNamespace(route, gateway, listener, snapshot); !why.empty()) {
    return why;
  }
  if (parent.sectionName && *parent.sectionName != listener.name) {
    return "sectionName " + *parent.sectionName + " names another listener";
  }
  return "";
}

bool parentAccepts(const k8s::Route& route, const k8s::ParentReference& parent,
                   const k8s::Gateway& gateway, const ClusterSnapshot& snapshot) {
  return std::any_of(gateway.listeners.begin(), gateway.listeners.end(),
                     [&](const k8s::GatewayListener& l) {
                       return rejectReason(route, parent, gateway, l, snapshot).empty();
                     });
}

std::optional<bool> selectorMatches(const k8s::Json& selector, const k8s::StringMap& labels) {
  if (!selector.is_object()) return std::nullopt;
  if (auto ml = selector.find("matchLabels"); ml != selector.end() && !ml->is_null()) {
    if (!ml->is_object()) return std::nullopt;
    for (const auto& [k, v] : ml->items()) {
      if (!v.is_string()) return std::nullopt;
      auto it = labels.find(k);
      if (it == labels.end() || it->second != v.get<std::string>()) return false;
    }
  }
  if (auto me = selector.find("matchExpressions"); me != selector.end() && !me->is_null()) {
    if (!me->is_array()) return std::nullopt;
    for (const k8s::Json& e : *me) {
      if (!e.is_object() || !e.contains("key") || !e["key"].is_string() ||
          !e.contains("operator") || !e["operator"].is_string()) {
        return std::nullopt;
      }
      const std::string key = e["key"].get<std::string>();
      const std::string op = e["operator"].get<std::string>();
      std::vector<std::string> values;
      if (auto vs = e.find("values"); vs != e.end() && vs->is_array()) {
        for (const k8s::Json& v : *vs) {
          if (!v.is_string()) return std::nullopt;
          values.push_back(v.get<std::string>());
        }
      }
      auto it = labels.find(key);
      const bool has = it != labels.end();
      const bool in = has && std::find(values.begin(), values.end(), it->second) != values.end();
      if (op == "In") {
        if (!in) return false;
      } else if (op == "NotIn") {
        if (in) return false;
      } else if (op == "Exists") {
        if (!has) return false;
      } else if (op == "DoesNotExist") {
        if (has) return false;
      } else {
        return std::nullopt;
      }
    }
  }
  return true;
}

}  // namespace kturn::op
