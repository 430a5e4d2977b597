"""Loopback addresses, free ports, relay port windows, and network namespaces (the eBPF fast
path's end-to-end test and bench/compare's offload scenario)."""

from __future__ import annotations

import ctypes
import os
import random
import socket
import subprocess
import sys
from contextlib import contextmanager
from typing import List, Optional, Tuple

from .runner import TestFailure, register_cleanup

LOOPBACK = "127.0.0.1"
LOOPBACK6 = "::1"


def family_of(host: str) -> int:
    """AF_INET6 for an IPv6 literal, AF_INET otherwise."""
    return socket.AF_INET6 if ":" in host else socket.AF_INET


# ---------------------------------------------------------------------------------------------
# Ports
# ---------------------------------------------------------------------------------------------

RESERVED_PORTS = {3478, 3479, 5349, 5350, 8080, 8086, 13478}
_handed_out: set = set()


# free_port()'s ports: below the relay windows (relay_port_range()) and below the kernel's
# ephemeral range, which every outgoing connection on the machine draws from: a listener port
# picked there (port 0) was now and then taken by another test's connection before the server
# under test bound it ("in use by a process this one cannot see").
FREE_PORTS = (10000, 20000)


def free_port(host: str = LOOPBACK, udp_only: bool = False) -> int:
    """A port free for both UDP and TCP on host (best effort: another test picking from the same
    range can still race)."""
    for _ in range(200):
        port = random.randrange(*FREE_PORTS)
        if port in RESERVED_PORTS or port in _handed_out:
            continue
        with socket.socket(family_of(host), socket.SOCK_DGRAM) as u:
            try:
                u.bind((host, port))
            except OSError:
                continue
            if not udp_only:
                try:
                    with socket.socket(family_of(host), socket.SOCK_STREAM) as t:
                        t.bind((host, port))
                except OSError:
                    continue
        _handed_out.add(port)
        return port
    raise TestFailure("could not find a free port in 200 tries")


_RELAY_WINDOWS = "/tmp/kturn-interop-relay-windows"


def _claim_window(w: int) -> bool:
    """Claims 200-port window `w` for this process (an O_EXCL file naming it); a window whose
    process is gone (a killed test) is claimed again."""
    path = os.path.join(_RELAY_WINDOWS, str(w))
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                with open(path) as f:
                    owner = int(f.read().strip() or "0")
                os.kill(owner, 0)
                return False  # held by a live test
            except (OSError, ValueError):
                try:
                    os.unlink(path)  # its test is gone
                except OSError:
                    pass
                continue
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        register_cleanup(lambda path=path: os.path.exists(path) and os.unlink(path))
        return True
    return False


def relay_port_range(size: int = 200) -> Tuple[int, int]:
    """A relay window below the kernel's ephemeral range and above free_port()'s ports, of its
    own among the tests running at once: made of 200-port units, each claimed with an O_EXCL
    file naming the claiming process and released at exit. Random windows used to overlap now
    and then, and a test that fills its window starved its neighbour into 508s. Servers whose
    config has no relay range (STUNner's default, 1-65535) can still land in any window: a test
    that needs most of its ports asks for more than it needs."""
    unit = 200
    units = (size + unit - 1) // unit
    os.makedirs(_RELAY_WINDOWS, exist_ok=True)
    starts = list(range((30000 - 20000) // unit - units + 1))
    random.shuffle(starts)
    for w in starts:
        claimed = []
        for u in range(w, w + units):
            if not _claim_window(u):
                break
            claimed.append(u)
        if len(claimed) == units:
            base = 20000 + w * unit
            return base, base + size - 1
        for u in claimed:  # a partial claim: give it back
            path = os.path.join(_RELAY_WINDOWS, str(u))
            if os.path.exists(path):
                os.unlink(path)
    base = random.randrange(20000, 30000 - size)  # every window claimed: share one
    return base, base + size - 1


def free_udp_port_pair(host: str = LOOPBACK) -> int:
    """A UDP port p with p + 1 free too: turnutils_peer echoes on both (RTP and RTCP), and
    uclient sends its RTCP to p + 1."""
    for _ in range(50):
        port = free_port(host, udp_only=True)
        if port % 2 == 1 or port + 1 in _handed_out:
            continue
        try:
            with socket.socket(family_of(host), socket.SOCK_DGRAM) as u:
                u.bind((host, port + 1))
        except OSError:
            continue
        _handed_out.add(port + 1)
        return port
    raise TestFailure("could not find a free UDP port pair in 50 tries")


# ---------------------------------------------------------------------------------------------
# Network namespaces
# ---------------------------------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWNET = 0x40000000


@contextmanager
def in_netns(name: Optional[str]):
    """Runs the block (this thread) in network namespace `name` (None: where it is); sockets
    made there stay there."""
    if name is None:
        yield
        return
    root = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if _libc.setns(target, _CLONE_NEWNET) != 0:
            raise TestFailure(f"setns({name}): {os.strerror(ctypes.get_errno())}")
        yield
    finally:
        _libc.setns(root, _CLONE_NEWNET)
        os.close(root)
        os.close(target)


class ThreeNamespaces:
    """client (c0) <-> (s0) server (s1) <-> (p0) peer: three network namespaces joined by two
    veth pairs, forwarding on in the server's (bpf_fib_lookup() routes only for interfaces that
    forward). Deleted by delete(), which create() also registers as a cleanup."""

    CLIENT_IP, LISTENER_IP = "10.201.1.2", "10.201.1.1"
    RELAY_SIDE_IP, PEER_IP = "10.201.2.1", "10.201.2.2"

    def __init__(self, prefix: str) -> None:
        self.client, self.server, self.peer = (f"{prefix}-{r}-{os.getpid()}" for r in "csp")
        self.made: List[str] = []

    @staticmethod
    def run(*argv: str) -> None:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise TestFailure(f"{' '.join(argv)}: exit {r.returncode}: {r.stdout.strip()}")

    def create(self) -> "ThreeNamespaces":
        run = self.run
        register_cleanup(self.delete)
        for ns in (self.client, self.server, self.peer):
            run("ip", "netns", "add", ns)
            self.made.append(ns)
            run("ip", "-n", ns, "link", "set", "lo", "up")
        run("ip", "link", "add", "c0", "netns", self.client, "type", "veth", "peer", "name", "s0",
            "netns", self.server)
        run("ip", "link", "add", "s1", "netns", self.server, "type", "veth", "peer", "name", "p0",
            "netns", self.peer)
        for ns, dev, cidr in ((self.client, "c0", f"{self.CLIENT_IP}/24"),
                              (self.server, "s0", f"{self.LISTENER_IP}/24"),
                              (self.server, "s1", f"{self.RELAY_SIDE_IP}/24"),
                              (self.peer, "p0", f"{self.PEER_IP}/24")):
            run("ip", "-n", ns, "addr", "add", cidr, "dev", dev)
            run("ip", "-n", ns, "link", "set", dev, "up")
        run("ip", "-n", self.client, "route", "add", "default", "via", self.LISTENER_IP)
        run("ip", "-n", self.peer, "route", "add", "default", "via", self.RELAY_SIDE_IP)
        run("ip", "netns", "exec", self.server, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
        return self

    def ethtool(self, ns: str, dev: str, *settings: str) -> None:
        self.run("ip", "netns", "exec", ns, "ethtool", "-K", dev, *settings)

    def attached_programs(self) -> str:
        """What is attached to s0 and s1: XDP programs (`prog/xdp` in ip's details) and TC
        ingress filters (kturn's is named kturn_tc), a line each; empty when nothing is."""
        found = []
        for dev in ("s0", "s1"):
            link = subprocess.run(["ip", "-n", self.server, "-d", "link", "show", "dev", dev],
                                  stdout=subprocess.PIPE, text=True).stdout
            if "prog/xdp" in link:
                found.append(f"{dev}: XDP ({link.strip().splitlines()[-1].strip()})")
            tc = subprocess.run(["tc", "-n", self.server, "filter", "show", "dev", dev, "ingress"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True).stdout
            if "kturn_tc" in tc:
                found.append(f"{dev}: TC ({tc.strip()})")
        return "\n".join(found)

    def delete(self) -> None:
        for ns in self.made:
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
        self.made = []


class PodNetwork:
    """Media "pods" for a test that puts their addresses in an EndpointSlice (the API server
    refuses loopback ones there): a network namespace of the test's own holding one address per
    pod, joined to the test's namespace by a veth pair whose near end has GATEWAY_IP. kturnd
    listens on the gateway address, so its relay sockets (bound to the address the client
    reached) can send to the pods. Needs root. Deleted by delete(), which create() registers."""

    def __init__(self, pods: int = 2) -> None:
        self.ns = f"kturn-pods-{os.getpid()}"
        self.dev = f"kpod{os.getpid() % 100000}"
        self.subnet = self._free_subnet()
        self.gateway_ip = f"10.204.{self.subnet}.1"
        self.pod_ips = [f"10.204.{self.subnet}.{2 + i}" for i in range(pods)]
        self.made = False

    @staticmethod
    def _free_subnet() -> int:
        """A 10.204.N.0/24 no interface of this namespace has (tests run side by side)."""
        used = subprocess.run(["ip", "-o", "-4", "addr", "show"], stdout=subprocess.PIPE,
                              text=True).stdout
        start = os.getpid() % 250
        for i in range(250):
            n = (start + i) % 250 + 1
            if f" 10.204.{n}." not in used:
                return n
        raise TestFailure("no free 10.204.N.0/24 for the pod network")

    def create(self) -> "PodNetwork":
        run = ThreeNamespaces.run
        register_cleanup(self.delete)
        run("ip", "netns", "add", self.ns)
        self.made = True
        run("ip", "-n", self.ns, "link", "set", "lo", "up")
        run("ip", "link", "add", self.dev, "type", "veth", "peer", "name", "eth0", "netns",
            self.ns)
        run("ip", "addr", "add", f"{self.gateway_ip}/24", "dev", self.dev)
        run("ip", "link", "set", self.dev, "up")
        for ip in self.pod_ips:
            run("ip", "-n", self.ns, "addr", "add", f"{ip}/24", "dev", "eth0")
        run("ip", "-n", self.ns, "link", "set", "eth0", "up")
        return self

    def delete(self) -> None:
        if self.made:  # the veth pair goes with the namespace
            subprocess.run(["ip", "netns", "del", self.ns], stderr=subprocess.DEVNULL)
            self.made = False


def root_or_skip(why: str) -> None:
    """Exits 77 (ctest's skip) with the reason when network namespaces cannot be made here."""
    if os.geteuid() != 0 or not os.path.isdir("/proc/sys/net"):
        print(f"SKIP: needs root for {why}")
        sys.exit(77)
