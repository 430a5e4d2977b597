#include "operator/owned_object_applier.h"

#include <set>

#include "common/log.h"
#include "k8s/resource_type.h"

namespace kturn::op {

namespace {

std::shared_ptr<spdlog::logger> logger() { return log::scope("operator"); }

}  // namespace

bool OwnedObjectApplier::applyOne(const k8s::Object& object) {
  const k8s::ResourceType* type =
      k8s::findResourceType(std::string(object.apiVersion()), std::string(object.kind()));
  if (type == nullptr) {
    logger()->error("cannot apply {} {}: unknown kind", object.kind(), object.key().str());
    return false;
  }
  auto response =
      client_.apply(*type, object.body(), {.fieldManager = fieldManager_, .force = true});
  if (!response || !response->ok()) {
    logger()->warn("apply {} {}: {}", object.kind(), object.key().str(),
                   response ? response->describe() : response.error().message);
    return false;
  }
  logger()->info("applied {} {}", object.kind(), object.key().str());
  return true;
}

bool OwnedObjectApplier::removeOne(const Key& key) {
  const auto& [apiVersion, kind, ns, name] = key;
  const k8s::ResourceType* type = k8s::findResourceType(apiVersion, kind);
  if (type == nullptr) return true;
  auto response = client_.remove(*type, ns, name);
  if (!response || (!response->ok() && response->status != 404)) {
    logger()->warn("delete {} {}/{}: {}", kind, ns, name,
                   response ? response->describe() : response.error().message);
    return false;
  }
  logger()->info("deleted {} {}/{}", kind, ns, name);
  return true;
}

std::set<OwnedObjectApplier::Key> OwnedObjectApplier::applyGateway(const GatewayOutput& gw,
                                                                   Outcome& outcome) {
  std::set<Key> wanted;
  for (const std::optional<k8s::Object>* o : {&gw.deployment, &gw.service, &gw.networkPolicy}) {
    if (!o->has_value()) continue;
    const k8s::Object& object = **o;
    const Key key{std::string(object.apiVersion()), std::string(object.kind()),
                  object.namespaceName(), object.name()};
    wanted.insert(key);
    const auto it = applied_.find(key);
    if (it != applied_.end() && it->second == object.body()) {
      ++outcome.unchanged;
      continue;
    }
    if (applyOne(object)) {
      applied_[key] = object.body();
      ++outcome.applied;
    } else {
      ++outcome.failed;
    }
  }
  return wanted;
}

void OwnedObjectApplier::removeApplied(const Key& key, Outcome& outcome) {
  auto it = applied_.find(key);
  if (it == applied_.end()) return;
  if (removeOne(key)) {
    ++outcome.deleted;
    applied_.erase(it);
  } else {
    ++outcome.failed;
  }
}

OwnedObjectApplier::Outcome OwnedObjectApplier::apply(const std::vector<GatewayOutput>& gateways) {
  Outcome outcome;
  std::set<Key> wanted;
  byGateway_.clear();
  for (const GatewayOutput& gw : gateways) {
    std::set<Key> keys = applyGateway(gw, outcome);
    wanted.insert(keys.begin(), keys.end());
    byGateway_[gw.gateway] = std::move(keys);
  }
  std::vector<Key> unwanted;
  for (const auto& [key, body] : applied_) {
    if (!wanted.contains(key)) unwanted.push_back(key);
  }
  for (const Key& key : unwanted) removeApplied(key, outcome);
  return outcome;
}

OwnedObjectApplier::Outcome OwnedObjectApplier::applyChanges(
    const std::vector<GatewayOutput>& changed, const std::vector<k8s::ObjectKey>& removed) {
  Outcome outcome;
  for (const GatewayOutput& gw : changed) {
    std::set<Key> wanted = applyGateway(gw, outcome);
    for (const Key& key : byGateway_[gw.gateway]) {
      if (!wanted.contains(key)) removeApplied(key, outcome);
    }
    byGateway_[gw.gateway] = std::move(wanted);
  }
  for (const k8s::ObjectKey& gateway : removed) {
    auto it = byGateway_.find(gateway);
    if (it == byGateway_.end()) continue;
    for (const Key& key : it->second) removeApplied(key, outcome);
    byGateway_.erase(it);
  }
  return outcome;
}

}  // namespace kturn::op
