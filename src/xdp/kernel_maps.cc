#include "xdp/kernel_maps.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <vector>

namespace kturn::xdp {

KernelMaps::KernelMaps(const OffloadProgram& program)
    : channels_fd_(program.channelsMapFd()),
      peers_fd_(program.peersMapFd()),
      counters_fd_(program.countersMapFd()),
      slots_(program.counterSlots()),
      cpus_(libbpf_num_possible_cpus()) {
  if (cpus_ < 1) cpus_ = 1;
}

bool KernelMaps::putChannel(const kturn_channel_key& key, const kturn_channel_value& value) {
  return bpf_map_update_elem(channels_fd_, &key, &value, BPF_ANY) == 0;
}

bool KernelMaps::putPeer(const kturn_peer_key& key, const kturn_peer_value& value) {
  return bpf_map_update_elem(peers_fd_, &key, &value, BPF_ANY) == 0;
}

void KernelMaps::eraseChannel(const kturn_channel_key& key) {
  bpf_map_delete_elem(channels_fd_, &key);
}

void KernelMaps::erasePeer(const kturn_peer_key& key) { bpf_map_delete_elem(peers_fd_, &key); }

kturn_counter KernelMaps::readCounter(uint32_t slot) {
  // A per-CPU array returns one value per possible CPU. Control path only: the vector is fine.
  std::vector<kturn_counter> per_cpu(static_cast<size_t>(cpus_));
  kturn_counter sum{};
  if (bpf_map_lookup_elem(counters_fd_, &slot, per_cpu.data()) != 0) return sum;
  for (const kturn_counter& c : per_cpu) {
    sum.packets += c.packets;
    sum.bytes += c.bytes;
  }
  return sum;
}

void KernelMaps::resetCounter(uint32_t slot) {
  std::vector<kturn_counter> zero(static_cast<size_t>(cpus_));
  bpf_map_update_elem(counters_fd_, &slot, zero.data(), BPF_ANY);
}

}  // namespace kturn::xdp
