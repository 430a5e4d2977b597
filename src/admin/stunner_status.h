// The shape of stunnerd's GET /status document (pkg/apis/v1/stunner.go StunnerStatus, v1.2.1),
// so the daemon fills fields rather than spelling JSON keys:
//
//   {"version":"v1",
//    "admin":{"name":..,"loglevel":..,"metrics_endpoint":..,"healthcheck_endpoint":..,
//             "quota":"0","offload":"None[all]","licensing_info":..},   (empty strings omitted)
//    "auth":{...AuthStatus...},
//    "listeners":[{...ListenerConfig fields..., "stats":{"rx":{"pkts","bytes","timestamp"},
//                                                         "tx":{...}}}],
//    "clusters":[{...ClusterConfig fields..., "stats":{...}}],
//    "allocationCount":3,
//    "status":"READY"}
//
// In stunnerd "stats" holds eBPF offload counters only (zero without offload); kturn puts the
// listener's or cluster's total relayed traffic there, which is what a reader of /status wants.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "admin/health_state.h"

namespace kturn::admin {

struct DirectionStats {
  uint64_t packets = 0;
  uint64_t bytes = 0;
  uint64_t last_unix_seconds = 0;  // "timestamp" in stunnerd: time of the last packet, 0 if none
};

struct TrafficStats {
  DirectionStats rx;  // received by kturn (from clients at a listener, from peers at a cluster)
  DirectionStats tx;  // sent by kturn
};

// {"rx":{"pkts":..,"bytes":..,"timestamp":..},"tx":{...}}: stunnerd's OffloadDirStat.
nlohmann::json toJson(const TrafficStats& stats);

struct StatusDocument {
  std::string version = "v1";
  nlohmann::json admin = nlohmann::json::object();
  nlohmann::json auth = nlohmann::json::object();
  // Each element: the object's config JSON (as config::serializer writes it) plus "stats".
  nlohmann::json listeners = nlohmann::json::array();
  nlohmann::json clusters = nlohmann::json::array();
  int64_t allocation_count = 0;
  HealthStatus status = HealthStatus::kNotReady;
};

nlohmann::json toJson(const StatusDocument& document);

// `config_json` with "stats" added: one element of "listeners" or "clusters".
nlohmann::json withStats(nlohmann::json config_json, const TrafficStats& stats);

}  // namespace kturn::admin
