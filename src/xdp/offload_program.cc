#include "xdp/offload_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <mutex>

#include "common/log.h"
#include "kturn_offload.skel.h"

namespace kturn::xdp {
namespace {

// libbpf prints through one global callback; route it to the log, at debug level but for its
// warnings (a verifier rejection arrives as one): loading is a start-up event, never per packet.
int printLibbpf(libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  char line[512];
  int n = std::vsnprintf(line, sizeof(line), format, args);
  if (n <= 0) return n;
  std::string_view text(line, std::min<size_t>(static_cast<size_t>(n), sizeof(line) - 1));
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  if (level == LIBBPF_WARN)
    spdlog::warn("libbpf: {}", text);
  else
    spdlog::debug("libbpf: {}", text);
  return n;
}

Error errnoError(std::string_view what, int err) {
  err = err < 0 ? -err : err;
  bool privilege = err == EPERM || err == EACCES;
  return makeError(
      privilege ? Error::Code::kUnsupported : Error::Code::kIo,
      fmt::format("{}: {}{}", what, std::strerror(err),
                  privilege ? " (needs CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN, or root)" : ""));
}

// The TC filter's handle and priority: fixed, so that a kturnd restarted after a crash replaces
// its predecessor's filter instead of stacking a second one.
constexpr uint32_t kTcHandle = 0x6b74;  // "kt"
constexpr uint32_t kTcPriority = 1;

// Whether `ifindex` is backed by a device (a NIC): sysfs links those to their bus device.
bool isHardware(int ifindex) {
  char name[IF_NAMESIZE] = {};
  if (::if_indextoname(static_cast<unsigned>(ifindex), name) == nullptr) return false;
  return ::access(fmt::format("/sys/class/net/{}/device", name).c_str(), F_OK) == 0;
}

}  // namespace

Result<Engine> parseEngine(std::string_view text) {
  auto eq = [&](std::string_view name) {
    return std::equal(text.begin(), text.end(), name.begin(), name.end(),
                      [](char a, char b) { return std::tolower(a) == std::tolower(b); });
  };
  if (text.empty() || eq("none")) return Engine::kNone;
  if (eq("tc")) return Engine::kTc;
  if (eq("xdp")) return Engine::kXdp;
  if (eq("auto")) return Engine::kAuto;
  return makeError(Error::Code::kInvalidArgument,
                   fmt::format("'{}': must be None, TC, XDP or Auto", text));
}

std::string_view toString(Engine engine) {
  switch (engine) {
    case Engine::kNone:
      return "None";
    case Engine::kTc:
      return "TC";
    case Engine::kXdp:
      return "XDP";
    case Engine::kAuto:
      return "Auto";
  }
  return "None";
}

Result<std::unique_ptr<OffloadProgram>> OffloadProgram::load(const ProgramOptions& options) {
  static std::once_flag print_once;
  std::call_once(print_once, [] { libbpf_set_print(printLibbpf); });
  if (options.max_channels == 0)
    return makeError(Error::Code::kInvalidArgument, "offload: max_channels must be positive");
  if (options.max_payload < 8 || options.max_payload > KTURN_OFFLOAD_MAX_PAYLOAD) {
    return makeError(Error::Code::kInvalidArgument,
                     fmt::format("offload: max_payload must be 8-{}", KTURN_OFFLOAD_MAX_PAYLOAD));
  }

  kturn_offload* skel = kturn_offload__open();
  if (skel == nullptr) return errnoError("offload: opening the BPF object", errno);
  skel->rodata->max_payload = options.max_payload;
  int err = bpf_map__set_max_entries(skel->maps.kturn_channels, options.max_channels);
  if (err == 0) err = bpf_map__set_max_entries(skel->maps.kturn_peers, options.max_channels);
  if (err == 0) err = bpf_map__set_max_entries(skel->maps.kturn_counters, 2 * options.max_channels);
  if (err == 0) err = kturn_offload__load(skel);
  if (err != 0) {
    kturn_offload__destroy(skel);
    return errnoError("offload: loading the BPF program", err);
  }
  return std::unique_ptr<OffloadProgram>(new OffloadProgram(skel, options.max_channels));
}

OffloadProgram::OffloadProgram(kturn_offload* skeleton, uint32_t max_channels)
    : skel_(skeleton), counter_slots_(2 * max_channels) {}

OffloadProgram::~OffloadProgram() {
  detachAll();
  kturn_offload__destroy(skel_);
}

int OffloadProgram::tcProgramFd() const { return bpf_program__fd(skel_->progs.kturn_tc); }
int OffloadProgram::xdpProgramFd() const { return bpf_program__fd(skel_->progs.kturn_xdp); }
int OffloadProgram::channelsMapFd() const { return bpf_map__fd(skel_->maps.kturn_channels); }
int OffloadProgram::peersMapFd() const { return bpf_map__fd(skel_->maps.kturn_peers); }
int OffloadProgram::countersMapFd() const { return bpf_map__fd(skel_->maps.kturn_counters); }
int OffloadProgram::statsMapFd() const { return bpf_map__fd(skel_->maps.kturn_stats); }
int OffloadProgram::blockedMapFd() const { return bpf_map__fd(skel_->maps.kturn_blocked); }

uint32_t* OffloadProgram::blockingSwitch() const {
  return skel_->bss != nullptr ? const_cast<uint32_t*>(&skel_->bss->kturn_blocking) : nullptr;
}

std::vector<OffloadProgram::BlockedSource> OffloadProgram::blockedSources(uint64_t now_ns) const {
  std::vector<BlockedSource> out;
  const int fd = blockedMapFd();
  kturn_block_key key{};
  kturn_block_key next{};
  const kturn_block_key* prev = nullptr;
  // Bounded by the map's size: an LRU map may reorder while we walk it.
  for (uint32_t i = 0;
       i < KTURN_BLOCK_DEFAULT_ENTRIES && bpf_map_get_next_key(fd, prev, &next) == 0; ++i) {
    key = next;
    prev = &key;
    kturn_block_value value{};
    if (bpf_map_lookup_elem(fd, &key, &value) == 0 && value.expires_ns > now_ns) {
      out.push_back({key, value});
    }
  }
  return out;
}

Result<Engine> OffloadProgram::attach(int ifindex, Engine engine) {
  detach(ifindex);
  switch (engine) {
    case Engine::kNone:
      return makeError(Error::Code::kInvalidArgument, "offload: nothing to attach for None");
    case Engine::kTc:
      if (auto r = attachTc(ifindex); !r) return r.error();
      break;
    case Engine::kXdp:
      if (auto r = attachXdp(ifindex); !r) return r.error();
      break;
    case Engine::kAuto:
      // XDP only on hardware: a virtual interface (veth, loopback) carries packets of local
      // senders whose UDP checksum is still to be completed (CHECKSUM_PARTIAL), a state XDP
      // frames lose; TC keeps it.
      if (isHardware(ifindex) && attachXdp(ifindex)) {
        engine = Engine::kXdp;
        break;
      }
      if (auto r = attachTc(ifindex); !r) return r.error();
      engine = Engine::kTc;
      break;
  }
  attachments_.push_back({ifindex, engine});
  return engine;
}

Result<void> OffloadProgram::attachTc(int ifindex) {
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
  int err = bpf_tc_hook_create(&hook);
  if (err == 0) {
    created_qdiscs_.push_back(ifindex);
  } else if (err != -EEXIST) {
    return errnoError(fmt::format("offload: adding a clsact qdisc to interface {}", ifindex), err);
  }
  LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = tcProgramFd(), .flags = BPF_TC_F_REPLACE,
              .handle = kTcHandle, .priority = kTcPriority);
  err = bpf_tc_attach(&hook, &opts);
  if (err != 0)
    return errnoError(fmt::format("offload: attaching to TC ingress of interface {}", ifindex),
                      err);
  return {};
}

Result<void> OffloadProgram::attachXdp(int ifindex) {
  // Native (driver) mode only: generic XDP runs on socket buffers whose deferred checksum
  // offsets the program's header moves would invalidate; TC handles those interfaces.
  int err = bpf_xdp_attach(ifindex, xdpProgramFd(),
                           XDP_FLAGS_DRV_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST, nullptr);
  if (err != 0)
    return errnoError(fmt::format("offload: attaching XDP (driver mode) to interface {}", ifindex),
                      err);
  return {};
}

void OffloadProgram::detachOne(const Attachment& a) {
  if (a.engine == Engine::kXdp) {
    LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = xdpProgramFd());
    bpf_xdp_detach(a.ifindex, XDP_FLAGS_DRV_MODE | XDP_FLAGS_REPLACE, &opts);
    return;
  }
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = a.ifindex, .attach_point = BPF_TC_INGRESS);
  auto created = std::find(created_qdiscs_.begin(), created_qdiscs_.end(), a.ifindex);
  if (created != created_qdiscs_.end()) {
    // The qdisc is ours: removing it removes the filter with it.
    hook.attach_point = static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS);
    bpf_tc_hook_destroy(&hook);
    created_qdiscs_.erase(created);
    return;
  }
  LIBBPF_OPTS(bpf_tc_opts, opts, .handle = kTcHandle, .priority = kTcPriority);
  bpf_tc_detach(&hook, &opts);
}

void OffloadProgram::detach(int ifindex) {
  auto it = std::find_if(attachments_.begin(), attachments_.end(),
                         [&](const Attachment& a) { return a.ifindex == ifindex; });
  if (it == attachments_.end()) return;
  detachOne(*it);
  attachments_.erase(it);
}

void OffloadProgram::detachAll() {
  for (const Attachment& a : attachments_) detachOne(a);
  attachments_.clear();
}

std::vector<uint64_t> OffloadProgram::stats() const {
  std::vector<uint64_t> sums(KTURN_STAT_COUNT, 0);
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return sums;
  std::vector<uint64_t> per_cpu(static_cast<size_t>(cpus));
  for (uint32_t i = 0; i < KTURN_STAT_COUNT; ++i) {
    if (bpf_map_lookup_elem(statsMapFd(), &i, per_cpu.data()) != 0) continue;
    for (uint64_t v : per_cpu) sums[i] += v;
  }
  return sums;
}

}  // namespace kturn::xdp
