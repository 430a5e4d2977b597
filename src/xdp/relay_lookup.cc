#include "xdp/relay_lookup.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "kturn_relay_lookup.skel.h"
#include "xdp/mapped_address.h"

namespace kturn::xdp {
namespace {

Error lookupError(std::string_view what, int err) {
  err = err < 0 ? -err : err;
  const bool privilege = err == EPERM || err == EACCES;
  return makeError(privilege ? Error::Code::kUnsupported : Error::Code::kIo,
                   fmt::format("{}: {}{}", what, std::strerror(err),
                               privilege ? " (needs CAP_BPF and CAP_NET_ADMIN, or root)" : ""));
}

}  // namespace

kturn_relay_key relayKey(const TransportAddress& relayed) {
  kturn_relay_key key{};
  putMappedAddress(key.addr, relayed.ip);
  key.port = htons(relayed.port);
  return key;
}

Result<std::unique_ptr<RelayLookup>> RelayLookup::attach(uint32_t max_addresses) {
  if (max_addresses == 0)
    return makeError(Error::Code::kInvalidArgument, "relay lookup: max_addresses must be positive");
  kturn_relay_lookup* skel = kturn_relay_lookup__open();
  if (skel == nullptr) return lookupError("relay lookup: opening the BPF object", errno);
  int err = bpf_map__set_max_entries(skel->maps.kturn_relay_ports, max_addresses);
  if (err == 0) err = kturn_relay_lookup__load(skel);
  if (err != 0) {
    kturn_relay_lookup__destroy(skel);
    return lookupError("relay lookup: loading the BPF program", err);
  }
  const int netns = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (netns < 0) {
    const int e = errno;
    kturn_relay_lookup__destroy(skel);
    return lookupError("relay lookup: opening the network namespace", e);
  }
  const int link = bpf_link_create(bpf_program__fd(skel->progs.kturn_relay_lookup), netns,
                                   BPF_SK_LOOKUP, nullptr);
  const int e = errno;
  ::close(netns);
  if (link < 0) {
    kturn_relay_lookup__destroy(skel);
    return lookupError("relay lookup: attaching to the network namespace", e);
  }
  return std::unique_ptr<RelayLookup>(new RelayLookup(skel, link));
}

RelayLookup::RelayLookup(kturn_relay_lookup* skeleton, int link_fd)
    : skel_(skeleton), link_fd_(link_fd) {}

RelayLookup::~RelayLookup() {
  ::close(link_fd_);  // the link is the only attachment: closing it detaches
  kturn_relay_lookup__destroy(skel_);
}

int RelayLookup::portsMapFd() const { return bpf_map__fd(skel_->maps.kturn_relay_ports); }

Result<void> RelayLookup::setSocket(uint32_t index, int fd) {
  if (index >= KTURN_RELAY_LOOKUP_MAX_SOCKETS)
    return makeError(Error::Code::kInvalidArgument, "relay lookup: socket index out of range");
  const uint64_t value = static_cast<uint64_t>(fd);
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.kturn_relay_sockets), &index, &value, BPF_ANY) !=
      0) {
    return lookupError("relay lookup: registering a relay socket", errno);
  }
  return {};
}

bool RelayLookup::add(const TransportAddress& relayed, uint32_t index) {
  const kturn_relay_key key = relayKey(relayed);
  const kturn_relay_value value{index};
  return bpf_map_update_elem(portsMapFd(), &key, &value, BPF_ANY) == 0;
}

void RelayLookup::remove(const TransportAddress& relayed) {
  const kturn_relay_key key = relayKey(relayed);
  bpf_map_delete_elem(portsMapFd(), &key);
}

}  // namespace kturn::xdp
