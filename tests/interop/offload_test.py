#!/usr/bin/python3
"""kturnd's eBPF fast path end to end, in three network namespaces this test creates.

    client ns           kturnd ns                         peer ns
    c0 10.201.1.2 <---> s0 10.201.1.1 (TURN-UDP :3478)
                        s1 10.201.2.1           <--->     p0 10.201.2.2 (turnutils_peer :3480)

kturnd runs with `offload_engine: TC` (or XDP, --engine) on s0 and s1. A TURN client in the
client namespace (harness.TurnClient) allocates, binds a channel to coturn's turnutils_peer
and sends ChannelData of many sizes; the peer echoes every datagram. The test checks:

  * every echo comes back byte for byte;
  * the kernel relayed all of it: kturn_offload_relayed_packets_total grew by the count each
    way while kturnd's user-space share (kturn_relayed_packets_total minus the offloaded part)
    stayed flat, and kturn_offload_channels is 1;
  * once the permission expires (kturnd runs with --permission-lifetime 6), the kernel stops
    relaying by itself: later ChannelData gets no echo, the program counts it as `expired` and
    kturnd drops it for want of a permission;
  * deleting the allocation (Refresh 0) withdraws the channel: later ChannelData is not
    relayed by the kernel (no echo, offload counters flat, kturnd counts them as dropped);
  * the same payloads relayed in user space (the config switched to `offload_engine: None`
    and reloaded with SIGHUP, which detaches the program) come back identical;
  * no UDP checksum error in the client or peer namespace. With --no-tx-checksum the senders
    compute their checksums in software (ethtool -K tx off), so the receivers verify the
    checksums the program updated; otherwise veth carries CHECKSUM_PARTIAL packets, the case
    the program keeps its headers in place for.

Needs root (network namespaces, BPF): exits 77 (skipped, with the reason) without it.
Network safety: all traffic stays inside the three namespaces, which are deleted at the end.
"""

import argparse
import json
import os
import random
import re
import signal
import struct
import subprocess
import sys
import time
import urllib.request
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

SKIP = 77
Namespaces = h.ThreeNamespaces
in_netns = h.in_netns
CLIENT_IP, LISTENER_IP = Namespaces.CLIENT_IP, Namespaces.LISTENER_IP
PEER_IP = Namespaces.PEER_IP
LISTENER = (LISTENER_IP, 3478)
PEER = (PEER_IP, 3480)
METRICS = f"http://{LISTENER_IP}:9090/metrics"
HEALTH = f"http://{LISTENER_IP}:9086"
CHANNEL = 0x4000
PAYLOADS = 300
PERMISSION_LIFETIME = 6  # seconds (kturnd --permission-lifetime): the expiry phase waits it out

def udp_checksum_errors(ns: str) -> int:
    with in_netns(ns):
        with open("/proc/net/snmp") as f:
            lines = [line.split() for line in f if line.startswith("Udp:")]
    header, values = lines[0], lines[1]
    return int(values[header.index("InCsumErrors")])


def scrape() -> str:
    with urllib.request.urlopen(METRICS, timeout=5) as r:
        return r.read().decode()


def metric(text: str, name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    total = 0.0
    for m in re.finditer(rf"^{re.escape(name)}(\{{[^}}]*\}})? (\S+)$", text, re.M):
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(m.group(2))
    return total


class Counts:
    """What kturnd says it relayed (both ways), and how much of it the kernel did."""

    def __init__(self, server_ns: str) -> None:
        with in_netns(server_ns):
            text = scrape()
        self.relayed = {d: metric(text, "kturn_relayed_packets_total", direction=d)
                        for d in ("rx", "tx")}
        self.offloaded = {d: metric(text, "kturn_offload_relayed_packets_total", direction=d)
                          for d in ("rx", "tx")}
        self.channels = metric(text, "kturn_offload_channels")
        self.dropped_no_allocation = metric(text, "kturn_drops_total", reason="no_allocation")
        self.dropped_no_permission = metric(text, "kturn_drops_total", reason="no_permission")
        self.outcomes = {m.group(1): float(m.group(2)) for m in re.finditer(
            r'^kturn_offload_datagrams_total\{outcome="(\w+)"\} (\S+)$', text, re.M)}

    def user_space(self, d: str) -> float:
        return self.relayed[d] - self.offloaded[d]


def wait_for_log(proc: h.Proc, pattern: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(pattern, proc.output())
        if m:
            return m.group(0)
        if not proc.running():
            break
        time.sleep(0.1)
    raise h.TestFailure(f"kturnd never logged /{pattern}/ within {timeout:.0f} s")


def payloads() -> List[bytes]:
    """Distinct payloads (an index up front) of sizes 4 to 1200, odd ones included."""
    rng = random.Random(6062)
    sizes = [4, 5, 7, 100, 101, 1199, 1200] + [rng.randint(4, 1200) for _ in range(PAYLOADS - 7)]
    return [struct.pack("!I", i) + rng.randbytes(n - 4) for i, n in enumerate(sizes)]


def exchange(client: h.TurnClient, data: List[bytes], expect: bool) -> Dict[int, bytes]:
    """Sends every payload as unpadded ChannelData (as browsers do over UDP) and collects the
    echoes by index. Paced in bursts of 20 so no socket buffer overflows."""
    echoes: Dict[int, bytes] = {}
    for start in range(0, len(data), 20):
        for p in data[start:start + 20]:
            client.sock.sendto(struct.pack("!HH", CHANNEL, len(p)) + p, LISTENER)
        for pkt in client.drain(0.05 if expect else 0.02):
            if h.is_channel_data(pkt):
                (channel, length), body = struct.unpack("!HH", pkt[:4]), pkt[4:]
                h.check(channel == CHANNEL, f"echo on channel {channel:#x}")
                h.check(length == len(body), f"echo length {length} != {len(body)} bytes")
                echoes[struct.unpack("!I", body[:4])[0]] = body
    deadline = time.monotonic() + (3.0 if expect else 1.0)
    while (not expect or len(echoes) < len(data)) and time.monotonic() < deadline:
        for pkt in client.drain(0.1):
            if h.is_channel_data(pkt):
                body = pkt[4:]
                echoes[struct.unpack("!I", body[:4])[0]] = body
    return echoes


def bound_client(ns: Namespaces) -> h.TurnClient:
    """A TURN client in the client namespace with an allocation and CHANNEL bound to PEER."""
    with in_netns(ns.client):
        client = h.TurnClient(LISTENER, h.STATIC_USER, h.STATIC_PASS, local_host=CLIENT_IP)
    h.register_cleanup(client.close)
    client.allocate()
    resp = client.channel_bind(CHANNEL, PEER)
    h.check(resp.cls == h.SUCCESS, f"ChannelBind: {resp.describe()}")
    return client


def forwarding_off(ns: Namespaces, kturnd: h.Proc, data: List[bytes]) -> None:
    """IPv4 forwarding off in kturnd's namespace: the program is attached but bpf_fib_lookup()
    refuses every datagram (outcome `route`). kturnd says so once per interface at WARN and in
    /status, and user space relays everything."""
    for dev in ("s0", "s1"):
        line = wait_for_log(kturnd, rf"warn.*IPv4 forwarding is off on {dev} .*")
        print(f"logged: {line.strip()}")
    client = bound_client(ns)
    before = Counts(ns.server)
    echoes = exchange(client, data, expect=True)
    after = Counts(ns.server)
    h.check(len(echoes) == len(data) and all(echoes[i] == p for i, p in enumerate(data)),
            f"forwarding off: {len(echoes)}/{len(data)} echoes came back intact")
    for d in ("rx", "tx"):
        h.check(after.offloaded[d] == before.offloaded[d],
                f"the kernel relayed ({d}) with forwarding off")
    routed = after.outcomes.get("route", 0) - before.outcomes.get("route", 0)
    h.check(routed >= len(data), f"outcome route grew by {routed:.0f}, expected {len(data)}")
    with in_netns(ns.server):
        with urllib.request.urlopen(HEALTH + "/status", timeout=5) as r:
            status = json.loads(r.read())["admin"].get("offload_status", {})
    problems = status.get("problems", [])
    h.check(len(problems) == 2 and all(f"off on {d} " in " ".join(problems) for d in ("s0", "s1")),
            f"/status admin.offload_status: {status}")
    log = kturnd.output()
    h.check(all(log.count(f"IPv4 forwarding is off on {d} ") == 1 for d in ("s0", "s1")),
            "the forwarding warning is not logged exactly once per interface")
    print(f"forwarding off: {len(data)} payloads relayed in user space, {routed:.0f} refused by "
          f"the kernel with outcome route; /status: {status}")


def wait_for_listener(ns: Namespaces, kturnd: h.Proc) -> None:
    """Until kturnd in the kturnd namespace answers a STUN Binding request from the client's."""
    with in_netns(ns.client):
        deadline = time.monotonic() + 10
        while h.stun_binding_probe(LISTENER, timeout=0.2) is None:
            h.check(time.monotonic() < deadline and kturnd.running(),
                    "kturnd did not answer a STUN Binding request within 10 s")


def namespace_config(name: str, engine: str) -> dict:
    """kturnd's config in the kturnd namespace: TURN-UDP on LISTENER with static credentials,
    the fast path (`engine`) on s0 and s1, health and metrics on LISTENER_IP, the peer routed."""
    return {
        "version": "v1",
        "admin": {"name": name, "loglevel": "all:INFO", "healthcheck_endpoint": HEALTH,
                  "metrics_endpoint": METRICS, "offload_engine": engine,
                  "offload_interfaces": ["s0", "s1"]},
        "auth": {"type": "static", "realm": h.REALM,
                 "credentials": {"username": h.STATIC_USER, "password": h.STATIC_PASS}},
        "listeners": [{"name": "udp", "protocol": "TURN-UDP", "address": LISTENER_IP,
                       "port": LISTENER[1], "min_relay_port": 20000, "max_relay_port": 20999,
                       "routes": ["media"]}],
        "clusters": [{"name": "media", "type": "STATIC", "endpoints": [f"{PEER_IP}/32"]}],
    }


def body(args: argparse.Namespace, workdir: str) -> None:
    ns = Namespaces("kto").create()
    if args.no_tx_checksum:
        ns.ethtool(ns.client, "c0", "tx", "off")
        ns.ethtool(ns.peer, "p0", "tx", "off")
    if args.engine == "XDP":
        # A veth delivers redirected XDP frames only to a peer with NAPI on (GRO, or XDP).
        ns.ethtool(ns.client, "c0", "gro", "on")
        ns.ethtool(ns.peer, "p0", "gro", "on")

    peer = h.Proc("turnutils_peer", ["ip", "netns", "exec", ns.peer, "turnutils_peer", "-L",
                                     PEER_IP, "-p", str(PEER[1])], workdir)
    h.register_log(peer.log_path)
    peer.start()

    if args.forwarding_off:  # a fresh Debian host's default
        ns.run("ip", "netns", "exec", ns.server, "sysctl", "-q", "-w", "net.ipv4.ip_forward=0")
    config = namespace_config("offload", args.engine)
    config_path = os.path.join(workdir, "config.yaml")

    def write_config() -> None:
        with open(config_path, "w") as f:
            f.write(h.to_yaml(config) + "\n")

    write_config()
    h.register_log(config_path)
    kturnd = h.Proc("kturnd", ["ip", "netns", "exec", ns.server, os.path.abspath(args.kturnd),
                               "-c", f"file://{config_path}",
                               "--permission-lifetime", str(PERMISSION_LIFETIME)], workdir)
    h.register_log(kturnd.log_path)
    kturnd.start()
    wait_for_listener(ns, kturnd)
    attached = wait_for_log(kturnd, r"offload: .*|relaying in user space")
    h.check(f"{args.engine} on" in attached and "s0" in attached and "s1" in attached,
            f"kturnd did not attach {args.engine} to s0 and s1: '{attached}'")

    data = payloads()
    if args.forwarding_off:
        return forwarding_off(ns, kturnd, data)
    # ---- relayed by the kernel ----
    client = bound_client(ns)
    bound_at = time.monotonic()
    # One round trip first, not counted: XDP leaves a peer whose neighbour entry is not resolved
    # yet to the stack (kturnd sends it, the kernel resolves the address), where TC resolves it.
    h.check(len(exchange(client, [struct.pack("!I", 1 << 31)], expect=True)) == 1,
            "no echo of the first ChannelData")
    before = Counts(ns.server)
    kernel_echoes = exchange(client, data, expect=True)
    after = Counts(ns.server)
    h.check(len(kernel_echoes) == len(data),
            f"offloaded: {len(kernel_echoes)}/{len(data)} echoes came back; the program's "
            f"outcomes: {after.outcomes}")
    for i, p in enumerate(data):
        h.check(kernel_echoes[i] == p, f"offloaded: echo {i} differs from what was sent")
    for d in ("rx", "tx"):
        grown = after.offloaded[d] - before.offloaded[d]
        h.check(grown == len(data), f"kturn_offload_relayed_packets_total{{direction={d}}} grew "
                                    f"by {grown:.0f}, expected {len(data)}")
        h.check(after.user_space(d) == before.user_space(d),
                f"user space relayed {after.user_space(d) - before.user_space(d):.0f} packets "
                f"({d}) while the kernel held the channel")
    h.check(after.channels == 1, f"kturn_offload_channels is {after.channels:.0f}, expected 1")
    print(f"offloaded: {len(data)} payloads each way by the kernel, 0 by kturnd")
    h.check(time.monotonic() - bound_at < PERMISSION_LIFETIME - 1,
            "the offloaded phase outlasted the permission: the counts above are not trustworthy")

    # ---- the permission expires: the kernel stops on its own ----
    time.sleep(max(0.0, bound_at + PERMISSION_LIFETIME + 0.5 - time.monotonic()))
    late = exchange(client, data[:20], expect=False)
    expired = Counts(ns.server)
    h.check(not late, f"{len(late)} echoes came back after the permission expired")
    h.check(expired.offloaded == after.offloaded,
            f"the kernel relayed past the permission's expiry: {expired.offloaded}")
    grown = expired.outcomes.get("expired", 0) - after.outcomes.get("expired", 0)
    h.check(grown >= 20, f"the program counted {grown:.0f} datagrams as expired, expected 20")
    h.check(expired.dropped_no_permission - after.dropped_no_permission == 20,
            "kturnd did not drop the 20 late ChannelData for want of a permission")
    after = expired
    print("expired: past the permission's lifetime the kernel leaves the datagrams to kturnd")

    # ---- withdrawn with the allocation ----
    resp = client.refresh(0)
    h.check(resp.cls == h.SUCCESS, f"Refresh(0): {resp.describe()}")
    late = exchange(client, data[:20], expect=False)
    gone = Counts(ns.server)
    h.check(not late, f"{len(late)} echoes came back after the allocation was deleted")
    h.check(gone.offloaded == after.offloaded,
            f"the kernel relayed after the allocation ended: {gone.offloaded} vs {after.offloaded}")
    h.check(gone.channels == 0, f"kturn_offload_channels is {gone.channels:.0f} after Refresh(0)")
    h.check(gone.dropped_no_allocation - after.dropped_no_allocation == 20,
            "kturnd did not count the 20 late ChannelData as dropped (no allocation)")
    print("withdrawn: after Refresh(0) the kernel relays nothing and kturnd drops the rest")

    # ---- the same through user space ----
    config["admin"]["offload_engine"] = "None"
    write_config()
    os.kill(kturnd.proc.pid, signal.SIGHUP)
    wait_for_log(kturnd, r"offload: detached")
    plain = bound_client(ns)
    before = Counts(ns.server)
    user_echoes = exchange(plain, data, expect=True)
    after = Counts(ns.server)
    h.check(len(user_echoes) == len(data),
            f"user space: {len(user_echoes)}/{len(data)} echoes came back")
    h.check(user_echoes == kernel_echoes,
            "the echoes relayed in user space differ from those relayed by the kernel")
    for d in ("rx", "tx"):
        h.check(after.offloaded[d] == before.offloaded[d], "the kernel relayed with offload off")
        h.check(after.user_space(d) - before.user_space(d) == len(data),
                f"user space relayed {after.user_space(d) - before.user_space(d):.0f} packets "
                f"({d}), expected {len(data)}")
    print("user space: the same payloads, byte for byte")

    for name in (ns.client, ns.peer):
        errors = udp_checksum_errors(name)
        h.check(errors == 0, f"{errors} UDP checksum errors in namespace {name}")

    # ---- attached again at run time, detached at exit ----
    config["admin"]["offload_engine"] = args.engine
    write_config()
    os.kill(kturnd.proc.pid, signal.SIGHUP)
    wait_for_log(kturnd, rf"config applied(.|\n)*offload: {args.engine} on s0, s1")
    h.check(ns.attached_programs().count(f": {args.engine} (") == 2,
            f"not attached to s0 and s1 after the reload: '{ns.attached_programs()}'")
    resp = plain.refresh(0)  # no allocation left: SIGTERM's drain ends at once
    h.check(resp.cls == h.SUCCESS, f"Refresh(0): {resp.describe()}")
    kturnd.proc.send_signal(signal.SIGTERM)
    h.check(kturnd.wait(10) == 0, "kturnd did not exit cleanly")
    left = ns.attached_programs()
    h.check(not left, f"kturnd left its program attached:\n{left}")
    print("detached: kturnd's exit leaves no program on s0 or s1")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--engine", choices=("TC", "XDP"), default="TC")
    p.add_argument("--no-tx-checksum", action="store_true",
                   help="senders compute UDP checksums in software (ethtool -K tx off)")
    p.add_argument("--forwarding-off", action="store_true",
                   help="IPv4 forwarding off in kturnd's namespace: said once, relayed in user "
                        "space")
    args, _ = p.parse_known_args()
    if os.geteuid() != 0 or not os.path.isdir("/proc/sys/net"):
        print("SKIP: needs root for network namespaces and BPF")
        sys.exit(SKIP)
    probe = subprocess.run(["ip", "netns", "add", f"kto-probe-{os.getpid()}"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if probe.returncode != 0:
        print(f"SKIP: cannot create a network namespace: {probe.stdout.strip()}")
        sys.exit(SKIP)
    subprocess.run(["ip", "netns", "del", f"kto-probe-{os.getpid()}"])
    suffix = ("-csum" if args.no_tx_checksum else "") + ("-nofwd" if args.forwarding_off else "")
    h.run_test(f"offload-{args.engine.lower()}{suffix}", body, p)


if __name__ == "__main__":
    main()
