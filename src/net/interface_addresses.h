// The host's interface addresses, for relaying in the other address family (RFC 8656 §7.2
// REQUESTED-ADDRESS-FAMILY): a client that reached kturnd over IPv4 may ask for an IPv6 relay,
// which kturnd takes from the same interface as the address the client reached.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kturn/transport_address.h"

namespace kturn::net {

class InterfaceAddresses {
 public:
  struct Entry {
    std::string interface;
    IpAddress ip;
  };

  InterfaceAddresses() = default;
  explicit InterfaceAddresses(std::vector<Entry> entries) : entries_(std::move(entries)) {}
  // What getifaddrs(3) lists now; empty if it fails.
  static InterfaceAddresses current();

  // The first address of `family` on the interface that holds `ip`, skipping IPv6 link-local
  // addresses (they need a scope a relay address cannot carry); nullopt if there is none.
  std::optional<IpAddress> sibling(const IpAddress& ip, AddressFamily family) const;

  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

}  // namespace kturn::net
