#!/usr/bin/python3
"""kturn on a multi-node cluster (tests/e2e/cluster.py --nodes N), as a platform team runs it and
as a client on the internet reaches it: through the upstream router, by the BGP route MetalLB's
speakers announce for the Gateway's LoadBalancer address (tests/e2e/fabric.py draws the network).

  0. The topology: the nodes, their zones and pod ranges, the router's BGP sessions.
  1. `helm install` of the chart with two kturnd replicas spread across the zones by the seed's
     podAntiAffinity (source document 001), set through the chart's dataplane values.
  2. The seed's manifests, the Gateway annotated externalTrafficPolicy: Local and asking for an
     address of the pool (spec.addresses), and a media server (coturn's UDP echo) that must run
     on a node without a kturnd pod: every relayed packet crosses the pod network between nodes.
  3. The LoadBalancer: MetalLB gives the Gateway's Service its address, the Gateway's status
     shows it, and the router learns it by BGP from exactly the nodes that hold a ready kturnd
     pod (externalTrafficPolicy: Local).
  4. Calls from the client namespace to that address, spread by the router's per-flow ECMP
     over both kturnd pods: every message echoed, none lost; each kturnd pod's session records
     show the client's own address (no SNAT on the way) and the media pod as the peer.
  5. The chart's and the operator's NetworkPolicies, enforced by kube-router: each refusal from
     a pod of another namespace, and each allowed path.
  5b. Real media: Janus (Debian's, the seed's media server) in a pod on another node than the
     kturnd pods, the backend of a UDPRoute; the Gateway gets TURN-TCP and TURN-TLS listeners
     beside TURN-UDP; a headless Chromium in the client network calls Janus's EchoTest with
     audio and video, relay candidates only, over each transport: frames decoded, packets lost
     and RTT from getStats(), and kturnd's session record shows the client's own address and
     Janus as the peer.
  6. A node lost: calls in progress through both kturnd pods, then one pod's node cut off the
     network. The calls through the other node lose nothing, the router withdraws the lost
     node's path when its BGP session times out, the client's new allocations land on the
     surviving node, and when the node is back it takes new calls (each time measured).
  7. STUNner's DaemonSet mode: a second Gateway whose Dataplane runs kturnd with hostNetwork on
     every node; each pod's relay address is its node's, the router reaches the Gateway's
     address through every node, and a call through each node loses nothing.
  8. Scale out and in (the chart's dataplane.replicas): a third kturnd pod lands on the node
     that had none and the router adds its path without moving a call in progress; back to two,
     the pod removed drains its calls whole while its node keeps announcing the address.

  /usr/bin/python3 tests/e2e/cluster_test.py --cluster DIR     (DIR: cluster.py's --dir)
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
import time
import urllib.parse
import urllib.request
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cluster  # noqa: E402  (the cluster's processes)
import e2e_test as e2e  # noqa: E402  (its Cluster, Call, manifests and waits)
import fabric  # noqa: E402

h = e2e.h
GW_NS, GW_NAME = e2e.GW_NS, e2e.GW_NAME
KTURND = f"stunner.l7mp.io/related-gateway-name={GW_NAME}"
ZONE = "topology.kubernetes.io/zone"
REPLICAS = 2
CALLS = 6  # concurrent calls from the client, spread over the kturnd pods by the router's ECMP


def lb_address(env: Dict[str, str]) -> str:
    """The address the Gateway asks for: the tenth of the pool."""
    return str(ipaddress.ip_network(env["LB_POOL"])[10])


def anti_affinity() -> dict:
    """Source document 001's Deployment spread: kturnd pods prefer other zones; and, once every
    zone has one, a node without a kturnd pod of the same Gateway (so that a scale-out adds a
    node's path to the router rather than a second pod behind one)."""
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100, "podAffinityTerm": {
            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In",
                                                    "values": ["stunner"]}]},
            "topologyKey": ZONE}}, {
        "weight": 100, "podAffinityTerm": {
            "labelSelector": {"matchLabels": {
                "stunner.l7mp.io/related-gateway-name": GW_NAME}},
            "topologyKey": "kubernetes.io/hostname"}}]}}


def gateway_manifests(address: str) -> List[dict]:
    docs = e2e.seed_manifests()
    for d in docs:
        if d["kind"] == "Gateway" and d["metadata"]["name"] == GW_NAME:
            d["spec"]["addresses"] = [{"type": "IPAddress", "value": address}]
            d["metadata"].setdefault("annotations", {})[
                "stunner.l7mp.io/external-traffic-policy"] = "local"
    return docs


def media_apart() -> List[dict]:
    """The media server, kept off the nodes that run a kturnd pod of the Gateway (preferred,
    not required: a required term would keep the third kturnd pod of step 8 off its node)."""
    docs = e2e.media_server()
    spec = docs[0]["spec"]["template"]["spec"]
    spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100, "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"stunner.l7mp.io/related-gateway-name": GW_NAME}},
            "namespaces": [GW_NS], "topologyKey": "kubernetes.io/hostname"}}]}}
    return docs


op_wait = e2e.op.wait_for  # wait_for with its own interval: for what is timed


def pods(c: e2e.Cluster, ns: str, selector: str) -> List[dict]:
    return [p for p in c.get("pods", ns=ns, selector=selector)["items"]
            if p["status"].get("phase") == "Running" and p["status"].get("podIP") and
            not p["metadata"].get("deletionTimestamp")]


# Pods that stand for other software in the cluster, each in a namespace of its own: the
# signalling server the chart's kturn-auth policy admits (networkPolicy.auth.from), Prometheus'
# namespace (monitoring), and a workload of another team (other).
PROBES = {"signalling": "signalling-server", "monitoring": "prometheus", "other": "workload"}


def probe_pods() -> List[dict]:
    docs = []
    for ns, app in PROBES.items():
        docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        docs.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": app, "namespace": ns, "labels": {"app": app}},
                     "spec": {"terminationGracePeriodSeconds": 0,
                              "automountServiceAccountToken": False,
                              "containers": [{"name": "pause",
                                              "image": "kturn-e2e/pause:0.1.0",
                                              "imagePullPolicy": "Never"}]}})
    return docs


def in_pod(c: e2e.Cluster, pod: dict) -> List[str]:
    """A command prefix that runs a host program in `pod`'s network namespace: its address, so
    the NetworkPolicies see the pod (the probe pods' image has nothing but pause)."""
    sockets = dict(kv.split("=", 1) for kv in c.env["NODE_CONTAINERD"].split(","))
    cid = pod["status"]["containerStatuses"][0]["containerID"].split("://", 1)[1]
    r = subprocess.run(["ctr", "--address", sockets[pod["spec"]["nodeName"]], "--namespace",
                        "k8s.io", "tasks", "ls"], capture_output=True, text=True, check=True)
    pid = next(line.split()[1] for line in r.stdout.splitlines() if line.startswith(cid))
    return ["nsenter", "-t", pid, "-n", "--"]


PROBE = r"""
import json, socket, sys, urllib.request
kind, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    if kind == "tcp":
        socket.create_connection((host, port), timeout=3).close()
        print("connected")
    elif kind == "udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(2)
        s.connect((host, port))
        s.send(b"probe")
        print("answered" if s.recv(100) == b"probe" else "garbled")
    else:
        with urllib.request.urlopen(f"http://{host}:{port}{kind}", timeout=5) as r:
            print(r.read().decode())
except ConnectionRefusedError:
    print("refused")
except (socket.timeout, TimeoutError):
    print("timed out")
except Exception as e:  # noqa: BLE001
    print(f"error: {e}")
"""


def signal_container(c: e2e.Cluster, pod: dict, signal: str) -> None:
    """Sends `signal` to the pod's first container, through its node's containerd."""
    sockets = dict(kv.split("=", 1) for kv in c.env["NODE_CONTAINERD"].split(","))
    cid = pod["status"]["containerStatuses"][0]["containerID"].split("://", 1)[1]
    subprocess.run(["ctr", "--address", sockets[pod["spec"]["nodeName"]], "--namespace",
                    "k8s.io", "tasks", "kill", "--signal", signal, cid], check=True,
                   capture_output=True, timeout=30)


def probe(prefix: List[str], kind: str, host: str, port: int) -> str:
    """From the namespace `prefix` enters: "connected" (TCP), "answered" (a UDP echo), or the
    body of an HTTP GET of path `kind`; "refused" / "timed out" when the way is shut."""
    r = subprocess.run([*prefix, sys.executable, "-c", PROBE, kind, host, str(port)],
                       capture_output=True, text=True, timeout=30)
    return r.stdout.strip() or r.stderr.strip()


def credential(c: e2e.Cluster, signalling: List[str]) -> Dict[str, str]:
    """A TURN credential from kturn-auth's /ice, asked by the signalling server's pod through
    the kturn-auth Service, as the chart's policy admits it."""
    svc = c.get("service", f"{e2e.RELEASE}-auth", e2e.SYSTEM_NS)
    path = "/ice?" + urllib.parse.urlencode({"service": "turn", "username": "cluster-client"})
    out = probe(signalling, path, svc["spec"]["clusterIP"], svc["spec"]["ports"][0]["port"])
    try:
        servers = json.loads(out)["iceServers"]
    except (ValueError, KeyError):
        raise h.TestFailure(f"kturn-auth /ice from the signalling pod: {out}")
    h.check(servers and servers[0].get("credential"), f"/ice: {servers}")
    return servers[0]


def media_policy() -> dict:
    """The media server's own NetworkPolicy (docs/kubernetes.md#network-policies): its RTP
    port only from the Gateway's kturnd pods."""
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "media-server", "namespace": GW_NS},
            "spec": {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "media-server"}},
                     "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"podSelector": {"matchLabels": {
                         "stunner.l7mp.io/related-gateway-name": GW_NAME}}}],
                         "ports": [{"protocol": "UDP", "port": e2e.MEDIA_PORT}]}]}}


JANUS = {"app.kubernetes.io/name": "janus"}
JANUS_RTP = (20000, 20199)  # tests/e2e/janus-config.sh's rtp_port_range
TLS_SECRET = "turn-tls"
# The Gateway's listeners of step 5b beside the seed's turn-udp: the three transports a browser
# reaches a TURN server over (RFC 7065 URLs), each with what getStats() calls the relay protocol.
TRANSPORTS = [("turn-udp", "TURN-UDP", 3478, "turn:{}:3478?transport=udp", "udp"),
              ("turn-tcp", "TURN-TCP", 3478, "turn:{}:3478?transport=tcp", "tcp"),
              ("turn-tls", "TURN-TLS", 443, "turns:{}:443?transport=tcp", "tls")]


def janus_manifests(address: str, cert: str, key: str) -> List[dict]:
    """Step 5b: the Gateway with a TURN-TCP and a TURN-TLS listener beside the seed's
    TURN-UDP one (its certificate in a Secret); Janus (kturn-e2e/janus, Debian's janus 1.1.2) as
    a Deployment kept off the kturnd nodes like the media server, its Service as the backend of a
    UDPRoute of its own; and its NetworkPolicy: RTP only from the Gateway's kturnd pods, its HTTP
    API only from the LAN (the test process on the host, which relays the browser's signalling
    to it as an application server would, and the kubelet's probes). The browser's page server
    relays from the host's namespace, which routes the pod ranges through the nodes but not the
    LoadBalancer pool: an address of the pool would leave the machine by the host's default
    route."""
    docs = gateway_manifests(address)
    gateway = next(d for d in docs if d["kind"] == "Gateway" and
                   d["metadata"]["name"] == GW_NAME)
    # TCP and UDP ports on one LoadBalancer Service (MetalLB announces it as one address).
    gateway["metadata"]["annotations"]["stunner.l7mp.io/enable-mixed-protocol-lb"] = "true"
    gateway["spec"]["listeners"] = [
        dict({"name": name, "protocol": protocol, "port": port},
             **({"tls": {"mode": "Terminate", "certificateRefs": [{"name": TLS_SECRET}]}}
                if protocol == "TURN-TLS" else {}))
        for name, protocol, port, _, _ in TRANSPORTS]
    with open(cert, "rb") as c, open(key, "rb") as k:
        secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                  "metadata": {"name": TLS_SECRET, "namespace": GW_NS},
                  "data": {"tls.crt": base64.b64encode(c.read()).decode(),
                           "tls.key": base64.b64encode(k.read()).decode()}}
    apart = media_apart()[0]["spec"]["template"]["spec"]["affinity"]
    janus = {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "janus", "namespace": GW_NS},
             "spec": {"replicas": 1, "selector": {"matchLabels": JANUS},
                      "template": {"metadata": {"labels": JANUS}, "spec": {
                          "terminationGracePeriodSeconds": 1,
                          "securityContext": {"runAsNonRoot": True},
                          "affinity": apart,
                          "containers": [{
                              "name": "janus", "image": "kturn-e2e/janus:0.1.0",
                              "imagePullPolicy": "Never",
                              "ports": [{"name": "http", "containerPort": 8088,
                                         "protocol": "TCP"}],
                              "readinessProbe": {"httpGet": {"path": "/janus/info",
                                                             "port": 8088},
                                                 "periodSeconds": 2},
                              "securityContext": {"allowPrivilegeEscalation": False,
                                                  "capabilities": {"drop": ["ALL"]}}}]}}}}
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "janus", "namespace": GW_NS},
               "spec": {"selector": JANUS, "ports": [
                   {"name": "rtp", "protocol": "UDP", "port": JANUS_RTP[0],
                    "targetPort": JANUS_RTP[0]}]}}
    route = {"apiVersion": "stunner.l7mp.io/v1", "kind": "UDPRoute",
             "metadata": {"name": "janus", "namespace": GW_NS},
             "spec": {"parentRefs": [{"name": GW_NAME}],
                      "rules": [{"backendRefs": [{"name": "janus"}]}]}}
    policy = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
              "metadata": {"name": "janus", "namespace": GW_NS},
              "spec": {"podSelector": {"matchLabels": JANUS}, "policyTypes": ["Ingress"],
                       "ingress": [
                           {"from": [{"podSelector": {"matchLabels": {
                               "stunner.l7mp.io/related-gateway-name": GW_NAME}}}],
                            "ports": [{"protocol": "UDP", "port": JANUS_RTP[0],
                                       "endPort": JANUS_RTP[1]}]},
                           {"from": [{"ipBlock": {"cidr": str(fabric.LAN)}}],
                            "ports": [{"protocol": "TCP", "port": 8088}]}]}}
    return docs + [secret, janus, service, route, policy]


def janus_calls(c: e2e.Cluster, env: Dict[str, str], workdir: str, address: str,
                cred: Dict[str, str], relays: List[dict], relay_nodes: List[str]) -> List[str]:
    """Step 5b: a headless Chromium call (audio and video, relay candidates only) from the
    client network through the Gateway's address to Janus on another node than the kturnd pods,
    over each transport; what each call measured, and kturnd's session record of it."""
    import janus  # tests/interop/janus.py: the page, the browser and what a call must show
    e2e.wait_for("Janus", lambda: e2e.deployment_available(c, "janus", GW_NS), 180)
    (pod,) = pods(c, GW_NS, "app.kubernetes.io/name=janus")
    janus_ip, janus_node = pod["status"]["podIP"], pod["spec"]["nodeName"]
    print(f"Janus pod {janus_ip} on {janus_node}")
    h.check(janus_node not in relay_nodes, f"the Janus pod shares a node with kturnd")
    answers: List[str] = []

    def janus_info() -> bool:  # from the host, where the page server relays from
        answers.append(probe([], "/janus/info", janus_ip, 8088))
        return '"server_info"' in answers[-1]
    try:
        e2e.wait_for(f"Janus's HTTP API on {janus_ip}:8088", janus_info, 90)
    except h.TestFailure:
        raise h.TestFailure(f"GET http://{janus_ip}:8088/janus/info answered "
                            f"{answers[-1][:300]!r}, not Janus's server_info")
    e2e.wait_for(f"the Gateway's TCP listeners on {address}",
                 lambda: all(probe(fabric.in_ns(env["CLIENT_NETNS"]), "tcp", address, port) ==
                             "connected" for port in (3478, 443)), 90)
    before = {p["metadata"]["name"]: len(sessions(c, p["metadata"]["name"])) for p in relays}
    measured = []
    for listener, _, _, url, relay_protocol in TRANSPORTS:
        turn_url = url.format(address)
        result = janus.janus_call(turn_url, cred["username"], cred["credential"],
                                  f"http://{janus_ip}:8088/janus", workdir=workdir,
                                  netns=env["CLIENT_NETNS"], seconds=8,
                                  browser_flags=(["--ignore-certificate-errors"]
                                                 if relay_protocol == "tls" else []))
        n = janus.check_call(result, relay_protocol=relay_protocol, janus_ip=janus_ip)
        print(f"  {turn_url}: {janus.describe(n)}")

        def recorded() -> Optional[dict]:
            for p in relays:
                name = p["metadata"]["name"]
                for s in sessions(c, name)[before[name]:]:
                    if (s.get("listener", "").endswith(listener) and
                            s.get("client", "").startswith(env["CLIENT_IP"] + ":") and
                            janus_ip in s.get("peers", [])):
                        return dict(s, pod=name)
            return None
        # Chromium deletes its allocation when the page hangs up; kturnd logs the session then.
        record = e2e.wait_for(f"kturnd's session record of the {listener} call", recorded, 30)
        print(f"    kturnd {record['pod']} session {record.get('session')}: client "
              f"{record['client']}, listener {record['listener']}, peers {record['peers']}, "
              f"packets to peers {record.get('packets_to_peers')}, to the client "
              f"{record.get('packets_to_client')}")
        h.check(record.get("packets_to_peers", 0) > 0 and
                record.get("packets_to_client", 0) > 0,
                f"kturnd's session record of the {listener} call: {record}")
        measured.append(f"{relay_protocol}: frames {n['frames_decoded'][1]}, lost "
                        f"{n['audio_packets_lost']}+{n['video_packets_lost']}, RTT "
                        f"{n['rtt_pair_ms']} ms")
    return measured


def sessions(c: e2e.Cluster, pod: str) -> List[dict]:
    """The session records a kturnd pod logged (one per allocation that ended)."""
    out = c.kubectl("logs", "-n", GW_NS, pod, check=False)
    found = []
    for line in out.splitlines():
        if "[session]" in line and "{" in line:
            try:
                found.append(json.loads(line[line.index("{"):]))
            except ValueError:
                pass
    return found


def idle_cost(dirpath: str, seconds: float = 15, pids: Optional[List[int]] = None) -> str:
    """What the cluster's processes (control plane, nodes, router, containers; or `pids`) cost
    while nothing happens: CPU over `seconds`, and memory (proportional set size, shared pages
    split among their users)."""
    clock = os.sysconf("SC_CLK_TCK")

    def cpu(pids: List[int]) -> float:
        total = 0.0
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / clock  # utime, stime
            except (OSError, IndexError, ValueError):
                pass
        return total

    if pids is None:
        pids = cluster.processes_under(os.path.abspath(dirpath))
    before, t = cpu(pids), time.monotonic()
    time.sleep(seconds)
    used = (cpu(pids) - before) / (time.monotonic() - t)
    pss = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                pss += sum(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, ValueError):
            pass
    return f"{len(pids)} processes, {100 * used:.0f} % of one core, {pss / 1024:.0f} MiB"


def stun_answered(client: List[str], address: str, port: int) -> bool:
    try:
        r = subprocess.run([*client, "turnutils_stunclient", "-p", str(port), address],
                           capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:  # it retries for longer than that
        return False
    return r.returncode == 0 and "UDP reflexive addr" in r.stdout



# --- 6. a node lost ----------------------------------------------------------------------------

LOSS_MESSAGES, LOSS_INTERVAL_MS = 2000, 20  # 40 s calls, running through the loss
RELAYED = re.compile(r"Received relay addr: ([0-9.]+):")


def relayed_by(call: e2e.Call) -> Optional[List[str]]:
    """The kturnd pods (relayed addresses) holding a verbose uclient call's allocations, once it
    has made them all (uclient makes two per client, each from a source port of its own, so
    the router may hash them to different nodes)."""
    out = call.proc.output()
    return sorted(RELAYED.findall(out)) if "Total connect time" in out else None


def place_calls(start, want: Dict[str, int], limit: int,
                whole: bool = True) -> Dict[str, List[e2e.Call]]:
    """Starts calls (`start(i)` makes call i) one at a time until each relayed address of
    `want` (a kturnd pod's IP) holds that many calls whole (or, not `whole`, an allocation of
    that many); the router's hash decides where each allocation lands. Every call started is
    returned, under its pod's address, or under "split" when its allocations went to two pods
    (not `whole`: under each pod it has an allocation on)."""
    placed: Dict[str, List[e2e.Call]] = {}
    for i in range(limit):
        if all(len(placed.get(ip, [])) >= k for ip, k in want.items()):
            break
        call = start(i)
        ips = op_wait(f"the allocations of call {call.tag}", lambda: relayed_by(call), 30,
                      interval=0.2)
        keys = sorted(set(ips)) if not whole else [ips[0] if len(set(ips)) == 1 else "split"]
        for key in keys:
            placed.setdefault(key, []).append(call)
    h.check(all(len(placed.get(ip, [])) >= k for ip, k in want.items()),
            f"{limit} calls did not give each pod its share {want}: "
            f"{ {ip: len(v) for ip, v in placed.items()} }")
    return placed


# Allocations from the client network, one after another, each from a new source port (a new
# flow for the router's hash): when each was tried, whether it was granted, and its relayed
# address (the kturnd pod's IP: it says which node took it).
ALLOCATIONS = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from harness.turn_client import TurnClient
from harness.runner import TestFailure
host, port, user, password, local = sys.argv[2], int(sys.argv[3]), *sys.argv[4:7]
until, stop_at = time.time() + float(sys.argv[7]), set(sys.argv[8].split(","))
seen = set()
while time.time() < until:
    t = time.time()
    with TurnClient((host, port), user, password, local_host=local, rto=0.2, tries=3) as turn:
        try:
            turn.allocate()
            relay = turn.relayed[0]
            turn.refresh(0)
            print(json.dumps({"t": t, "end": time.time(), "relay": relay}), flush=True)
            seen.add(relay)
            if stop_at <= seen:
                break
        except TestFailure as e:
            print(json.dumps({"t": t, "end": time.time(), "error": str(e)}), flush=True)
    time.sleep(0.05)
"""


def allocations(env: Dict[str, str], cred: Dict[str, str], address: str, seconds: float,
                port: int = 3478, stop_after: frozenset = frozenset({"-"})) -> subprocess.Popen:
    """ALLOCATIONS in the client's namespace for `seconds`, or until allocations were relayed
    by every address of `stop_after`; `attempts()` reads what it printed."""
    return subprocess.Popen(
        fabric.in_ns(env["CLIENT_NETNS"], sys.executable, "-c", ALLOCATIONS,
                     os.path.join(e2e.REPO, "tests", "interop"), address, str(port),
                     cred["username"], cred["credential"], env["CLIENT_IP"], str(seconds),
                     ",".join(sorted(stop_after))), stdout=subprocess.PIPE, text=True)


def attempts(proc: subprocess.Popen, seconds: float) -> List[dict]:
    out, _ = proc.communicate(timeout=seconds + 30)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def node_index(name: str) -> int:
    return int(name.rsplit("-n", 1)[1])


def node_loss(c: e2e.Cluster, net: fabric.Fabric, env: Dict[str, str], workdir: str,
              cred: Dict[str, str], address: str, relays: List[dict], media_ip: str,
              node_ip: Dict[str, str], title: str = "6. a node lost") -> Dict[str, float]:
    """Calls in progress through both kturnd pods; the node of one is cut off the network (its
    link to the router down: no goodbye, as a power loss); its BGP session times out and the
    router withdraws its path. The calls through the other node lose nothing, new allocations
    land there, and when the node is back it takes calls again."""
    print(f"--- {title}")
    client = fabric.in_ns(env["CLIENT_NETNS"])
    turn = (address, 3478)
    victim, survivor = relays
    vname, sname = victim["metadata"]["name"], survivor["metadata"]["name"]
    vnode = victim["spec"]["nodeName"]
    vip, sip = victim["status"]["podIP"], survivor["status"]["podIP"]
    numbers: Dict[str, float] = {}

    def call(tag: str, messages: int):
        return lambda i: e2e.Call(workdir, turn, cred, media_ip, f"{tag}-{i}", messages=messages,
                                  interval_ms=LOSS_INTERVAL_MS, prefix=client, clients=1,
                                  verbose=True)
    # uclient's two allocations of a call are hashed apart: about one call in four lands whole on
    # a given pod, and 24 calls leave a pod without one once in a thousand runs.
    placed = place_calls(call("loss", LOSS_MESSAGES), {vip: 1, sip: 1}, 24)
    print(f"calls in progress: {len(placed[vip])} through {vname} on {vnode} (to be lost), "
          f"{len(placed[sip])} through {sname} (to survive), "
          f"{len(placed.get('split', []))} split between them")
    for calls in placed.values():
        for each in calls:
            op_wait(f"call {each.tag} relaying", lambda: re.search(
                r"tot_recv_msgs=[1-9]", each.proc.output()), 20, interval=0.2)

    # The loss: the node's link to the router goes down.
    port = f"n{node_index(vnode)}"
    lost_at = time.time()
    fabric.ns_run(net.site.router_ns, "ip", "link", "set", port, "down")
    print(f"{vnode} ({node_ip[vnode]}) cut off: its link {port} on the router is down")
    window = 20.0
    probe_proc = allocations(env, cred, address, window)
    withdrawn = op_wait(f"the router to withdraw {address} via {node_ip[vnode]}", lambda: (
        time.time() if node_ip[vnode] not in net.lb_routes().get(address, [node_ip[vnode]])
        else None), 30, interval=0.1)
    numbers["withdrawn"] = withdrawn - lost_at
    print(f"router: {address} via {net.lb_routes().get(address)} "
          f"{numbers['withdrawn']:.1f} s after the loss (BGP hold time 9 s)")
    tried = attempts(probe_proc, window)
    granted = [a for a in tried if "relay" in a]
    # Unanswered: sent to the lost node. An error answer (a 437 when a source port comes back
    # that an earlier try's allocation still holds) is the surviving node answering.
    failed = [a for a in tried if "no response" in a.get("error", "")]
    h.check(granted, f"no allocation granted in the {window:.0f} s after the loss: {tried}")
    numbers["first allocation"] = granted[0]["end"] - lost_at
    numbers["last failure"] = (failed[-1]["t"] - lost_at) if failed else 0.0
    print(f"allocations from the client after the loss: {len(tried)} tried, {len(granted)} "
          f"granted (the first {numbers['first allocation']:.2f} s after the loss), "
          f"{len(failed)} unanswered (the last tried {numbers['last failure']:.1f} s after)")
    h.check(all(a["relay"] == sip for a in granted),
            f"an allocation relayed by another than the surviving pod {sip}: {granted}")
    late = [a for a in failed if a["t"] > withdrawn]
    h.check(not late, f"allocations unanswered after the route was withdrawn: {late}")

    timeout = LOSS_MESSAGES * LOSS_INTERVAL_MS / 1000 + 60
    for each in placed[sip]:
        each.finish(timeout=timeout)
    for each in placed[vip]:
        rc, s = each.outcome(timeout=timeout)
        h.check(s["lost"] > 0, f"call {each.tag} through the lost node lost nothing")
    split = [each.outcome(timeout=timeout)[1]["lost"] for each in placed.get("split", [])]
    print(f"calls through {sname} (surviving node): {len(placed[sip])}, none lost a message; "
          f"through {vname} (lost node): {len(placed[vip])}, cut; split: lost {split}")

    # The node comes back, under calls in progress (all through the surviving node): adding
    # the returning node's path must not move them.
    across_s = 60
    across = place_calls(call("across", across_s * 1000 // LOSS_INTERVAL_MS), {sip: 4}, 4)[sip]
    time.sleep(2)
    back_at = time.time()
    fabric.ns_run(net.site.router_ns, "ip", "link", "set", port, "up")
    op_wait(f"the router's route to {address} via {node_ip[vnode]} again", lambda: (
        node_ip[vnode] in net.lb_routes().get(address, [])), 180, interval=0.2)
    numbers["route back"] = time.time() - back_at
    ready = next(cond["status"] for cond in c.get("node", vnode)["status"]["conditions"]
                 if cond["type"] == "Ready")
    print(f"{vnode} back: the router routes {address} through it again "
          f"{numbers['route back']:.1f} s after its link came up (node Ready: {ready})")
    h.check(numbers["route back"] < across_s - 10, "the node's route came back after the calls "
            f"meant to run across it had (nearly) ended: {numbers['route back']:.0f} s")
    outcomes = {each.tag: each.outcome() for each in across}
    cut = {tag: s["lost"] for tag, (rc, s) in outcomes.items()
           if rc != 0 or s["lost"] or s["recv"] != across[0].expected}
    print(f"{len(across)} calls in progress through {sname} while {vnode} came back: "
          f"{len(cut)} lost messages {cut}")
    h.check(not cut, f"calls moved off {sname} when {vnode} came back: {cut}")
    proc = allocations(env, cred, address, 30, stop_after={vip})
    tried = attempts(proc, 30)
    h.check(tried and tried[-1].get("relay") == vip,
            f"no allocation relayed by {vname} after its node came back: {tried}")
    placed = place_calls(call("back", 200), {vip: 1}, 16)
    for calls in placed.values():
        for each in calls:
            each.finish()
    print(f"after the return: {len(tried)} allocations until one landed on {vname}; calls "
          f"through it and the other node lost nothing")
    return numbers



# --- 7. the hostNetwork DaemonSet mode -------------------------------------------------------

HOSTNET = "hostnet"  # the DaemonSet Gateway's Dataplane, GatewayConfig, GatewayClass, Gateway
HOSTNET_GW = f"{HOSTNET}-gateway"
HOSTNET_PORT = 3479


def hostnet_manifests(c: e2e.Cluster, address: str) -> List[dict]:
    """A second Gateway run as STUNner's DaemonSet mode: a Dataplane like the chart's, with
    hostNetwork and dataplaneResource DaemonSet (one kturnd per node, in the node's network
    namespace, its relay address the node's), a GatewayConfig and GatewayClass naming it, and a
    Gateway on its own LoadBalancer address routed to the same media server."""
    dp = c.get("dataplane", "default")
    spec = dp["spec"]
    spec.update(hostNetwork=True, dataplaneResource="DaemonSet")
    for key in ("replicas", "affinity"):
        spec.pop(key, None)
    # The namespaced sysctl that lets a non-root kturnd bind ports below 1024 is refused in the
    # node's network namespace (docs/kubernetes.md#6-security-contexts); the port is above.
    spec.get("securityContext", {}).pop("sysctls", None)
    config = c.get("gatewayconfig", "stunner-config", "stunner")["spec"]
    config["dataplane"] = HOSTNET
    return [
        {"apiVersion": dp["apiVersion"], "kind": "Dataplane", "metadata": {"name": HOSTNET},
         "spec": spec},
        {"apiVersion": "stunner.l7mp.io/v1", "kind": "GatewayConfig",
         "metadata": {"name": f"{HOSTNET}-config", "namespace": "stunner"}, "spec": config},
        {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
         "metadata": {"name": f"{HOSTNET}-gatewayclass"},
         "spec": {"controllerName": "stunner.l7mp.io/gateway-operator",
                  "parametersRef": {"group": "stunner.l7mp.io", "kind": "GatewayConfig",
                                    "name": f"{HOSTNET}-config", "namespace": "stunner"}}},
        {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
         "metadata": {"name": HOSTNET_GW, "namespace": GW_NS, "annotations": {
             "stunner.l7mp.io/external-traffic-policy": "local"}},
         "spec": {"gatewayClassName": f"{HOSTNET}-gatewayclass",
                  "addresses": [{"type": "IPAddress", "value": address}],
                  "listeners": [{"name": "turn-udp", "port": HOSTNET_PORT,
                                 "protocol": "TURN-UDP"}]}},
        {"apiVersion": "stunner.l7mp.io/v1", "kind": "UDPRoute",
         "metadata": {"name": f"{HOSTNET}-route", "namespace": GW_NS},
         "spec": {"parentRefs": [{"name": HOSTNET_GW}],
                  "rules": [{"backendRefs": [{"name": "media-server"}]}]}},
    ]


def daemonset_mode(c: e2e.Cluster, net: fabric.Fabric, env: Dict[str, str], workdir: str,
                   cred: Dict[str, str], media_ip: str, node_ip: Dict[str, str]) -> None:
    """kturnd on every node in the node's network namespace: each pod's relay address is its
    node's (the pod IP of a hostNetwork pod), the router reaches the Gateway's address through
    every node, and a call through each node reaches the media pod, which admits the nodes'
    addresses (a hostNetwork pod sends from its node's)."""
    print("--- 7. the hostNetwork DaemonSet mode")
    address = str(ipaddress.ip_network(env["LB_POOL"])[11])
    c.apply(hostnet_manifests(c, address))
    policy = media_policy()
    policy["spec"]["ingress"][0]["from"].append({"ipBlock": {"cidr": str(fabric.LAN)}})
    c.apply([policy])
    selector = f"stunner.l7mp.io/related-gateway-name={HOSTNET_GW}"
    nodes = sorted(node_ip)
    relays = e2e.wait_for(f"a ready hostNetwork kturnd pod on each of {nodes}", lambda: (
        lambda ps: ps if sorted(p["spec"]["nodeName"] for p in ps) == nodes and all(
            e2e.condition(p, "Ready") and e2e.condition(p, "Ready")["status"] == "True"
            for p in ps) else None)(pods(c, GW_NS, selector)), 240)
    ds = c.get("daemonset", HOSTNET_GW, GW_NS)
    print(f"DaemonSet {GW_NS}/{HOSTNET_GW}: {ds['status'].get('numberReady')} of "
          f"{ds['status'].get('desiredNumberScheduled')} ready, hostNetwork "
          f"{ds['spec']['template']['spec'].get('hostNetwork')}")
    for p in relays:
        h.check(p["status"]["podIP"] == node_ip[p["spec"]["nodeName"]],
                f"hostNetwork pod {p['metadata']['name']} has IP {p['status']['podIP']}")
    expected = sorted(node_ip.values())
    routes = op_wait(f"the router's route to {address} through every node {expected}", lambda: (
        lambda r: r if r.get(address) == expected else None)(net.lb_routes()), 120)
    print(f"router: {address} via {routes[address]}")
    e2e.wait_for(f"STUN from the client to {address}:{HOSTNET_PORT}", lambda: stun_answered(
        fabric.in_ns(env["CLIENT_NETNS"]), address, HOSTNET_PORT), 60)

    # Relay address discovery: each allocation's relayed address is the node that took it.
    proc = allocations(env, cred, address, 40, port=HOSTNET_PORT, stop_after=set(expected))
    tried = attempts(proc, 40)
    relayed = sorted({a["relay"] for a in tried if "relay" in a})
    print(f"{len(tried)} allocations from the client: relayed addresses {relayed}")
    h.check(relayed == expected, f"relayed addresses {relayed}, not every node's {expected}")

    turn = (address, HOSTNET_PORT)
    # A whole call through each node: uclient's two allocations come from two ports, which the
    # router hashes apart two times in three over three nodes, so a node gets a whole call in
    # one try of nine. 24 tries left a node without one in about one run in six (a run had 18
    # split and none whole on one node); 48 in about one in a hundred. (Split calls do not
    # count: uclient releases one allocation and leaves the other to expire, and the session
    # record checked below is written when an allocation ends.)
    placed = place_calls(lambda i: e2e.Call(
        workdir, turn, cred, media_ip, f"hostnet-{i}", messages=200, interval_ms=10,
        prefix=fabric.in_ns(env["CLIENT_NETNS"]), clients=1, verbose=True),
        {ip: 1 for ip in expected}, 48)
    for calls in placed.values():
        for each in calls:
            each.finish()
    by_node = {p["spec"]["nodeName"]: len(placed[p["status"]["podIP"]]) for p in relays}
    print(f"calls through each node's kturnd, none lost a message: {by_node}")
    for p in relays:  # the calls' allocations (the probes' had no peer)
        records = [r for r in sessions(c, p["metadata"]["name"])
                   if r.get("client", "").startswith(env["CLIENT_IP"] + ":") and r.get("peers")]
        h.check(records and all(r["peers"] == [media_ip] for r in records) and
                sum(r.get("packets_to_peers", 0) for r in records) > 0,
                f"{p['metadata']['name']}: session records of the client's calls {records}")



# --- 8. scale out and in ------------------------------------------------------------------------

def scale(c: e2e.Cluster, net: fabric.Fabric, env: Dict[str, str], workdir: str,
          cred: Dict[str, str], address: str, media_ip: str, node_ip: Dict[str, str]) -> None:
    """A third kturnd pod (the chart's dataplane.replicas, which the operator owns) lands on the
    node that had none, the router adds that node's path, and the calls in progress on the
    others do not move; back to two, the pod removed drains (--ready-while-draining): its
    calls end whole and its node keeps announcing the address meanwhile; it exits with its last
    allocation (or a second SIGTERM ends the drain, when uclient left one to expire), and the
    node withdraws the address."""
    print("--- 8. scale out and in")
    client = fabric.in_ns(env["CLIENT_NETNS"])
    turn = (address, 3478)

    def call(tag: str, seconds: int):
        return lambda i: e2e.Call(workdir, turn, cred, media_ip, f"{tag}-{i}",
                                  messages=seconds * 1000 // LOSS_INTERVAL_MS,
                                  interval_ms=LOSS_INTERVAL_MS, prefix=client, clients=1,
                                  verbose=True)
    before = pods(c, GW_NS, KTURND)
    old_ips = [p["status"]["podIP"] for p in before]
    steady = {each for calls in place_calls(call("steady", 60), {ip: 2 for ip in old_ips}, 16,
                                            whole=False).values() for each in calls}

    t0 = time.monotonic()
    c.helm("upgrade", e2e.RELEASE, e2e.CHART, "-n", e2e.SYSTEM_NS, "--reuse-values",
           "--set", f"dataplane.replicas={REPLICAS + 1}")
    added = e2e.wait_for("a third kturnd pod, ready", lambda: (lambda ps: ps if len(ps) == 1 and (
        e2e.condition(ps[0], "Ready") or {}).get("status") == "True" else None)(
        [p for p in pods(c, GW_NS, KTURND) if p["status"]["podIP"] not in old_ips]), 120)[0]
    new_node, new_ip = added["spec"]["nodeName"], added["status"]["podIP"]
    h.check(new_node not in {p["spec"]["nodeName"] for p in before},
            f"the third kturnd pod shares {new_node} with another")
    op_wait(f"the router's route to {address} via {new_node}", lambda: (
        node_ip[new_node] in net.lb_routes().get(address, [])), 60, interval=0.2)
    print(f"scaled out: {added['metadata']['name']} on {new_node}, in the router's route "
          f"{time.monotonic() - t0:.1f} s after helm upgrade")
    # Calls on every pod, whichever the scale-in removes.
    placed = place_calls(call("drained", 40), {p["status"]["podIP"]: 1
                                               for p in pods(c, GW_NS, KTURND)}, 24, whole=False)

    # Back to two: the pod removed keeps relaying its calls until they end.
    t1 = time.monotonic()
    c.helm("upgrade", e2e.RELEASE, e2e.CHART, "-n", e2e.SYSTEM_NS, "--reuse-values",
           "--set", f"dataplane.replicas={REPLICAS}")
    leaving = e2e.wait_for("the kturnd pod the scale-down removes", lambda: [
        p for p in c.get("pods", ns=GW_NS, selector=KTURND)["items"]
        if p["metadata"].get("deletionTimestamp")], 60)[0]
    lname, lnode = leaving["metadata"]["name"], leaving["spec"]["nodeName"]
    lip = leaving["status"]["podIP"]
    drained = set(placed.get(lip, [])) | {each for each in steady if lip in relayed_by(each)}
    print(f"scaling in: {lname} on {lnode} draining, with an allocation of {len(drained)} calls")
    h.check(drained, f"no call in progress had an allocation on {lname}: nothing to drain")
    calls = steady | {each for calls in placed.values() for each in calls}
    for each in sorted(calls, key=lambda x: x.tag):
        each.finish()
    # The calls are over. uclient releases one of the two allocations of each client and
    # leaves the other to expire (600 s; a browser releases its own): if one of those is on the
    # pod, it is still draining, still ready, and its node still announcing the address; a
    # second SIGTERM then ends the drain (docs/operations.md#draining). Else it has exited.
    def present() -> bool:
        return any(p["metadata"]["name"] == lname
                   for p in c.get("pods", ns=GW_NS, selector=KTURND)["items"])
    if present():
        in_leaving = in_pod(c, leaving)
        ready = probe(in_leaving, "/ready", lip, 8086)
        left = [line.split()[-1] for line in probe(in_leaving, "/metrics", lip, 8080).splitlines()
                if line.startswith("stunner_allocations_active")]
        routed = node_ip[lnode] in net.lb_routes().get(address, [])
        print(f"{lname}, {time.monotonic() - t1:.1f} s into its drain with its calls over: "
              f"/ready {ready!r}, {left} allocations left (uclient's), {lnode} still in the "
              f"router's route: {routed}")
        h.check(not ready.startswith("error") and routed,
                f"a draining pod's node stopped announcing: /ready {ready!r}, route {routed}")
        signal_container(c, leaving, "SIGTERM")
        how = "after a second SIGTERM"
    else:
        how = "by itself, its last allocation released"
    e2e.wait_for(f"{lname} to exit", lambda: not present(), 60)
    gone = time.monotonic()
    op_wait(f"the router to withdraw {address} via {lnode}", lambda: (
        node_ip[lnode] not in net.lb_routes().get(address, [node_ip[lnode]])), 60, interval=0.2)
    print(f"scaled in: {lname} exited {how}, {gone - t1:.1f} s after helm upgrade; its node's "
          f"path withdrawn {time.monotonic() - gone:.1f} s later")
    print(f"calls in progress while scaling out and in: {len(steady)} from before, "
          f"{len(calls) - len(steady)} more on every pod, none lost a message")


def body(args: argparse.Namespace, workdir: str) -> None:
    c = e2e.Cluster(args.cluster)
    env = c.env
    net = fabric.Fabric(args.cluster, 0)
    client = fabric.in_ns(env["CLIENT_NETNS"])
    t0 = time.monotonic()
    timings: Dict[str, float] = {}
    h.register_cleanup(lambda: None if args.passed else print(c.describe()))

    # 0. The topology.
    zones: Dict[str, str] = {}
    node_ip: Dict[str, str] = {}
    print("--- 0. topology")
    for n in c.get("nodes")["items"]:
        name = n["metadata"]["name"]
        zones[name] = n["metadata"]["labels"].get(ZONE, "")
        node_ip[name] = next(a["address"] for a in n["status"]["addresses"]
                             if a["type"] == "InternalIP")
        print(f"node {name}: {node_ip[name]}, zone {zones[name]}, pods {n['spec'].get('podCIDR')}")
    h.check(len(zones) >= 3 and len(set(zones.values())) == 2, f"nodes and zones: {zones}")
    def established() -> List[str]:
        return [line.split()[0] for line in net.birdc("show", "protocols").splitlines()
                if " BGP " in line and "Established" in line]
    # The last node's speaker may still be opening its session when cluster.py up returns.
    seen: List[List[str]] = []
    try:
        e2e.wait_for("a BGP session from every node's speaker", lambda: (
            lambda up: seen.append(up) or (up if len(up) == len(zones) else None))(
                established()), 60)
    except h.TestFailure:
        raise h.TestFailure(f"the router's BGP sessions after 60 s: {seen[-1]}")
    print(f"router {env['ROUTER_NETNS']}: BGP Established with {seen[-1]}; client "
          f"{env['CLIENT_IP']} in {env['CLIENT_NETNS']}; pool {env['LB_POOL']}")
    print(f"idle, before kturn: {idle_cost(args.cluster)}")

    # 1. The chart, kturnd spread across zones.
    auth_from = [{"podSelector": {}},
                 {"namespaceSelector": {"matchLabels": {
                     "kubernetes.io/metadata.name": "signalling"}},
                  "podSelector": {"matchLabels": {"app": PROBES["signalling"]}}}]
    c.helm("install", e2e.RELEASE, e2e.CHART, "-n", e2e.SYSTEM_NS, "--create-namespace",
           "--wait", "--timeout", "5m", "--set", f"dataplane.replicas={REPLICAS}",
           "--set-json", f"dataplane.affinity={json.dumps(anti_affinity())}",
           "--set", "dataplane.enableMetricsEndpoint=true",
           "--set-json", f"networkPolicy.auth.from={json.dumps(auth_from)}",
           # Draining pods stay ready, so that MetalLB keeps announcing their node until their
           # calls end (step 8; docs/kubernetes.md#many-nodes).
           "--set-json", 'dataplane.args=["-w","--udp-thread-num=2","--ready-while-draining"]',
           # The hostNetwork kturnd pods of step 7 reach CDS from their nodes' addresses.
           "--set-json", "networkPolicy.cds.extraFrom=" + json.dumps(
               [{"ipBlock": {"cidr": str(fabric.LAN)}}]))
    c.apply(probe_pods())
    timings["helm install"] = time.monotonic() - t0

    # 2. The Gateway and the media server.
    address = lb_address(env)
    c.apply(gateway_manifests(address))
    e2e.wait_for(f"the Gateway's kturnd Deployment ({REPLICAS} replicas)",
                 lambda: e2e.deployment_available(c, GW_NAME, GW_NS), 240)
    relays = pods(c, GW_NS, KTURND)
    relay_nodes = sorted(p["spec"]["nodeName"] for p in relays)
    print("kturnd pods: " + ", ".join(
        f"{p['metadata']['name']} {p['status']['podIP']} on {p['spec']['nodeName']} "
        f"({zones[p['spec']['nodeName']]})" for p in relays))
    h.check(len({zones[n] for n in relay_nodes}) == REPLICAS,
            f"the kturnd pods are not spread across the zones: {relay_nodes}")
    c.apply(media_apart() + [media_policy()])
    e2e.wait_for("the media server", lambda: e2e.deployment_available(c, "media-server", GW_NS),
                 180)
    (media,) = pods(c, GW_NS, "app.kubernetes.io/name=media-server")
    media_ip, media_node = media["status"]["podIP"], media["spec"]["nodeName"]
    print(f"media pod {media_ip} on {media_node}")
    h.check(media_node not in relay_nodes, f"the media pod shares a node with kturnd")
    timings["pods"] = time.monotonic() - t0

    # 3. The LoadBalancer address: MetalLB's, in the Gateway's status, and the router's route.
    gw = e2e.wait_for(f"the Gateway's address {address}", lambda: (
        lambda g: g if {"type": "IPAddress", "value": address} in
        g.get("status", {}).get("addresses", []) else None)(
            c.get("gateway", GW_NAME, GW_NS)), 60)
    programmed = e2e.condition(gw, "Programmed")
    print(f"Gateway {GW_NS}/{GW_NAME}: addresses {gw['status']['addresses']}, Programmed "
          f"{programmed['status']} {programmed['reason']}")
    svc = c.get("service", GW_NAME, GW_NS)
    print(f"Service {GW_NS}/{GW_NAME}: externalTrafficPolicy "
          f"{svc['spec'].get('externalTrafficPolicy')}, load balancer "
          f"{svc['status'].get('loadBalancer')}")
    expected = sorted(node_ip[n] for n in relay_nodes)
    start = time.monotonic()
    routes = e2e.wait_for(f"the router's route to {address} through {expected}", lambda: (
        lambda r: r if r.get(address) == expected else None)(net.lb_routes()), 60)
    print(f"router: {address} via {routes[address]} (learned "
          f"{time.monotonic() - start:.1f} s after the address was in the Gateway's status)")
    timings["route"] = time.monotonic() - t0

    # 4. Calls from the client network.
    e2e.wait_for(f"STUN from the client to {address}:3478",
                 lambda: stun_answered(client, address, 3478), 60)
    probes = {}
    for ns, app in PROBES.items():
        pod = e2e.wait_for(f"pod {ns}/{app}", lambda: (lambda p: p if p else None)(
            pods(c, ns, f"app={app}")), 60)[0]
        probes[ns] = in_pod(c, pod)
    cred = credential(c, probes["signalling"])
    turn = (address, 3478)
    calls = [e2e.Call(workdir, turn, cred, media_ip, f"client-{i}", prefix=client)
             for i in range(CALLS)]
    for call in calls:
        call.finish()
    timings["calls"] = time.monotonic() - t0
    served = {}
    for p in relays:
        records = [s for s in sessions(c, p["metadata"]["name"])
                   if s.get("client", "").startswith(env["CLIENT_IP"] + ":")]
        served[p["metadata"]["name"]] = records
        print(f"kturnd pod {p['metadata']['name']} on {p['spec']['nodeName']}: "
              f"{len(records)} allocations of {env['CLIENT_IP']}, peers "
              f"{sorted({peer for s in records for peer in s.get('peers', [])})}, packets to "
              f"peers {sum(s.get('packets_to_peers', 0) for s in records)}, to the client "
              f"{sum(s.get('packets_to_client', 0) for s in records)}")
    total = sum(len(r) for r in served.values())
    h.check(total == 2 * CALLS, f"session records of the client: {total}, not {2 * CALLS}")
    # The router hashes each flow: with 12 allocations, both kturnd pods get some (all on one
    # would be the route's single next hop, or 1 in 2,048 by chance).
    h.check(all(served.values()), "a kturnd pod got none of the client's allocations: "
            f"{ {k: len(v) for k, v in served.items()} }")
    h.check(all(s.get("peers") == [media_ip] for r in served.values() for s in r),
            "a session's peers are not the media pod")

    # 5. The NetworkPolicies, enforced by kube-router: each refusal, and its allowed path.
    print("--- 5. NetworkPolicies (kube-router)")
    (operator,) = pods(c, e2e.SYSTEM_NS, "app.kubernetes.io/component=operator")
    (auth,) = pods(c, e2e.SYSTEM_NS, "app.kubernetes.io/component=auth")
    op_ip, auth_ip = operator["status"]["podIP"], auth["status"]["podIP"]
    relay_ip = relays[0]["status"]["podIP"]
    checks = [
        ("other", "tcp", op_ip, 13478, "refused", "the operator's CDS"),
        (None, "tcp", op_ip, 13478, "connected", "the operator's CDS"),
        ("other", "tcp", relay_ip, 8080, "refused", "kturnd's metrics"),
        ("monitoring", "tcp", relay_ip, 8080, "connected", "kturnd's metrics"),
        ("other", "tcp", op_ip, 8080, "refused", "the operator's metrics"),
        ("monitoring", "tcp", op_ip, 8080, "connected", "the operator's metrics"),
        ("other", "tcp", auth_ip, 8088, "refused", "kturn-auth"),
        ("signalling", "tcp", auth_ip, 8088, "connected", "kturn-auth"),
        ("other", "udp", media_ip, e2e.MEDIA_PORT, "refused", "the media pod's RTP port"),
        (None, "udp", media_ip, e2e.MEDIA_PORT, "answered", "the media pod's RTP port"),
    ]
    relay_ns = in_pod(c, relays[0])
    for ns, kind, host, port, want, what in checks:
        got = probe(probes[ns] if ns else relay_ns, kind, host, port)
        source = f"pod of namespace {ns}" if ns else f"kturnd pod {relay_ip}"
        print(f"  {what} ({host}:{port}/{kind}) from a {source}: {got}")
        h.check(got == want, f"{what} from a {source}: {got}, expected {want}")
    timings["policies"] = time.monotonic() - t0

    # 5b. Real media: Janus behind the Gateway's three transports.
    print("--- 5b. WebRTC calls to Janus (headless Chromium, relay only)")
    c.apply(janus_manifests(address, *h.self_signed_cert("turn.kturn.test")))
    janus_results = janus_calls(c, env, workdir, address, cred, relays, relay_nodes)
    timings["Janus calls"] = time.monotonic() - t0
    print("Janus calls: " + "; ".join(janus_results))
    # Janus goes: the steps after place pods by the nodes' load (step 8's third kturnd pod went
    # to a node beside another once, with Janus on the third node).
    c.kubectl("delete", "deployment", "janus", "-n", GW_NS)
    e2e.wait_for("the Janus pod gone", lambda: not c.get(
        "pods", ns=GW_NS, selector="app.kubernetes.io/name=janus")["items"], 60)

    loss = node_loss(c, net, env, workdir, cred, address, relays, media_ip, node_ip)
    timings["node loss"] = time.monotonic() - t0
    print("node loss: " + ", ".join(f"{k} {v:.2f} s" for k, v in loss.items()))

    daemonset_mode(c, net, env, workdir, cred, media_ip, node_ip)
    timings["DaemonSet mode"] = time.monotonic() - t0
    print(f"idle, with kturn (both Gateways, {REPLICAS} + {len(node_ip)} kturnd pods): "
          f"{idle_cost(args.cluster)}")

    scale(c, net, env, workdir, cred, address, media_ip, node_ip)
    timings["scale"] = time.monotonic() - t0
    print("timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    args.passed = True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cluster", required=True, help="cluster.py's --dir")
    ap.add_argument("--server", default="kturnd")
    ap.add_argument("--keep-logs", action="store_true")
    ap.set_defaults(passed=False)
    h.run_test("cluster", body, ap, overall_timeout=1200)


if __name__ == "__main__":
    main()
