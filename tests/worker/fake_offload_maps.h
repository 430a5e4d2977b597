// A fake of the kernel fast path's maps (xdp::OffloadMaps) for unit tests of the daemon's
// classes that write them: entries kept in std::maps by their key bytes, counters set by the
// test, every update refused on demand.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "xdp/offload_maps.h"

namespace kturn::worker::testing {

struct FakeMaps : xdp::OffloadMaps {
  static std::vector<uint8_t> bytes(const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    return {b, b + n};
  }
  bool putChannel(const kturn_channel_key& k, const kturn_channel_value& v) override {
    if (refuse) return false;
    channels[bytes(&k, sizeof(k))] = v;
    return true;
  }
  bool putPeer(const kturn_peer_key& k, const kturn_peer_value& v) override {
    if (refuse) return false;
    peers[bytes(&k, sizeof(k))] = v;
    return true;
  }
  void eraseChannel(const kturn_channel_key& k) override { channels.erase(bytes(&k, sizeof(k))); }
  void erasePeer(const kturn_peer_key& k) override { peers.erase(bytes(&k, sizeof(k))); }
  bool putBlock(const kturn_block_key& k, const kturn_block_value& v) override {
    if (refuse) return false;
    blocks[bytes(&k, sizeof(k))] = v;
    return true;
  }
  kturn_counter readCounter(uint32_t slot) const override {
    auto it = counters.find(slot);
    return it == counters.end() ? kturn_counter{} : it->second;
  }
  uint32_t counterSlots() const override { return 64; }

  std::map<std::vector<uint8_t>, kturn_channel_value> channels;
  std::map<std::vector<uint8_t>, kturn_peer_value> peers;
  std::map<std::vector<uint8_t>, kturn_block_value> blocks;
  std::map<uint32_t, kturn_counter> counters;  // what the "kernel" counted
  bool refuse = false;
};

}  // namespace kturn::worker::testing
