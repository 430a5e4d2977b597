#include "xdp/kernel_maps.h"

#include <bpf/bpf.h>
#include <sys/mman.h>
#include <unistd.h>

namespace kturn::xdp {

KernelMaps::KernelMaps(const OffloadProgram& program)
    : channels_fd_(program.channelsMapFd()),
      peers_fd_(program.peersMapFd()),
      blocked_fd_(program.blockedMapFd()),
      blocking_(program.blockingSwitch()),
      slots_(program.counterSlots()) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t size = (size_t{slots_} * sizeof(kturn_counter) + page - 1) / page * page;
  void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, program.countersMapFd(), 0);
  if (mapped != MAP_FAILED) {
    counters_ = static_cast<kturn_counter*>(mapped);
    mapped_size_ = size;
  }
}

KernelMaps::~KernelMaps() {
  if (counters_ != nullptr) ::munmap(counters_, mapped_size_);
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

bool KernelMaps::putBlock(const kturn_block_key& key, const kturn_block_value& value) {
  if (blocking_ == nullptr || bpf_map_update_elem(blocked_fd_, &key, &value, BPF_ANY) != 0) {
    return false;
  }
  __atomic_store_n(blocking_, 1u, __ATOMIC_RELAXED);  // the program looks from now on
  return true;
}

kturn_counter KernelMaps::readCounter(uint32_t slot) const {
  if (counters_ == nullptr || slot >= slots_) return {};
  // The program adds with atomic instructions; an aligned 8-byte load sees a whole value.
  return {__atomic_load_n(&counters_[slot].packets, __ATOMIC_RELAXED),
          __atomic_load_n(&counters_[slot].bytes, __ATOMIC_RELAXED)};
}

}  // namespace kturn::xdp
