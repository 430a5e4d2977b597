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

  /usr/bin/python3 tests/e2e/cluster_test.py --cluster DIR     (DIR: cluster.py's --dir)
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
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
    """Source document 001's Deployment spread: kturnd pods of one Gateway prefer other zones."""
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100, "podAffinityTerm": {
            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In",
                                                    "values": ["stunner"]}]},
            "topologyKey": ZONE}}]}}


def gateway_manifests(address: str) -> List[dict]:
    docs = e2e.seed_manifests()
    for d in docs:
        if d["kind"] == "Gateway" and d["metadata"]["name"] == GW_NAME:
            d["spec"]["addresses"] = [{"type": "IPAddress", "value": address}]
            d["metadata"].setdefault("annotations", {})[
                "stunner.l7mp.io/external-traffic-policy"] = "local"
    return docs


def media_apart() -> List[dict]:
    """The media server, kept off every node that runs a kturnd pod of the Gateway."""
    docs = e2e.media_server()
    spec = docs[0]["spec"]["template"]["spec"]
    spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"stunner.l7mp.io/related-gateway-name": GW_NAME}},
        "namespaces": [GW_NS], "topologyKey": "kubernetes.io/hostname"}]}}
    return docs


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


def stun_answered(client: List[str], address: str, port: int) -> bool:
    r = subprocess.run([*client, "turnutils_stunclient", "-p", str(port), address],
                       capture_output=True, text=True, timeout=10)
    return r.returncode == 0 and "UDP reflexive addr" in r.stdout


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
    sessions_up = [line.split()[0] for line in net.birdc("show", "protocols").splitlines()
                   if " BGP " in line and "Established" in line]
    print(f"router {env['ROUTER_NETNS']}: BGP Established with {sessions_up}; client "
          f"{env['CLIENT_IP']} in {env['CLIENT_NETNS']}; pool {env['LB_POOL']}")
    h.check(len(sessions_up) == len(zones), f"the router's BGP sessions: {sessions_up}")

    # 1. The chart, kturnd spread across zones.
    auth_from = [{"podSelector": {}},
                 {"namespaceSelector": {"matchLabels": {
                     "kubernetes.io/metadata.name": "signalling"}},
                  "podSelector": {"matchLabels": {"app": PROBES["signalling"]}}}]
    c.helm("install", e2e.RELEASE, e2e.CHART, "-n", e2e.SYSTEM_NS, "--create-namespace",
           "--wait", "--timeout", "5m", "--set", f"dataplane.replicas={REPLICAS}",
           "--set-json", f"dataplane.affinity={json.dumps(anti_affinity())}",
           "--set", "dataplane.enableMetricsEndpoint=true",
           "--set-json", f"networkPolicy.auth.from={json.dumps(auth_from)}")
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
