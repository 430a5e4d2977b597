#include "operator/cds_authorizer.h"

#include <algorithm>

#include "config/base64.h"
#include "operator/well_known.h"

namespace kturn::op {
namespace {

using k8s::Json;

constexpr std::string_view kServiceAccountPrefix = "system:serviceaccount:";
constexpr const char* kPodNameExtra = "authentication.kubernetes.io/pod-name";
constexpr const char* kPodUidExtra = "authentication.kubernetes.io/pod-uid";

// Who the API server says the token belongs to.
struct Identity {
  std::string username;
  std::string uid;
  Json groups = Json::array();
  Json extra = Json::object();
  std::string podNamespace;  // set for a pod-bound ServiceAccount token
  std::string podName;
  std::string podUid;
};

std::string firstExtra(const Json& extra, const char* key) {
  const Json& values = extra.value(key, Json::array());
  return values.is_array() && !values.empty() && values[0].is_string()
             ? values[0].get<std::string>()
             : std::string();
}

// The controller owner reference of `object`, or null.
const Json* controllerOf(const Json& object) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return nullptr;
  const auto refs = meta->find("ownerReferences");
  if (refs == meta->end() || !refs->is_array()) return nullptr;
  for (const Json& ref : *refs) {
    if (ref.is_object() && ref.value("controller", false)) return &ref;
  }
  return nullptr;
}

std::string uidOf(const Json& object) {
  return object.value("metadata", Json::object()).value("uid", "");
}

std::string who(const Identity& id) {
  if (id.podName.empty()) return id.username;
  return "pod " + id.podNamespace + "/" + id.podName + " (" + id.username + ")";
}

}  // namespace

std::optional<int64_t> jwtExpiry(const std::string& token) {
  const size_t first = token.find('.');
  const size_t second = first == std::string::npos ? first : token.find('.', first + 1);
  if (second == std::string::npos) return std::nullopt;
  std::string payload = token.substr(first + 1, second - first - 1);
  std::replace(payload.begin(), payload.end(), '-', '+');
  std::replace(payload.begin(), payload.end(), '_', '/');
  while (payload.size() % 4 != 0) payload.push_back('=');
  const std::optional<std::string> decoded = config::decodeBase64(payload);
  if (!decoded) return std::nullopt;
  const Json claims = Json::parse(*decoded, nullptr, false);
  if (!claims.is_object() || !claims.contains("exp") || !claims["exp"].is_number()) {
    return std::nullopt;
  }
  return claims["exp"].get<int64_t>();
}

cds::Decision CdsAuthorizer::operator()(const std::string& token,
                                        const cds::AccessRequest& request) const {
  cds::Decision decision;
  // 1. Who is it?
  auto review = client_.create(
      k8s::resources::tokenReview(),
      {{"apiVersion", "authentication.k8s.io/v1"},
       {"kind", "TokenReview"},
       {"spec", {{"token", token}, {"audiences", Json::array({options_.audience})}}}});
  if (!review || !review->ok()) {
    decision.reason =
        "TokenReview failed: " + (review ? review->describe() : review.error().message);
    decision.transient = true;
    return decision;
  }
  const Json& status = review->body.value("status", Json::object());
  if (!status.value("authenticated", false)) {
    const std::string error = status.value("error", "");
    decision.reason = "token not valid" + (error.empty() ? "" : ": " + error);
    return decision;
  }
  const Json audiences = status.value("audiences", Json::array());
  if (std::find(audiences.begin(), audiences.end(), Json(options_.audience)) == audiences.end()) {
    decision.reason = "token not valid for audience " + options_.audience;
    return decision;
  }
  Identity id;
  const Json& user = status.value("user", Json::object());
  id.username = user.value("username", "");
  id.uid = user.value("uid", "");
  id.groups = user.value("groups", Json::array());
  id.extra = user.value("extra", Json::object());
  id.podName = firstExtra(id.extra, kPodNameExtra);
  id.podUid = firstExtra(id.extra, kPodUidExtra);
  if (!id.podName.empty() && id.username.starts_with(kServiceAccountPrefix)) {
    const std::string rest = id.username.substr(kServiceAccountPrefix.size());
    id.podNamespace = rest.substr(0, rest.find(':'));
  }
  decision.authenticated = true;
  decision.who = who(id);
  // An exp past 2100 is taken as none (and the server's max_watch_age applies): no overflow.
  constexpr int64_t kLatestExpiry = 4'102'444'800;
  if (const std::optional<int64_t> exp = jwtExpiry(token); exp && *exp < kLatestExpiry) {
    decision.expires = std::chrono::system_clock::time_point(std::chrono::seconds(*exp));
  }

  // 2. A dataplane pod asking for its own Gateway's config.
  std::string ownGateway;
  if (!id.podName.empty() && !id.podNamespace.empty()) {
    ownGateway = gatewayOfPod(id.podNamespace, id.podName, id.podUid);
    const bool oneConfig = request.verb != cds::AccessRequest::Verb::kList &&
                           !request.name.empty() && request.namespace_ == id.podNamespace;
    if (!ownGateway.empty() && oneConfig && request.name == ownGateway) {
      decision.allowed = true;
      return decision;
    }
  }

  // 3. What RBAC grants.
  Json attributes = {{"group", kCdsRbacGroup},
                     {"resource", kCdsRbacResource},
                     {"verb", cds::verbName(request.verb)}};
  if (!request.namespace_.empty()) attributes["namespace"] = request.namespace_;
  if (!request.name.empty()) attributes["name"] = request.name;
  Json spec = {{"user", id.username}, {"groups", id.groups}, {"resourceAttributes", attributes}};
  if (!id.uid.empty()) spec["uid"] = id.uid;
  if (!id.extra.empty()) spec["extra"] = id.extra;
  auto access = client_.create(
      k8s::resources::subjectAccessReview(),
      {{"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SubjectAccessReview"}, {"spec", spec}});
  if (!access || !access->ok()) {
    decision.reason =
        "SubjectAccessReview failed: " + (access ? access->describe() : access.error().message);
    decision.transient = true;
    return decision;
  }
  if (access->body.value("status", Json::object()).value("allowed", false)) {
    decision.allowed = true;
    return decision;
  }
  if (!ownGateway.empty()) {
    decision.reason = "a pod of Gateway " + id.podNamespace + "/" + ownGateway +
                      " may read only that Gateway's config";
  } else if (!id.podName.empty()) {
    decision.reason = "the pod is not a dataplane pod of Gateway " + request.namespace_ + "/" +
                      request.name + ", and RBAC grants no " + cds::verbName(request.verb) +
                      " on configs." + std::string(kCdsRbacGroup);
  } else {
    decision.reason = "RBAC grants no " + std::string(cds::verbName(request.verb)) +
                      " on configs." + std::string(kCdsRbacGroup) + " for this request";
  }
  return decision;
}

std::string CdsAuthorizer::gatewayOfPod(const std::string& ns, const std::string& name,
                                        const std::string& uid) const {
  if (uid.empty()) return "";  // a bound token names its pod's UID; without it, no pod path
  auto pod = client_.get(k8s::resources::pod(), ns, name);
  if (!pod || !pod->ok() || uidOf(pod->body) != uid) return "";  // gone, or another pod
  // Each hop: the controller's reference names the object fetched, UID and all. (Each call
  // names its resource type: tests/deploy/chart_test.py derives the operator's RBAC from them.)
  auto controllerRef = [](const Json& child, const char* kind) -> const Json* {
    const Json* ref = controllerOf(child);
    if (ref == nullptr || ref->value("kind", "") != kind ||
        ref->value("apiVersion", "") != "apps/v1") {
      return nullptr;
    }
    return ref;
  };
  auto fetched = [](Result<k8s::ApiResponse> got, const Json& ref) -> std::optional<Json> {
    if (!got || !got->ok() || uidOf(got->body) != ref.value("uid", "")) return std::nullopt;
    return std::move(got->body);
  };
  std::optional<Json> workload;
  if (const Json* ds = controllerRef(pod->body, "DaemonSet")) {
    workload = fetched(client_.get(k8s::resources::daemonSet(), ns, ds->value("name", "")), *ds);
  } else if (const Json* rsRef = controllerRef(pod->body, "ReplicaSet")) {
    auto rs =
        fetched(client_.get(k8s::resources::replicaSet(), ns, rsRef->value("name", "")), *rsRef);
    if (const Json* deploymentRef = rs ? controllerRef(*rs, "Deployment") : nullptr) {
      workload =
          fetched(client_.get(k8s::resources::deployment(), ns, deploymentRef->value("name", "")),
                  *deploymentRef);
    }
  }
  if (!workload) return "";
  // What the operator renders: named after the Gateway, labelled as its own, owned by it.
  const Json& meta = (*workload)["metadata"];
  const Json labels = meta.value("labels", Json::object());
  if (labels.value(std::string(kOwnedByLabel), "") != kOwnedByValue) return "";
  const std::string workloadName = meta.value("name", "");
  for (const Json& ref : meta.value("ownerReferences", Json::array())) {
    if (ref.value("kind", "") == "Gateway" &&
        ref.value("apiVersion", "").starts_with("gateway.networking.k8s.io/") &&
        ref.value("name", "") == workloadName) {
      return workloadName;
    }
  }
  return "";
}

}  // namespace kturn::op
