#include "operator/gateway_class_renderer.h"

#include "operator/condition.h"
#include "operator/deployment_renderer.h"

namespace kturn::op {
namespace {

using k8s::Json;

// Why a GatewayClass cannot be used, "" when it can (gatewayclass_util.go validateGatewayClass,
// gatewayconfig_util.go, dataplane_util.go getDataplane).
std::string resolveClass(const k8s::GatewayClass& gc, const ClusterSnapshot& snapshot,
                         const RenderOptions& options, ClassContext& ctx) {
  if (!gc.problems.empty()) return gc.problems[0];
  if (!gc.parametersRef) return "spec.parametersRef: required, must name a GatewayConfig";
  const k8s::ParametersReference& ref = *gc.parametersRef;
  if (ref.group != k8s::kStunnerGroup) {
    return "spec.parametersRef.group \"" + ref.group + "\": must be stunner.l7mp.io";
  }
  if (ref.kind != "GatewayConfig") {
    return "spec.parametersRef.kind \"" + ref.kind + "\": must be GatewayConfig";
  }
  if (ref.name.empty()) return "spec.parametersRef.name: required";
  if (!ref.ns || ref.ns->empty()) return "spec.parametersRef.namespace: required";
  const k8s::ObjectKey key{*ref.ns, ref.name};
  ctx.gatewayConfig = snapshot.findGatewayConfig(key);
  if (ctx.gatewayConfig == nullptr) return "GatewayConfig " + key.str() + " not found";
  if (!ctx.gatewayConfig->problems.empty()) {
    return "GatewayConfig " + key.str() + ": " + ctx.gatewayConfig->problems[0];
  }
  const std::string dpName =
      ctx.gatewayConfig->dataplane.value_or(std::string(kDefaultDataplaneName));
  if (const k8s::Dataplane* dp = snapshot.findDataplane(dpName)) {
    if (!dp->problems.empty()) return "Dataplane " + dpName + ": " + dp->problems[0];
    ctx.dataplane = *dp;
  } else if (dpName == kDefaultDataplaneName) {
    ctx.dataplane = builtinDataplane(options);
  } else {
    return "Dataplane " + dpName + " not found (named by GatewayConfig " + key.str() + ")";
  }
  return "";
}

Json classStatus(const k8s::GatewayClass& gc, const std::string& problem,
                 const RenderOptions& options) {
  Conditions c;
  if (problem.empty()) {
    c.set(
        {.type = std::string(cond::kAccepted),
         .status = ConditionStatus::kTrue,
         .reason = std::string(reason::kAccepted),
         .message = "GatewayClass is now managed by controller \"" + options.controllerName + "\"",
         .observedGeneration = gc.meta.generation});
  } else {
    c.set({.type = std::string(cond::kAccepted),
           .status = ConditionStatus::kFalse,
           .reason = std::string(reason::kInvalidParameters),
           .message = problem,
           .observedGeneration = gc.meta.generation});
  }
  return {{"conditions", c.toJson(options.transitionTime)}};
}

}  // namespace

GatewayClassRender renderGatewayClass(const k8s::GatewayClass& gc, const ClusterSnapshot& snapshot,
                                      const RenderOptions& options) {
  GatewayClassRender out;
  out.context.gatewayClass = &gc;
  out.problem = resolveClass(gc, snapshot, options, out.context);
  out.status = {gc.meta.apiVersion, "GatewayClass", gc.meta.key(),
                classStatus(gc, out.problem, options)};
  return out;
}

}  // namespace kturn::op
