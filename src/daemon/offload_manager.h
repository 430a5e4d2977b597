// OffloadManager: admin.offload_engine and admin.offload_interfaces (STUNner's dataplane config)
// made real. Loads the eBPF fast path (xdp::OffloadProgram) the first time a config asks for it,
// attaches it to the configured interfaces, follows later configs (other interfaces, another
// engine, None: detached), and falls back to user-space relaying, with one log line, where the
// kernel or the privileges do not allow it. Called by the daemon's control thread only.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kturn/transport_address.h"
#include "xdp/kernel_maps.h"
#include "xdp/offload_program.h"

namespace kturn::daemon {

class OffloadManager {
 public:
  OffloadManager() = default;
  OffloadManager(const OffloadManager&) = delete;
  OffloadManager& operator=(const OffloadManager&) = delete;

  // Applies one config's offload settings (validated: engine is None, TC, XDP or Auto;
  // interfaces empty means every interface). Returns the maps workers hand channels to, or null
  // when nothing is attached.
  xdp::OffloadMaps* reconcile(const std::string& engine,
                              const std::vector<std::string>& interfaces);

  // The program's outcome counters (kturn_offload_stat), empty while none is loaded.
  std::vector<uint64_t> outcomes() const;
  // The drop list's live entries (SourceBlockList writes them), for /status: address, port,
  // seconds left and datagrams dropped. Empty while no program is loaded.
  struct BlockedSource {
    IpAddress address;
    uint16_t port = 0;
    double expires_in_seconds = 0;
    uint64_t dropped = 0;
  };
  std::vector<BlockedSource> blockedSources() const;
  // "TC on lo, eth0", "None": for the log.
  std::string describe() const;
  // Why the kernel path cannot relay on an attached interface now, one line each: the program
  // routes with bpf_fib_lookup(), which refuses an ingress interface that does not forward
  // IPv4 (outcome `route`; user space relays those datagrams). Read from /proc at each call.
  std::vector<std::string> problems() const;

 private:
  void warnOnce(const std::string& message);

  std::unique_ptr<xdp::OffloadProgram> program_;  // loaded on first use, kept
  std::unique_ptr<xdp::KernelMaps> maps_;
  std::set<std::string> warned_;    // messages logged already
  std::string described_ = "None";  // what the log said last
};

}  // namespace kturn::daemon
