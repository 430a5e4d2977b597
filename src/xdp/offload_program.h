// OffloadProgram: kturnd's eBPF fast path (bpf/kturn_offload.bpf.c) loaded into the kernel and
// attached to interfaces. It owns the programs, their maps and every attachment it made; its
// destructor detaches them all, so that a kturnd that stops leaves no program relaying for it.
//
// Loading needs CAP_BPF and CAP_PERFMON (without the latter the verifier refuses the program's
// packet access as it does an unprivileged loader's) and Linux 5.10 or later
// (bpf_redirect_neigh); the program uses no BTF or CO-RE, only its own maps and packet data.
// Loading a TC program and attaching need CAP_NET_ADMIN.
// Neither happens per packet: the daemon loads once, attaches per config, and its workers reach
// the maps through OffloadMaps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kturn/result.h"
#include "kturn_offload.h"

struct kturn_offload;  // the bpftool skeleton (kturn_offload.skel.h)

namespace kturn::xdp {

// STUNner's `offload_engine`: where the program runs.
enum class Engine : uint8_t {
  kNone,  // user space only
  kTc,    // TC ingress (clsact): every interface, including veth and loopback
  kXdp,   // XDP in the driver; fails where the driver has no XDP support
  kAuto,  // XDP in the driver of a NIC where it works, TC elsewhere (virtual interfaces too)
};

// Parses "None", "TC", "XDP", "Auto" (case-insensitive, as STUNner).
Result<Engine> parseEngine(std::string_view text);
std::string_view toString(Engine engine);

struct ProgramOptions {
  // Entries of each of the channel and peer maps: the channels the kernel relays at once.
  uint32_t max_channels = KTURN_OFFLOAD_DEFAULT_ENTRIES;
  // The largest UDP payload relayed (at most KTURN_OFFLOAD_MAX_PAYLOAD); larger go to kturnd.
  uint32_t max_payload = KTURN_OFFLOAD_MAX_PAYLOAD;
};

class OffloadProgram {
 public:
  // Loads the program and creates its maps. kUnsupported when the kernel refuses (no BPF, no
  // privilege): the message says why, for the one log line the daemon writes before it falls
  // back to user space.
  static Result<std::unique_ptr<OffloadProgram>> load(const ProgramOptions& options);
  ~OffloadProgram();
  OffloadProgram(const OffloadProgram&) = delete;
  OffloadProgram& operator=(const OffloadProgram&) = delete;

  // Attaches to interface `ifindex` with `engine` (not kNone); returns the engine used, which
  // for kAuto is kXdp or kTc. Attaching an interface twice replaces the first attachment.
  // kXdp on a virtual interface (veth) is allowed but relays correctly only packets whose UDP
  // checksum is complete: not those of local senders with checksum offload (see kAuto).
  Result<Engine> attach(int ifindex, Engine engine);
  // Detaches from one interface; unknown interfaces are ignored.
  void detach(int ifindex);
  void detachAll();

  struct Attachment {
    int ifindex;
    Engine engine;  // kTc or kXdp
  };
  const std::vector<Attachment>& attachments() const { return attachments_; }

  int tcProgramFd() const;
  int xdpProgramFd() const;
  int channelsMapFd() const;
  int peersMapFd() const;
  int countersMapFd() const;
  int statsMapFd() const;
  int blockedMapFd() const;
  // The program's switch for kturn_blocked (its .bss, mapped into this process): 0 until a
  // source is blocked, so that no datagram pays for the lookup before then. Null if the kernel
  // did not map it (then blocking stays off).
  uint32_t* blockingSwitch() const;

  // The entries of kturn_blocked that have not expired at `now_ns` (CLOCK_MONOTONIC).
  struct BlockedSource {
    kturn_block_key key;
    kturn_block_value value;
  };
  std::vector<BlockedSource> blockedSources(uint64_t now_ns) const;
  // Slots of kturn_counters: one per entry of both maps.
  uint32_t counterSlots() const { return counter_slots_; }

  // kturn_stats summed over the CPUs, indexed by kturn_offload_stat.
  std::vector<uint64_t> stats() const;

 private:
  explicit OffloadProgram(kturn_offload* skeleton, uint32_t max_channels);
  Result<void> attachTc(int ifindex);
  Result<void> attachXdp(int ifindex);
  void detachOne(const Attachment& a);

  kturn_offload* skel_;
  uint32_t counter_slots_;
  std::vector<Attachment> attachments_;
  std::vector<int> created_qdiscs_;  // clsact qdiscs this object added, removed on detach
};

}  // namespace kturn::xdp
