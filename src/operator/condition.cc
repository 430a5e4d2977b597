#include "operator/condition.h"

namespace kturn::op {

std::string_view toString(ConditionStatus status) {
  switch (status) {
    case ConditionStatus::kTrue:
      return "True";
    case ConditionStatus::kFalse:
      return "False";
    case ConditionStatus::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

void Conditions::set(Condition condition) {
  for (Condition& c : items_) {
    if (c.type == condition.type) {
      c = std::move(condition);
      return;
    }
  }
  items_.push_back(std::move(condition));
}

const Condition* Conditions::find(std::string_view type) const {
  for (const Condition& c : items_) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

k8s::Json Conditions::toJson(const std::string& transitionTime) const {
  k8s::Json out = k8s::Json::array();
  for (const Condition& c : items_) {
    out.push_back({{"type", c.type},
                   {"status", std::string(toString(c.status))},
                   {"observedGeneration", c.observedGeneration},
                   {"lastTransitionTime", transitionTime},
                   {"reason", c.reason},
                   {"message", c.message}});
  }
  return out;
}

}  // namespace kturn::op
