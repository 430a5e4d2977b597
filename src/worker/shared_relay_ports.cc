#include "worker/shared_relay_ports.h"

#include <algorithm>

#include "xdp/relay_lookup.h"

namespace kturn::worker {

Result<std::unique_ptr<SharedRelayPorts>> SharedRelayPorts::open(uint32_t max_addresses) {
  auto lookup = xdp::RelayLookup::attach(max_addresses);
  if (!lookup) return lookup.error();
  return std::unique_ptr<SharedRelayPorts>(new SharedRelayPorts(std::move(*lookup)));
}

Result<void> SharedRelayPorts::setSockets(size_t worker, int fd4, int fd6) {
  if (fd4 >= 0) {
    if (auto r = lookup_->setSocket(socketIndex(worker, IpAddress::v4(0u)), fd4); !r) return r;
  }
  if (fd6 >= 0) {
    if (auto r = lookup_->setSocket(socketIndex(worker, IpAddress::v6({})), fd6); !r) return r;
  }
  return {};
}

Result<TransportAddress> SharedRelayPorts::take(const IpAddress& ip, uint16_t min_port,
                                                uint16_t max_port, bool even, uint32_t hint,
                                                size_t worker, std::span<const uint16_t> excluded,
                                                TransportAddress* next) {
  auto isExcluded = [&](uint32_t port) {
    return std::find(excluded.begin(), excluded.end(), port) != excluded.end();
  };
  if (min_port == 0 || min_port > max_port)
    return makeError(Error::Code::kInvalidArgument, "shared relay ports need a relay port range");
  const uint32_t span = uint32_t{max_port} - min_port + 1;
  std::lock_guard lock(mutex_);
  for (uint32_t i = 0; i < span; ++i) {
    const auto port = static_cast<uint16_t>(min_port + (hint + i) % span);
    if ((even || next != nullptr) && port % 2 != 0) continue;
    const TransportAddress address{ip, port};
    if (in_use_.contains(address) || isExcluded(port)) continue;
    if (next != nullptr) {
      if (port == max_port || in_use_.contains({ip, static_cast<uint16_t>(port + 1)}) ||
          isExcluded(port + 1u))
        continue;
    }
    if (!lookup_->add(address, socketIndex(worker, ip))) {
      return makeError(Error::Code::kExhausted, "the relay port lookup's map is full");
    }
    in_use_.insert(address);
    if (next != nullptr) {
      *next = {ip, static_cast<uint16_t>(port + 1)};
      in_use_.insert(*next);
    }
    return address;
  }
  return makeError(Error::Code::kExhausted,
                   next != nullptr ? "no free even/odd relay port pair" : "no free relay port");
}

bool SharedRelayPorts::deliverTo(const TransportAddress& address, size_t worker) {
  return lookup_->add(address, socketIndex(worker, address.ip));
}

void SharedRelayPorts::release(const TransportAddress& address) {
  lookup_->remove(address);
  std::lock_guard lock(mutex_);
  in_use_.erase(address);
}

size_t SharedRelayPorts::inUse() {
  std::lock_guard lock(mutex_);
  return in_use_.size();
}

}  // namespace kturn::worker
