// `kturnctl render -f DIR`: the operator's renderer on manifest files, no cluster needed.
// `kturnctl render --kubeconfig FILE`: the same renderer on what a live cluster holds, each kind
// the operator watches listed once; nothing is written to the cluster.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "operator/render_options.h"
#include "operator/render_result.h"

namespace CLI {
class App;
}

namespace kturn::cli {

// Exit codes of `kturnctl render`.
inline constexpr int kRenderOk = 0;        // rendered, no object reports a problem
inline constexpr int kRenderProblems = 1;  // rendered; some status condition reports a problem
inline constexpr int kRenderFailure = 1;   // --kubeconfig: a list failed (unreachable, 401, 403)
inline constexpr int kRenderUsage = 2;     // bad flags, unreadable or unparsable input

struct RenderCommand {
  // Exactly one source: files or directories, or a kubeconfig. $KUBECONFIG is not read: render
  // goes to a cluster only when told to.
  std::vector<std::string> paths{};
  std::string kubeconfig{};
  std::string context{};       // of the kubeconfig; empty: its current-context
  double timeoutSeconds = 30;  // per list request to the API server
  op::RenderOptions options{};
  std::string referenceGrants = "ignore";  // as STUNner; or "enforce"
  std::string now{};                       // lastTransitionTime; empty: the current time
};

// Registers the `render` subcommand; `command` must outlive `app`.
CLI::App* addRenderCommand(CLI::App& app, RenderCommand& command);

// Reads, renders, prints the YAML stream to `out` and a summary of problems to `err`.
int runRender(RenderCommand& command, std::ostream& out, std::ostream& err);

// Each problem a status reports, as "<Kind> <ns/name>[ listener <l>][ parent <p>]: <Type>
// <Status> <Reason>: <message>". A Programmed False AddressNotAssigned is not a problem: a
// LoadBalancer has no address until the cloud assigns one, and offline it never has.
std::vector<std::string> statusProblems(const op::RenderResult& result);

}  // namespace kturn::cli
