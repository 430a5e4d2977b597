#include "cli/render_command.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <ostream>

#include "k8s/api_client.h"
#include "k8s/manifest_files.h"
#include "k8s/rest_config.h"
#include "operator/clock.h"
#include "operator/cluster_snapshot.h"
#include "operator/render_stream.h"
#include "operator/renderer.h"
#include "operator/watched_cluster.h"

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

// The objects in the manifest files; an exit status.
int readFiles(const std::vector<std::string>& paths, std::vector<k8s::Object>& objects,
              std::ostream& err) {
  for (const std::string& path : paths) {
    auto loaded = k8s::loadManifestFiles(path);
    if (!loaded) {
      err << "kturnctl render: " << loaded.error().message << "\n";
      return kRenderUsage;
    }
    for (k8s::Object& o : *loaded) objects.push_back(std::move(o));
  }
  return kRenderOk;
}

// The objects of every kind the operator watches, as its informers would hold them once synced;
// an exit status. A kubeconfig that cannot be read or used is bad input (2), as an unreadable -f
// is; a list that fails is a runtime failure (1).
int readCluster(const RenderCommand& command, std::vector<k8s::Object>& objects,
                std::ostream& err) {
  auto config = k8s::loadKubeconfig(command.kubeconfig, command.context);
  if (!config) {
    err << "kturnctl render: " << config.error().message << "\n";
    return kRenderUsage;
  }
  auto client = k8s::ApiClient::create(*config);
  if (!client) {
    err << "kturnctl render: kubeconfig " << command.kubeconfig << ": " << client.error().message
        << "\n";
    return kRenderUsage;
  }
  (*client)->setTimeout(
      std::chrono::milliseconds(static_cast<int64_t>(command.timeoutSeconds * 1000)));
  auto listing = op::WatchedCluster::listOnce(**client);
  if (!listing) {
    err << "kturnctl render: " << config->url() << ": " << listing.error().message << "\n";
    return kRenderFailure;
  }
  for (const k8s::ResourceType& type : listing->notServed) {
    err << "kturnctl render: " << config->url() << ": " << type.kind << " (" << type.apiVersion()
        << ") is not served (CRD not installed?): read as empty\n";
  }
  objects = std::move(listing->objects);
  return kRenderOk;
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
      "Render Gateway API and STUNner objects as the operator would, from manifest files (-f) or "
      "from a live cluster (--kubeconfig, read only): prints each Gateway's dataplane config, "
      "Deployment and Service, and the status of every object, as a YAML stream. Exit status: 0 "
      "no problems, 1 some status reports a problem (listed on stderr) or the cluster could not "
      "be listed, 2 bad usage or input.");
  CLI::Option* files =
      sub->add_option("-f,--filename", command.paths,
                      "manifest file, or directory of *.yaml, *.yml, *.json files (repeatable)");
  CLI::Option* kubeconfig = sub->add_option(
      "--kubeconfig", command.kubeconfig,
      "instead of -f: list the objects the operator watches from the API server of this "
      "kubeconfig, once; nothing is written ($KUBECONFIG is not read)");
  files->excludes(kubeconfig);
  sub->add_option("--context", command.context, "kubeconfig context (default: its current-context)")
      ->needs(kubeconfig);
  sub->add_option("--timeout", command.timeoutSeconds, "seconds per list request to the API server")
      ->check(CLI::PositiveNumber)
      ->needs(kubeconfig)
      ->capture_default_str();
  sub->add_option("--controller-name", command.options.controllerName,
                  "GatewayClass controllerName to act for")
      ->capture_default_str();
  sub->add_option("--dataplane-image", command.options.dataplaneImage,
                  "dataplane image when the Dataplane sets none")
      ->capture_default_str();
  sub->add_option("--cds-address", command.options.configDiscoveryAddress,
                  "config discovery server host:port the dataplane pods are pointed at")
      ->capture_default_str();
  sub->add_option("--endpoint-discovery", command.options.endpointDiscovery,
                  "Service backends by their pods' addresses; false: by DNS name (STRICT_DNS)")
      ->capture_default_str();
  sub->add_option("--relay-to-cluster-ip", command.options.relayToClusterIP,
                  "a Service backend also admits its ClusterIP")
      ->capture_default_str();
  sub->add_option("--reference-grants", command.referenceGrants,
                  "enforce: cross-namespace backends and certificates need a ReferenceGrant "
                  "(Gateway API); ignore: as STUNner, never checked")
      ->check(CLI::IsMember({"enforce", "ignore"}))
      ->capture_default_str();
  sub->add_option("--now", command.now,
                  "the render's clock, e.g. 2024-01-01T00:00:00Z (default: now): conditions' "
                  "lastTransitionTime and the time certificate dates are judged at, for output "
                  "that diffs cleanly");
  return sub;
}

int runRender(RenderCommand& command, std::ostream& out, std::ostream& err) {
  if (command.paths.empty() == command.kubeconfig.empty()) {
    err << "kturnctl render: give one source: -f (manifest files) or --kubeconfig (a cluster)\n";
    return kRenderUsage;
  }
  std::vector<k8s::Object> objects;
  const int read = command.paths.empty() ? readCluster(command, objects, err)
                                         : readFiles(command.paths, objects, err);
  if (read != kRenderOk) return read;
  command.options.enforceReferenceGrants = command.referenceGrants == "enforce";
  command.options.now = op::unixNow();
  if (!command.now.empty()) {
    const std::optional<int64_t> now = op::parseRfc3339(command.now);
    if (!now) {
      err << "kturnctl render: --now " << command.now << ": not a time like 2024-01-01T00:00:00Z\n";
      return kRenderUsage;
    }
    command.options.now = *now;
  }
  command.options.transitionTime = op::rfc3339(command.options.now);
  const op::ClusterSnapshot snapshot = op::ClusterSnapshot::fromObjects(std::move(objects));
  const op::RenderResult result = op::render(snapshot, command.options);
  out << op::toYamlStream(result);
  const std::vector<std::string> problems = statusProblems(result);
  for (const std::string& p : problems) err << "problem: " << p << "\n";
  return problems.empty() ? kRenderOk : kRenderProblems;
}

}  // namespace kturn::cli
