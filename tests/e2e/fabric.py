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

`Fabric.remove()` deletes the namespaces (their veths and the bridge go with them) and the host's
routes; it works from what is on the machine, so it is safe after a crash and safe twice.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
from typing import Dict, List

PREFIX = "kturn-c"  # every namespace and host interface this module makes starts with it
ROUTER_NS = f"{PREFIX}-router"
CLIENT_NS = f"{PREFIX}-client"
HOST_IF = f"{PREFIX}-host"  # the host's end of its veth to the LAN
LAN = ipaddress.ip_network("10.245.0.0/24")
HOST_IP = "10.245.0.1"
ROUTER_LAN_IP = "10.245.0.254"
CLIENT_NET = ipaddress.ip_network("10.246.0.0/24")
ROUTER_CLIENT_IP = "10.246.0.1"
CLIENT_IP = "10.246.0.2"
LB_POOL = "10.247.0.0/28"  # MetalLB's IPAddressPool: the LoadBalancer addresses
CLUSTER_CIDR = "10.244.0.0/16"  # the pods; kube-controller-manager gives each node a /24
LEARNED_TABLE = 100  # the router's kernel table for the routes BIRD learns
FIB_PROGRAM = "kturn-fib"  # the FIB agent's process name
BUCKETS, IDLE_S = 128, 60  # each address' resilient next-hop group: buckets, idle timer
ROUTER_ASN = 64512  # the upstream network
NODE_ASN = 64513  # the cluster's speakers (MetalLB), one AS for every node


def node_ns(i: int) -> str:
    return f"{PREFIX}-n{i}"


def node_ip(i: int) -> str:
    return str(LAN.network_address + 10 + i)


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


def namespaces() -> List[str]:
    r = run("ip", "netns", "list", check=False, quiet=True)
    return [line.split()[0] for line in r.stdout.splitlines()
            if line.split() and line.split()[0].startswith(PREFIX + "-")]


class Fabric:
    def __init__(self, dirpath: str, nodes: int):
        self.dir = os.path.join(dirpath, "fabric")
        self.nodes = nodes

    # --- the namespaces and their links --------------------------------------------------

    def create(self) -> None:
        os.makedirs(self.dir, exist_ok=True)
        for ns in (ROUTER_NS, CLIENT_NS, *(node_ns(i) for i in range(1, self.nodes + 1))):
            run("ip", "netns", "add", ns)
            ns_run(ns, "ip", "link", "set", "lo", "up")
        # The router: the LAN's bridge, the client network, forwarding between them.
        ns_run(ROUTER_NS, "ip", "link", "add", "lan", "type", "bridge")
        ns_run(ROUTER_NS, "ip", "addr", "add", f"{ROUTER_LAN_IP}/{LAN.prefixlen}", "dev", "lan")
        ns_run(ROUTER_NS, "ip", "link", "set", "lan", "up")
        sysctl(ROUTER_NS, "net.ipv4.ip_forward", "1")
        # ECMP by flow (addresses and ports), as routers in front of a cluster do: one client's
        # calls spread over the nodes that announce an address.
        sysctl(ROUTER_NS, "net.ipv4.fib_multipath_hash_policy", "1")
        self.veth(ROUTER_NS, "client", CLIENT_NS, "eth0")
        ns_run(ROUTER_NS, "ip", "addr", "add", f"{ROUTER_CLIENT_IP}/{CLIENT_NET.prefixlen}",
               "dev", "client")
        ns_run(CLIENT_NS, "ip", "addr", "add", f"{CLIENT_IP}/{CLIENT_NET.prefixlen}", "dev",
               "eth0")
        ns_run(CLIENT_NS, "ip", "route", "add", "default", "via", ROUTER_CLIENT_IP)
        # The host's leg: a veth whose LAN end is on the router's bridge.
        run("ip", "link", "add", HOST_IF, "type", "veth", "peer", "name", "host", "netns",
            ROUTER_NS)
        self.on_lan("host")
        run("ip", "addr", "add", f"{HOST_IP}/{LAN.prefixlen}", "dev", HOST_IF)
        run("ip", "link", "set", HOST_IF, "up")
        for i in range(1, self.nodes + 1):
            ns = node_ns(i)
            self.veth(ROUTER_NS, f"n{i}", ns, "eth0")
            self.on_lan(f"n{i}")
            ns_run(ns, "ip", "addr", "add", f"{node_ip(i)}/{LAN.prefixlen}", "dev", "eth0")
            ns_run(ns, "ip", "route", "add", "default", "via", ROUTER_LAN_IP)
            sysctl(ns, "net.ipv4.ip_forward", "1")
            # kube-proxy's and kube-router's rules see the pods' bridged traffic.
            sysctl(ns, "net.bridge.bridge-nf-call-iptables", "1")

    def veth(self, ns_a: str, name_a: str, ns_b: str, name_b: str) -> None:
        ns_run(ns_a, "ip", "link", "add", name_a, "type", "veth", "peer", "name", name_b,
               "netns", ns_b)
        ns_run(ns_a, "ip", "link", "set", name_a, "up")
        ns_run(ns_b, "ip", "link", "set", name_b, "up")

    def on_lan(self, port: str) -> None:
        ns_run(ROUTER_NS, "ip", "link", "set", port, "master", "lan", "up")

    def route_pods(self, pod_cidrs: Dict[int, str]) -> None:
        """The host's routes to each node's pods, once the nodes have their ranges."""
        for i, cidr in pod_cidrs.items():
            run("ip", "route", "replace", cidr, "via", node_ip(i), "dev", HOST_IF)

    def remove(self) -> None:
        for ns in namespaces():
            run("ip", "netns", "del", ns, check=False, quiet=True)
        # The host's veth goes with its peer; its routes with it.
        if os.path.exists(f"/sys/class/net/{HOST_IF}"):
            run("ip", "link", "del", HOST_IF, check=False, quiet=True)

    # --- the upstream router ----------------------------------------------------------------

    def bird_config(self) -> str:
        neighbors = "\n".join(f"""
protocol bgp node{i} from speakers {{
    neighbor {node_ip(i)} as {NODE_ASN};
}}""" for i in range(1, self.nodes + 1))
        return f"""# The upstream network's router: learns the LoadBalancer addresses from the
# cluster's MetalLB speakers and routes them, across every node that announces one (ECMP).
router id {ROUTER_LAN_IP};
log "{self.dir}/bird.log" all;

protocol device {{ scan time 2; }}
protocol direct {{ ipv4; interface "lan", "client"; }}

# What BIRD learned goes to a table of its own, kernel table {LEARNED_TABLE}; the FIB agent
# (fib_agent(), below) forwards by it with resilient hashing.
protocol kernel {{
    kernel table {LEARNED_TABLE};
    ipv4 {{ export where source = RTS_BGP; }};
    merge paths on;  # one route with a next hop for each announcing node
    learn off;
}}

template bgp speakers {{
    local {ROUTER_LAN_IP} as {ROUTER_ASN};
    passive on;  # MetalLB's native speakers dial in, and never listen
    hold time 9;  # a node that stops answering loses its routes in 9 s (BGPPeer holdTime too)
    keepalive time 3;
    # A speaker that restarts is taken back at once (the default waits 60 s after an error).
    error wait time 1, 10;
    ipv4 {{ import all; export none; }};
}}
{neighbors}
"""

    def bird_argv(self) -> List[str]:
        conf = os.path.join(self.dir, "bird.conf")
        with open(conf, "w") as f:
            f.write(self.bird_config())
        return in_ns(ROUTER_NS, "bird", "-f", "-c", conf, "-s", self.bird_socket())

    def bird_socket(self) -> str:
        return os.path.join(self.dir, "bird.ctl")

    def birdc(self, *args: str) -> str:
        return run("birdc", "-s", self.bird_socket(), *args).stdout

    def fib_argv(self) -> List[str]:
        """The FIB agent, in the router's namespace, named FIB_PROGRAM in the process table
        (so that cluster.py finds a leftover one)."""
        return in_ns(ROUTER_NS, "bash", "-c", f'exec -a {FIB_PROGRAM} "$0" "$@"',
                     sys.executable, os.path.abspath(__file__), "fib", self.dir)

    def lb_routes(self) -> Dict[str, List[str]]:
        """The router's kernel routes into the pool: address -> the node IPs it goes through."""
        pool = ipaddress.ip_network(LB_POOL)
        out = ns_run(ROUTER_NS, "ip", "-j", "route", "show", "proto", "bird").stdout
        routes: Dict[str, List[str]] = {}
        for r in json.loads(out or "[]"):
            dst = r.get("dst", "")
            try:
                if ipaddress.ip_network(dst if "/" in dst else dst + "/32").subnet_of(pool):
                    hops = [h["gateway"] for h in r.get("nexthops", [])] or [r.get("gateway")]
                    routes[dst.split("/")[0]] = sorted({h for h in hops if h})
            except ValueError:
                continue
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
    first = 1000 + int(ipaddress.ip_address(gateway)) - int(LAN.network_address)
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
