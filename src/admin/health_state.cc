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
  const HealthStatus was = status_.exchange(HealthStatus::kTerminating, std::memory_order_acq_rel);
  if (was != HealthStatus::kTerminating) {
    drained_from_ready_.store(was == HealthStatus::kReady, std::memory_order_release);
  }
}

bool HealthState::ready() const {
  if (force_ready_.load(std::memory_order_relaxed)) return true;
  const HealthStatus s = status();
  const bool serving =
      s == HealthStatus::kReady ||
      (s == HealthStatus::kTerminating && ready_while_draining_.load(std::memory_order_relaxed) &&
       drained_from_ready_.load(std::memory_order_acquire));
  return serving && !overCapacity();
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
