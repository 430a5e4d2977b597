#include "worker/source_block_list.h"

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>

#include "xdp/mapped_address.h"

namespace kturn::worker {

bool SourceBlockList::block(turn::ListenerId /*listener*/, const FiveTuple& five_tuple,
                            turn::MonoTime until) {
  if (five_tuple.protocol != TransportProtocol::kUdp) return false;
  kturn_block_key key{};
  xdp::putMappedAddress(key.addr, five_tuple.client.ip);
  key.port = htons(five_tuple.server.port);
  // steady_clock is CLOCK_MONOTONIC on Linux, the clock bpf_ktime_get_ns() reads.
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(until.time_since_epoch());
  const kturn_block_value value{
      .expires_ns = static_cast<uint64_t>(std::max<int64_t>(0, ns.count())), .dropped = 0};
  if (!maps_.putBlock(key, value)) {
    ++refused_;
    return false;
  }
  ++written_;
  return true;
}

}  // namespace kturn::worker
