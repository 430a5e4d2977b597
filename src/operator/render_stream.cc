#include "operator/render_stream.h"

#include "config/serializer.h"
#include "k8s/yaml_writer.h"

namespace kturn::op {
namespace {

void document(std::string& out, const std::string& comment, const k8s::Json& body) {
  out += "---\n";
  if (!comment.empty()) out += "# " + comment + "\n";
  out += k8s::toYaml(body);
}

}  // namespace

std::string toYamlStream(const RenderResult& result) {
  std::string out;
  for (const GatewayOutput& g : result.gateways) {
    const std::string who = "Gateway " + g.gateway.str();
    if (!g.config) {
      out += "---\n# " + who +
             ": not rendered, its dataplane config, Deployment and Service are removed\n";
      continue;
    }
    // Through stunnerd's wire format, so omitted fields are omitted here too.
    document(out, who + ": dataplane config", k8s::Json::parse(config::toJson(*g.config)));
    if (g.deployment) {
      document(out, who + ": " + std::string(g.deployment->kind()), g.deployment->body());
    }
    if (g.service) document(out, who + ": Service", g.service->body());
    if (g.networkPolicy) document(out, who + ": NetworkPolicy", g.networkPolicy->body());
  }
  for (const StatusUpdate& s : result.statuses) {
    k8s::Json meta = {{"name", s.key.name}};
    if (!s.key.ns.empty()) meta["namespace"] = s.key.ns;
    document(
        out, "",
        {{"apiVersion", s.apiVersion}, {"kind", s.kind}, {"metadata", meta}, {"status", s.status}});
  }
  for (const std::string& p : result.problems) out += "---\n# problem: " + p + "\n";
  return out;
}

}  // namespace kturn::op
