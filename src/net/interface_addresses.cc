#include "net/interface_addresses.h"

#include <ifaddrs.h>
#include <netinet/in.h>

#include "net/sockaddr.h"

namespace kturn::net {
namespace {

bool linkLocal(const IpAddress& ip) {
  const auto b = ip.bytes();
  return !ip.isV4() && b[0] == 0xfe && (b[1] & 0xc0) == 0x80;  // fe80::/10
}

}  // namespace

InterfaceAddresses InterfaceAddresses::current() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return {};
  std::vector<Entry> entries;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    entries.push_back(Entry{i->ifa_name, fromSockaddr(i->ifa_addr).ip});
  }
  ::freeifaddrs(list);
  return InterfaceAddresses(std::move(entries));
}

std::optional<IpAddress> InterfaceAddresses::sibling(const IpAddress& ip,
                                                     AddressFamily family) const {
  for (const Entry& holder : entries_) {
    if (holder.ip != ip) continue;
    for (const Entry& e : entries_) {
      if (e.interface == holder.interface && e.ip.family() == family && !linkLocal(e.ip)) {
        return e.ip;
      }
    }
  }
  return std::nullopt;
}

}  // namespace kturn::net
