// The periodic sweep of the TURN-TCP/TLS and TURN-DTLS listeners: each connection (or DTLS
// session) whose handshake ran out of time, or that has been idle too long without an allocation,
// is closed and counted by reason. The verdicts are collected first and acted on after, because
// closing erases from the map being swept.
#pragma once

#include <cstdint>
#include <vector>

#include "kturn/transport_address.h"

namespace kturn::worker {

enum class SweepVerdict : uint8_t { kKeep, kHandshakeTimedOut, kIdle };

// `connections`: client address -> connection; verdict(connection) decides, close(address) closes.
// `stats` counts closed_handshake and closed_idle.
template <class Map, class Stats, class Verdict, class Close>
void sweepConnections(const Map& connections, Stats& stats, Verdict&& verdict, Close&& close) {
  std::vector<TransportAddress> handshaking;
  std::vector<TransportAddress> idle;
  for (const auto& [client, connection] : connections) {
    switch (verdict(*connection)) {
      case SweepVerdict::kKeep:
        break;
      case SweepVerdict::kHandshakeTimedOut:
        handshaking.push_back(client);
        break;
      case SweepVerdict::kIdle:
        idle.push_back(client);
        break;
    }
  }
  for (const TransportAddress& client : handshaking) {
    ++stats.closed_handshake;
    close(client);
  }
  for (const TransportAddress& client : idle) {
    ++stats.closed_idle;
    close(client);
  }
}

}  // namespace kturn::worker
