#!/usr/bin/python3
"""The network between make test-global's two regions (source document 001's Anycast + GeoDNS
layout, the smallest honest version of it): network namespaces, addresses and BGP sessions this
module makes, and nothing that routes off the machine.

    client X 10.254.1.2                                     client Y 10.254.2.2
        |                                                         |
    continent X router ------------- core link ------------- continent Y router
    (cx, AS 64601, BIRD 2)          10.250.0.0/30            (cy, AS 64602, BIRD 2)
        |          \\                                              |
        |        data centre 10.250.9.2: GeoDNS (CoreDNS),        |
        |        the media echo (coturn's turnutils_peer)          |
    region a's router (AS 64512)                             region b's router (AS 64522)
    10.250.1.0/30 up; its cluster                            10.250.2.0/30 up; its cluster
    (tests/e2e/cluster.py --site a)                          (tests/e2e/cluster.py --site b)

Each region's router announces up what its cluster's MetalLB speakers announce to it: the Anycast
address (fabric.ANYCAST, the same in both regions), its own unicast pool, and its pod range and
LAN. A continent's router prefers its own region's path by AS path length (its region is one AS
away; the other region is two: through the other continent), so a client of X reaches region a at
the Anycast address and a client of Y region b, and when a region withdraws the address, its
continent's router takes the other region's path over the core link.

GeoDNS: CoreDNS in the data centre answers `turn.kturn.test` by the asking client's network (its
`view` plugin): X's clients get region a's own address, Y's region b's, anyone else the Anycast
address; `anycast.kturn.test` is the Anycast address for everyone.

    globalnet.py up   --dir DIR --tools TOOLS [--owner PID]   start, in the background (before
                                                              the regions' clusters)
    globalnet.py down --dir DIR                               stop and remove (after them)

`down` works from what is on the machine (namespaces named kturn-g-*, the processes in them), so
it is safe after a crash and safe twice.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import sys
import time
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, HERE)
import control_plane as cp  # noqa: E402
import fabric  # noqa: E402

PREFIX = "kturn-g"
DC_NS = f"{PREFIX}-dc"
CORE = ipaddress.ip_network("10.250.0.0/30")
DC = ipaddress.ip_network(fabric.DC_NET)
DC_IP = str(DC[2])
DNS_IP = DC_IP
PEER_PORT = 10000  # the media echo, allowed in both regions by a StaticService
ZONE = "kturn.test"
TURN_NAME = f"turn.{ZONE}"
ANYCAST_NAME = f"anycast.{ZONE}"


class Continent:
    """A continent: its router (BIRD), its client network, and the region it is closest to."""

    def __init__(self, key: str, k: int, region: str):
        self.key, self.k, self.region = key, k, region
        self.ns = f"{PREFIX}-c{key}"
        self.client_ns = f"{PREFIX}-{key}"
        self.asn = 64600 + k
        self.net = ipaddress.ip_network(f"10.254.{k}.0/24")
        self.router_ip, self.client_ip = str(self.net[1]), str(self.net[2])
        self.core_ip = str(CORE[k])
        self.site = fabric.REGIONS[region]
        assert self.site.uplink and self.site.uplink.ns == self.ns

    def bird_config(self, dirpath: str, other: "Continent") -> str:
        up = self.site.uplink
        return f"""# Continent {self.key}'s router: its clients' network, region {self.region}'s router one
# AS away, the other continent over the core link.
router id {self.core_ip};
log "{dirpath}/bird-{self.key}.log" all;

protocol device {{ scan time 2; }}
protocol direct nets {{ ipv4; interface "client", "dc"; }}
protocol kernel {{ ipv4 {{ export where source = RTS_BGP; }}; learn off; }}

template bgp peer {{
    hold time 9;
    keepalive time 3;
    error wait time 1, 10;
}}
protocol bgp region from peer {{
    local {up.peer_ip} as {self.asn};
    neighbor {up.local_ip} as {self.site.router_asn};
    ipv4 {{ import all; export none; }};  # the region's router routes up by default
}}
protocol bgp core from peer {{
    local {self.core_ip} as {self.asn};
    neighbor {other.core_ip} as {other.asn};
    ipv4 {{ import all; export all; }};
}}
"""


CONTINENTS = [Continent("x", 1, "a"), Continent("y", 2, "b")]


def namespaces() -> List[str]:
    return [CONTINENTS[0].ns, CONTINENTS[1].ns, CONTINENTS[0].client_ns,
            CONTINENTS[1].client_ns, DC_NS]


def corefile() -> str:
    """GeoDNS: a server block per continent (CoreDNS's view plugin picks one by the client's
    address) and one for everyone else."""
    blocks = []
    for c in CONTINENTS:
        region_address = region_unicast(c.region)
        blocks.append(f"""{ZONE}:53 {{
    bind {DNS_IP}
    view continent-{c.key} {{
        expr incidr(client_ip(), '{c.net}')
    }}
    hosts {{
        {region_address} {TURN_NAME}
        {fabric.ANYCAST} {ANYCAST_NAME}
        ttl 60
    }}
    log
}}
""")
    blocks.append(f"""{ZONE}:53 {{
    bind {DNS_IP}
    hosts {{
        {fabric.ANYCAST} {TURN_NAME} {ANYCAST_NAME}
        ttl 60
    }}
    log
}}
""")
    return "\n".join(blocks)


def region_unicast(region: str) -> str:
    """The region's own LoadBalancer address: the tenth of its unicast pool."""
    pool = dict((name, cidr) for name, cidr, _ in fabric.REGIONS[region].pools)["unicast"]
    return str(ipaddress.ip_network(pool)[10])


def region_cds(region: str) -> str:
    """The address of the region's config discovery (a LoadBalancer Service over its operator's
    pods), where a kturn-auth serving both regions reaches it: the eleventh of its unicast
    pool."""
    pool = dict((name, cidr) for name, cidr, _ in fabric.REGIONS[region].pools)["unicast"]
    return str(ipaddress.ip_network(pool)[11])


class Net(cp.ComponentGroup):
    def __init__(self, dirpath: str, tools: str = ""):
        self.dir = os.path.abspath(dirpath)
        self.tools = tools
        self.logs = os.path.join(self.dir, "logs")
        self.components: List[cp.Component] = []

    def create(self) -> None:
        run = fabric.run
        for ns in namespaces():
            run("ip", "netns", "add", ns)
            fabric.ns_run(ns, "ip", "link", "set", "lo", "up")
        x, y = CONTINENTS
        veth = fabric.Fabric(self.dir, 0).veth
        veth(x.ns, "core", y.ns, "core")
        for c in CONTINENTS:
            fabric.ns_run(c.ns, "ip", "addr", "add", f"{c.core_ip}/{CORE.prefixlen}", "dev",
                          "core")
            fabric.sysctl(c.ns, "net.ipv4.ip_forward", "1")
            veth(c.ns, "client", c.client_ns, "eth0")
            fabric.ns_run(c.ns, "ip", "addr", "add", f"{c.router_ip}/{c.net.prefixlen}", "dev",
                          "client")
            fabric.ns_run(c.client_ns, "ip", "addr", "add", f"{c.client_ip}/{c.net.prefixlen}",
                          "dev", "eth0")
            fabric.ns_run(c.client_ns, "ip", "route", "add", "default", "via", c.router_ip)
        # The data centre hangs off continent X's router.
        veth(x.ns, "dc", DC_NS, "eth0")
        fabric.ns_run(x.ns, "ip", "addr", "add", f"{DC[1]}/{DC.prefixlen}", "dev", "dc")
        fabric.ns_run(DC_NS, "ip", "addr", "add", f"{DC_IP}/{DC.prefixlen}", "dev", "eth0")
        fabric.ns_run(DC_NS, "ip", "route", "add", "default", "via", str(DC[1]))
        # The clients resolve through GeoDNS (`ip netns exec` binds this over /etc/resolv.conf).
        for c in CONTINENTS:
            d = f"/etc/netns/{c.client_ns}"
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "resolv.conf"), "w") as f:
                f.write(f"nameserver {DNS_IP}\n")

    def start(self) -> Dict[str, float]:
        t0 = time.monotonic()
        remove()
        os.makedirs(self.logs, exist_ok=True)
        self.create()
        x, y = CONTINENTS
        for c, other in ((x, y), (y, x)):
            conf = os.path.join(self.dir, f"bird-{c.key}.conf")
            with open(conf, "w") as f:
                f.write(c.bird_config(self.dir, other))
            self.spawn(f"bird-{c.key}", c.ns, ["bird", "-f", "-c", conf, "-s",
                                                self.bird_socket(c.key)])
        conf = os.path.join(self.dir, "Corefile")
        with open(conf, "w") as f:
            f.write(corefile())
        self.spawn("geodns", DC_NS, [os.path.join(self.tools, "bin", "coredns"), "-conf", conf])
        self.spawn("media-echo", DC_NS, ["turnutils_peer", "-L", DC_IP, "-p", str(PEER_PORT)])
        cp.wait_until("GeoDNS", lambda: dig(x.client_ns, ANYCAST_NAME) == [fabric.ANYCAST],
                      self.components, 30)
        with open(os.path.join(self.dir, "env"), "w") as f:
            f.write(f"DNS_IP={DNS_IP}\nDC_NETNS={DC_NS}\nDC_IP={DC_IP}\nPEER_PORT={PEER_PORT}\n"
                    f"TURN_NAME={TURN_NAME}\nANYCAST_NAME={ANYCAST_NAME}\n"
                    f"ANYCAST={fabric.ANYCAST}\n")
            for c in CONTINENTS:
                f.write(f"CLIENT_{c.key.upper()}_NETNS={c.client_ns}\n"
                        f"CLIENT_{c.key.upper()}_IP={c.client_ip}\n"
                        f"ROUTER_{c.key.upper()}_NETNS={c.ns}\n"
                        f"BIRD_{c.key.upper()}_SOCKET={self.bird_socket(c.key)}\n")
        return {"network": time.monotonic() - t0}

    def spawn(self, name: str, ns: str, argv: List[str]) -> None:
        c = cp.Component(name, fabric.in_ns(ns, *argv), self.logs)
        c.start()
        self.components.append(c)

    def bird_socket(self, key: str) -> str:
        return os.path.join(self.dir, f"bird-{key}.ctl")

    def stop(self) -> None:
        super().stop()
        remove()


def dig(ns: str, name: str) -> List[str]:
    """The A records `name` resolves to from namespace `ns`, asking GeoDNS."""
    r = fabric.run(*fabric.in_ns(ns, "dig", "+short", "+time=1", "+tries=1", f"@{DNS_IP}",
                                 name), check=False, quiet=True)
    return [line for line in r.stdout.split() if line[:1].isdigit()]


def remove() -> None:
    """The namespaces and whatever still runs in them, from what is on the machine."""
    for ns in fabric.namespaces(PREFIX):
        pids = fabric.run("ip", "netns", "pids", ns, check=False, quiet=True).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        fabric.run("ip", "netns", "del", ns, check=False, quiet=True)
        if os.path.isdir(f"/etc/netns/{ns}"):
            for f in os.listdir(f"/etc/netns/{ns}"):
                os.remove(os.path.join(f"/etc/netns/{ns}", f))
            os.rmdir(f"/etc/netns/{ns}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("up", "serve"):
        p = sub.add_parser(name)
        p.add_argument("--dir", required=True)
        p.add_argument("--tools", required=True)
        p.add_argument("--owner", type=int, default=0)
    sub.add_parser("down").add_argument("--dir", required=True)
    args = ap.parse_args()
    args.dir = os.path.abspath(args.dir)
    os.makedirs(args.dir, exist_ok=True)
    if args.cmd == "down":
        cp.stop_supervisor(args.dir, __file__, 30)
        remove()
        return 0
    args.tools = os.path.abspath(args.tools)
    if args.cmd == "up":
        cp.stop_supervisor(args.dir, __file__, 30)
        return cp.spawn_supervisor(__file__, args.dir, ["--tools", args.tools, "--owner",
                                                        str(args.owner)], "globalnet.log", 60)
    net = Net(args.dir, args.tools)
    return cp.supervise(args.dir, args.owner, net.start, net.check, net.stop)


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("globalnet.py: network namespaces need root")
    sys.exit(main())
