#include "k8s/gateway_api.h"

#include "k8s/field_reader.h"

namespace kturn::k8s {

SecretObjectReference readSecretReference(FieldReader& reader, const Json& ref,
                                          std::string_view path) {
  SecretObjectReference out;
  out.group = reader.string(ref, "group", path);
  out.kind = reader.string(ref, "kind", path);
  out.ns = reader.string(ref, "namespace", path);
  out.name = reader.string(ref, "name", path).value_or("");
  return out;
}

GatewayClass readGatewayClass(const Object& object) {
  GatewayClass gc{.meta = object.meta()};
  FieldReader r;
  const Json& spec = object.spec();
  gc.controllerName = r.string(spec, "controllerName", "spec").value_or("");
  if (const Json* ref = r.object(spec, "parametersRef", "spec")) {
    ParametersReference p;
    p.group = r.string(*ref, "group", "spec.parametersRef").value_or("");
    p.kind = r.string(*ref, "kind", "spec.parametersRef").value_or("");
    p.name = r.string(*ref, "name", "spec.parametersRef").value_or("");
    p.ns = r.string(*ref, "namespace", "spec.parametersRef");
    gc.parametersRef = std::move(p);
  }
  gc.problems = r.takeProblems();
  return gc;
}

namespace {

GatewayListener readListener(FieldReader& r, const Json& l, const std::string& path) {
  GatewayListener out;
  out.name = r.string(l, "name", path).value_or("");
  out.protocol = r.string(l, "protocol", path).value_or("");
  out.port = r.integer(l, "port", path).value_or(0);
  if (const Json* tls = r.object(l, "tls", path)) {
    const std::string tlsPath = fieldPath(path, "tls");
    ListenerTls t;
    t.mode = r.string(*tls, "mode", tlsPath);
    if (const Json* refs = r.array(*tls, "certificateRefs", tlsPath)) {
      const std::string refsPath = fieldPath(tlsPath, "certificateRefs");
      for (size_t i = 0; i < refs->size(); ++i) {
        t.certificateRefs.push_back(readSecretReference(r, (*refs)[i], indexPath(refsPath, i)));
      }
    }
    out.tls = std::move(t);
  }
  if (const Json* ar = r.object(l, "allowedRoutes", path)) {
    const std::string arPath = fieldPath(path, "allowedRoutes");
    if (const Json* ns = r.object(*ar, "namespaces", arPath)) {
      const std::string nsPath = fieldPath(arPath, "namespaces");
      out.allowedRoutes.from = r.string(*ns, "from", nsPath).value_or("Same");
      if (const Json* sel = r.object(*ns, "selector", nsPath)) out.allowedRoutes.selector = *sel;
    }
  }
  return out;
}

}  // namespace

Gateway readGateway(const Object& object) {
  Gateway gw{.meta = object.meta()};
  FieldReader r;
  const Json& spec = object.spec();
  gw.gatewayClassName = r.string(spec, "gatewayClassName", "spec").value_or("");
  if (const Json* addrs = r.array(spec, "addresses", "spec")) {
    for (size_t i = 0; i < addrs->size(); ++i) {
      const std::string path = indexPath("spec.addresses", i);
      gw.addresses.push_back({.type = r.string((*addrs)[i], "type", path),
                              .value = r.string((*addrs)[i], "value", path).value_or("")});
    }
  }
  if (const Json* ls = r.array(spec, "listeners", "spec")) {
    for (size_t i = 0; i < ls->size(); ++i) {
      gw.listeners.push_back(readListener(r, (*ls)[i], indexPath("spec.listeners", i)));
    }
  }
  gw.problems = r.takeProblems();
  return gw;
}

ReferenceGrant readReferenceGrant(const Object& object) {
  ReferenceGrant rg{.meta = object.meta()};
  FieldReader r;
  const Json& spec = object.spec();
  if (const Json* from = r.array(spec, "from", "spec")) {
    for (size_t i = 0; i < from->size(); ++i) {
      const std::string path = indexPath("spec.from", i);
      const Json& f = (*from)[i];
      rg.from.push_back({.group = r.string(f, "group", path).value_or(""),
                         .kind = r.string(f, "kind", path).value_or(""),
                         .ns = r.string(f, "namespace", path).value_or("")});
    }
  }
  if (const Json* to = r.array(spec, "to", "spec")) {
    for (size_t i = 0; i < to->size(); ++i) {
      const std::string path = indexPath("spec.to", i);
      const Json& t = (*to)[i];
      rg.to.push_back({.group = r.string(t, "group", path).value_or(""),
                       .kind = r.string(t, "kind", path).value_or(""),
                       .name = r.string(t, "name", path)});
    }
  }
  rg.problems = r.takeProblems();
  return rg;
}

}  // namespace kturn::k8s
