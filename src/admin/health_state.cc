#include "admin/health_state.h"

namespace kturn::admin {

std::string_view toString(HealthStatus status) {
  switch (status) {
    case HealthStatus::kNotReady:
      return "NOT-READY";
    case HealthStatus::kReady:
      return "READY";
    case HealthStatus::kTerminating:
      return "TERMINATING";
  }
  return "NOT-READY";
}

void HealthState::setReady() { transition(HealthStatus::kReady); }
void HealthState::setNotReady() { transition(HealthStatus::kNotReady); }

void HealthState::setTerminating() {
  status_.store(HealthStatus::kTerminating, std::memory_order_release);
}

bool HealthState::ready() const {
  return force_ready_.load(std::memory_order_relaxed) ||
         (status() == HealthStatus::kReady && !overCapacity());
}

void HealthState::transition(HealthStatus to) {
  // A CAS loop rather than a store: a late setReady() racing with SIGTERM must not undo
  // TERMINATING.
  HealthStatus current = status_.load(std::memory_order_acquire);
  while (current != HealthStatus::kTerminating &&
         !status_.compare_exchange_weak(current, to, std::memory_order_acq_rel)) {
  }
}

}  // namespace kturn::admin
