// CapacityGate: capacity-aware readiness (admin.capacity, a kturn extension). The daemon feeds
// it a sample of its load once a second; the gate compares each measure with its mark and says
// whether the process is over capacity, with hysteresis: over as soon as any measure reaches its
// mark, back under only once every measure is below resume_percent of its mark. /ready answers
// 503 while over (HealthState::setOverCapacity), so that a load balancer's or a GeoDNS
// provider's health check sends new users elsewhere while the allocations held keep being
// served; /capacity reports the measures and the headroom.
//
// Pure logic: time and the counters come from the caller, so tests drive it without a clock.
// update() runs on the daemon's capacity thread, report() on the admin thread: one mutex, taken
// once a second and per request, never on the data path.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <nlohmann/json_fwd.hpp>

namespace kturn::admin {

struct CapacityMarks {
  uint64_t allocations = 0;      // 0: no mark
  uint64_t relay_kbps = 0;       // 0: no mark
  uint32_t cpu_percent = 0;      // 0: no mark
  uint32_t resume_percent = 90;  // 1-99

  friend bool operator==(const CapacityMarks&, const CapacityMarks&) = default;
};

// The process's load at one moment: counters since start, and the allocations held now.
struct CapacitySample {
  std::chrono::steady_clock::time_point at;
  uint64_t allocations = 0;
  uint64_t relayed_bytes = 0;  // payload relayed so far, both directions
  double cpu_seconds = 0;      // CPU time the process used so far
};

// One measure against its mark, as /capacity reports it.
struct CapacityMeasure {
  double value = 0;
  uint64_t mark = 0;    // 0: none
  double resume = 0;    // the value under which it no longer holds readiness back
  double headroom = 0;  // mark - value, at least 0 (0 without a mark)
  bool over = false;    // value >= mark (never without a mark)
};

struct CapacityReport {
  bool over_capacity = false;
  uint32_t resume_percent = 90;
  double cpus = 1;  // the CPUs the process may use, the base of cpu_percent
  CapacityMeasure allocations;
  CapacityMeasure relay_kbps;
  CapacityMeasure cpu_percent;
  uint64_t transitions = 0;  // how often over_capacity changed
  double seconds_in_state = 0;
};

// /capacity's body (docs/operations.md#capacity-aware-readiness has its fields).
nlohmann::json toJson(const CapacityReport& report);

class CapacityGate {
 public:
  // Rates are averaged over this much of the latest samples.
  static constexpr std::chrono::seconds kRateWindow{5};

  // `cpus`: the CPUs the process may use (cpu_percent is a share of them), at least 0.01.
  explicit CapacityGate(double cpus);
  CapacityGate(const CapacityGate&) = delete;
  CapacityGate& operator=(const CapacityGate&) = delete;

  // A new config's marks: the report shows them at once, judged against the latest measures.
  void setMarks(const CapacityMarks& marks);
  // Adds a sample (at a time after the previous one's) and returns whether the process is over
  // capacity now.
  bool update(const CapacitySample& sample);
  CapacityReport report() const;

 private:
  // The latest measures, before they meet the marks.
  struct Measures {
    double allocations = 0;
    double relay_kbps = 0;
    double cpu_percent = 0;
  };
  // Judges `measures` against marks_ at `at`, into report_; returns over_capacity. mutex_ held.
  bool judge(const Measures& measures, std::chrono::steady_clock::time_point at);
  CapacityMeasure measure(double value, uint64_t mark) const;
  bool anyOver(const CapacityReport& r) const;
  bool allUnderResume(const CapacityReport& r) const;

  const double cpus_;
  mutable std::mutex mutex_;
  CapacityMarks marks_;
  std::deque<CapacitySample> window_;  // oldest first, spanning at most kRateWindow
  Measures latest_;
  CapacityReport report_;
  std::chrono::steady_clock::time_point state_since_{};
};

// The CPUs this process may use: its cgroup v2 `cpu.max` quota over its period, at most the CPUs
// of its affinity mask; without a quota, those CPUs.
double availableCpus();
// User and system CPU time this process used so far, in seconds.
double processCpuSeconds();

}  // namespace kturn::admin
