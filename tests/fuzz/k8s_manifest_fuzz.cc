// Fuzz target: the operator's input path (src/k8s, src/operator). The input is a manifest stream
// (multi-document YAML or JSON, as `kubectl apply -f` and `kturnctl render -f` take); its objects
// are decoded into a ClusterSnapshot and rendered, exactly as the operator renders its watch
// cache.
//
// Invariants: decoding never throws; an error says what is wrong; every rendered dataplane config
// validates and survives the JSON round trip CDS puts it through (without $VAR substitution); every
// rendered Deployment and Service names itself in the Gateway's namespace; rendering is a pure
// function (the same snapshot renders the same result twice).
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <utility>
#include <vector>

#include "config/parser.h"
#include "config/serializer.h"
#include "config/validator.h"
#include "fuzz_check.h"
#include "k8s/manifest.h"
#include "operator/cluster_snapshot.h"
#include "operator/renderer.h"

namespace {

using namespace kturn;

bool sameResult(const op::RenderResult& a, const op::RenderResult& b) {
  if (a.gateways.size() != b.gateways.size() || a.statuses.size() != b.statuses.size() ||
      a.problems != b.problems) {
    return false;
  }
  for (size_t i = 0; i < a.gateways.size(); ++i) {
    const op::GatewayOutput& x = a.gateways[i];
    const op::GatewayOutput& y = b.gateways[i];
    if (!(x.gateway == y.gateway) || x.config != y.config) return false;
    if (x.deployment.has_value() != y.deployment.has_value()) return false;
    if (x.deployment && x.deployment->body() != y.deployment->body()) return false;
    if (x.service.has_value() != y.service.has_value()) return false;
    if (x.service && x.service->body() != y.service->body()) return false;
  }
  for (size_t i = 0; i < a.statuses.size(); ++i) {
    if (a.statuses[i].kind != b.statuses[i].kind || !(a.statuses[i].key == b.statuses[i].key) ||
        a.statuses[i].status != b.statuses[i].status) {
      return false;
    }
  }
  return true;
}

void checkOutput(const op::GatewayOutput& out) {
  if (out.config) {
    config::StunnerConfig copy = *out.config;
    FUZZ_CHECK(config::validate(copy).has_value());
    // What a dataplane receives over CDS, read without $VAR substitution: kturnd substitutes
    // $STUNNER_ADDR from its own environment, which the renderer leaves in place.
    auto again = config::decodeConfig(config::toJson(*out.config));
    FUZZ_CHECK(again.has_value());
    FUZZ_CHECK(config::validate(*again).has_value());
    if (!(*again == *out.config)) {
      std::fprintf(stderr, "config round trip differs:\n--- rendered\n%s\n--- read back\n%s\n",
                   config::toJson(*out.config, 2).c_str(), config::toJson(*again, 2).c_str());
    }
    FUZZ_CHECK(*again == *out.config);
  }
  for (const auto* owned : {&out.deployment, &out.service}) {
    if (!*owned) continue;
    FUZZ_CHECK(!(*owned)->name().empty());
    FUZZ_CHECK((*owned)->namespaceName() == out.gateway.ns);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text{reinterpret_cast<const char*>(data), size};
  (void)k8s::readYamlDocuments(text);
  auto objects = k8s::loadManifests(text);
  if (!objects) {
    FUZZ_CHECK(!objects.error().message.empty());
    return 0;
  }
  const op::ClusterSnapshot snapshot = op::ClusterSnapshot::fromObjects(std::move(*objects));
  const op::RenderResult first = op::render(snapshot);
  for (const op::GatewayOutput& out : first.gateways) checkOutput(out);
  FUZZ_CHECK(sameResult(first, op::render(snapshot)));
  return 0;
}
