// HealthState: the readiness of the process, read by the /ready probe on the admin thread and
// written by the daemon's main thread. Lock-free: a probe must answer even if the daemon is stuck.
//
// States follow stunnerd (stunner.go Status(), handlers.go NewReadinessHandler()):
//   NOT-READY    at start, until the first config has been applied
//   READY        serving; /ready answers 200
//   TERMINATING  after SIGTERM: /ready answers 503 so Kubernetes takes the pod out of the
//                Service while existing allocations drain. Sticky: nothing leaves it.
// stunnerd's --force-ready-status keeps /ready at 200 whatever the state (a workaround for
// kube-proxy implementations that drop established UDP flows of unready pods); /status still
// reports the true state.
// kturn adds over-capacity (admin.capacity, capacity_gate.h): a READY process over its marks
// answers /ready with 503 too, without leaving READY; --force-ready-status overrides it as well.
// The same flag makes the TURN cores redirect new Allocates on listeners that have
// alternate_servers (300 Try Alternate), whatever /ready answers.
// kturn's --ready-while-draining keeps TERMINATING ready, and only that: NOT-READY and the
// capacity marks still answer 503. Where a node announces a route while it holds a ready pod
// (MetalLB's BGP mode with externalTrafficPolicy Local), the route, and with it the flows of
// the calls being drained, stays until the pod has exited.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace kturn::admin {

enum class HealthStatus : uint8_t { kNotReady, kReady, kTerminating };

// "NOT-READY", "READY", "TERMINATING": the strings stunnerd puts in /status.
std::string_view toString(HealthStatus status);

class HealthState {
 public:
  HealthState() = default;
  HealthState(const HealthState&) = delete;
  HealthState& operator=(const HealthState&) = delete;

  // NOT-READY → READY. Ignored once TERMINATING.
  void setReady();
  // READY → NOT-READY (say, the config source lost its last valid config). Ignored once
  // TERMINATING.
  void setNotReady();
  // Any state → TERMINATING, for good.
  void setTerminating();
  void setForceReady(bool force) { force_ready_.store(force, std::memory_order_relaxed); }
  void setReadyWhileDraining(bool on) {
    ready_while_draining_.store(on, std::memory_order_relaxed);
  }
  // Set and cleared by the daemon's capacity thread (CapacityGate).
  void setOverCapacity(bool over) { over_capacity_.store(over, std::memory_order_relaxed); }
  bool overCapacity() const { return over_capacity_.load(std::memory_order_relaxed); }
  // The flag itself, for the workers' TURN cores (turn::Server::Options::over_capacity): over
  // the marks they redirect new Allocates to a listener's alternate servers. Read only;
  // --force-ready-status does not clear it.
  const std::atomic<bool>& overCapacityFlag() const { return over_capacity_; }

  HealthStatus status() const { return status_.load(std::memory_order_acquire); }
  // What /ready answers: READY (or TERMINATING, when ready while draining) and not over
  // capacity, or anything when forced.
  bool ready() const;

 private:
  // Moves to `to` unless the state is TERMINATING.
  void transition(HealthStatus to);

  std::atomic<HealthStatus> status_{HealthStatus::kNotReady};
  std::atomic<bool> force_ready_{false};
  std::atomic<bool> ready_while_draining_{false};
  std::atomic<bool> drained_from_ready_{false};  // TERMINATING was entered from READY
  std::atomic<bool> over_capacity_{false};
};

}  // namespace kturn::admin
