// Writes rendered statuses back through the status subresource (server-side apply), only where
// they differ from what the object already carries, so a steady cluster costs no writes and a
// status write (which itself comes back as a watch event) does not loop.
//
// lastTransitionTime follows the Kubernetes convention for conditions: it changes only when a
// condition's status does. The renderer is pure and stamps every condition with the render's
// time; here a condition whose type and status match the current one keeps its current time.
#pragma once

#include <functional>
#include <optional>

#include "k8s/api_client.h"
#include "operator/render_result.h"

namespace kturn::op {

// The object as cached, for the current status: nullopt when unknown.
using CurrentObject = std::function<std::optional<k8s::Object>(const StatusUpdate&)>;

// `status` with the lastTransitionTime of every condition carried over from `current` where the
// condition (matched by type, inside listeners by name and parents by parentRef) kept its status.
k8s::Json keepTransitionTimes(const k8s::Json& status, const k8s::Json& current);

class StatusWriter {
 public:
  StatusWriter(k8s::ApiClient& client, CurrentObject current, std::string fieldManager)
      : client_(client), current_(std::move(current)), fieldManager_(std::move(fieldManager)) {}

  struct Outcome {
    int written = 0;
    int unchanged = 0;
    int failed = 0;  // to be retried on the next reconcile
  };
  Outcome write(const std::vector<StatusUpdate>& statuses);

 private:
  k8s::ApiClient& client_;
  const CurrentObject current_;
  const std::string fieldManager_;
};

}  // namespace kturn::op
