#include "cli/render_command.h"

#include <CLI/CLI.hpp>
#include <ostream>

#include "k8s/manifest_files.h"
#include "operator/clock.h"
#include "operator/cluster_snapshot.h"
#include "operator/render_stream.h"
#include "operator/renderer.h"

namespace kturn::cli {
namespace {

bool isProblem(const k8s::Json& c) {
  const std::string type = c.value("type", "");
  const std::string status = c.value("status", "");
  const std::string reason = c.value("reason", "");
  if (type == "Conflicted") return status == "True";
  if (type == "Programmed" && reason == "AddressNotAssigned") return false;
  return status == "False";
}

void collect(const k8s::Json& conditions, const std::string& who, std::vector<std::string>& out) {
  if (!conditions.is_array()) return;
  for (const k8s::Json& c : conditions) {
    if (!isProblem(c)) continue;
    out.push_back(who + ": " + c.value("type", "") + " " + c.value("status", "") + " " +
                  c.value("reason", "") + ": " + c.value("message", ""));
  }
}

}  // namespace

std::vector<std::string> statusProblems(const op::RenderResult& result) {
  std::vector<std::string> out;
  for (const op::StatusUpdate& s : result.statuses) {
    const std::string who = s.kind + " " + s.key.str();
    collect(s.status.value("conditions", k8s::Json()), who, out);
    for (const k8s::Json& l : s.status.value("listeners", k8s::Json::array())) {
      collect(l.value("conditions", k8s::Json()), who + " listener " + l.value("name", ""), out);
    }
    for (const k8s::Json& p : s.status.value("parents", k8s::Json::array())) {
      const k8s::Json ref = p.value("parentRef", k8s::Json::object());
      collect(p.value("conditions", k8s::Json()), who + " parent " + ref.value("name", ""), out);
    }
  }
  for (const std::string& p : result.problems) out.push_back(p);
  return out;
}

CLI::App* addRenderCommand(CLI::App& app, RenderCommand& command) {
  CLI::App* sub = app.add_subcommand(
      "render",
      "Render Gateway API and STUNner manifests offline: prints each Gateway's dataplane config, "
      "Deployment and Service, and the status of every object, as a YAML stream. Exit status: 0 "
      "no problems, 1 some status reports a problem (listed on stderr), 2 bad usage or input.");
  sub->add_option("-f,--filename", command.paths,
                  "manifest file, or directory of *.yaml, *.yml, *.json files (repeatable)")
      ->required();
  sub->add_option("--controller-name", command.options.controllerName,
                  "GatewayClass controllerName to act for")
      ->capture_default_str();
  sub->add_option("--dataplane-image", command.options.dataplaneImage,
                  "dataplane image when the Dataplane sets none")
      ->capture_default_str();
  sub->add_option("--cds-address", command.options.configDiscoveryAddress,
                  "config discovery server host:port the dataplane pods are pointed at")
      ->capture_default_str();
  sub->add_option("--reference-grants", command.referenceGrants,
                  "enforce: cross-namespace backends and certificates need a ReferenceGrant "
                  "(Gateway API); ignore: as STUNner, never checked")
      ->check(CLI::IsMember({"enforce", "ignore"}))
      ->capture_default_str();
  sub->add_option("--now", command.now,
                  "lastTransitionTime of conditions, e.g. 2024-01-01T00:00:00Z (default: now), "
                  "for output that diffs cleanly");
  return sub;
}

int runRender(RenderCommand& command, std::ostream& out, std::ostream& err) {
  std::vector<k8s::Object> objects;
  for (const std::string& path : command.paths) {
    auto loaded = k8s::loadManifestFiles(path);
    if (!loaded) {
      err << "kturnctl render: " << loaded.error().message << "\n";
      return kRenderUsage;
    }
    for (k8s::Object& o : *loaded) objects.push_back(std::move(o));
  }
  command.options.enforceReferenceGrants = command.referenceGrants == "enforce";
  command.options.transitionTime = command.now.empty() ? op::utcNowRfc3339() : command.now;
  const op::ClusterSnapshot snapshot = op::ClusterSnapshot::fromObjects(std::move(objects));
  const op::RenderResult result = op::render(snapshot, command.options);
  out << op::toYamlStream(result);
  const std::vector<std::string> problems = statusProblems(result);
  for (const std::string& p : problems) err << "problem: " << p << "\n";
  return problems.empty() ? kRenderOk : kRenderProblems;
}

}  // namespace kturn::cli
