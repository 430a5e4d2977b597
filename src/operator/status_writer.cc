#include "operator/status_writer.h"

#include "common/log.h"
#include "k8s/gateway_api.h"
#include "k8s/resource_type.h"

namespace kturn::op {

namespace {

using k8s::Json;

const Json* findCondition(const Json& conditions, const Json& type) {
  if (!conditions.is_array()) return nullptr;
  for (const Json& c : conditions) {
    if (c.is_object() && c.contains("type") && c["type"] == type) return &c;
  }
  return nullptr;
}

// The element of `old` that `item` continues: same name (listeners), same parentRef (route
// parents), else none.
const Json* matchItem(const Json& item, const Json& old) {
  if (!old.is_array() || !item.is_object()) return nullptr;
  for (const char* key : {"name", "parentRef"}) {
    if (!item.contains(key)) continue;
    for (const Json& o : old) {
      if (o.is_object() && o.contains(key) && k8s::sameContent(o[key], item[key])) return &o;
    }
    return nullptr;
  }
  return nullptr;
}

// A route status as the API server stores it: the route CRDs default a parentRef's group and kind
// to the Gateway's (the Gateway API schema's defaults), so a parentRef rendered without them, as
// STUNner renders it, reads back with them; compared as rendered it would never match, and every
// render would write the status again.
Json withParentRefDefaults(Json status) {
  if (!status.is_object() || !status.contains("parents") || !status["parents"].is_array()) {
    return status;
  }
  for (Json& parent : status["parents"]) {
    if (!parent.is_object() || !parent.contains("parentRef")) continue;
    Json& ref = parent["parentRef"];
    if (!ref.is_object()) continue;
    if (!ref.contains("group")) ref["group"] = std::string(k8s::kGatewayGroup);
    if (!ref.contains("kind")) ref["kind"] = "Gateway";
  }
  return status;
}

}  // namespace

Json keepTransitionTimes(const Json& status, const Json& current) {
  if (!status.is_object() || !current.is_object()) return status;
  Json out = status;
  for (auto it = out.begin(); it != out.end(); ++it) {
    if (!current.contains(it.key())) continue;
    const Json& old = current[it.key()];
    Json& value = it.value();
    if (it.key() == "conditions" && value.is_array()) {
      for (Json& c : value) {
        if (!c.is_object() || !c.contains("type")) continue;
        const Json* was = findCondition(old, c["type"]);
        if (was != nullptr && was->contains("status") &&
            (*was)["status"] == c.value("status", Json()) && was->contains("lastTransitionTime")) {
          c["lastTransitionTime"] = (*was)["lastTransitionTime"];
        }
      }
    } else if (value.is_array()) {
      for (Json& item : value) {
        if (const Json* was = matchItem(item, old)) item = keepTransitionTimes(item, *was);
      }
    } else if (value.is_object()) {
      value = keepTransitionTimes(value, old);
    }
  }
  return out;
}

StatusWriter::Outcome StatusWriter::write(const std::vector<StatusUpdate>& statuses) {
  Outcome outcome;
  for (const StatusUpdate& update : statuses) {
    const std::optional<k8s::Object> object = current_(update);
    if (!object) {  // deleted meanwhile: nothing to write to
      ++outcome.unchanged;
      continue;
    }
    const Json& currentStatus =
        object->body().contains("status") ? object->body()["status"] : Json::object();
    const Json status = keepTransitionTimes(withParentRefDefaults(update.status), currentStatus);
    if (k8s::sameContent(status, currentStatus)) {
      ++outcome.unchanged;
      continue;
    }
    const k8s::ResourceType* known = k8s::findResourceType(update.apiVersion, update.kind);
    if (known == nullptr) {
      ++outcome.failed;
      continue;
    }
    k8s::ResourceType type = *known;
    // The version the object was read in: the API serves the group's versions alike.
    if (const size_t slash = update.apiVersion.find('/'); slash != std::string::npos) {
      type.version = update.apiVersion.substr(slash + 1);
    }
    Json body = {{"apiVersion", update.apiVersion},
                 {"kind", update.kind},
                 {"metadata", {{"name", update.key.name}}},
                 {"status", status}};
    if (!update.key.ns.empty()) body["metadata"]["namespace"] = update.key.ns;
    auto response = client_.applyStatus(type, body, {.fieldManager = fieldManager_, .force = true});
    if (!response || !response->ok()) {
      log::scope("operator")
          ->warn("status of {} {}: {}", update.kind, update.key.str(),
                 response ? response->describe() : response.error().message);
      ++outcome.failed;
      continue;
    }
    ++outcome.written;
  }
  return outcome;
}

}  // namespace kturn::op
