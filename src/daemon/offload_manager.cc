#include "daemon/offload_manager.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <fstream>

namespace kturn::daemon {
namespace {

struct Interface {
  int index;
  std::string name;
};

// The configured interfaces that exist, or every interface for an empty list.
std::vector<Interface> interfacesFor(const std::vector<std::string>& names,
                                     std::vector<std::string>& missing) {
  std::vector<Interface> out;
  if (names.empty()) {
    if (struct if_nameindex* all = ::if_nameindex()) {
      for (struct if_nameindex* i = all; i->if_index != 0; ++i) {
        out.push_back({static_cast<int>(i->if_index), i->if_name});
      }
      ::if_freenameindex(all);
    }
    return out;
  }
  for (const std::string& name : names) {
    const unsigned index = ::if_nametoindex(name.c_str());
    if (index == 0) {
      missing.push_back(name);
    } else {
      out.push_back({static_cast<int>(index), name});
    }
  }
  return out;
}

}  // namespace

void OffloadManager::warnOnce(const std::string& message) {
  if (warned_.insert(message).second) spdlog::warn("{}", message);
}

xdp::OffloadMaps* OffloadManager::reconcile(const std::string& engine_text,
                                            const std::vector<std::string>& names) {
  auto engine = xdp::parseEngine(engine_text);
  if (!engine || *engine == xdp::Engine::kNone) {
    if (program_ && !program_->attachments().empty()) {
      program_->detachAll();
      spdlog::info("offload: detached; relaying in user space");
    }
    described_ = "None";
    return nullptr;
  }
  if (!program_) {
    auto loaded = xdp::OffloadProgram::load({});
    if (!loaded) {
      warnOnce(loaded.error().message + "; relaying in user space");
      return nullptr;
    }
    program_ = std::move(*loaded);
    maps_ = std::make_unique<xdp::KernelMaps>(*program_);
  }

  std::vector<std::string> missing;
  const std::vector<Interface> wanted = interfacesFor(names, missing);
  for (const std::string& name : missing) {
    warnOnce("offload: no interface " + name + " (admin.offload_interfaces); not offloaded there");
  }
  // Detach what is no longer wanted, then attach (again, if the engine changed) what is.
  std::vector<xdp::OffloadProgram::Attachment> before = program_->attachments();
  for (const auto& a : before) {
    const bool keep = std::any_of(wanted.begin(), wanted.end(),
                                  [&](const Interface& i) { return i.index == a.ifindex; });
    if (!keep) program_->detach(a.ifindex);
  }
  for (const Interface& i : wanted) {
    const auto& now = program_->attachments();
    auto it =
        std::find_if(now.begin(), now.end(), [&](const auto& a) { return a.ifindex == i.index; });
    const bool same = it != now.end() && (*engine == xdp::Engine::kAuto || it->engine == *engine);
    if (same) continue;
    if (auto attached = program_->attach(i.index, *engine); !attached) {
      warnOnce(attached.error().message + " (" + i.name + "); relaying in user space there");
    }
  }
  const std::string now = describe();
  if (now != described_) spdlog::info("offload: {}", now);
  described_ = now;
  for (const std::string& problem : problems()) warnOnce("offload: " + problem);
  return program_->attachments().empty() ? nullptr : maps_.get();
}

std::vector<uint64_t> OffloadManager::outcomes() const {
  return program_ ? program_->stats() : std::vector<uint64_t>{};
}

std::vector<OffloadManager::BlockedSource> OffloadManager::blockedSources() const {
  std::vector<BlockedSource> out;
  if (!program_) return out;
  // steady_clock is CLOCK_MONOTONIC on Linux, the clock of the entries' expiry.
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now().time_since_epoch())
                       .count();
  const uint64_t now_ns = static_cast<uint64_t>(std::max<int64_t>(0, now));
  for (const auto& b : program_->blockedSources(now_ns)) {
    const bool v4 = std::all_of(b.key.addr, b.key.addr + 10, [](uint8_t x) { return x == 0; }) &&
                    b.key.addr[10] == 0xff && b.key.addr[11] == 0xff;
    out.push_back({.address = v4 ? IpAddress::fromBytes(AddressFamily::kIPv4, {b.key.addr + 12, 4})
                                 : IpAddress::fromBytes(AddressFamily::kIPv6, {b.key.addr, 16}),
                   .port = ntohs(b.key.port),
                   .expires_in_seconds = static_cast<double>(b.value.expires_ns - now_ns) / 1e9,
                   .dropped = b.value.dropped});
  }
  return out;
}

std::vector<std::string> OffloadManager::problems() const {
  std::vector<std::string> out;
  if (!program_) return out;
  for (const auto& a : program_->attachments()) {
    char name[IF_NAMESIZE] = {};
    if (::if_indextoname(static_cast<unsigned>(a.ifindex), name) == nullptr) continue;
    const std::string sysctl = std::string("net.ipv4.conf.") + name + ".forwarding";
    std::ifstream in("/proc/sys/net/ipv4/conf/" + std::string(name) + "/forwarding");
    int forwarding = 1;
    if (in >> forwarding && forwarding == 0) {
      out.push_back("IPv4 forwarding is off on " + std::string(name) + " (" + sysctl +
                    " = 0): the kernel path cannot route what arrives there, user space relays "
                    "it (sysctl -w " +
                    sysctl + "=1, or net.ipv4.ip_forward=1)");
    }
  }
  return out;
}

std::string OffloadManager::describe() const {
  if (!program_ || program_->attachments().empty()) return "None";
  std::string tc, xdp;
  for (const auto& a : program_->attachments()) {
    char name[IF_NAMESIZE] = {};
    std::string n =
        ::if_indextoname(static_cast<unsigned>(a.ifindex), name) ? name : std::to_string(a.ifindex);
    std::string& list = a.engine == xdp::Engine::kXdp ? xdp : tc;
    list += (list.empty() ? "" : ", ") + n;
  }
  std::string out;
  if (!xdp.empty()) out += "XDP on " + xdp;
  if (!tc.empty()) out += (out.empty() ? "" : "; ") + std::string("TC on ") + tc;
  return out;
}

}  // namespace kturn::daemon
