#!/usr/bin/python3
"""kturn in two regions behind one Anycast address and GeoDNS (source document 001), each region a
multi-node cluster of its own (tests/e2e/cluster.py --site a|b) joined by the continents' network
of tests/e2e/globalnet.py, clients on two continents. make test-global runs it.

  0. The topology: each region's nodes and its router's BGP sessions with its speakers, the
     continents' sessions with their regions and with each other.
  1. In each region the chart, its Gateway asking for the Anycast address (kturn.io/region, and
     the other region's own address as its alternate), a second LoadBalancer Service with the
     region's own address, and the media echo in the data centre (a StaticService) as the
     route's backend. Each continent's router reaches the Anycast address through its region.
  2. Nearest region: GeoDNS answers X with region a's address and Y with b's; one kturn-auth in
     the data centre, following both regions' config discovery (each with its own token and CA),
     gives each continent's clients their region's ICE servers first and the other's as the
     fallback; calls from each continent, by the Anycast address and by the GeoDNS answer, are
     served in its region (kturnd's session records, and its metrics' region label).
  3. A node of region a lost: only its calls are cut; the region stays announced.
  4. Region a down (its nodes cut off its router): the Anycast route is withdrawn and X's new
     allocations land in region b (both timed); a WebRTC call of X (headless Chromium, relay
     only, to Janus in the data centre) recovers by an ICE restart through region b (timed from
     the loss to media flowing again); Y's calls lose nothing. Region a back: X's new
     allocations return to it, Y's call across the return loses nothing.
  5. Region a full (its pods' capacity marks crossed under a synthetic load): X's new calls are
     redirected to region b's own address (300 Try Alternate) and relay with no loss, while
     every call already in region a keeps flowing (packets sent, echoed, lost per call).

  /usr/bin/python3 tests/e2e/global_test.py --dir DIR --kturn-auth BUILD/kturn-auth
      (DIR: run-global.sh's folder, with net/, a/ and b/)
"""

from __future__ import annotations

import argparse
import base64
import ipaddress
import json
import os
import re
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cluster  # noqa: E402
import cluster_test as ct  # noqa: E402  (the multi-node test's steps and helpers)
import e2e_test as e2e  # noqa: E402
import fabric  # noqa: E402
import globalnet  # noqa: E402
import janus  # noqa: E402  (tests/interop/janus.py: the browser's call, Janus, their checks)

h = e2e.h
cp = e2e.cp
GW_NS, GW_NAME = e2e.GW_NS, e2e.GW_NAME
KTURND = ct.KTURND
ANYCAST_SVC = "turn-anycast"
CDS_SVC = "cds-public"  # config discovery for the data centre's kturn-auth
GLOBAL_AUTH_PORT = 8090  # the data centre's kturn-auth (Janus's HTTP API has 8088)
MEDIA = "dc-media"  # the StaticService of the data centre's media echo
REPLICAS = {"a": 2, "b": 1}
HEADROOM = 20  # step 5's capacity mark: this many allocations above what a pod holds already
op_wait = ct.op_wait


class Region:
    def __init__(self, top: str, name: str):
        self.name = name
        self.dir = os.path.join(top, name)
        self.site = fabric.REGIONS[name]
        self.c = e2e.Cluster(self.dir)
        self.env = self.c.env
        self.net = fabric.Fabric(self.dir, 0, self.site)
        self.unicast = globalnet.region_unicast(name)
        self.cds = globalnet.region_cds(name)
        self.pods: List[dict] = []

    def node_ips(self) -> Dict[str, str]:
        return dict(zip(self.env["NODES"].split(","), self.env["NODE_IPS"].split(",")))

    def holds(self, relay: str) -> bool:
        """Whether a relayed address (a kturnd pod's IP) is one of this region's pods'."""
        return ipaddress.ip_address(relay) in ipaddress.ip_network(self.site.cluster_cidr)


class Continent:
    def __init__(self, env: Dict[str, str], key: str):
        k = key.upper()
        self.key = key
        self.ns, self.ip = env[f"CLIENT_{k}_NETNS"], env[f"CLIENT_{k}_IP"]
        self.router_ns = env[f"ROUTER_{k}_NETNS"]
        self.bird = env[f"BIRD_{k}_SOCKET"]
        self.prefix = fabric.in_ns(self.ns)
        # cluster_test's helpers read the client's namespace and address from an env.
        self.env = {"CLIENT_NETNS": self.ns, "CLIENT_IP": self.ip}

    def path(self, address: str) -> Optional[str]:
        """The region this continent's router sends `address` to now: "a", "b" or None."""
        r = fabric.ns_run(self.router_ns, "ip", "-j", "route", "show", address, check=False,
                          quiet=True)
        routes = json.loads(r.stdout or "[]")
        if not routes:
            return None
        gw = routes[0].get("gateway", "")
        for name, site in fabric.REGIONS.items():
            if gw == site.uplink.local_ip:
                return name
        # Through the other continent: the region that continent's router reaches directly.
        other = next(c for c in globalnet.CONTINENTS if c.core_ip == gw)
        return other.region

    def established(self) -> List[str]:
        out = fabric.run("birdc", "-s", self.bird, "show", "protocols").stdout
        return [line.split()[0] for line in out.splitlines()
                if " BGP " in line and "Established" in line]


def gateway_manifests(r: Region, other: Region) -> List[dict]:
    """Seed 000's manifests for region `r`: the Gateway asks for the region's own address (what
    its config, kturn-auth's ICE servers and GeoDNS name), names its region and the other
    region's own address as where to send new users it has no room for; the route's backend is
    the data centre's media echo; and a second LoadBalancer Service over the same kturnd pods
    asks for the Anycast address, the same in both regions."""
    docs = e2e.seed_manifests()
    for d in docs:
        if d["kind"] == "Gateway" and d["metadata"]["name"] == GW_NAME:
            d["spec"]["addresses"] = [{"type": "IPAddress", "value": r.unicast}]
            d["metadata"].setdefault("annotations", {}).update({
                "stunner.l7mp.io/external-traffic-policy": "local",
                "kturn.io/region": r.name,
                "kturn.io/alternate-addresses": other.unicast})
        if d["kind"] == "UDPRoute":
            d["spec"]["rules"] = [{"backendRefs": [
                {"group": "stunner.l7mp.io", "kind": "StaticService", "name": MEDIA}]}]
    media = {"apiVersion": "stunner.l7mp.io/v1", "kind": "StaticService",
             "metadata": {"name": MEDIA, "namespace": GW_NS},
             "spec": {"prefixes": [f"{globalnet.DC_IP}/32"]}}
    anycast = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": ANYCAST_SVC, "namespace": GW_NS},
               "spec": {"type": "LoadBalancer", "loadBalancerIP": fabric.ANYCAST,
                        "externalTrafficPolicy": "Local",
                        "selector": {"stunner.l7mp.io/related-gateway-name": GW_NAME},
                        "ports": [{"name": "turn-udp", "protocol": "UDP", "port": 3478,
                                   "targetPort": 3478}]}}
    return docs + [media, anycast]


def install(r: Region, other: Region, t0: float) -> None:
    c = r.c
    # The host (the signalling server's stand-in) asks kturn-auth from the region's LAN; the
    # data centre's kturn-auth reads config discovery through CDS_SVC, whose address the serving
    # certificate names.
    auth_from = [{"podSelector": {}}, {"ipBlock": {"cidr": r.site.lan}}]
    cds_from = [{"ipBlock": {"cidr": fabric.DC_NET}}]
    c.helm("upgrade", "--install", e2e.RELEASE, e2e.CHART, "-n", e2e.SYSTEM_NS,
           "--create-namespace",
           "--wait", "--timeout", "5m", "--set", f"dataplane.replicas={REPLICAS[r.name]}",
           "--set-json", f"dataplane.affinity={json.dumps(ct.anti_affinity())}",
           "--set", "dataplane.enableMetricsEndpoint=true",
           "--set-json", f"networkPolicy.auth.from={json.dumps(auth_from)}",
           "--set-json", f"networkPolicy.cds.extraFrom={json.dumps(cds_from)}",
           "--set-json", f"operator.cds.tls.extraHosts={json.dumps([r.cds])}",
           # Readiness never follows the capacity marks: a pod that went unready would take
           # its node's path, and every call on it, off the Anycast route (step 5).
           "--set-json", 'dataplane.args=["-w","--udp-thread-num=2","--force-ready-status"]')
    c.apply(gateway_manifests(r, other))
    cds = c.get("service", f"{e2e.RELEASE}-config-discovery", e2e.SYSTEM_NS)["spec"]
    c.apply([{"apiVersion": "v1", "kind": "Service",
              "metadata": {"name": CDS_SVC, "namespace": e2e.SYSTEM_NS},
              "spec": {"type": "LoadBalancer", "loadBalancerIP": r.cds,
                       # The client's address kept, for the CDS port's NetworkPolicy.
                       "externalTrafficPolicy": "Local", "selector": cds["selector"],
                       "ports": [{"name": "cds", "protocol": "TCP", "port": 13478,
                                  "targetPort": 13478}]}}])
    print(f"region {r.name}: chart installed, Gateway applied, config discovery on {r.cds} "
          f"({time.monotonic() - t0:.0f} s)")


def ready(r: Region) -> None:
    c = r.c
    e2e.wait_for(f"region {r.name}'s kturnd Deployment ({REPLICAS[r.name]} replicas)",
                 lambda: e2e.deployment_available(c, GW_NAME, GW_NS), 300)
    r.pods = ct.pods(c, GW_NS, KTURND)
    h.check(len(r.pods) == REPLICAS[r.name], f"region {r.name}'s kturnd pods: {r.pods}")
    if REPLICAS[r.name] > 1:
        h.check(len({p["spec"]["nodeName"] for p in r.pods}) == REPLICAS[r.name],
                f"region {r.name}'s kturnd pods share a node")
    for address, svc, ns in ((r.unicast, GW_NAME, GW_NS), (fabric.ANYCAST, ANYCAST_SVC, GW_NS),
                             (r.cds, CDS_SVC, e2e.SYSTEM_NS)):
        e2e.wait_for(f"region {r.name}'s LoadBalancer address {address} ({svc})", lambda: (
            address in json.dumps(c.get("service", svc, ns).get("status", {}))), 90)
    gw = c.get("gateway", GW_NAME, GW_NS)
    h.check({"type": "IPAddress", "value": r.unicast} in
            gw.get("status", {}).get("addresses", []),
            f"region {r.name}'s Gateway status: {gw.get('status', {}).get('addresses')}")
    nodes = r.node_ips()
    expected = sorted(nodes[p["spec"]["nodeName"]] for p in r.pods)
    e2e.wait_for(f"region {r.name}'s router: the Anycast and unicast addresses via {expected}",
                 lambda: all(r.net.lb_routes().get(a) == expected
                             for a in (fabric.ANYCAST, r.unicast)), 90)
    print(f"region {r.name}: kturnd " + ", ".join(
        f"{p['metadata']['name']} {p['status']['podIP']} on {p['spec']['nodeName']}"
        for p in r.pods) + f"; its router routes {fabric.ANYCAST} and {r.unicast} via "
        f"{expected}")


class Sessions:
    """The session records (one per allocation that ended) of one client address, by the region
    whose kturnd pods logged them, from now on."""

    def __init__(self, regions: Dict[str, Region], client_ip: str):
        self.regions, self.client_ip = regions, client_ip
        self.seen: Dict[str, int] = {}  # pod -> records already read
        self.found: Dict[str, List[dict]] = {}
        self.poll()  # what was logged before
        self.found = {}

    def poll(self) -> Dict[str, List[dict]]:
        """Everything found since this object was made."""
        for r in self.regions.values():
            for p in ct.pods(r.c, GW_NS, KTURND):
                name = p["metadata"]["name"]
                records = ct.sessions(r.c, name)
                new = records[self.seen.get(name, 0):]
                self.seen[name] = len(records)
                self.found.setdefault(r.name, []).extend(
                    s for s in new if s.get("client", "").startswith(self.client_ip + ":"))
        return self.found

    def wait(self, what: str, count: int, region: str = "") -> Dict[str, List[dict]]:
        """Until `count` records were found (in `region`, or in all)."""
        return e2e.wait_for(what, lambda: (lambda f: f if (
            len(f.get(region, [])) if region else sum(map(len, f.values()))) >= count
            else None)(self.poll()), 30)


def metric(r: Region, pod: dict, name: str) -> Dict[str, float]:
    """A kturnd pod's metric series `name` (labels -> value), read inside the pod's network
    namespace (the chart's NetworkPolicy admits only Prometheus' namespace to the port)."""
    text = ct.probe(ct.in_pod(r.c, pod), "/metrics", pod["status"]["podIP"], 8080)
    series = {}
    for line in text.splitlines():
        if line.startswith(name):
            key, _, value = line.rpartition(" ")
            series[key[len(name):]] = float(value)
    return series


CAPACITY = r"""
import sys, urllib.error, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
        print(r.read().decode())
except urllib.error.HTTPError as e:  # 503 while over the marks, with the same body
    print(e.read().decode())
"""


def capacity(r: Region, pod: dict) -> dict:
    """The pod's /capacity (200 under its marks, 503 over, the measures either way), asked in
    its network namespace."""
    out = subprocess.run([*ct.in_pod(r.c, pod), sys.executable, "-c", CAPACITY,
                          f"http://{pod['status']['podIP']}:8086/capacity"],
                         capture_output=True, text=True, timeout=30).stdout
    try:
        return json.loads(out)
    except ValueError:
        raise h.TestFailure(f"/capacity of {pod['metadata']['name']}: {out[:300]}")


def credential(r: Region) -> Dict[str, str]:
    """A TURN credential from the region's kturn-auth (/ice), asked from the host as the
    signalling server would. Both regions share the seed's HMAC secret, so it is good in
    either."""
    (auth,) = ct.pods(r.c, e2e.SYSTEM_NS, "app.kubernetes.io/component=auth")
    path = "/ice?service=turn&username=global-client"
    body = e2e.wait_for(f"region {r.name}'s kturn-auth", lambda: (
        lambda out: out if '"iceServers"' in out else None)(
            ct.probe([], path, auth["status"]["podIP"], 8088)), 60)
    servers = json.loads(body)["iceServers"]
    h.check(servers and servers[0].get("credential"), f"/ice: {servers}")
    print(f"kturn-auth of region {r.name}: {servers[0]['urls']}")
    h.check(any(f":{r.unicast}:" in url for url in servers[0]["urls"]),
            f"region {r.name}'s ICE servers do not name its own address {r.unicast}")
    return servers[0]


class GlobalAuth:
    """One kturn-auth for both regions, in the data centre (where the signalling server of a
    global service runs): a -c per region's config discovery, each with a token of its own
    cluster and its CA (--cds-credentials), each continent's client network mapped to its
    region (--region-network)."""

    def __init__(self, regions: Dict[str, Region], binary: str, workdir: str):
        argv = ["ip", "netns", "exec", globalnet.DC_NS, os.path.abspath(binary),
                "--address", globalnet.DC_IP,
                "--port", str(GLOBAL_AUTH_PORT), "--id", f"{GW_NS}/{GW_NAME}",
                "--region-order", ",".join(sorted(regions))]
        for r in regions.values():
            origin = f"https://{r.cds}:13478"
            files = os.path.join(workdir, f"cds-{r.name}")
            os.makedirs(files, exist_ok=True)
            # The chart's kturn-auth account may read the Gateway's config; a token of the CDS
            # audience for it, from the region's own API server.
            token = r.c.kubectl("create", "token", f"{e2e.RELEASE}-auth", "-n", e2e.SYSTEM_NS,
                                "--audience", "kturn-cds", "--duration", "1h").strip()
            ca = r.c.get("secret", "kturn-cds-ca-cert", e2e.SYSTEM_NS)["data"]["ca.crt"]
            with open(os.path.join(files, "token"), "w") as f:
                f.write(token + "\n")
            with open(os.path.join(files, "ca.crt"), "wb") as f:
                f.write(base64.b64decode(ca))
            argv += ["-c", origin, "--cds-credentials",
                     f"{origin}={files}/token,{files}/ca.crt"]
        for c in globalnet.CONTINENTS:
            argv += ["--region-network", f"{c.net}={c.region}"]
        self.proc = h.Proc("kturn-auth-global", argv, workdir)
        h.register_log(self.proc.log_path)
        self.proc.start()

    def ice(self, client_ip: str, regions: int) -> List[dict]:
        """/ice for a client at `client_ip`, as the signalling server asks for it, once the
        configs of all `regions` have come in (each origin's arrives on its own)."""
        path = f"/ice?service=turn&username=global-client&client={client_ip}"

        def answer() -> Optional[List[dict]]:
            out = ct.probe([], path, globalnet.DC_IP, GLOBAL_AUTH_PORT)
            servers = json.loads(out)["iceServers"] if '"iceServers"' in out else []
            return servers if len(servers) >= regions else None
        return e2e.wait_for(f"the data centre's kturn-auth to answer {path} for {regions} "
                            f"regions", answer, 60)

    def stop(self) -> None:
        self.proc.stop()


def global_auth(regions: Dict[str, Region], continents: Dict[str, Continent], binary: str,
                workdir: str) -> None:
    """Each continent's clients get their region's ICE server first and the other region's as
    the fallback, from the one kturn-auth; both credentials relay in their regions."""
    auth = GlobalAuth(regions, binary, workdir)
    try:
        for c in globalnet.CONTINENTS:
            x = continents[c.key]
            home, other = regions[c.region], next(r for r in regions.values()
                                                  if r.name != c.region)
            servers = auth.ice(x.ip, len(regions))
            urls = [s["urls"] for s in servers]
            print(f"data centre's kturn-auth, /ice for continent {c.key}'s {x.ip}: {urls}")
            h.check(len(servers) == len(regions) and
                    all(f":{home.unicast}:" in u for u in servers[0]["urls"]) and
                    all(f":{other.unicast}:" in u for u in servers[1]["urls"]),
                    f"continent {c.key}'s ICE servers {urls}: want region {home.name}'s "
                    f"{home.unicast} first, then region {other.name}'s {other.unicast}")
            for server, r in zip(servers, (home, other)):
                one = call(workdir, x, r.unicast, server, f"ice-{c.key}-{r.name}",
                           verbose=True)
                h.check(all(r.holds(ip) for ip in relays_of(one)),
                        f"continent {c.key}'s call with region {r.name}'s ICE server not "
                        f"relayed there")
                one.finish()
            print(f"  both credentials relay: {home.unicast} in region {home.name}, "
                  f"{other.unicast} in region {other.name} (the fallback), 0 lost")
    finally:
        auth.stop()


def call(workdir: str, x: Continent, address: str, cred: Dict[str, str], tag: str,
         messages: int = e2e.MESSAGES, interval_ms: int = 5, verbose: bool = False) -> e2e.Call:
    return e2e.Call(workdir, (address, 3478), cred, globalnet.DC_IP, tag, messages=messages,
                    interval_ms=interval_ms, prefix=x.prefix, clients=1, verbose=verbose)


def relays_of(each: e2e.Call) -> List[str]:
    return op_wait(f"the allocations of call {each.tag}", lambda: ct.relayed_by(each), 30,
                   interval=0.2)


# --- 2. nearest region -------------------------------------------------------------------------

def nearest(regions: Dict[str, Region], continents: Dict[str, Continent], workdir: str,
            cred: Dict[str, str]) -> None:
    print("--- 2. nearest region")
    for r in regions.values():
        for p in r.pods:
            info = metric(r, p, "kturn_dataplane_info")
            h.check(any(f'region="{r.name}"' in k for k in info),
                    f"{p['metadata']['name']}'s kturn_dataplane_info: {info}")
        print(f"region {r.name}'s kturnd pods: kturn_dataplane_info{{region=\"{r.name}\"}}")
    for key, x in continents.items():
        home = regions[next(c.region for c in globalnet.CONTINENTS if c.key == key)]
        answer = globalnet.dig(x.ns, globalnet.TURN_NAME)
        anycast = globalnet.dig(x.ns, globalnet.ANYCAST_NAME)
        print(f"continent {key} ({x.ip}): GeoDNS {globalnet.TURN_NAME} -> {answer}, "
              f"{globalnet.ANYCAST_NAME} -> {anycast}; its router sends {fabric.ANYCAST} to "
              f"region {x.path(fabric.ANYCAST)}")
        h.check(answer == [home.unicast], f"GeoDNS answered continent {key} {answer}, not "
                f"region {home.name}'s {home.unicast}")
        h.check(anycast == [fabric.ANYCAST], f"GeoDNS: {globalnet.ANYCAST_NAME} -> {anycast}")
        h.check(x.path(fabric.ANYCAST) == home.name,
                f"continent {key}'s router sends the Anycast address to region "
                f"{x.path(fabric.ANYCAST)}, not {home.name}")
        for address, how in ((fabric.ANYCAST, "Anycast"), (answer[0], "GeoDNS")):
            records = Sessions(regions, x.ip)
            calls = [call(workdir, x, address, cred, f"near-{key}-{how}-{i}", verbose=True)
                     for i in range(3)]
            # uclient allocates twice per client (from two sockets); it relays on one and
            # releases it at the end, which kturnd logs, and leaves the other to expire.
            relays = [ip for each in calls for ip in relays_of(each)]
            h.check(all(home.holds(ip) for ip in relays),
                    f"continent {key}'s {how} allocations were relayed by {relays}, not all "
                    f"in region {home.name}")
            for each in calls:
                each.finish()
            allocations = len(calls)
            served = records.wait(f"the session records of continent {key}'s {how} calls",
                                  allocations)
            where = {name: len(v) for name, v in served.items()}
            print(f"  {len(calls)} calls by {how} {address}: 0 lost; their {len(relays)} "
                  f"allocations relayed by {sorted(set(relays))}; kturnd sessions of "
                  f"{x.ip} by region {where}, peers "
                  f"{sorted({p for v in served.values() for s in v for p in s.get('peers', [])})}")
            h.check(where.get(home.name) == allocations and sum(where.values()) == allocations,
                    f"continent {key}'s {how} calls were not all served in region "
                    f"{home.name}: {where}")


# --- 3. a node of region a lost ----------------------------------------------------------------

class PathWatch:
    """Samples a continent router's path to an address every 0.1 s in the background: what it
    was, and when it changed."""

    def __init__(self, x: Continent, address: str):
        self.x, self.address = x, address
        self.changes: List[tuple] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        last = object()
        while not self.stop.is_set():
            now = self.x.path(self.address)
            if now != last:
                self.changes.append((time.time(), now))
                last = now
            time.sleep(0.1)

    def first(self, region: Optional[str], after: float) -> Optional[float]:
        return next((t for t, p in self.changes if p == region and t >= after), None)

    def end(self) -> List[tuple]:
        self.stop.set()
        self.thread.join()
        return self.changes


def node_of_a_lost(a: Region, x: Continent, workdir: str, cred: Dict[str, str]) -> Dict[str, float]:
    watch = PathWatch(x, fabric.ANYCAST)
    numbers = ct.node_loss(a.c, a.net, x.env, workdir, cred, fabric.ANYCAST, a.pods,
                           globalnet.DC_IP, a.node_ips(), title="3. a node of region a lost")
    changes = watch.end()
    print(f"continent x's path to {fabric.ANYCAST} all along: "
          f"{[p for _, p in changes]}")
    h.check([p for _, p in changes] == ["a"],
            f"region a's Anycast route moved while one of its nodes was lost: {changes}")
    return numbers


# --- 4. region a down --------------------------------------------------------------------------

class BrowserCall:
    """A WebRTC call of a continent in a thread of its own: headless Chromium in the continent's
    network, relay candidates only through the Anycast address, which it resolves by name
    through GeoDNS (the namespace's resolv.conf), to Janus's EchoTest in the data centre,
    recovering by an ICE restart once its path is lost (janus.janus_call(restart=...): up to
    `lost_within` s for ICE to see the loss, `recover_within` s from it for media again), then
    `seconds` more of media."""

    def __init__(self, x: Continent, janus_url: str, cred: Dict[str, str], workdir: str,
                 seconds: float = 8.0, lost_within: float = 40.0, recover_within: float = 40.0):
        self.in_call = threading.Event()
        self.progress: dict = {}
        self.result: Optional[dict] = None
        self.error: Optional[BaseException] = None
        self.url = f"turn:{globalnet.ANYCAST_NAME}:3478?transport=udp"
        args = (self.url, cred["username"], cred["credential"], janus_url)
        kwargs = dict(workdir=workdir, netns=x.ns, seconds=seconds,
                      restart=(lost_within, recover_within),
                      timeout=90 + seconds + lost_within + recover_within,
                      on_phase=self.on_phase)
        self.thread = threading.Thread(target=self.run, args=(args, kwargs), daemon=True)
        self.thread.start()

    def on_phase(self, phase: str, progress: dict) -> None:
        if phase == "call" and not self.in_call.is_set():
            self.progress = progress
            self.in_call.set()

    def run(self, args: tuple, kwargs: dict) -> None:
        try:
            self.result = janus.janus_call(*args, **kwargs)
        except BaseException as e:  # handed to the test's thread by finish()
            self.error = e
        finally:
            self.in_call.set()  # whoever waits for the call learns that it will not come

    def relays(self, candidates: List[str]) -> List[str]:
        """The addresses of the relay candidates among `candidates` (a=candidate values)."""
        return [c.split()[4] for c in candidates if " typ relay" in c]

    def wait_in_call(self, timeout: float) -> List[str]:
        """Until media flows; returns the call's relay addresses."""
        h.check(self.in_call.wait(timeout), f"the browser's call not connected in {timeout} s")
        if not self.progress:
            self.finish(5)
            raise h.TestFailure(f"the browser's call ended before it connected: "
                                f"{self.result and self.result.get('error')}")
        return self.relays(self.progress.get("candidates", []))

    def finish(self, timeout: float) -> dict:
        self.thread.join(timeout)
        h.check(not self.thread.is_alive(), f"the browser's call still running after {timeout} s")
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


def region_down(regions: Dict[str, Region], continents: Dict[str, Continent], workdir: str,
                cred: Dict[str, str]) -> Dict[str, float]:
    print("--- 4. region a down")
    a, b = regions["a"], regions["b"]
    x, y = continents["x"], continents["y"]
    numbers: Dict[str, float] = {}
    # Calls in progress on both continents: X's in region a (to be cut), Y's in region b, long
    # enough to run across region a's loss and its return.
    messages, interval = 3000, 20  # 60 s
    jan = janus.JanusServer(workdir, globalnet.DC_IP, globalnet.DC_NS).start()
    h.register_cleanup(jan.stop)
    browser = BrowserCall(x, jan.url, cred, workdir)
    x_calls = [call(workdir, x, fabric.ANYCAST, cred, f"down-x-{i}", messages, interval, True)
               for i in range(2)]
    y_calls = [call(workdir, y, fabric.ANYCAST, cred, f"down-y-{i}", messages, interval, True)
               for i in range(2)]
    for each in x_calls:
        h.check(all(a.holds(ip) for ip in relays_of(each)), f"call {each.tag} not in region a")
    for each in y_calls:
        h.check(all(b.holds(ip) for ip in relays_of(each)), f"call {each.tag} not in region b")
    for each in x_calls + y_calls:
        op_wait(f"call {each.tag} relaying", lambda: re.search(
            r"tot_recv_msgs=[1-9]", each.proc.output()), 20, interval=0.2)
    relays = browser.wait_in_call(120)
    h.check(relays and all(a.holds(ip) for ip in relays),
            f"the browser's relay candidates {relays} are not all in region a")
    time.sleep(2.0)  # media flowing; the page samples it 1 s into the call
    print(f"continent x's browser ({browser.url}) in a call with Janus ({globalnet.DC_IP}) "
          f"through region a's relay {relays}")
    watch = PathWatch(x, fabric.ANYCAST)
    ports = [f"n{ct.node_index(n)}" for n in a.node_ips()]
    # Whatever happens below, region a's nodes get their links back.
    h.register_cleanup(lambda: [fabric.ns_run(a.site.router_ns, "ip", "link", "set", port, "up",
                                              check=False) for port in ports])
    down_at = time.time()
    for port in ports:
        fabric.ns_run(a.site.router_ns, "ip", "link", "set", port, "down")
    print(f"region a's nodes cut off its router (links {ports} down)")
    window = 30.0
    probe = ct.allocations(x.env, cred, fabric.ANYCAST, window,
                           stop_after=frozenset({b.pods[0]["status"]["podIP"]}))
    moved = op_wait("continent x's router to send the Anycast address to region b",
                    lambda: watch.first("b", down_at), 40, interval=0.1)
    numbers["route withdrawn"] = moved - down_at
    print(f"continent x's router: {fabric.ANYCAST} to region b "
          f"{numbers['route withdrawn']:.2f} s after region a went down (BGP hold 9 s)")
    tried = ct.attempts(probe, window)
    in_b = [t for t in tried if "relay" in t and b.holds(t["relay"])]
    h.check(in_b, f"no allocation of continent x in region b within {window:.0f} s: {tried}")
    h.check(all(b.holds(t["relay"]) for t in tried if "relay" in t),
            f"an allocation in region a while it was down: {tried}")
    numbers["first allocation in b"] = in_b[0]["end"] - down_at
    print(f"continent x's allocations: {len(tried)} tried, the first granted in region b "
          f"{numbers['first allocation in b']:.2f} s after region a went down")
    # New calls of X, now in region b, relay whole.
    after = call(workdir, x, fabric.ANYCAST, cred, "down-x-after", verbose=True)
    h.check(all(b.holds(ip) for ip in relays_of(after)), "continent x's new call not in b")
    after.finish()
    # The browser's call, back through region b, ends before region a returns: the Anycast
    # route's return would move it back, and cut it again.
    result = browser.finish(150)
    jan.check_alive()
    n = janus.check_restart(result, "udp", globalnet.DC_IP)
    fresh = browser.relays(n["restart_candidates"])
    h.check(fresh and all(b.holds(ip) for ip in fresh)
            and b.holds(n["pair"]["local"].get("address") or "0.0.0.0"),
            f"the browser's restart: relay candidates {fresh}, selected pair {n['pair']}; want "
            f"region b's")
    steps = {k: v - down_at for k, v in n["restart"].items()}
    numbers["ICE restart: loss seen"] = steps["lost"]
    numbers["ICE restart: media again"] = steps["media"]
    print(f"continent x's browser: ICE restart through region b's relay {fresh}: " + ", ".join(
        f"{k} {v:+.2f} s" for k, v in steps.items()) + " after region a went down")
    print(f"  after the restart: {janus.describe(n)}")
    jan.stop()
    # Region a back, Y's calls still in progress.
    back_at = time.time()
    for port in ports:
        fabric.ns_run(a.site.router_ns, "ip", "link", "set", port, "up")
    returned = op_wait("continent x's router to send the Anycast address to region a again",
                       lambda: watch.first("a", back_at), 90, interval=0.2)
    numbers["route back"] = returned - back_at
    print(f"region a back: continent x's router sends {fabric.ANYCAST} to it "
          f"{numbers['route back']:.1f} s after its nodes' links came up")
    changes = watch.end()
    print(f"continent x's path to {fabric.ANYCAST}: " + ", ".join(
        f"{p} at {t - down_at:+.1f} s" for t, p in changes))
    probe = ct.allocations(x.env, cred, fabric.ANYCAST, 30,
                           stop_after=frozenset({a.pods[0]["status"]["podIP"]}))
    tried = ct.attempts(probe, 30)
    granted = [t for t in tried if "relay" in t]
    h.check(granted and a.holds(granted[-1]["relay"]),
            f"continent x's allocations after region a's return: {tried}")
    numbers["first allocation back in a"] = granted[-1]["end"] - returned
    back_call = call(workdir, x, fabric.ANYCAST, cred, "back-x", verbose=True)
    h.check(all(a.holds(ip) for ip in relays_of(back_call)), "continent x's call not back in a")
    back_call.finish()
    print("continent x's new calls in region a again")
    timeout = messages * interval / 1000 + 60
    for each in y_calls:
        s = each.finish(timeout=timeout)
    print(f"continent y's {len(y_calls)} calls in region b, across region a's loss and return: "
          f"{s['sent']} sent, {s['recv']} echoed, 0 lost each")
    cut = [each.outcome(timeout=timeout)[1] for each in x_calls]
    print(f"continent x's calls in region a: lost {[s['lost'] for s in cut]} of "
          f"{messages} (cut with the region, as the source document says: ICE restart is the "
          f"client's part)")
    h.check(all(s["lost"] > 0 for s in cut), "a call through the lost region lost nothing")
    return numbers


# --- 5. region a full --------------------------------------------------------------------------

LOAD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from harness.turn_client import TurnClient
from harness.runner import TestFailure
host, port, user, password, local, count = sys.argv[2], int(sys.argv[3]), *sys.argv[4:7], int(sys.argv[7])
held = []
for i in range(count):
    t = TurnClient((host, port), user, password, local_host=local, rto=0.2, tries=3)
    try:
        t.allocate()
        held.append(t)
        print(json.dumps({"relay": t.relayed[0]}), flush=True)
    except TestFailure as e:
        print(json.dumps({"error": str(e)}), flush=True)
        t.close()
print("holding", flush=True)
sys.stdin.read()
for t in held:
    try:
        t.refresh(0)
    except TestFailure:
        pass
    t.close()
"""


def redirected(r: Region) -> float:
    """The Allocates the region's kturnd pods answered 300 Try Alternate, so far."""
    return sum(v for p in r.pods
               for k, v in metric(r, p, "kturn_allocations_rejected_total").items()
               if 'reason="try_alternate"' in k)


def region_full(regions: Dict[str, Region], x: Continent, workdir: str,
                cred: Dict[str, str]) -> Dict[str, str]:
    print("--- 5. region a full")
    a, b = regions["a"], regions["b"]
    c = a.c
    # The mark: room for the calls below and no more (uclient leaves one allocation of each
    # earlier call to expire, so the pods hold some already).
    held = {p["metadata"]["name"]: capacity(a, p)["allocations"]["value"] for p in a.pods}
    mark = int(max(held.values())) + HEADROOM
    c.kubectl("annotate", "gateway", GW_NAME, "-n", GW_NS, "--overwrite",
              f"kturn.io/capacity-allocations={mark}")
    for p in a.pods:
        e2e.wait_for(f"{p['metadata']['name']}'s capacity mark {mark}, and room under it",
                     lambda: (lambda r: r["allocations"]["mark"] == mark and
                              not r["over_capacity"])(capacity(a, p)), 60)
    print(f"region a's pods hold {held} allocations; capacity mark {mark} "
          f"(kturn.io/capacity-allocations)")
    # Calls already in region a, running through it all.
    messages, interval = 3000, 20  # 60 s: across the load, the redirects and the checks
    placed = ct.place_calls(lambda i: call(workdir, x, fabric.ANYCAST, cred, f"full-in-a-{i}",
                                           messages, interval, True),
                            {p["status"]["podIP"]: 1 for p in a.pods}, 24)
    in_a = [each for calls in placed.values() for each in calls]
    outside = {each.tag: relays_of(each) for each in in_a
               if not all(a.holds(ip) for ip in relays_of(each))}
    h.check(not outside, f"calls of continent x outside region a before it was full: {outside}")
    # The synthetic load: allocations held from continent x until every pod of a is over.
    load = subprocess.Popen(
        fabric.in_ns(x.ns, sys.executable, "-c", LOAD, os.path.join(e2e.REPO, "tests", "interop"),
                     fabric.ANYCAST, "3478", cred["username"], cred["credential"], x.ip,
                     str(3 * mark * len(a.pods))),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in load.stdout:
            if line.startswith("holding"):
                break
            lines.append(json.loads(line))
        held = [entry["relay"] for entry in lines if "relay" in entry]
        print(f"synthetic load: {len(held)} allocations held in region a "
              f"({ {ip: held.count(ip) for ip in sorted(set(held))} }), "
              f"{len(lines) - len(held)} refused")
        for p in a.pods:
            report = e2e.wait_for(f"{p['metadata']['name']} over its capacity mark",
                                  lambda: (lambda r: r if r.get("over_capacity") else None)(
                                      capacity(a, p)), 30)
            print(f"  {p['metadata']['name']} /capacity: over, allocations "
                  f"{report['allocations']['value']:.0f} of mark {mark}; /ready stays "
                  f"200 (--force-ready-status), so its node keeps announcing the address")
        redirects_before = redirected(a)
        records = Sessions(regions, x.ip)
        new = [call(workdir, x, fabric.ANYCAST, cred, f"full-new-{i}", verbose=True)
               for i in range(3)]
        for each in new:
            relays = relays_of(each)
            h.check(all(b.holds(ip) for ip in relays),
                    f"call {each.tag} while region a was full: relayed by {relays}")
            each.finish()
        redirects = redirected(a)
        # uclient follows the first redirect of a call and sends its second Allocate to the
        # alternate directly: at least one redirect per call.
        h.check(redirects - redirects_before >= len(new),
                f"region a's try_alternate redirects: {redirects_before} -> {redirects}")
        served = records.wait("the new calls' session records in region b", len(new), "b")
        print(f"{len(new)} new calls of continent x while a was full: 300 Try Alternate from "
              f"region a ({redirects - redirects_before:.0f} redirects), allocated at region b's "
              f"{b.unicast}, 0 lost; region b's session records of {x.ip}: {len(served['b'])}")
    finally:
        load.stdin.close()
        load.wait(timeout=60)
    timeout = messages * interval / 1000 + 60
    kept = {each.tag: each.finish(timeout=timeout) for each in in_a}
    print(f"{len(kept)} calls already in region a while it was full: " + ", ".join(
        f"{tag} {s['sent']} sent {s['recv']} echoed {s['lost']} lost"
        for tag, s in kept.items()))
    c.kubectl("annotate", "gateway", GW_NAME, "-n", GW_NS, "kturn.io/capacity-allocations-")
    return {"redirected": str(int(redirects - redirects_before)), "kept": str(len(kept))}


# --- the test -----------------------------------------------------------------------------------

def body(args: argparse.Namespace, workdir: str) -> None:
    top = os.path.abspath(args.dir)
    env = cp.read_env(os.path.join(top, "net"))
    regions = {name: Region(top, name) for name in fabric.REGIONS}
    continents = {key: Continent(env, key) for key in ("x", "y")}
    t0 = time.monotonic()
    timings: Dict[str, float] = {}
    h.register_cleanup(lambda: None if args.passed else [
        print(r.c.describe()) for r in regions.values()])

    print("--- 0. topology")
    for r in regions.values():
        for n in r.c.get("nodes")["items"]:
            print(f"region {r.name} node {n['metadata']['name']}: "
                  f"{r.node_ips()[n['metadata']['name']]}, pods {n['spec'].get('podCIDR')}")

        def speakers() -> Optional[List[str]]:
            out = r.net.birdc("show", "protocols")
            up = [line.split()[0] for line in out.splitlines()
                  if line.startswith("node") and "Established" in line]
            return up if len(up) == len(r.node_ips()) else None
        e2e.wait_for(f"region {r.name}'s router: a BGP session from every speaker", speakers, 60)
    for x in continents.values():
        e2e.wait_for(f"continent {x.key}'s router: sessions with its region and the core",
                     lambda: (lambda up: up if sorted(up) == ["core", "region"] else None)(
                         x.established()), 60)
    print("BGP: every region's speakers with its router, each continent with its region and "
          "the other continent")
    print(f"idle, before kturn: {cost(top)}")

    print("--- 1. kturn in each region")
    install(regions["a"], regions["b"], t0)
    install(regions["b"], regions["a"], t0)
    for r in regions.values():
        ready(r)
    for x in continents.values():
        e2e.wait_for(f"continent {x.key}'s route to {fabric.ANYCAST}",
                     lambda: x.path(fabric.ANYCAST), 60)
    timings["installed"] = time.monotonic() - t0
    cred = credential(regions["a"])

    lost: Dict[str, float] = {}
    down: Dict[str, float] = {}
    if args.from_step <= 2:
        nearest(regions, continents, workdir, cred)
        global_auth(regions, continents, args.kturn_auth, workdir)
        timings["nearest region"] = time.monotonic() - t0
    if args.from_step <= 3:
        lost = node_of_a_lost(regions["a"], continents["x"], workdir, cred)
        timings["node of a lost"] = time.monotonic() - t0
    if args.from_step <= 4:
        down = region_down(regions, continents, workdir, cred)
        timings["region down"] = time.monotonic() - t0
    full = region_full(regions, continents["x"], workdir, cred)
    timings["region full"] = time.monotonic() - t0
    print(f"idle, with kturn in both regions: {cost(top)}")
    print("node of a lost: " + ", ".join(f"{k} {v:.2f} s" for k, v in lost.items()))
    print("region a down: " + ", ".join(f"{k} {v:.2f} s" for k, v in down.items()))
    print("region a full: " + ", ".join(f"{k} {v}" for k, v in full.items()))
    print("timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    args.passed = True


def cost(top: str) -> str:
    """Both regions' and the network's processes, idle."""
    pids = []
    for name, where in fabric.REGIONS.items():
        pids += cluster.processes_under(os.path.join(top, name), where.cgroup_root)
    for ns in fabric.namespaces(globalnet.PREFIX):
        pids += [int(p) for p in fabric.run("ip", "netns", "pids", ns, check=False,
                                            quiet=True).stdout.split()]
    return ct.idle_cost(top, pids=sorted(set(pids)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="run-global.sh's folder (net/, a/, b/)")
    ap.add_argument("--kturn-auth", default=os.path.join(e2e.REPO, "build", "kturn-auth"),
                    help="the kturn-auth binary the data centre runs for both regions")
    ap.add_argument("--server", default="kturnd")
    ap.add_argument("--keep-logs", action="store_true")
    ap.add_argument("--from-step", type=int, default=0,
                    help="on regions a run already set up: skip the scenarios before this one")
    ap.set_defaults(passed=False)
    h.run_test("global", body, ap, overall_timeout=1500)


if __name__ == "__main__":
    main()
