#include "k8s/core_api.h"

#include "common/crypto.h"
#include "k8s/field_reader.h"

namespace kturn::k8s {

Service readService(const Object& object) {
  Service svc{.meta = object.meta()};
  FieldReader r;
  const Json& spec = object.spec();
  svc.type = r.string(spec, "type", "spec").value_or("ClusterIP");
  svc.clusterIP = r.string(spec, "clusterIP", "spec").value_or("");
  svc.clusterIPs = r.stringList(spec, "clusterIPs", "spec");
  if (const Json* ports = r.array(spec, "ports", "spec")) {
    for (size_t i = 0; i < ports->size(); ++i) {
      const std::string path = indexPath("spec.ports", i);
      const Json& p = (*ports)[i];
      svc.ports.push_back({.name = r.string(p, "name", path).value_or(""),
                           .protocol = r.string(p, "protocol", path).value_or("TCP"),
                           .port = r.integer(p, "port", path).value_or(0),
                           .nodePort = r.integer(p, "nodePort", path).value_or(0)});
    }
  }
  const Json& status = object.status();
  if (const Json* lb = r.object(status, "loadBalancer", "status")) {
    if (const Json* ingress = r.array(*lb, "ingress", "status.loadBalancer")) {
      for (size_t i = 0; i < ingress->size(); ++i) {
        const std::string path = indexPath("status.loadBalancer.ingress", i);
        const Json& in = (*ingress)[i];
        LoadBalancerIngress out{.ip = r.string(in, "ip", path).value_or(""),
                                .hostname = r.string(in, "hostname", path).value_or("")};
        if (const Json* ps = r.array(in, "ports", path)) {
          for (size_t j = 0; j < ps->size(); ++j) {
            const std::string portPath = indexPath(fieldPath(path, "ports"), j);
            out.ports.push_back(
                {.port = r.integer((*ps)[j], "port", portPath).value_or(0),
                 .protocol = r.string((*ps)[j], "protocol", portPath).value_or("")});
          }
        }
        svc.ingress.push_back(std::move(out));
      }
    }
  }
  const Json* metadata = object.body().is_object() && object.body().contains("metadata")
                             ? &object.body()["metadata"]
                             : nullptr;
  if (metadata != nullptr) {
    if (const Json* owners = r.array(*metadata, "ownerReferences", "metadata")) {
      for (size_t i = 0; i < owners->size(); ++i) {
        const std::string path = indexPath("metadata.ownerReferences", i);
        const Json& o = (*owners)[i];
        svc.ownerReferences.push_back({.apiVersion = r.string(o, "apiVersion", path).value_or(""),
                                       .kind = r.string(o, "kind", path).value_or(""),
                                       .name = r.string(o, "name", path).value_or(""),
                                       .uid = r.string(o, "uid", path).value_or("")});
      }
    }
  }
  svc.problems = r.takeProblems();
  return svc;
}

EndpointSlice readEndpointSlice(const Object& object) {
  EndpointSlice es{.meta = object.meta()};
  if (auto it = es.meta.labels.find(std::string(kServiceNameLabel)); it != es.meta.labels.end()) {
    es.serviceName = it->second;
  }
  FieldReader r;
  // EndpointSlice keeps its endpoints at the top level, not under spec.
  if (const Json* eps = r.array(object.body(), "endpoints", "")) {
    for (size_t i = 0; i < eps->size(); ++i) {
      const std::string path = indexPath("endpoints", i);
      const Json& ep = (*eps)[i];
      EndpointSliceEndpoint out;
      out.addresses = r.stringList(ep, "addresses", path);
      if (const Json* cond = r.object(ep, "conditions", path)) {
        const std::string condPath = fieldPath(path, "conditions");
        out.ready = r.boolean(*cond, "ready", condPath);
        out.serving = r.boolean(*cond, "serving", condPath);
      }
      es.endpoints.push_back(std::move(out));
    }
  }
  es.problems = r.takeProblems();
  return es;
}

std::optional<std::string> Secret::get(const std::string& key) const {
  auto it = data.find(key);
  if (it == data.end()) return std::nullopt;
  return it->second;
}

Secret readSecret(const Object& object) {
  Secret secret{.meta = object.meta()};
  FieldReader r;
  const Json& body = object.body();
  secret.type = r.string(body, "type", "").value_or("Opaque");
  for (const auto& [key, encoded] : r.stringMap(body, "data", "")) {
    // Go's JSON decoder of []byte skips line breaks, so wrapped base64 is accepted.
    std::string compact;
    for (char c : encoded) {
      if (c != '\n' && c != '\r') compact += c;
    }
    auto bytes = crypto::base64Decode(compact);
    if (!bytes) {
      r.problem("data." + key + ": not valid base64");
      continue;
    }
    secret.data[key] = std::string(bytes->begin(), bytes->end());
  }
  for (const auto& [key, value] : r.stringMap(body, "stringData", "")) secret.data[key] = value;
  secret.problems = r.takeProblems();
  return secret;
}

std::optional<NodeAddress> Node::externalAddress() const {
  for (const char* type : {"ExternalIP", "ExternalDNS"}) {
    for (const NodeAddress& a : addresses) {
      if (a.type == type && !a.address.empty()) return a;
    }
  }
  return std::nullopt;
}

Node readNode(const Object& object) {
  Node node{.meta = object.meta()};
  FieldReader r;
  if (const Json* addrs = r.array(object.status(), "addresses", "status")) {
    for (size_t i = 0; i < addrs->size(); ++i) {
      const std::string path = indexPath("status.addresses", i);
      node.addresses.push_back({.type = r.string((*addrs)[i], "type", path).value_or(""),
                                .address = r.string((*addrs)[i], "address", path).value_or("")});
    }
  }
  node.problems = r.takeProblems();
  return node;
}

}  // namespace kturn::k8s
