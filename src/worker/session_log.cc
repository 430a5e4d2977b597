#include "worker/session_log.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "common/log.h"

namespace kturn::worker {

IpAddress anonymize(const IpAddress& ip) {
  std::array<uint8_t, 16> b{};
  const auto bytes = ip.bytes();
  std::copy(bytes.begin(), bytes.end(), b.begin());
  if (ip.isV4()) {
    b[3] = 0;
    return IpAddress::v4({b[0], b[1], b[2], b[3]});
  }
  std::fill(b.begin() + 6, b.end(), uint8_t{0});
  return IpAddress::v6(b);
}

SessionLog::SessionLog(const SessionLogOptions& options, size_t worker_index)
    : options_(options), worker_(worker_index), logger_(log::scope(log::kSessionScope)) {}

std::string SessionLog::record(const turn::Allocation& a, turn::SessionEnd reason,
                               const turn::Now& now) const {
  nlohmann::json j;
  j["event"] = "session-end";
  j["session"] = std::to_string(worker_) + "-" + std::to_string(a.id.index) + "-" +
                 std::to_string(a.id.generation);
  std::string listener = std::to_string(a.listener);
  if (dataplane_) {
    for (const ListenerSpec& l : dataplane_->listeners) {
      if (l.id == a.listener) listener = l.name;
    }
  }
  j["listener"] = listener;
  TransportAddress client = a.five_tuple.client;
  if (options_.anonymize_client) client = {anonymize(client.ip), 0};
  j["client"] = options_.anonymize_client ? client.ip.toString() : client.toString();
  if (options_.hash_user) {
    const auto mac = crypto::hmacSha256(options_.user_key, {crypto::asBytes(a.username)});
    static const char* kHex = "0123456789abcdef";
    std::string hex;
    for (size_t i = 0; i < 8; ++i) {
      hex += kHex[mac[i] >> 4];
      hex += kHex[mac[i] & 15];
    }
    j["user"] = hex;
  } else {
    j["user"] = a.username;
  }
  j["relay"] = a.relayed.toString();
  if (a.relayed_additional) j["relay_ipv6"] = a.relayed_additional->toString();
  nlohmann::json peers = nlohmann::json::array();
  for (const auto& p : a.permissions) peers.push_back(p.peer.toString());
  j["peers"] = peers;
  j["packets_to_peers"] = a.packets_to_peers;
  j["bytes_to_peers"] = a.bytes_to_peers;
  j["packets_to_client"] = a.packets_to_client;
  j["bytes_to_client"] = a.bytes_to_client;
  j["duration_s"] =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.mono - a.created).count() / 1000.0;
  j["start_unix"] = a.created_unix;
  j["reason"] = std::string(turn::toString(reason));
  return j.dump();
}

void SessionLog::onAllocationEnd(const turn::Allocation& a, turn::SessionEnd reason,
                                 const turn::Now& now) {
  // The record is built only for a logger that writes it: at `session:WARN` (or `all:WARN`)
  // an allocation's end costs nothing here.
  if (!options_.enabled || !logger_->should_log(spdlog::level::info)) return;
  logger_->info("{}", record(a, reason, now));
}

}  // namespace kturn::worker
