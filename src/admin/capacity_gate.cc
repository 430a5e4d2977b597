#include "admin/capacity_gate.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace kturn::admin {

CapacityGate::CapacityGate(double cpus) : cpus_(std::max(cpus, 0.01)) { report_.cpus = cpus_; }

void CapacityGate::setMarks(const CapacityMarks& marks) {
  std::lock_guard lock(mutex_);
  marks_ = marks;
  judge(latest_, window_.empty() ? state_since_ : window_.back().at);
}

CapacityMeasure CapacityGate::measure(double value, uint64_t mark) const {
  CapacityMeasure m{.value = value, .mark = mark};
  if (mark == 0) return m;
  const double limit = static_cast<double>(mark);
  m.resume = limit * marks_.resume_percent / 100.0;
  m.headroom = std::max(0.0, limit - value);
  m.over = value >= limit;
  return m;
}

bool CapacityGate::anyOver(const CapacityReport& r) const {
  return r.allocations.over || r.relay_kbps.over || r.cpu_percent.over;
}

bool CapacityGate::allUnderResume(const CapacityReport& r) const {
  for (const CapacityMeasure* m : {&r.allocations, &r.relay_kbps, &r.cpu_percent}) {
    if (m->mark != 0 && m->value >= m->resume) return false;
  }
  return true;
}

bool CapacityGate::update(const CapacitySample& sample) {
  std::lock_guard lock(mutex_);
  if (window_.empty()) state_since_ = sample.at;
  window_.push_back(sample);
  // Keep the newest sample at least kRateWindow after the oldest one kept, no more.
  while (window_.size() > 2 && sample.at - window_[1].at >= kRateWindow) window_.pop_front();

  double relay_kbps = 0;
  double cpu_percent = 0;
  const CapacitySample& first = window_.front();
  const double seconds = std::chrono::duration<double>(sample.at - first.at).count();
  if (seconds > 0) {
    // Counters only grow; a smaller value (never expected) reads as no traffic.
    const uint64_t bytes = sample.relayed_bytes >= first.relayed_bytes
                               ? sample.relayed_bytes - first.relayed_bytes
                               : 0;
    relay_kbps = static_cast<double>(bytes) * 8 / 1000 / seconds;
    cpu_percent = std::max(0.0, sample.cpu_seconds - first.cpu_seconds) / seconds / cpus_ * 100;
  }

  latest_ = {.allocations = static_cast<double>(sample.allocations),
             .relay_kbps = relay_kbps,
             .cpu_percent = cpu_percent};
  return judge(latest_, sample.at);
}

bool CapacityGate::judge(const Measures& measures, std::chrono::steady_clock::time_point at) {
  CapacityReport next = report_;
  next.resume_percent = marks_.resume_percent;
  next.allocations = measure(measures.allocations, marks_.allocations);
  next.relay_kbps = measure(measures.relay_kbps, marks_.relay_kbps);
  next.cpu_percent = measure(measures.cpu_percent, marks_.cpu_percent);
  // Hysteresis: reaching any mark holds readiness back until every measure is under its resume
  // point, so that a server hovering near a mark does not flap in and out of the pool.
  const bool over = report_.over_capacity ? !allUnderResume(next) : anyOver(next);
  if (over != report_.over_capacity) {
    ++next.transitions;
    state_since_ = at;
  }
  next.over_capacity = over;
  next.seconds_in_state = std::chrono::duration<double>(at - state_since_).count();
  report_ = next;
  return over;
}

CapacityReport CapacityGate::report() const {
  std::lock_guard lock(mutex_);
  return report_;
}

namespace {

nlohmann::json measureJson(const CapacityMeasure& m) {
  nlohmann::json out = {{"value", m.value}};
  if (m.mark == 0) {
    out["mark"] = nullptr;
    return out;
  }
  out["mark"] = m.mark;
  out["resume"] = m.resume;
  out["headroom"] = m.headroom;
  out["over"] = m.over;
  return out;
}

// The quota over the period of a cgroup v2 cpu.max file ("200000 100000"), or 0 for "max" or an
// unreadable file.
double cgroupCpuQuota(const std::string& path) {
  std::ifstream in(path);
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return 0;
  try {
    return std::stod(quota) / period;
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

nlohmann::json toJson(const CapacityReport& r) {
  return {{"over_capacity", r.over_capacity},
          {"seconds_in_state", r.seconds_in_state},
          {"transitions", r.transitions},
          {"resume_percent", r.resume_percent},
          {"cpus", r.cpus},
          {"allocations", measureJson(r.allocations)},
          {"relay_kbps", measureJson(r.relay_kbps)},
          {"cpu_percent", measureJson(r.cpu_percent)}};
}

double availableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const double affinity =
      sched_getaffinity(0, sizeof(set), &set) == 0 ? std::max(1, CPU_COUNT(&set)) : 1;
  // The cgroup v2 path of this process ("0::/kubepods/.../cri-containerd-..."); in a container
  // with its own cgroup namespace it is "/", and the file at the mount's root is its own. A
  // quota above the CPUs the process may run on buys nothing: the smaller counts.
  std::ifstream cgroups("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroups, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    const std::string path = line.substr(3);
    const std::string base = "/sys/fs/cgroup";
    for (const std::string& file :
         {base + (path == "/" ? "" : path) + "/cpu.max", base + "/cpu.max"}) {
      if (const double quota = cgroupCpuQuota(file); quota > 0) return std::min(quota, affinity);
    }
  }
  return affinity;
}

double processCpuSeconds() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace kturn::admin
