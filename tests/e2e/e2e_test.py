#!/usr/bin/python3
"""Source document 000's example on a real single-node cluster (tests/e2e/cluster.py), as a
platform team runs it and as a client on the internet reaches it: kturn's images, built from its
Dockerfiles (scripts/build-images.sh), in pods that the kubelet runs under containerd and runc.

Day 1:
  1. `helm install` of deploy/helm/kturn on the cluster as it starts, without any CRD (the chart
     brings kturn's and the Gateway API's standard channel), with the eBPF fast path on
     (dataplane.offload.engine=TC, docs/offload.md#in-a-pod) and kturnd's metrics endpoint,
     waiting until the operator and kturn-auth Deployments are available (their pods run,
     their probes pass).
  2. The seed's manifests (tests/golden/seed000/input, less its hand-written EndpointSlice) and
     a media-server Deployment behind the Service the UDPRoute names: the UDP echo of coturn's
     turnutils_peer. The operator renders the Gateway; its kturnd Deployment becomes available
     and the Gateway Programmed. Without a cloud the LoadBalancer Service keeps no external
     address: the test says what the Gateway's status says of it.
  3. From the host, as a client would: a credential from kturn-auth's /ice (its Service, through
     kube-proxy); coturn's turnutils_uclient allocates on kturnd through the Gateway Service's
     node port and relays to the media pod by its pod IP, every message echoed and relayed
     in the kernel of the kturnd pod (its offload counters, both ways); a peer the
     routes do not name (the operator's pod) is refused with 403. Headless Chromium runs the
     demo page through a second Gateway's node port: two peer connections, relay only, echo
     every message over a data channel through the kturnd pod.
  3b. Config discovery under attack (the chart turns authentication and TLS on): the kturnd pod
     got its config with the token the kubelet projected; from the node, against the operator
     pod's CDS port, no token is 401, a token bound to a pod of another namespace is 403, the
     kturnd pod's own token (read off the node, as a thief would) gets its Gateway's config
     and is 403 for the other Gateway's, and kturn-auth's for a Gateway it does not serve.
     Step 6 replays the stolen token after its pod is deleted: refused.
  3c. The fast path's cost in the pod: kturn-bench from the host through the node port to the
     media pod, with the program (TC on the pod's interfaces) and, the Dataplane patched to
     offloadEngine None, in user space; each run after a direct baseline (the same clients
     and media pod, no relay). Prints the marginal cost, the machine's busy time per relayed
     packet minus the baseline's (bench/README.md); asserts only who relayed.

Day 2, each step with a call in progress (a uclient call of two allocations to the media pod,
started before the step and ended after it: its packets sent, echoed and lost are printed, and
none may be lost):
  4. The auth Secret rotated in place: kturn-auth mints with the new secret once the operator
     pushes it, a new allocation with such a credential succeeds at once, and one with a
     credential minted before the rotation still does (the operator serves the replaced
     secret as previous_secret).
  5. The media Deployment scaled 1 -> 3 -> 1: kturnd permits the new pods once their
     EndpointSlice lists them, and refuses (403) the removed pods' addresses once it no longer
     does. The call's pod carries the highest pod-deletion-cost, so the scale-down keeps it.
  6. The kturnd Deployment rolled to a new image tag (the Dataplane's image): the old pod drains
     (Terminating, /status TERMINATING, its allocations relayed to the end), a call started
     once kube-proxy routes new flows to the new pod lands there (its /status counts it), then
     the drain is ended as docs/operations.md says (delete --grace-period=0).
  7. The operator pod deleted: relaying goes on; the Deployment's new pod takes the Lease and
     renders again (a scale of the media Deployment reaches kturnd's allow-list).
  8. The Gateway deleted: its Deployment and Service (owned by it) are garbage-collected, its
     pods terminate and drain.
  9. A STUNner user's migration as docs/migration-from-stunner.md gives it: `helm upgrade` of
     the release with STUNner's own values.yaml (helm/stunner 1.2.0, unpacked into the tool cache
     from ../shared/reference/; the step says so and is left out where that is absent), only
     its three image references made kturn's. The upgrade rolls kturn-auth: asked through its
     Service every 0.1 s during the roll, it answers every request (the new pod is Ready once
     it has read config discovery, the old one answers on for its shutdown delay). The seed's
     Gateway applied again; a credential from STUNner's auth Service name (stunner-auth:8088,
     /ice), as a signalling server of a STUNner user asks it, once kturn-auth has the
     Gateway's config (the time printed); and a call with it through the new kturnd pod, 0
     lost.

  /usr/bin/python3 tests/e2e/e2e_test.py --cluster DIR     (DIR: cluster.py's --dir)
"""

from __future__ import annotations

import argparse
import base64
import functools
import glob
import hashlib
import hmac
import json
import os
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Callable, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "interop"))
sys.path.insert(0, os.path.join(REPO, "tests", "support"))
import harness as h  # noqa: E402
import control_plane as cp  # noqa: E402
import operator_test as op  # noqa: E402  (its wait and condition lookup)

import yaml  # noqa: E402

CHART = os.path.join(REPO, "deploy", "helm", "kturn")
SEED = os.path.join(REPO, "tests", "golden", "seed000", "input")
RELEASE = "kturn"
SYSTEM_NS = "kturn-system"
GW_NS, GW_NAME = "media", "media-server-gateway"
MEDIA_PORT = 10000  # the seed's media-server Service port; turnutils_peer echoes on it
MESSAGES = 50
BROWSER_GW = "browser-gateway"  # the demo page's Gateway (browser_gateway())
NEW_TAG = "0.1.1"  # the kturnd tag of step 6 (tests/e2e/run.sh builds it)


class Cluster:
    """kubectl and helm on the cluster cluster.py runs."""

    def __init__(self, dirpath: str):
        self.dir = dirpath
        self.env = cp.read_env(dirpath)
        self.kubeconfig = self.env["KUBECONFIG"]
        self.bin = os.path.join(self.env["TOOLS"], "bin")

    def kubectl(self, *args: str, input: Optional[str] = None, check: bool = True) -> str:
        r = subprocess.run([os.path.join(self.bin, "kubectl"), "--kubeconfig", self.kubeconfig,
                            *args], input=input, capture_output=True, text=True, timeout=120)
        h.check(r.returncode == 0 or not check,
                f"kubectl {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def helm(self, *args: str) -> str:
        r = subprocess.run([os.path.join(self.bin, "helm"), "--kubeconfig", self.kubeconfig,
                            *args], capture_output=True, text=True, timeout=600)
        h.check(r.returncode == 0, f"helm {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def get(self, kind: str, name: str = "", ns: str = "", selector: str = "") -> dict:
        """The object, or the list; {} for an object that does not exist (yet)."""
        args = ["get", kind] + ([name, "--ignore-not-found"] if name else [])
        args += (["-n", ns] if ns else []) + (["-l", selector] if selector else []) + ["-o", "json"]
        return json.loads(self.kubectl(*args) or "{}")

    def apply(self, docs: List[dict]) -> None:
        self.kubectl("apply", "-f", "-", input="\n---\n".join(json.dumps(d) for d in docs))

    def describe(self) -> str:
        """What a failing test prints: the pods, the events, the Gateway."""
        return "\n".join([
            self.kubectl("get", "pods", "-A", "-o", "wide", check=False),
            self.kubectl("get", "events", "-A", "--sort-by", ".lastTimestamp", check=False)[-6000:],
            self.kubectl("get", "gateways", "-A", "-o", "yaml", check=False)[-4000:],
        ])


# operator_test's wait, polling once a second: each poll runs kubectl.
wait_for = functools.partial(op.wait_for, interval=1.0)
condition = op.condition


def media_server() -> List[dict]:
    """The media server the seed's UDPRoute names: a Deployment of UDP echoes and its Service
    (a selector this time, so the endpointslice controller keeps its EndpointSlice)."""
    labels = {"app.kubernetes.io/name": "media-server"}
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "media-server", "namespace": GW_NS},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels}, "spec": {
                      "terminationGracePeriodSeconds": 1,
                      "securityContext": {"runAsNonRoot": True},
                      "containers": [{
                          "name": "echo", "image": "kturn-e2e/media-echo:0.1.0",
                          "imagePullPolicy": "Never",
                          "args": ["-p", str(MEDIA_PORT)],
                          "ports": [{"name": "rtp", "containerPort": MEDIA_PORT,
                                     "protocol": "UDP"}],
                          "securityContext": {"allowPrivilegeEscalation": False,
                                              "capabilities": {"drop": ["ALL"]}}}]}}}},
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "media-server", "namespace": GW_NS},
         "spec": {"selector": labels, "ports": [{"name": "rtp", "protocol": "UDP",
                                                 "port": MEDIA_PORT}]}},
    ]


def seed_manifests() -> List[dict]:
    docs = []
    for f in sorted(os.listdir(SEED)):
        with open(os.path.join(SEED, f)) as fh:
            for doc in yaml.safe_load_all(fh):
                # The seed's media-server stand-ins (a Service without a selector and its
                # hand-written EndpointSlice) give way to the real Deployment and Service.
                if isinstance(doc, dict) and doc["kind"] not in ("Service", "EndpointSlice"):
                    docs.append(doc)
    namespaces = sorted({d["metadata"]["namespace"] for d in docs
                         if "namespace" in d.get("metadata", {})})
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
            for n in namespaces] + docs


def deployment_available(c: Cluster, name: str, ns: str) -> bool:
    dep = c.get("deployment", name, ns)
    cond = condition(dep, "Available")
    return bool(cond and cond["status"] == "True" and
                dep["status"].get("updatedReplicas") == dep["spec"]["replicas"])


def pod_ips(c: Cluster, ns: str, selector: str) -> List[str]:
    pods = c.get("pods", ns=ns, selector=selector)["items"]
    return sorted(p["status"]["podIP"] for p in pods
                  if p["status"].get("phase") == "Running" and p["status"].get("podIP") and
                  not p["metadata"].get("deletionTimestamp"))


def ice_credential(c: Cluster, quiet: bool = False) -> Dict[str, str]:
    """A TURN credential from kturn-auth's /ice, through its Service's cluster IP."""
    svc = c.get("service", f"{RELEASE}-auth", SYSTEM_NS)
    port = svc["spec"]["ports"][0]["port"]
    url = (f"http://{svc['spec']['clusterIP']}:{port}/ice?" +
           urllib.parse.urlencode({"service": "turn", "username": "e2e-client"}))
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.loads(r.read())
    servers = body["iceServers"]
    h.check(servers and servers[0].get("username") and servers[0].get("credential"),
            f"/ice answered no credential: {body}")
    if not quiet:
        print(f"kturn-auth {url}: {len(servers)} ICE server(s), urls {servers[0]['urls']}")
    return servers[0]


class Call:
    """A uclient call through kturnd to a media pod: `clients` clients (uclient's -m), `messages`
    each, one every `interval_ms`, running in the background while a step happens. uclient
    allocates from two sockets of its own for a single client already (tests/e2e/cluster_test.py
    reads where each went)."""

    def __init__(self, workdir: str, turn: tuple, cred: Dict[str, str], peer: str, tag: str,
                 messages: int = MESSAGES, interval_ms: int = 5, prefix: List[str] = (),
                 clients: int = 2, verbose: bool = False):
        """`prefix` runs uclient through a wrapper: nsenter into the client's network
        namespace (tests/e2e/cluster_test.py); `verbose` has it log each relayed address."""
        self.peer, self.tag, self.messages = peer, tag, messages
        self.expected = clients * messages
        argv = [*prefix, "turnutils_uclient", "-p", str(turn[1]), "-e", peer, "-r", str(MEDIA_PORT),
                "-m", str(clients), "-n", str(messages), "-l", "100", "-z", str(interval_ms),
                "-c", *(["-v"] if verbose else []), "-u", cred["username"], "-w",
                cred["credential"], turn[0]]
        self.proc = h.Proc(f"uclient-{tag}", argv, workdir)
        h.register_log(self.proc.log_path)
        self.proc.start()

    def outcome(self, timeout: float = 120) -> Tuple[int, Dict[str, int]]:
        """uclient's exit code and summary (sent, recv, lost), checking nothing: a call that
        the test expects to break (tests/e2e/cluster_test.py's node loss)."""
        import uclient_test  # the summary parser of the uclient interop test
        rc = self.proc.wait(timeout=timeout)
        out = self.proc.output()
        try:
            s = uclient_test.parse_summary(out)
        except h.TestFailure:
            s = {"sent": 0, "recv": 0, "lost": self.expected}
        print(f"call {self.tag} to {self.peer}:{MEDIA_PORT}: exit {rc}, sent {s['sent']}, "
              f"echoed {s['recv']}, lost {s['lost']}")
        return rc, s

    def finish(self, timeout: float = 120) -> Dict[str, int]:
        rc, s = self.outcome(timeout)
        h.check(rc == 0, f"uclient {self.tag} exited with {rc}:\n" +
                "\n".join(self.proc.output().splitlines()[-8:]))
        h.check(s["sent"] == self.expected and s["recv"] == self.expected and s["lost"] == 0,
                f"call {self.tag}: {s}")
        return s


def permission(turn: tuple, cred: Dict[str, str], peer: str) -> Optional[int]:
    """CreatePermission for `peer` on a new allocation, released afterwards: None when granted,
    else the error code (0: the Allocate failed, or a request got no answer)."""
    with h.TurnClient(turn, cred["username"], cred["credential"], local_host=turn[0]) as t:
        try:
            t.allocate()
            r = t.create_permission((peer, 9))
            t.refresh(0)
        except h.TestFailure:
            return 0
        if r.cls == h.SUCCESS:
            return None
        err = r.error_code()
        return err[0] if err else -1


def allocate(turn: tuple, cred: Dict[str, str]) -> str:
    """One Allocate, released at once: "ok", or what refused it."""
    with h.TurnClient(turn, cred["username"], cred["credential"], local_host=turn[0]) as t:
        try:
            t.allocate()
        except h.TestFailure as e:
            return str(e)
        t.refresh(0)
        return "ok"


def kturnd_status(pod_ip: str) -> dict:
    """kturnd's /status (its health endpoint, on the pod IP)."""
    with urllib.request.urlopen(f"http://{pod_ip}:8086/status", timeout=3) as r:
        return json.loads(r.read())


class RelayCounts:
    """A kturnd pod's relayed packets each way (rx: client to peer, tx: peer to client) and the
    kernel's part of them, from its metrics endpoint."""

    def __init__(self, pod_ip: str):
        from prometheus_client.parser import text_string_to_metric_families
        with urllib.request.urlopen(f"http://{pod_ip}:8080/metrics", timeout=3) as r:
            text = r.read().decode()
        self.relayed = {"rx": 0.0, "tx": 0.0}
        self.kernel = {"rx": 0.0, "tx": 0.0}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                d = sample.labels.get("direction")
                if sample.name == "kturn_relayed_packets_total" and d in self.relayed:
                    self.relayed[d] += sample.value
                elif sample.name == "kturn_offload_relayed_packets_total" and d in self.kernel:
                    self.kernel[d] += sample.value

    def kernel_share(self, before: "RelayCounts", sent: int, least: float = 0.99) -> str:
        """Checks that the pod relayed `sent` packets each way and its kernel at least `least`
        of them (TC relays every one here; the margin is for a retransmitted first datagram)."""
        out = []
        for d, way in (("rx", "client to media"), ("tx", "media to client")):
            relayed = self.relayed[d] - before.relayed[d]
            kernel = self.kernel[d] - before.kernel[d]
            h.check(relayed >= sent and kernel >= least * relayed,
                    f"the kturnd pod relayed {relayed:.0f} packets {way} (sent {sent}), "
                    f"{kernel:.0f} of them in the kernel")
            out.append(f"{way} {kernel:.0f}/{relayed:.0f}")
        return ", ".join(out)


def host_cpu_seconds() -> float:
    """Busy time of every CPU of the machine (/proc/stat, as bench/compare reads it)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq = (fields + [0] * 7)[:7]
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def bench_run(args: argparse.Namespace, argv: List[str]) -> dict:
    """One kturn-bench run: its JSON plus the machine's busy time per datagram exchanged."""
    host0 = host_cpu_seconds()
    out = subprocess.run([args.bench, "--json", "-q", *argv], capture_output=True, text=True,
                         timeout=60)
    host = host_cpu_seconds() - host0
    h.check(out.returncode == 0, f"kturn-bench {' '.join(argv)}: {out.stderr.strip()[-500:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r["host_us_per_pkt"] = 1e6 * host / r["relayed_total"] if r["relayed_total"] else None
    return r


def offload_cost(c: Cluster, args: argparse.Namespace, turn: tuple, media: str,
                 kturnd_ip: str, rounds: int = 3) -> None:
    """3c: the marginal cost of the kturnd pod with the program and in user space."""
    secret = base64.b64decode(
        c.get("secret", "stunner-auth-secret", "stunner")["data"]["secret"]).decode()
    node_ip = c.env["NODE_IP"]
    load = ["-n", "20", "-r", "5000", "-s", "200", "-d", "3", "--warmup", "0.5",
            "--client-bind", node_ip, "--peer", f"{media}:{MEDIA_PORT}"]
    relay = ["--server", f"{turn[0]}:{turn[1]}", "--auth", "rest", "--secret", secret]
    results = {}
    for engine in ("TC", "None"):
        c.kubectl("patch", "dataplane", "default", "--type", "merge",
                  "-p", json.dumps({"spec": {"offloadEngine": engine}}))
        # /status has offload_status while an engine is configured; with None, none at all.
        want = "TC on " if engine == "TC" else "None"
        wait_for(f"the kturnd pod's offload {engine}", lambda: kturnd_status(kturnd_ip)[
            "admin"].get("offload_status", {}).get("attached", "None").startswith(want), 30)
        marginal = []
        for _ in range(rounds):
            direct = bench_run(args, ["--direct", *load])
            before = RelayCounts(kturnd_ip)
            r = bench_run(args, [*relay, *load])
            after = RelayCounts(kturnd_ip)
            h.check(r["allocations"] == 20 and r["loss"] < 0.01,
                    f"kturn-bench through the kturnd pod ({engine}): {r['allocations']} "
                    f"allocations, loss {r['loss']}")
            kernel = sum(after.kernel[d] - before.kernel[d] for d in ("rx", "tx"))
            relayed = sum(after.relayed[d] - before.relayed[d] for d in ("rx", "tx"))
            if engine == "TC":
                h.check(kernel >= 0.99 * relayed, f"TC: the kernel relayed {kernel:.0f} of "
                                                  f"{relayed:.0f}")
            else:
                h.check(kernel == 0 and relayed > 0, f"None: the kernel relayed {kernel:.0f}")
            marginal.append(r["host_us_per_pkt"] - direct["host_us_per_pkt"])
            results.setdefault("direct", []).append(direct["host_us_per_pkt"])
        results[engine] = marginal
    median = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    tc, user = median(results["TC"]), median(results["None"])
    print(f"kturnd pod, 20 allocations x 200 B at 5,000 pps from the host, {rounds} rounds, "
          f"medians: direct baseline {median(results['direct']):.2f} host-CPU us per packet; "
          f"marginal cost with TC {tc:.2f} us per relayed packet, in user space {user:.2f} "
          f"(TC/user space {tc / user:.2f}x; the whole node is busy besides, read the order, "
          f"not the digits)")
    c.kubectl("patch", "dataplane", "default", "--type", "merge",
              "-p", json.dumps({"spec": {"offloadEngine": "TC"}}))


def kturnd_pods(c: Cluster) -> List[dict]:
    return c.get("pods", ns=GW_NS,
                 selector=f"stunner.l7mp.io/related-gateway-name={GW_NAME}")["items"]


def endpoint_state(c: Cluster, ip: str) -> Optional[Dict[str, bool]]:
    """The conditions of the Gateway Service's endpoint `ip` in its EndpointSlices."""
    slices = c.get("endpointslices", ns=GW_NS,
                   selector=f"kubernetes.io/service-name={GW_NAME}")["items"]
    for sl in slices:
        for ep in sl.get("endpoints") or []:
            if ip in ep["addresses"]:
                cond = ep.get("conditions", {})
                return {k: bool(cond.get(k)) for k in ("ready", "serving", "terminating")}
    return None


def dnat_targets() -> set:
    """The pod IPs kube-proxy's iptables rules send new flows to (this machine is the node)."""
    out = subprocess.run(["iptables-save", "-t", "nat"], capture_output=True, text=True,
                         check=True).stdout
    return {w.split(":")[0] for line in out.splitlines() if "KUBE-SEP" in line
            for w in line.split() if w.count(".") == 3 and ":" in w}


def wait_reachable(turn: tuple, what: str) -> None:
    """Until a STUN Binding request to `turn` (a node port) is answered: kube-proxy programs a
    new Service's node port a moment after its endpoints are ready."""
    start = time.monotonic()
    wait_for(f"{what} to answer STUN on {turn[0]}:{turn[1]}",
             lambda: h.stun_binding_probe(turn, timeout=0.5) is not None, 60)
    print(f"{what}: STUN answered on its node port {turn[0]}:{turn[1]} after "
          f"{time.monotonic() - start:.1f} s")


def media_pods(c: Cluster) -> List[str]:
    return pod_ips(c, GW_NS, "app.kubernetes.io/name=media-server")


def wait_count(what: str, fn: Callable[[], List[str]], n: int, timeout: float) -> List[str]:
    return wait_for(what, lambda: (lambda got: got if len(got) == n else None)(fn()), timeout)


def body(args: argparse.Namespace, workdir: str) -> None:
    c = Cluster(args.cluster)
    node_ip = c.env["NODE_IP"]
    timings: Dict[str, float] = {}
    t0 = time.monotonic()
    h.register_cleanup(lambda: None if args.passed else print(c.describe()))

    # 1. The chart.
    c.helm("install", RELEASE, CHART, "-n", SYSTEM_NS, "--create-namespace", "--wait",
           "--timeout", "5m", "--set", "dataplane.offload.engine=TC",
           "--set", "dataplane.enableMetricsEndpoint=true")
    for name in (f"{RELEASE}-operator", f"{RELEASE}-auth"):
        h.check(deployment_available(c, name, SYSTEM_NS), f"{name} is not available")
    timings["helm install"] = time.monotonic() - t0
    print(f"helm install: operator and kturn-auth available in {timings['helm install']:.1f} s")

    # 2. The seed, and the media server.
    c.apply(seed_manifests())
    c.apply(media_server())
    wait_for("the media server", lambda: deployment_available(c, "media-server", GW_NS), 120)
    wait_for(f"the Gateway's kturnd Deployment {GW_NS}/{GW_NAME}",
             lambda: deployment_available(c, GW_NAME, GW_NS), 180)
    gw = wait_for("the Gateway Programmed", lambda: (
        lambda g: g if (condition(g, "Programmed") or {}).get("status") == "True" else None)(
            c.get("gateway", GW_NAME, GW_NS)), 60)
    timings["gateway programmed"] = time.monotonic() - t0
    print(f"Gateway {GW_NS}/{GW_NAME}: Programmed ({condition(gw, 'Programmed')['message']}),"
          f" addresses {gw['status'].get('addresses')}")
    svc = c.get("service", GW_NAME, GW_NS)
    print(f"Service {GW_NS}/{GW_NAME}: type {svc['spec']['type']}, load balancer "
          f"{svc['status'].get('loadBalancer') or 'pending (no cloud)'}")
    udp = next(p for p in svc["spec"]["ports"] if p["protocol"] == "UDP")
    node_port = udp["nodePort"]
    media = media_pods(c)
    h.check(len(media) == 1, f"media-server pods: {media}")
    operator = pod_ips(c, SYSTEM_NS, "app.kubernetes.io/component=operator")
    h.check(operator, "no operator pod runs")

    # 3. A client from outside the cluster.
    turn = (node_ip, node_port)
    wait_reachable(turn, f"Gateway {GW_NS}/{GW_NAME}")
    cred = ice_credential(c)
    (kturnd_ip,) = pod_ips(c, GW_NS, f"stunner.l7mp.io/related-gateway-name={GW_NAME}")
    offload = kturnd_status(kturnd_ip)["admin"].get("offload_status", {})
    print(f"kturnd pod {kturnd_ip}: offload {offload}")
    h.check(offload.get("attached", "").startswith("TC on ") and not offload.get("problems"),
            f"the kturnd pod's fast path: {offload}")
    before = RelayCounts(kturnd_ip)
    Call(workdir, turn, cred, media[0], "day1").finish()
    print(f"call day1: the kturnd pod's kernel relayed "
          f"{RelayCounts(kturnd_ip).kernel_share(before, 2 * MESSAGES)}")
    timings["first call"] = time.monotonic() - t0
    refused = permission(turn, cred, operator[0])
    print(f"CreatePermission to the operator pod {operator[0]}: {refused}")
    h.check(refused == 403, f"a peer the routes do not name: {refused}")

    browser_call(c, args, workdir, cred)
    timings["browser call"] = time.monotonic() - t0
    print("--- 3b. config discovery under attack")
    cds_attacks(c)
    timings["cds attacks"] = time.monotonic() - t0
    print("--- 3c. the fast path's cost in the pod")
    offload_cost(c, args, turn, media[0], kturnd_ip)
    timings["offload cost"] = time.monotonic() - t0

    steps = [("rotate the auth Secret", rotate_secret), ("scale the media server", scale_media),
             ("roll kturnd to a new tag", roll_kturnd), ("delete the operator pod", kill_operator),
             ("delete the Gateway", delete_gateway),
             ("STUNner's values, STUNner's auth Service", stunner_values)]
    for n, (name, step) in enumerate(steps, start=4):
        start = time.monotonic()
        print(f"--- {n}. {name}")
        step(c, workdir, turn, media[0])
        timings[name] = time.monotonic() - start
    print("timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    args.passed = True


class Cds:
    """The operator pod's config discovery port, over TLS with the CA the operator keeps."""

    def __init__(self, c: Cluster):
        secret = c.get("secret", "kturn-cds-ca", SYSTEM_NS)
        h.check(sorted(secret.get("data", {})) == ["ca.crt", "ca.key"],
                f"the operator's CA Secret kturn-cds-ca: {sorted(secret.get('data', {}))}")
        self.context = ssl.create_default_context(
            cadata=base64.b64decode(secret["data"]["ca.crt"]).decode())
        # The certificate names the Service (kturn-config-discovery.kturn-system.svc); this is
        # the pod itself, by its IP.
        self.context.check_hostname = False
        self.base = f"https://{pod_ips(c, SYSTEM_NS, 'app.kubernetes.io/component=operator')[0]}:13478"

    def get(self, path: str, token: str = "") -> int:
        req = urllib.request.Request(self.base + path,
                                     headers={"Authorization": f"Bearer {token}"} if token else {})
        try:
            with urllib.request.urlopen(req, timeout=5, context=self.context) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except (urllib.error.URLError, OSError):
            return 0


def projected_token(c: Cluster, pod: dict, volume: str) -> str:
    """The token the kubelet wrote into `pod`'s projected `volume`, read from the node's disk."""
    found = glob.glob(os.path.join(c.dir, "**", "pods", pod["metadata"]["uid"], "volumes",
                                   "kubernetes.io~projected", volume, "token"), recursive=True)
    h.check(len(found) == 1, f"the projected token of {pod['metadata']['name']}: {found}")
    with open(found[0]) as f:
        return f.read().strip()


def cds_attacks(c: Cluster) -> str:
    """Step 3b; returns the stolen kturnd token for step 6."""
    cds = Cds(c)
    own = f"/api/v1/configs/{GW_NS}/{GW_NAME}"
    other = f"/api/v1/configs/{GW_NS}/{BROWSER_GW}"
    kturnd = kturnd_pods(c)[0]
    env = {e["name"]: e.get("value", "") for e in kturnd["spec"]["containers"][0]["env"]}
    h.check(env.get("STUNNER_CONFIG_ORIGIN", "").startswith("https://") and
            env.get("KTURN_CDS_TOKEN_FILE"), f"the kturnd pod's CDS settings: {env}")
    # The kturnd pod's and kturn-auth's watches came in with their tokens (nothing else has
    # asked yet).
    allowed = operator_metric(c, 'kturn_operator_cds_requests_total{outcome="allowed"}')
    h.check(allowed >= 2, f"CDS requests allowed before the attacks: {allowed}, want the kturnd "
            "pod's and kturn-auth's")
    stolen = projected_token(c, kturnd, "kturn-cds-token")
    # A pod of another namespace, bound token of kturn's audience.
    c.kubectl("create", "namespace", "intruder")
    c.kubectl("run", "intruder", "-n", "intruder", "--image", "kturn-e2e/media-echo:0.1.0",
              "--image-pull-policy", "Never", "--restart", "Never")
    intruder = wait_for("a token bound to the intruder pod", lambda: c.kubectl(
        "create", "token", "default", "-n", "intruder", "--audience", "kturn-cds",
        "--bound-object-kind", "Pod", "--bound-object-name", "intruder", check=False).strip(), 60)
    auth_pod = c.get("pods", ns=SYSTEM_NS, selector="app.kubernetes.io/component=auth")["items"][0]
    auth_token = projected_token(c, auth_pod, "cds-token")
    cases = [("no token", own, "", 401),
             ("a pod of namespace intruder", own, intruder, 403),
             ("the kturnd pod's token, its own Gateway", own, stolen, 200),
             ("the kturnd pod's token, another Gateway", other, stolen, 403),
             ("the kturnd pod's token, every config", "/api/v1/configs", stolen, 403),
             ("kturn-auth's token, its Gateway", own, auth_token, 200),
             ("kturn-auth's token, a Gateway it does not serve", other, auth_token, 403)]
    for what, path, token, want in cases:
        got = cds.get(path, token)
        print(f"CDS {path} with {what}: {got}")
        h.check(got == want, f"CDS with {what}: HTTP {got}, want {want}")
    refused = {o: operator_metric(c, f'kturn_operator_cds_requests_total{{outcome="{o}"}}')
               for o in ("unauthenticated", "forbidden")}
    print(f"kturn_operator_cds_requests_total: {refused}")
    h.check(refused["unauthenticated"] >= 1 and refused["forbidden"] >= 4, f"counted: {refused}")
    c.kubectl("delete", "namespace", "intruder", "--wait=false")
    STOLEN.append(stolen)
    return stolen


def operator_metric(c: Cluster, series: str) -> float:
    ip = pod_ips(c, SYSTEM_NS, "app.kubernetes.io/component=operator")[0]
    with urllib.request.urlopen(f"http://{ip}:8080/metrics", timeout=3) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(series + " "):
                return float(line.split()[1])
    return -1


STOLEN: List[str] = []  # the kturnd pod's token, taken in step 3b


def print_warnings(c: Cluster) -> None:
    """What kturn's pods logged at warning level or above (kept by the kubelet for the pods
    still there): not checked, printed for whoever reads the run."""
    for ns in (SYSTEM_NS, GW_NS):
        for pod in c.get("pods", ns=ns)["items"]:
            name = pod["metadata"]["name"]
            logs = c.kubectl("logs", "-n", ns, name, "--all-containers", check=False)
            marks = ("[warning]", "[error]", "[critical]", "WARN", "ERROR")
            lines = [x for x in logs.splitlines() if any(m in x for m in marks)]
            print(f"{ns}/{name}: {len(lines)} warning(s)" + "".join(f"\n  {x}" for x in lines[:8]))


def browser_gateway() -> List[dict]:
    """For the demo page: a Gateway of the seed's class without a static address (its relay
    address is then the pod's, which the machine reaches), and a UDPRoute to its own Service,
    so that two clients of it may relay to each other (STUNner's one-to-one call example)."""
    return [
        {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
         "metadata": {"name": BROWSER_GW, "namespace": GW_NS},
         "spec": {"gatewayClassName": "stunner-gatewayclass", "listeners": [
             {"name": "turn-udp", "port": 3478, "protocol": "TURN-UDP"}]}},
        {"apiVersion": "stunner.l7mp.io/v1", "kind": "UDPRoute",
         "metadata": {"name": BROWSER_GW, "namespace": GW_NS},
         "spec": {"parentRefs": [{"name": BROWSER_GW}],
                  "rules": [{"backendRefs": [{"name": BROWSER_GW}]}]}},
    ]


def browser_call(c: Cluster, args: argparse.Namespace, workdir: str,
                 cred: Dict[str, str]) -> None:
    """Headless Chromium runs the demo page (docs/demo, as chromium_test.py drives it): two
    RTCPeerConnections, relay candidates only, through the kturnd pod of BROWSER_GW, reached
    at its Service's node port; a data channel echoes every message."""
    import chromium_test as ct  # the demo page's driver and checks
    c.apply(browser_gateway())
    wait_for(f"the Gateway's kturnd Deployment {GW_NS}/{BROWSER_GW}",
             lambda: deployment_available(c, BROWSER_GW, GW_NS), 180)
    # No static address and no cloud to give the LoadBalancer Service one: the Gateway says so.
    programmed = wait_for("the browser Gateway's Programmed condition", lambda: condition(
        c.get("gateway", BROWSER_GW, GW_NS), "Programmed"), 30)
    print(f"Gateway {GW_NS}/{BROWSER_GW}: Programmed {programmed['status']} "
          f"({programmed['reason']}: {programmed['message']})")
    h.check(programmed["status"] == "False" and programmed["reason"] == "AddressNotAssigned",
            f"a Gateway whose load balancer has no address: Programmed {programmed}")
    svc = c.get("service", BROWSER_GW, GW_NS)
    port = next(p["nodePort"] for p in svc["spec"]["ports"] if p["protocol"] == "UDP")
    (pod_ip,) = pod_ips(c, GW_NS, f"stunner.l7mp.io/related-gateway-name={BROWSER_GW}")
    wait_reachable((c.env["NODE_IP"], port), f"Gateway {GW_NS}/{BROWSER_GW}")
    ice_server = {"urls": [f"turn:{c.env['NODE_IP']}:{port}?transport=udp"],
                  "username": cred["username"], "credential": cred["credential"]}
    page_args = argparse.Namespace(chromium=None, browser_timeout=60.0, messages=MESSAGES,
                                   size=200, page_timeout=25)
    with ct.PageServer(workdir) as pages:
        shown, result = ct.run_page(page_args, workdir, pages.url, ice_server,
                                    ct.TRANSPORTS["udp"])
    h.check(shown["phase"] == "done" and result.get("ok") is True and
            shown["echoed"] == shown["total"] == str(MESSAGES),
            f"the demo page shows {shown['phase']}: {shown['reason']} (echoed "
            f"{shown['echoed']} of {shown['total']}; ICE {result.get('ice')})")
    for side in "ab":
        for end in ("local", "remote"):
            kind, addr = shown[f"{side}-{end}-type"], shown[f"{side}-{end}-address"]
            h.check(kind == "relay" and addr == pod_ip,
                    f"connection {side}: the selected pair's {end} candidate is {kind} {addr}, "
                    f"want relay on the kturnd pod {pod_ip}")
    print(f"chromium: the demo page echoed {shown['echoed']} of {shown['total']} messages "
          f"through {ice_server['urls'][0]}, relay {shown['a-local-address']}:"
          f"{shown['a-local-port']} <-> {shown['a-remote-address']}:{shown['a-remote-port']}, "
          f"round trip median {shown['rtt-median']} ms")
    c.kubectl("delete", "gateway,udproutes.stunner.l7mp.io", "-n", GW_NS, BROWSER_GW)


def rotate_secret(c: Cluster, workdir: str, turn: tuple, media: str) -> None:
    old = ice_credential(c)
    call = Call(workdir, turn, old, media, "rotate", messages=400, interval_ms=20)
    time.sleep(2)
    new_secret = base64.b64encode(os.urandom(24)).decode()
    c.apply([{"apiVersion": "v1", "kind": "Secret",
              "metadata": {"name": "stunner-auth-secret", "namespace": "stunner"},
              "type": "Opaque", "stringData": {"type": "ephemeral", "secret": new_secret}}])
    changed = time.monotonic()

    def with_new(cred: Dict[str, str]) -> bool:
        want = base64.b64encode(hmac.new(new_secret.encode(), cred["username"].encode(),
                                         hashlib.sha1).digest()).decode()
        return cred["credential"] == want

    # A client that fetches a credential and allocates at once, all through the switch and for
    # 5 s after kturn-auth mints with the new secret: kturnd must accept each.
    switched, failed, results = None, [], []
    deadline = changed + 60
    while time.monotonic() < deadline and (switched is None or
                                           time.monotonic() < switched + 5):
        cred = ice_credential(c, quiet=True)
        if switched is None and with_new(cred):
            switched = time.monotonic()
        got = allocate(turn, cred)
        results.append(got)
        if got != "ok":
            failed.append(f"{'new' if with_new(cred) else 'old'} secret: {got}")
        time.sleep(0.2)
    h.check(switched is not None, "kturn-auth did not mint with the new secret within 60 s")
    print(f"kturn-auth mints with the new secret {switched - changed:.1f} s after the Secret "
          f"changed; allocations with a fresh credential through the switch: {len(results)}, "
          f"failed {len(failed)}")
    h.check(not failed, f"allocations failed during the rotation: {failed[:5]}")
    before = allocate(turn, old)
    print(f"Allocate with a credential minted before the rotation: {before}")
    h.check(before == "ok", f"a credential minted before the rotation: {before}")
    call.finish()


def scale_media(c: Cluster, workdir: str, turn: tuple, media: str) -> None:
    cred = ice_credential(c)
    pod = next(p["metadata"]["name"] for p in
               c.get("pods", ns=GW_NS, selector="app.kubernetes.io/name=media-server")["items"]
               if p["status"].get("podIP") == media)
    c.kubectl("annotate", "pod", "-n", GW_NS, pod, "--overwrite",
              "controller.kubernetes.io/pod-deletion-cost=1000")
    call = Call(workdir, turn, cred, media, "scale", messages=500, interval_ms=20)
    c.kubectl("scale", "deployment", "-n", GW_NS, "media-server", "--replicas", "3")
    added = [ip for ip in wait_count("3 media pods", lambda: media_pods(c), 3, 120)
             if ip != media]
    start = time.monotonic()
    for ip in added:
        wait_for(f"kturnd to permit the new pod {ip}",
                 lambda ip=ip: permission(turn, cred, ip) is None, 60)
    print(f"scaled to 3: {added} permitted {time.monotonic() - start:.1f} s after Running")
    c.kubectl("scale", "deployment", "-n", GW_NS, "media-server", "--replicas", "1")
    wait_for("1 media pod", lambda: media_pods(c) == [media], 120)
    start = time.monotonic()
    for ip in added:
        wait_for(f"kturnd to refuse the removed pod {ip}",
                 lambda ip=ip: permission(turn, cred, ip) == 403, 60)
    print(f"scaled to 1: {added} refused (403) {time.monotonic() - start:.1f} s after the "
          "pods were gone")
    call.finish()


def roll_kturnd(c: Cluster, workdir: str, turn: tuple, media: str) -> None:
    cred = ice_credential(c)
    (old,) = [p for p in kturnd_pods(c) if p["status"].get("phase") == "Running"]
    old_name, old_ip = old["metadata"]["name"], old["status"]["podIP"]
    call = Call(workdir, turn, cred, media, "roll", messages=1000, interval_ms=20)
    wait_for("the call's allocations on the old pod",
             lambda: kturnd_status(old_ip)["allocationCount"] >= 2, 20)
    image = f"kturn/kturnd:{NEW_TAG}"
    c.kubectl("patch", "dataplane", "default", "--type", "merge", "-p",
              json.dumps({"spec": {"image": image}}))

    def new_pod() -> Optional[dict]:
        for p in kturnd_pods(c):
            ready = any(x["type"] == "Ready" and x["status"] == "True"
                        for x in p["status"].get("conditions", []))
            if p["spec"]["containers"][0]["image"] == image and ready:
                return p
        return None

    new = wait_for(f"a kturnd pod of {image} Ready", new_pod, 120)
    new_ip = new["status"]["podIP"]
    draining = c.get("pod", old_name, GW_NS)
    status = kturnd_status(old_ip)
    print(f"old pod {old_name}: deletionTimestamp "
          f"{draining['metadata'].get('deletionTimestamp')}, /status {status['status']} with "
          f"{status['allocationCount']} allocations; new pod {new['metadata']['name']} "
          f"({new_ip}) Ready")
    h.check(draining["metadata"].get("deletionTimestamp"), "the old pod is not terminating")
    h.check(status["status"] == "TERMINATING" and status["allocationCount"] >= 2,
            f"the old pod should drain its call: {status}")
    # New clients reach the new pod once kube-proxy has it in its rules: until then, with no
    # ready endpoint in them, kube-proxy falls back to the terminating pod while it still
    # serves (the old pod takes such a call and drains it too).
    ready_at = time.monotonic()
    wait_for("kube-proxy to send new flows to the new pod only",
             lambda: old_ip not in dnat_targets() and new_ip in dnat_targets(), 30)
    print(f"kube-proxy sends new flows to the new pod only {time.monotonic() - ready_at:.1f} s "
          f"after it was Ready; the old pod's endpoint: {endpoint_state(c, old_ip)}")
    before = kturnd_status(new_ip)["allocationCount"]
    late = Call(workdir, turn, cred, media, "roll-new", messages=200, interval_ms=20)
    wait_for("the new call on the new pod",
             lambda: kturnd_status(new_ip)["allocationCount"] >= before + 2, 20)
    print(f"a call started during the drain: on the new pod ({new_ip})")
    call.finish()
    late.finish()
    c.kubectl("delete", "pod", "-n", GW_NS, old_name, "--grace-period=0", "--force")
    wait_for("the old pod gone",
             lambda: all(p["metadata"]["name"] != old_name for p in kturnd_pods(c)), 60)
    if STOLEN and STOLEN[0]:
        # The token stolen from that pod in step 3b, replayed now that the pod is gone.
        cds, gone = Cds(c), time.monotonic()
        wait_for("the stolen token refused", lambda: cds.get(
            f"/api/v1/configs/{GW_NS}/{GW_NAME}", STOLEN[0]) == 401, 60)
        print(f"the token stolen from {old_name}, replayed after the pod was deleted: 401 "
              f"{time.monotonic() - gone:.1f} s later")


def kill_operator(c: Cluster, workdir: str, turn: tuple, media: str) -> None:
    cred = ice_credential(c)
    call = Call(workdir, turn, cred, media, "operator", messages=500, interval_ms=20)
    selector = "app.kubernetes.io/component=operator"
    (old,) = c.get("pods", ns=SYSTEM_NS, selector=selector)["items"]
    old_name = old["metadata"]["name"]
    c.kubectl("delete", "pod", "-n", SYSTEM_NS, old_name, "--wait=false")

    def new_leader() -> Optional[str]:
        holders = [x["spec"].get("holderIdentity") or ""
                   for x in c.get("leases", ns=SYSTEM_NS)["items"]]
        pods = [p["metadata"]["name"] for p in c.get("pods", ns=SYSTEM_NS,
                                                     selector=selector)["items"]]
        return next((who for who in holders for p in pods if p != old_name and p in who), None)

    leader = wait_for("a new operator pod to take the Lease", new_leader, 120)
    print(f"operator pod {old_name} deleted; the Lease is held by {leader}")
    c.kubectl("scale", "deployment", "-n", GW_NS, "media-server", "--replicas", "2")
    (added,) = [ip for ip in wait_count("2 media pods", lambda: media_pods(c), 2, 120)
                if ip != media]
    wait_for(f"the new leader to permit {added}", lambda: permission(turn, cred, added) is None,
             60)
    print(f"the new leader rendered: {added} permitted")
    call.finish()
    c.kubectl("scale", "deployment", "-n", GW_NS, "media-server", "--replicas", "1")


def delete_gateway(c: Cluster, workdir: str, turn: tuple, media: str) -> None:
    print_warnings(c)  # while the kturnd pods are there
    uid = c.get("gateway", GW_NAME, GW_NS)["metadata"]["uid"]
    for kind in ("deployment", "service"):
        owners = c.get(kind, GW_NAME, GW_NS)["metadata"].get("ownerReferences", [])
        h.check(any(o["kind"] == "Gateway" and o["uid"] == uid for o in owners),
                f"the Gateway's {kind} has no owner reference to it: {owners}")
    c.kubectl("delete", "gateway", "-n", GW_NS, GW_NAME, "--wait=false")

    def gone() -> bool:
        return not any(c.kubectl("get", kind, "-n", GW_NS, GW_NAME, "--ignore-not-found",
                                 "-o", "name") for kind in ("deployment", "service"))

    wait_for("the Gateway's Deployment and Service to be deleted", gone, 120)
    # Its pods go with the Deployment's ReplicaSet: each drains what it still relays (the calls'
    # allocations, which turnutils_uclient leaves to expire) before it exits.
    pods = wait_for("the Gateway's kturnd pods to terminate", lambda: (
        lambda ps: ps if all(p["metadata"].get("deletionTimestamp") for p in ps) else None)(
            kturnd_pods(c)), 120)
    states = [kturnd_status(p["status"]["podIP"])["status"] for p in pods
              if p["status"].get("podIP")]
    print(f"Gateway deleted: its Deployment and Service (owned by it) are gone; its pods "
          f"terminate ({len(pods)} draining: {states})")


# STUNner's values.yaml keys of the three images (helm/stunner 1.2.0) and kturn's images.
STUNNER_IMAGES = {
    ("stunnerGatewayOperator", "deployment", "container", "manager", "image"):
        "docker.io/kturn/kturn-operator",
    ("stunnerGatewayOperator", "dataplane", "spec", "image"): "docker.io/kturn/kturnd",
    ("stunnerAuthService", "deployment", "container", "authService", "image"):
        "docker.io/kturn/kturn-auth",
}


class ServiceProbe(threading.Thread):
    """GETs `url` (a Service's cluster IP) every 0.1 s until stop(): each try is an HTTP
    answer, of any status, or a failure to get one (refused, reset, timed out). Bounded: at
    most `limit` tries."""

    def __init__(self, url: str, limit: int = 3000):
        super().__init__(daemon=True)
        self.url, self.limit = url, limit
        self.answers: Dict[int, int] = {}
        self.failures: List[str] = []
        self.done = threading.Event()

    def run(self) -> None:
        for _ in range(self.limit):
            if self.done.is_set():
                return
            try:
                with urllib.request.urlopen(self.url, timeout=2) as r:
                    r.read()
                    status = r.status
            except urllib.error.HTTPError as e:
                status = e.code
            except (OSError, urllib.error.URLError) as e:
                self.failures.append(f"{time.strftime('%H:%M:%S')} {e}")
                status = 0
            if status:
                self.answers[status] = self.answers.get(status, 0) + 1
            self.done.wait(0.1)

    def stop(self) -> str:
        self.done.set()
        self.join(10)
        return (f"{sum(self.answers.values()) + len(self.failures)} requests, answered "
                f"{self.answers}, unanswered {len(self.failures)} {self.failures[:5]}")


def wait_for_answer(url: str, timeout: float) -> Tuple[float, dict, List[str]]:
    """Polls `url` until it answers 200: the time it took, the JSON, and each other answer."""
    start = time.monotonic()
    before: List[str] = []
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return time.monotonic() - start, json.loads(r.read()), before
        except urllib.error.HTTPError as e:
            seen = f"{e.code} {e.read().decode(errors='replace').strip()}"
        except (OSError, urllib.error.URLError) as e:
            seen = str(e)
        if not before or before[-1] != seen:
            before.append(seen)
        h.check(time.monotonic() - start < timeout,
                f"{url}: no 200 in {timeout:.0f} s; answers: {before}")
        time.sleep(0.2)


def auth_logs(c: Cluster) -> str:
    return c.kubectl("logs", "-n", SYSTEM_NS, "-l", "app.kubernetes.io/component=auth",
                     "--tail=30", "--prefix", check=False)


def stunner_values(c: Cluster, workdir: str, turn: tuple, media: str) -> None:
    source = os.path.join(c.env["TOOLS"], "stunner-helm", "values.yaml")
    if not os.path.exists(source):
        print(f"left out: no {source} (scripts/build-test-tools.sh unpacks STUNner's chart from "
              "../shared/reference/)")
        return
    with open(source) as f:
        values = yaml.safe_load(f)
    for keys, name in STUNNER_IMAGES.items():
        image = functools.reduce(lambda node, k: node[k], keys, values)
        image.update(name=name, tag="0.1.0")
    path = os.path.join(workdir, "stunner-values.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(values, f)
    # The upgrade rolls kturn-auth (its arguments change): asked through its Service all along,
    # it answers every request. The Gateway is deleted (step 8), so the answer is 500 "no
    # dataplane configuration"; what counts is that it comes. The new pod is Ready once it has
    # read config discovery's state (/ready), the old one answers for its shutdown delay after
    # SIGTERM while kube-proxy drops it.
    svc = c.get("service", f"{RELEASE}-auth", SYSTEM_NS)
    old_pods = {p["metadata"]["name"] for p in c.get(
        "pods", ns=SYSTEM_NS, selector="app.kubernetes.io/component=auth")["items"]}
    probe = ServiceProbe(f"http://{svc['spec']['clusterIP']}:{svc['spec']['ports'][0]['port']}"
                         "/ice?service=turn&username=roll")
    probe.start()
    # --force-conflicts: step 6 set the Dataplane's image with kubectl patch, a field manager
    # of its own that Helm's server-side apply would otherwise not take the field from.
    c.helm("upgrade", RELEASE, CHART, "-n", SYSTEM_NS, "-f", path, "--force-conflicts", "--wait",
           "--timeout", "5m")
    wait_for("kturn-auth's old pods to exit", lambda: not old_pods & {
        p["metadata"]["name"] for p in c.get(
            "pods", ns=SYSTEM_NS, selector="app.kubernetes.io/component=auth")["items"]}, 120)
    rolled = probe.stop()
    print(f"kturn-auth rolled ({len(old_pods)} pod(s) replaced), asked through its Service "
          f"throughout: {rolled}")
    h.check(not probe.failures and probe.answers,
            f"kturn-auth's Service did not answer during the roll: {rolled}\n{auth_logs(c)}")
    auth = c.get("service", "stunner-auth", SYSTEM_NS)
    h.check(auth and [p["port"] for p in auth["spec"]["ports"]] == [8088],
            f"STUNner's auth Service stunner-auth:8088: {auth.get('spec', {}).get('ports')}")
    c.apply([d for d in seed_manifests() if d["kind"] == "Gateway"])
    wait_for(f"the Gateway's kturnd Deployment {GW_NS}/{GW_NAME} again",
             lambda: deployment_available(c, GW_NAME, GW_NS), 180)
    svc = c.get("service", GW_NAME, GW_NS)
    node_port = next(p for p in svc["spec"]["ports"] if p["protocol"] == "UDP")["nodePort"]
    new_turn = (turn[0], node_port)
    wait_reachable(new_turn, f"Gateway {GW_NS}/{GW_NAME} on STUNner's values")
    # kturn-auth reads the Gateway's config from config discovery as kturnd does, on its own
    # watch: the two need not arrive in the same instant.
    url = (f"http://{auth['spec']['clusterIP']}:8088/ice?" +
           urllib.parse.urlencode({"service": "turn", "username": "stunner-signalling"}))
    try:
        took, body, before = wait_for_answer(url, 30)
    except h.TestFailure:
        print(auth_logs(c))
        raise
    servers = body["iceServers"]
    h.check(servers and servers[0].get("credential"), f"stunner-auth /ice: {servers}")
    print(f"STUNner's values.yaml (images kturn's): release upgraded; stunner-auth:8088 /ice "
          f"answered urls {servers[0]['urls']} {took:.1f} s after the Gateway's kturnd "
          f"answered STUN (before that: {before or 'nothing else'})")
    Call(workdir, new_turn, servers[0], media, "stunner-values").finish()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cluster", required=True, help="cluster.py's --dir")
    ap.add_argument("--server", default="kturnd")
    ap.add_argument("--bench", default=os.path.join(REPO, "build", "bench", "kturn-bench"),
                    help="kturn-bench, for step 3c")
    ap.add_argument("--keep-logs", action="store_true")
    ap.set_defaults(passed=False)
    h.run_test("e2e", body, ap, overall_timeout=900)


if __name__ == "__main__":
    main()
