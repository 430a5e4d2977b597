#include "admin/stunner_status.h"

namespace kturn::admin {
namespace {

nlohmann::json toJson(const DirectionStats& stats) {
  return {{"pkts", stats.packets}, {"bytes", stats.bytes}, {"timestamp", stats.last_unix_seconds}};
}

}  // namespace

nlohmann::json toJson(const TrafficStats& stats) {
  return {{"rx", toJson(stats.rx)}, {"tx", toJson(stats.tx)}};
}

nlohmann::json toJson(const StatusDocument& document) {
  return {
      {"version", document.version},
      {"admin", document.admin},
      {"auth", document.auth},
      {"listeners", document.listeners},
      {"clusters", document.clusters},
      {"allocationCount", document.allocation_count},
      {"status", std::string(toString(document.status))},
  };
}

nlohmann::json withStats(nlohmann::json config_json, const TrafficStats& stats) {
  config_json["stats"] = toJson(stats);
  return config_json;
}

}  // namespace kturn::admin
