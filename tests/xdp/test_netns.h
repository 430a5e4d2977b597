// A network namespace of the test's own, for tests of the eBPF fast path: the test process moves
// its main thread into a new namespace (unshare(CLONE_NEWNET)) and builds two veth pairs there,
// so that programs run against real interfaces and routes without touching the machine's own.
//
//   client side  kc  10.0.1.1/24  fd00:1::1/64   neighbour 10.0.1.2 / fd00:1::2 (kc-peer's MAC)
//   peer side    kp  10.0.2.1/24  fd00:2::1/64   neighbour 10.0.2.2 / fd00:2::2 (kp-peer's MAC)
//
// Forwarding is on (bpf_fib_lookup() refuses to route for an interface that does not forward).
// Needs CAP_SYS_ADMIN and CAP_NET_ADMIN; `skipReason()` says why not when they are missing.
#pragma once

#include <net/if.h>
#include <sched.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace kturn::xdp::testing {

struct TestNetns {
  static constexpr std::array<uint8_t, 6> kKcMac{0x02, 0, 0, 0, 0, 0xc1};
  static constexpr std::array<uint8_t, 6> kKcPeerMac{0x02, 0, 0, 0, 0, 0xc2};
  static constexpr std::array<uint8_t, 6> kKpMac{0x02, 0, 0, 0, 0, 0xe1};
  static constexpr std::array<uint8_t, 6> kKpPeerMac{0x02, 0, 0, 0, 0, 0xe2};

  // Empty on success; otherwise why the namespace could not be made.
  static std::string setUp() {
    if (::unshare(CLONE_NEWNET) != 0) return "unshare(CLONE_NEWNET) failed: needs root";
    static const char* const kCommands[] = {
        "ip link set lo up",
        "ip link add kc address 02:00:00:00:00:c1 type veth peer name kc-peer "
        "address 02:00:00:00:00:c2",
        "ip link add kp address 02:00:00:00:00:e1 type veth peer name kp-peer "
        "address 02:00:00:00:00:e2",
        "ip link set kc up",
        "ip link set kc-peer up",
        "ip link set kp up",
        "ip link set kp-peer up",
        "ip addr add 10.0.1.1/24 dev kc",
        "ip addr add 10.0.2.1/24 dev kp",
        "ip -6 addr add fd00:1::1/64 dev kc nodad",
        "ip -6 addr add fd00:2::1/64 dev kp nodad",
        "ip neigh add 10.0.1.2 lladdr 02:00:00:00:00:c2 dev kc nud permanent",
        "ip neigh add 10.0.2.2 lladdr 02:00:00:00:00:e2 dev kp nud permanent",
        "ip -6 neigh add fd00:1::2 lladdr 02:00:00:00:00:c2 dev kc nud permanent",
        "ip -6 neigh add fd00:2::2 lladdr 02:00:00:00:00:e2 dev kp nud permanent",
    };
    for (const char* command : kCommands) {
      std::string quiet = std::string(command) + " 2>&1";
      if (std::system(quiet.c_str()) != 0) return std::string("failed: ") + command;
    }
    for (const char* sysctl :
         {"/proc/sys/net/ipv4/conf/all/forwarding", "/proc/sys/net/ipv6/conf/all/forwarding"}) {
      std::ofstream f(sysctl);
      f << "1\n";
      if (!f) return std::string("cannot write ") + sysctl;
    }
    return {};
  }

  static int ifindex(const char* name) { return static_cast<int>(::if_nametoindex(name)); }
};

}  // namespace kturn::xdp::testing
