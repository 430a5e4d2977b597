// A fake turn::RelayAllocator for the sans-I/O TURN core's unit tests and micro benchmarks: it
// hands out relayed addresses, fails where a test asks it to, and remembers what the core asked
// of it. Free of gtest, so the benchmarks include it too.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "kturn/result.h"
#include "kturn/transport_address.h"
#include "turn/relay_allocator.h"

namespace kturn::testing {

// Hands out 10.1.0.1:<49152+n> (IPv4 only, like a listener without IPv6; with `ipv6`, also
// fd00::1:<49152+n>); past port 65535 the next address's ports. Remembers what it was asked and
// what was closed, unless `record` is off.
class FakeRelays : public turn::RelayAllocator {
 public:
  Result<turn::RelayGrant> open(const turn::RelayRequest& request) override {
    if (record) requests.push_back(request);
    if (exhausted) return makeError(Error::Code::kExhausted, "no ports");
    if (request.family != AddressFamily::kIPv4 && !ipv6) {
      return makeError(Error::Code::kUnsupported, "IPv4 only");
    }
    if (request.reservation_token && *request.reservation_token != kToken) {
      return makeError(Error::Code::kNotFound, "unknown token");
    }
    turn::RelayGrant grant;
    grant.relayed = next(request.family);
    if (request.reserve_next) grant.reservation_token = kToken;
    if (request.additional_ipv6) {
      if (!ipv6) {
        grant.additional_error = Error::Code::kUnsupported;
      } else if (ipv6_exhausted) {
        grant.additional_error = Error::Code::kExhausted;
      } else {
        grant.additional = next(AddressFamily::kIPv6);
      }
    }
    if (record) open_relays[request.allocation.index] = grant.relayed;
    return grant;
  }
  void close(turn::AllocationId id) override {
    if (!record) return;
    closed.push_back(id);
    open_relays.erase(id.index);
  }
  void closeFamily(turn::AllocationId id, AddressFamily family) override {
    if (record) closed_families.push_back({id, family});
  }

  // RFC 8016: the relay travels with its address; `moves` records (from, to).
  struct Handle : turn::RelayHandle {
    turn::AllocationId from;
    TransportAddress relayed;
  };
  std::unique_ptr<turn::RelayHandle> detach(turn::AllocationId id) override {
    const auto it = open_relays.find(id.index);
    if (it == open_relays.end()) return nullptr;
    auto handle = std::make_unique<Handle>();
    handle->from = id;
    handle->relayed = it->second;
    open_relays.erase(it);
    return handle;
  }
  void attach(turn::AllocationId id, std::unique_ptr<turn::RelayHandle> relay) override {
    auto* handle = dynamic_cast<Handle*>(relay.get());
    if (handle == nullptr) return;
    open_relays[id.index] = handle->relayed;
    moves.push_back({handle->from, id});
  }

  // RFC 6062.
  struct Connecting {
    turn::AllocationId allocation;
    turn::ConnectionId id;
    TransportAddress peer;
  };
  bool connectPeer(turn::AllocationId allocation, turn::ConnectionId id,
                   const TransportAddress& peer) override {
    if (refuse_connect) return false;
    if (record) connecting.push_back({allocation, id, peer});
    return true;
  }
  void bindConnection(turn::ConnectionId id, const FiveTuple& data) override {
    if (record) bound.push_back({id, data});
  }
  void closeConnection(turn::ConnectionId id) override {
    if (record) closed_connections.push_back(id);
  }
  turn::ConnectionTraffic takeConnectionTraffic(turn::ConnectionId id) override {
    if (!record) return {};
    return std::exchange(traffic[id], {});
  }

  // Knobs.
  // Off: keeps nothing per call (no relay is then found to detach), for benchmarks that open
  // and close millions of relays.
  bool record = true;
  bool exhausted = false;       // open() fails: no ports
  bool ipv6 = false;            // IPv6 relays (and the IPv6 half of a dual allocation) open
  bool ipv6_exhausted = false;  // a dual allocation's IPv6 half finds no port
  bool refuse_connect = false;  // connectPeer() fails at once

  // What the core asked.
  std::vector<turn::RelayRequest> requests;
  std::vector<turn::AllocationId> closed;
  std::vector<std::pair<turn::AllocationId, AddressFamily>> closed_families;
  std::map<uint32_t, TransportAddress> open_relays;  // by AllocationId::index
  std::vector<std::pair<turn::AllocationId, turn::AllocationId>> moves;
  std::vector<Connecting> connecting;
  std::vector<std::pair<turn::ConnectionId, FiveTuple>> bound;
  std::vector<turn::ConnectionId> closed_connections;
  std::map<turn::ConnectionId, turn::ConnectionTraffic> traffic;  // relayed, not yet taken

 private:
  static constexpr uint64_t kToken = 0xABCD;  // the one RESERVATION-TOKEN it hands out
  static constexpr uint32_t kPorts = 65536 - 49152;

  TransportAddress next(AddressFamily family) {
    const uint32_t n = opened_++;
    const auto port = static_cast<uint16_t>(49152 + n % kPorts);
    const uint32_t host = 1 + n / kPorts;  // 10.1.0.1 or fd00::1, then the next address
    if (family == AddressFamily::kIPv4) return {IpAddress::v4(0x0A010000 + host), port};
    std::array<uint8_t, 16> ip{0xfd};
    for (size_t i = 0; i < 4; ++i) ip[15 - i] = static_cast<uint8_t>(host >> (8 * i));
    return {IpAddress::v6(ip), port};
  }

  uint32_t opened_ = 0;
};

}  // namespace kturn::testing
