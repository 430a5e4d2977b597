// Lease-based leader election (coordination.k8s.io/v1 Lease, as client-go's leaderelection with
// a LeaseLock): the holder renews spec.renewTime every retryPeriod; another candidate takes the
// lease over only after it has seen the same record unchanged for leaseDurationSeconds, timed by
// its own clock (never by comparing renewTime with its clock: clocks of nodes differ). Every
// write carries the resourceVersion it read, so two candidates racing for the lease cannot both
// win: the API server answers the second with 409 Conflict. A leader that fails to renew for
// renewDeadline steps down before the lease can expire for the others.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "k8s/api_client.h"

namespace kturn::k8s {

struct LeaderElectionOptions {
  std::string ns = "stunner-system";
  std::string name = "kturn-operator";
  std::string identity{};  // unique per replica: the pod name
  std::chrono::milliseconds leaseDuration{15000};
  std::chrono::milliseconds renewDeadline{10000};
  std::chrono::milliseconds retryPeriod{2000};
  // On stop, a leader empties holderIdentity so that a successor need not wait out the lease.
  bool releaseOnStop = true;
};

class LeaderElector {
 public:
  // `onChange(true)` when this replica starts leading, `onChange(false)` when it stops; called
  // on the elector's thread.
  LeaderElector(ApiClient& client, LeaderElectionOptions options,
                std::function<void(bool leading)> onChange);
  ~LeaderElector();  // stop()
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  void start();
  void stop();
  bool isLeader() const { return leading_; }

 private:
  void run();
  // One attempt: true if this replica holds the lease afterwards.
  bool tryAcquireOrRenew();
  void setLeading(bool leading);
  void release();
  Json leaseBody(const Json& previous, bool takeover) const;

  ApiClient& client_;
  const LeaderElectionOptions options_;
  const std::function<void(bool)> onChange_;
  std::atomic<bool> leading_{false};

  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;

  // The last record seen and when (our clock) it was first seen.
  std::string observedRecord_;
  std::chrono::steady_clock::time_point observedAt_{};
  std::chrono::steady_clock::time_point renewedAt_{};
};

// RFC 3339 with microseconds, UTC: the API's MicroTime ("2024-01-01T00:00:00.000000Z").
std::string microTimeNow();

}  // namespace kturn::k8s
