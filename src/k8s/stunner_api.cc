#include "k8s/stunner_api.h"

#include "k8s/field_reader.h"

namespace kturn::k8s {
namespace {

// A field copied through as JSON must at least have the JSON type the API gives it.
std::optional<Json> rawField(FieldReader& r, const Json& spec, std::string_view key,
                             bool wantList) {
  const Json* v = wantList ? r.array(spec, key, "spec") : r.object(spec, key, "spec");
  if (v == nullptr) return std::nullopt;
  return *v;
}

}  // namespace

GatewayConfig readGatewayConfig(const Object& object) {
  GatewayConfig gc{.meta = object.meta()};
  FieldReader r;
  const Json& s = object.spec();
  gc.dataplane = r.string(s, "dataplane", "spec");
  gc.realm = r.string(s, "realm", "spec");
  gc.authType = r.string(s, "authType", "spec");
  gc.userName = r.string(s, "userName", "spec");
  gc.password = r.string(s, "password", "spec");
  gc.sharedSecret = r.string(s, "sharedSecret", "spec");
  gc.authLifetime = r.integer(s, "authLifetime", "spec");
  if (const Json* ref = r.object(s, "authRef", "spec")) {
    gc.authRef = readSecretReference(r, *ref, "spec.authRef");
  }
  gc.loadBalancerServiceAnnotations = r.stringMap(s, "loadBalancerServiceAnnotations", "spec");
  gc.logLevel = r.string(s, "logLevel", "spec");
  gc.userQuota = r.integer(s, "userQuota", "spec").value_or(0);
  gc.problems = r.takeProblems();
  return gc;
}

Dataplane readDataplane(const Object& object) {
  Dataplane dp{.meta = object.meta()};
  FieldReader r;
  const Json& s = object.spec();
  dp.image = r.string(s, "image", "spec").value_or("");
  dp.imagePullPolicy = r.string(s, "imagePullPolicy", "spec");
  dp.imagePullSecrets = rawField(r, s, "imagePullSecrets", true);
  dp.dataplaneResource = r.string(s, "dataplaneResource", "spec").value_or("Deployment");
  dp.labels = r.stringMap(s, "labels", "spec");
  dp.annotations = r.stringMap(s, "annotations", "spec");
  dp.command = r.stringList(s, "command", "spec");
  dp.args = r.stringList(s, "args", "spec");
  dp.envFrom = rawField(r, s, "envFrom", true);
  dp.env = rawField(r, s, "env", true);
  dp.containerSecurityContext = rawField(r, s, "containerSecurityContext", false);
  dp.replicas = r.integer(s, "replicas", "spec");
  dp.resources = rawField(r, s, "resources", false);
  dp.terminationGracePeriodSeconds = r.integer(s, "terminationGracePeriodSeconds", "spec");
  dp.hostNetwork = r.boolean(s, "hostNetwork", "spec").value_or(false);
  dp.affinity = rawField(r, s, "affinity", false);
  dp.securityContext = rawField(r, s, "securityContext", false);
  dp.tolerations = rawField(r, s, "tolerations", true);
  dp.topologySpreadConstraints = rawField(r, s, "topologySpreadConstraints", true);
  dp.disableHealthCheck = r.boolean(s, "disableHealthCheck", "spec").value_or(false);
  dp.enableMetricsEndpoint = r.boolean(s, "enableMetricsEndpoint", "spec").value_or(false);
  dp.offloadEngine = r.string(s, "offloadEngine", "spec").value_or("");
  dp.offloadInterfaces = r.stringList(s, "offloadInterfaces", "spec");
  dp.problems = r.takeProblems();
  return dp;
}

StaticService readStaticService(const Object& object) {
  StaticService ss{.meta = object.meta()};
  FieldReader r;
  ss.prefixes = r.stringList(object.spec(), "prefixes", "spec");
  ss.problems = r.takeProblems();
  return ss;
}

}  // namespace kturn::k8s
