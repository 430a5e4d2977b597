// Who may read which dataplane config over CDS, decided with the Kubernetes API (kturn's
// authenticated config discovery, docs/cds.md#authentication). A cds::Authorizer:
//
//   1. TokenReview of the bearer token with kturn's audience (`kturn-cds` by default): a token
//      that is not valid, expired, of another audience, or bound to a pod that no longer exists
//      is refused (401).
//   2. A token bound to a pod (a projected ServiceAccount token, as the kubelet mounts) may get
//      and watch the config of the Gateway whose dataplane the pod is: pod (its UID checked) →
//      ReplicaSet → Deployment, or pod → DaemonSet, each hop the controller reference with the
//      UID of the object fetched, ending at a workload as the operator renders it (labelled
//      stunner.l7mp.io/owned-by: stunner, named after the Gateway that owns it), in the pod's
//      namespace. This is how every kturnd pod the operator runs is admitted, with no RBAC to
//      write. Whoever may create workloads in that namespace is trusted, as with its Secrets.
//   3. Anything else is what RBAC grants: a SubjectAccessReview of the request's verb (get, list,
//      watch) on the resource `configs` of API group `cds.kturn.io` (it exists only in RBAC), in
//      the config's namespace (cluster-wide for lists of every namespace), named after the
//      Gateway. kturn-auth's chart Role grants exactly the Gateways it serves.
//
//   CdsAuthorizer authorizer(api, {.audience = "kturn-cds"});
//   cds::CdsServer::start({.authorizer = std::ref(authorizer), ...});
//
// Thread-safe (every call makes its own API requests); blocks for up to five round trips
// (TokenReview, Pod, ReplicaSet, Deployment, SubjectAccessReview). An API failure is a
// transient decision (503, not cached).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cds/access.h"
#include "k8s/api_client.h"

namespace kturn::op {

inline constexpr std::string_view kCdsTokenAudience = "kturn-cds";
inline constexpr std::string_view kCdsRbacGroup = "cds.kturn.io";
inline constexpr std::string_view kCdsRbacResource = "configs";

struct CdsAuthorizerOptions {
  std::string audience = std::string(kCdsTokenAudience);
};

class CdsAuthorizer {
 public:
  CdsAuthorizer(k8s::ApiClient& client, CdsAuthorizerOptions options)
      : client_(client), options_(std::move(options)) {}

  cds::Decision operator()(const std::string& token, const cds::AccessRequest& request) const;

 private:
  // The name of the Gateway whose Deployment (or DaemonSet) controls pod ns/name, checked to be
  // the pod with `uid`; "" when it is not a Gateway's dataplane pod (or cannot be read).
  std::string gatewayOfPod(const std::string& ns, const std::string& name,
                           const std::string& uid) const;

  k8s::ApiClient& client_;
  const CdsAuthorizerOptions options_;
};

// The `exp` claim of a JWT (seconds since the epoch), read without checking the signature (the
// TokenReview did); nullopt when there is none.
std::optional<int64_t> jwtExpiry(const std::string& token);

}  // namespace kturn::op
