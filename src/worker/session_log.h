// One structured log record per allocation end (docs/security.md, anonymous relaying): session id,
// listener, client (optionally anonymized), user (optionally hashed), relayed address, peers,
// packets and bytes each way, duration, end reason. One line per allocation, never per packet.
#pragma once

#include <spdlog/logger.h>

#include <array>
#include <memory>
#include <string>

#include "turn/session_observer.h"
#include "worker/config_snapshot.h"

namespace kturn::worker {

struct SessionLogOptions {
  bool enabled = true;
  bool anonymize_client = false;  // IPv4 /24, IPv6 /48
  bool hash_user = false;         // keyed hash of the username instead of the name
  // The hash key: one per process (every worker hashes a user alike), random unless given, so
  // that records of one run can be correlated but names cannot be looked up by hashing guesses.
  std::array<uint8_t, 32> user_key{};
};

class SessionLog : public turn::SessionObserver {
 public:
  SessionLog(const SessionLogOptions& options, size_t worker_index);

  void setDataplane(ConfigSnapshotPtr dataplane) { dataplane_ = std::move(dataplane); }
  void onAllocationEnd(const turn::Allocation& allocation, turn::SessionEnd reason,
                       const turn::Now& now) override;

  // The JSON record, for tests.
  std::string record(const turn::Allocation& allocation, turn::SessionEnd reason,
                     const turn::Now& now) const;

 private:
  SessionLogOptions options_;
  size_t worker_;
  ConfigSnapshotPtr dataplane_;
  std::shared_ptr<spdlog::logger> logger_;
};

// 192.0.2.77 → 192.0.2.0; 2001:db8:1:2::5 → 2001:db8:1::.
IpAddress anonymize(const IpAddress& ip);

}  // namespace kturn::worker
