// Status conditions (metav1.Condition) as the Gateway API uses them: one per type, in the order
// they were first set, like apimachinery's meta.SetStatusCondition.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/object.h"

namespace kturn::op {

enum class ConditionStatus { kTrue, kFalse, kUnknown };

struct Condition {
  std::string type{};
  ConditionStatus status = ConditionStatus::kUnknown;
  std::string reason{};
  std::string message{};
  int64_t observedGeneration = 0;

  friend bool operator==(const Condition&, const Condition&) = default;
};

class Conditions {
 public:
  // Replaces the condition of the same type in place, or appends.
  void set(Condition condition);
  const Condition* find(std::string_view type) const;
  const std::vector<Condition>& all() const { return items_; }
  bool empty() const { return items_.empty(); }
  // The metav1.Condition list; every entry gets `transitionTime` as lastTransitionTime.
  k8s::Json toJson(const std::string& transitionTime) const;

 private:
  std::vector<Condition> items_{};
};

std::string_view toString(ConditionStatus status);

// Condition types and reasons of the Gateway API (sigs.k8s.io/gateway-api apis/v1), by name.
namespace cond {
inline constexpr std::string_view kAccepted = "Accepted";
inline constexpr std::string_view kProgrammed = "Programmed";
inline constexpr std::string_view kResolvedRefs = "ResolvedRefs";
inline constexpr std::string_view kConflicted = "Conflicted";
}  // namespace cond

namespace reason {
inline constexpr std::string_view kAccepted = "Accepted";
inline constexpr std::string_view kProgrammed = "Programmed";
inline constexpr std::string_view kResolvedRefs = "ResolvedRefs";
inline constexpr std::string_view kInvalidParameters = "InvalidParameters";
inline constexpr std::string_view kInvalid = "Invalid";
inline constexpr std::string_view kPending = "Pending";
inline constexpr std::string_view kAddressNotAssigned = "AddressNotAssigned";
inline constexpr std::string_view kNoResources = "NoResources";
inline constexpr std::string_view kPortUnavailable = "PortUnavailable";
inline constexpr std::string_view kUnsupportedProtocol = "UnsupportedProtocol";
inline constexpr std::string_view kUnsupportedValue = "UnsupportedValue";
inline constexpr std::string_view kNoConflicts = "NoConflicts";
inline constexpr std::string_view kProtocolConflict = "ProtocolConflict";
inline constexpr std::string_view kInvalidCertificateRef = "InvalidCertificateRef";
inline constexpr std::string_view kRefNotPermitted = "RefNotPermitted";
inline constexpr std::string_view kNotAllowedByListeners = "NotAllowedByListeners";
inline constexpr std::string_view kNoMatchingParent = "NoMatchingParent";
inline constexpr std::string_view kBackendNotFound = "BackendNotFound";
inline constexpr std::string_view kInvalidKind = "InvalidKind";
inline constexpr std::string_view kListenersNotValid = "ListenersNotValid";
}  // namespace reason

// kturn's own listener condition (Gateway API allows domain-prefixed types): the dates of the
// certificate a TLS or DTLS listener serves. An expired or not yet valid certificate still loads,
// so the listener keeps serving with it (its connections stay; clients that verify refuse it);
// this is where that shows, with the dates.
namespace cond {
inline constexpr std::string_view kCertificateValid = "kturn.io/CertificateValid";
}
namespace reason {
inline constexpr std::string_view kValid = "Valid";
inline constexpr std::string_view kExpired = "Expired";
inline constexpr std::string_view kNotYetValid = "NotYetValid";
}  // namespace reason

}  // namespace kturn::op
