"""The network a multi-node cluster (tests/e2e/cluster.py --nodes N) lives in: network namespaces
and addresses this module makes, and nothing that routes off the machine.

    client ns (10.246.0.2)                   "the internet": where the seed's clients are
         |  10.246.0.0/24
    router ns (10.246.0.1, 10.245.0.254)     "the upstream network": BIRD 2, peering by BGP with
         |  bridge `lan`, 10.245.0.0/24       every node's MetalLB speaker, installing the
         |                                    LoadBalancer addresses it learns (ECMP) in its table
    +----+---------+---------+---------+
    host          node 1    node 2    node 3 ...   (10.245.0.1, .11, .12, .13)
    (apiserver,   each a network namespace with its own containerd, kubelet, kube-proxy,
     CoreDNS)     kube-router (pod routes, NetworkPolicy) and MetalLB speaker

The host joins the LAN by one veth: the control plane and CoreDNS listen on 10.245.0.1, and the
host has routes to the pod ranges (through their nodes) so that tests reach pods by their IPs,
as the single-node cluster's host does. The host forwards nothing: the nodes' and the client's
default routes point at the router, whose only links are the LAN and the client network.

That is make test-cluster's site (DEFAULT). A Site holds the addresses, pools, AS numbers and
cgroup root of one cluster's network, so that several coexist: make test-global's two regions
(REGIONS) each have a router whose uplink, instead of a client network, is a continent's router
of tests/e2e/globalnet.py.

`Fabric.remove()` deletes the namespaces (their veths and the bridge go with them) and the host's
routes; it works from what is on the machine, so it is safe after a crash and safe twice.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

LEARNED_TABLE = 100  # the router's kernel table for the routes BIRD learns
FIB_PROGRAM = "kturn-fib"  # the FIB agent's process name
BUCKETS, IDLE_S = 128, 60  # each address' resilient next-hop group: buckets, idle timer


@dataclasses.dataclass(frozen=True)
class Uplink:
    """A site router's link to a router of a wider network (tests/e2e/globalnet.py): an eBGP
    session over a /30 veth whose far end is in namespace `ns`, named `peer_if` there."""
    ns: str
    peer_if: str
    local_ip: str
    peer_ip: str
    peer_asn: int
    prefixlen: int = 30


@dataclasses.dataclass(frozen=True)
class Site:
    """One cluster's network: its namespaces' prefix, its LAN, its pods, the LoadBalancer pools
    MetalLB hands out ((name, range, auto-assign) each), the AS numbers of its router and its
    nodes' speakers, and either a client network of its own behind the router (make
    test-cluster) or an uplink to a wider network (make test-global)."""
    prefix: str
    lan: str
    cluster_cidr: str  # the pods; kube-controller-manager gives each node a /24
    pools: Tuple[Tuple[str, str, bool], ...]
    router_asn: int
    node_asn: int
    cgroup_root: str  # the kubelets' cgroupRoot (cluster.py): one per site, so two coexist
    client_net: str = ""  # a client network behind the router, or none
    uplink: Optional[Uplink] = None
    host_routes: Tuple[str, ...] = ()  # what the host reaches through this site's router

    @property
    def router_ns(self) -> str:
        return f"{self.prefix}-router"

    @property
    def client_ns(self) -> str:
        return f"{self.prefix}-client"

    @property
    def host_if(self) -> str:  # the host's end of its veth to the LAN
        return f"{self.prefix}-host"

    @property
    def host_ip(self) -> str:
        return str(ipaddress.ip_network(self.lan)[1])

    @property
    def router_lan_ip(self) -> str:
        return str(ipaddress.ip_network(self.lan)[254])

    @property
    def router_client_ip(self) -> str:
        return str(ipaddress.ip_network(self.client_net)[1])

    @property
    def client_ip(self) -> str:
        return str(ipaddress.ip_network(self.client_net)[2])

    def node_ns(self, i: int) -> str:
        return f"{self.prefix}-n{i}"

    def node_ip(self, i: int) -> str:
        return str(ipaddress.ip_network(self.lan)[10 + i])


# make test-cluster's site: one cluster, its clients behind its router.
DEFAULT = Site(prefix="kturn-c", lan="10.245.0.0/24", cluster_cidr="10.244.0.0/16",
               pools=(("kturn-pool", "10.247.0.0/28", True),), router_asn=64512,
               node_asn=64513, cgroup_root="kturn-e2e", client_net="10.246.0.0/24")
LAN = ipaddress.ip_network(DEFAULT.lan)  # the NetworkPolicies of cluster_test admit it

# make test-global's two regions (tests/e2e/globalnet.py draws the network between them): each
# announces the same Anycast address, and an address of its own from a pool of its own.
ANYCAST = "10.253.0.1"
DC_NET = "10.250.9.0/24"  # the data centre between the continents (globalnet.py)
REGIONS: Dict[str, Site] = {
    name: Site(prefix=f"kturn-r{name}", lan=f"10.248.{k}.0/24", cluster_cidr=f"10.24{k - 1}.0.0/16",
               pools=(("anycast", f"{ANYCAST}/32", False), ("unicast", f"10.252.{k}.0/28", True)),
               router_asn=64502 + 10 * k, node_asn=64503 + 10 * k, cgroup_root=f"kturn-r{name}",
               uplink=Uplink(ns=f"kturn-g-c{continent}", peer_if=f"to-{name}",
                             local_ip=f"10.250.{k}.1", peer_ip=f"10.250.{k}.2",
                             peer_asn=64600 + k),
               # The data centre's network (its DNS and media servers), through region a.
               host_routes=(DC_NET,) if name == "a" else ())
    for k, name, continent in ((1, "a", "x"), (2, "b", "y"))}


def site(name: str) -> Site:
    """"" is make test-cluster's site; "a" and "b" the regions of make test-global."""
    return REGIONS[name] if name else DEFAULT


def run(*argv: str, check: bool = True, quiet: bool = False,
        **kw) -> subprocess.CompletedProcess:
    """argv, its output captured: a failure raises (check) or is logged (unless quiet)."""
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {(r.stderr or r.stdout).strip()}")
    if not quiet and r.returncode != 0:
        print(f"cluster: {' '.join(argv)}: {(r.stderr or r.stdout).strip()}", file=sys.stderr,
              flush=True)
    return r


def in_ns(ns: str, *argv: str) -> List[str]:
    """argv run in network namespace `ns` only: the mount namespace stays the host's, so that a
    node's kubelet and containerd see each other's mounts (`ip netns exec` would give each a
    mount namespace of its own)."""
    return ["nsenter", f"--net=/run/netns/{ns}", "--", *argv]


def ns_run(ns: str, *argv: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    return run(*in_ns(ns, *argv), check=check, **kw)


def sysctl(ns: str, key: str, value: str) -> None:
    ns_run(ns, "sysctl", "-qw", f"{key}={value}")


def namespaces(prefix: str) -> List[str]:
    r = run("ip", "netns", "list", check=False, quiet=True)
    return [line.split()[0] for line in r.stdout.splitlines()
            if line.split() and line.split()[0].startswith(prefix + "-")]


class Fabric:
    def __init__(self, dirpath: str, nodes: int, where: Site = DEFAULT):
        self.dir = os.path.join(dirpath, "fabric")
        self.nodes = nodes
        self.site = where

    # --- the namespaces and their links --------------------------------------------------

    def create(self) -> None:
        site = self.site
        os.makedirs(self.dir, exist_ok=True)
        router = site.router_ns
        for ns in (router, *([site.client_ns] if site.client_net else []),
                   *(site.node_ns(i) for i in range(1, self.nodes + 1))):
            run("ip", "netns", "add", ns)
            ns_run(ns, "ip", "link", "set", "lo", "up")
        # The router: the LAN's bridge, the client network or the uplink, forwarding between.
        lan = ipaddress.ip_network(site.lan)
        ns_run(router, "ip", "link", "add", "lan", "type", "bridge")
        ns_run(router, "ip", "addr", "add", f"{site.router_lan_ip}/{lan.prefixlen}", "dev",
               "lan")
        ns_run(router, "ip", "link", "set", "lan", "up")
        sysctl(router, "net.ipv4.ip_forward", "1")
        # ECMP by flow (addresses and ports), as routers in front of a cluster do: one client's
        # calls spread over the nodes that announce an address.
        sysctl(router, "net.ipv4.fib_multipath_hash_policy", "1")
        if site.client_net:
            net = ipaddress.ip_network(site.client_net)
            self.veth(router, "client", site.client_ns, "eth0")
            ns_run(router, "ip", "addr", "add", f"{site.router_client_ip}/{net.prefixlen}",
                   "dev", "client")
            ns_run(site.client_ns, "ip", "addr", "add", f"{site.client_ip}/{net.prefixlen}",
                   "dev", "eth0")
            ns_run(site.client_ns, "ip", "route", "add", "default", "via",
                   site.router_client_ip)
        if site.uplink:
            # The wider network is the router's default route; what it announces up is BIRD's.
            up = site.uplink
            self.veth(router, "uplink", up.ns, up.peer_if)
            ns_run(router, "ip", "addr", "add", f"{up.local_ip}/{up.prefixlen}", "dev", "uplink")
            ns_run(up.ns, "ip", "addr", "add", f"{up.peer_ip}/{up.prefixlen}", "dev",
                   up.peer_if)
            ns_run(router, "ip", "route", "add", "default", "via", up.peer_ip)
        # The host's leg: a veth whose LAN end is on the router's bridge.
        run("ip", "link", "add", site.host_if, "type", "veth", "peer", "name", "host", "netns",
            router)
        self.on_lan("host")
        run("ip", "addr", "add", f"{site.host_ip}/{lan.prefixlen}", "dev", site.host_if)
        run("ip", "link", "set", site.host_if, "up")
        for dst in site.host_routes:  # they go with the host's veth
            run("ip", "route", "replace", dst, "via", site.router_lan_ip, "dev", site.host_if)
        for i in range(1, self.nodes + 1):
            ns = site.node_ns(i)
            self.veth(router, f"n{i}", ns, "eth0")
            self.on_lan(f"n{i}")
            ns_run(ns, "ip", "addr", "add", f"{site.node_ip(i)}/{lan.prefixlen}", "dev", "eth0")
            ns_run(ns, "ip", "route", "add", "default", "via", site.router_lan_ip)
            sysctl(ns, "net.ipv4.ip_forward", "1")
            # kube-proxy's and kube-router's rules see the pods' bridged traffic.
            sysctl(ns, "net.bridge.bridge-nf-call-iptables", "1")

    def veth(self, ns_a: str, name_a: str, ns_b: str, name_b: str) -> None:
        ns_run(ns_a, "ip", "link", "add", name_a, "type", "veth", "peer", "name", name_b,
               "netns", ns_b)
        ns_run(ns_a, "ip", "link", "set", name_a, "up")
        ns_run(ns_b, "ip", "link", "set", name_b, "up")

    def on_lan(self, port: str) -> None:
        ns_run(self.site.router_ns, "ip", "link", "set", port, "master", "lan", "up")

    def route_pods(self, pod_cidrs: Dict[int, str]) -> None:
        """The host's routes to each node's pods, once the nodes have their ranges; with an
        uplink the router's too, so that it forwards what the wider network sends to a pod (it
        announces the site's whole pod range up)."""
        for i, cidr in pod_cidrs.items():
            run("ip", "route", "replace", cidr, "via", self.site.node_ip(i), "dev",
                self.site.host_if)
            if self.site.uplink:
                ns_run(self.site.router_ns, "ip", "route", "replace", cidr, "via",
                       self.site.node_ip(i), "dev", "lan")

    def remove(self) -> None:
        for ns in namespaces(self.site.prefix):
            run("ip", "netns", "del", ns, check=False, quiet=True)
        # The host's veth goes with its peer; its routes with it.
        if os.path.exists(f"/sys/class/net/{self.site.host_if}"):
            run("ip", "link", "del", self.site.host_if, check=False, quiet=True)

    # --- the upstream router ----------------------------------------------------------------

    def bird_config(self) -> str:
        site = self.site
        neighbors = "\n".join(f"""
protocol bgp node{i} from speakers {{
    neighbor {site.node_ip(i)} as {site.node_asn};
}}""" for i in range(1, self.nodes + 1))
        uplink = ""
        if site.uplink:
            up = site.uplink
            uplink = f"""
# The wider network: the site's LoadBalancer addresses (the best path of each, learned from the
# speakers), its pod range and its LAN go up; nothing comes down (the default route does).
protocol static site_routes {{
    ipv4;
    route {site.cluster_cidr} blackhole;  # the nodes' /24s are kernel routes of the router
}}
protocol bgp uplink {{
    local {up.local_ip} as {site.router_asn};
    neighbor {up.peer_ip} as {up.peer_asn};
    hold time 9;
    keepalive time 3;
    error wait time 1, 10;
    ipv4 {{
        import none;
        export where proto ~ "node*" || proto = "site_routes" || proto = "lan_net";
    }};
}}
"""
        return f"""# The upstream network's router: learns the LoadBalancer addresses from the
# cluster's MetalLB speakers and routes them, across every node that announces one (ECMP).
router id {site.router_lan_ip};
log "{self.dir}/bird.log" all;

protocol device {{ scan time 2; }}
protocol direct lan_net {{ ipv4; interface "lan"; }}

# What BIRD learned from the speakers goes to a table of its own, kernel table {LEARNED_TABLE};
# the FIB agent (fib_agent(), below) forwards by it with resilient hashing.
protocol kernel {{
    kernel table {LEARNED_TABLE};
    ipv4 {{ export where source = RTS_BGP && proto ~ "node*"; }};
    merge paths on;  # one route with a next hop for each announcing node
    learn off;
}}

template bgp speakers {{
    local {site.router_lan_ip} as {site.router_asn};
    passive on;  # MetalLB's native speakers dial in, and never listen
    hold time 9;  # a node that stops answering loses its routes in 9 s (BGPPeer holdTime too)
    keepalive time 3;
    # A speaker that restarts is taken back at once (the default waits 60 s after an error).
    error wait time 1, 10;
    ipv4 {{ import all; export none; }};
}}
{neighbors}
{uplink}"""

    def bird_argv(self) -> List[str]:
        conf = os.path.join(self.dir, "bird.conf")
        with open(conf, "w") as f:
            f.write(self.bird_config())
        return in_ns(self.site.router_ns, "bird", "-f", "-c", conf, "-s", self.bird_socket())

    def bird_socket(self) -> str:
        return os.path.join(self.dir, "bird.ctl")

    def birdc(self, *args: str) -> str:
        return run("birdc", "-s", self.bird_socket(), *args).stdout

    def fib_argv(self) -> List[str]:
        """The FIB agent, in the router's namespace, named FIB_PROGRAM in the process table
        (so that cluster.py finds a leftover one)."""
        return in_ns(self.site.router_ns, "bash", "-c", f'exec -a {FIB_PROGRAM} "$0" "$@"',
                     sys.executable, os.path.abspath(__file__), "fib", self.dir)

    def lb_routes(self) -> Dict[str, List[str]]:
        """The router's kernel routes into the pools: address -> the node IPs it goes
        through."""
        pools = [ipaddress.ip_network(p) for _, p, _ in self.site.pools]
        out = ns_run(self.site.router_ns, "ip", "-j", "route", "show", "proto", "bird").stdout
        routes: Dict[str, List[str]] = {}
        for r in json.loads(out or "[]"):
            dst = r.get("dst", "")
            try:
                net = ipaddress.ip_network(dst if "/" in dst else dst + "/32")
            except ValueError:
                continue
            if any(net.subnet_of(p) for p in pools):
                hops = [h["gateway"] for h in r.get("nexthops", [])] or [r.get("gateway")]
                routes[dst.split("/")[0]] = sorted({h for h in hops if h})
        return routes


# --- the router's forwarding: resilient ECMP ------------------------------------------------------
#
# Routers in front of a cluster hash each flow onto one of the nodes that announce an address.
# Linux's plain multipath route (hash-threshold) splits the hash space into one range per next
# hop: when a node is added or removed, the ranges of the others shift too, and flows of nodes
# that did not change move. A TURN allocation is bound to the kturnd pod that holds it, so a
# moved flow is a cut call. Data-centre routers avoid that with resilient hashing, and so does
# this one: one kernel next-hop group of type resilient per LoadBalancer address, built from
# what BIRD learned. A next hop removed gives its buckets to the others; one added takes only
# buckets idle for IDLE_S seconds, so no flow in progress moves.


def learned(table: int = LEARNED_TABLE) -> Dict[str, List[str]]:
    """BIRD's routes in `table`: destination -> its next hops."""
    shown = run("ip", "-j", "route", "show", "table", str(table), check=False, quiet=True)
    found: Dict[str, List[str]] = {}
    if shown.returncode != 0:  # no such table yet: nothing learned
        return found
    for r in json.loads(shown.stdout or "[]"):
        hops = [h["gateway"] for h in r.get("nexthops", [])] or [r.get("gateway")]
        found[r["dst"]] = sorted(h for h in hops if h)
    return found


def hop_ids(gateway: str) -> List[int]:
    """The two next-hop objects of a node (see sync_fib())."""
    first = 1000 + (int(ipaddress.ip_address(gateway)) & 0xff)  # nodes are on a /24
    return [first, first + 500]


def group_id(dst: str) -> int:
    return 2000 + int(ipaddress.ip_network(dst if "/" in dst else dst + "/32").network_address) % 1000


def sync_fib(installed: Dict[str, List[str]], hops: set) -> None:
    """Brings the main table's routes (and their next-hop groups) to what BIRD learned;
    `installed` and `hops` are what the previous calls made."""
    want = learned()
    for gw in {gw for gateways in want.values() for gw in gateways} - hops:
        for nh in hop_ids(gw):
            run("ip", "nexthop", "replace", "id", str(nh), "via", gw, "dev", "lan")
        hops.add(gw)
    for dst, gateways in want.items():
        if installed.get(dst) == gateways:
            continue
        # Each node is in the group twice: the kernel hashes a packet onto a bucket (and marks
        # the bucket in use) only when a group has two entries or more, and a bucket that was
        # not marked while one node was left would move when a second came back.
        group = "/".join(str(nh) for gw in gateways for nh in hop_ids(gw))
        run("ip", "nexthop", "replace", "id", str(group_id(dst)), "group", group, "type",
            "resilient", "buckets", str(BUCKETS), "idle_timer", str(IDLE_S))
        run("ip", "route", "replace", dst, "nhid", str(group_id(dst)), "proto", "bird")
        print(f"fib: {dst} via {gateways} (was {installed.get(dst, [])})", flush=True)
        installed[dst] = gateways
    for dst in [d for d in installed if d not in want]:
        run("ip", "route", "del", dst, "proto", "bird", check=False)
        run("ip", "nexthop", "del", "id", str(group_id(dst)), check=False)
        print(f"fib: {dst} withdrawn", flush=True)
        del installed[dst]


def fib_agent() -> None:
    """Runs in the router's namespace until killed: syncs at start, on every route change
    `ip monitor` reports, and every second."""
    import select
    monitor = subprocess.Popen(["ip", "monitor", "route"], stdout=subprocess.PIPE)
    installed: Dict[str, List[str]] = {}
    hops: set = set()
    while True:
        sync_fib(installed, hops)
        ready, _, _ = select.select([monitor.stdout], [], [], 1.0)
        if ready:
            if not os.read(monitor.stdout.fileno(), 65536):
                raise SystemExit("fib: ip monitor ended")


if __name__ == "__main__":
    if sys.argv[1:2] == ["fib"]:
        fib_agent()
