#!/usr/bin/python3
"""kturn-operator end to end: the real operator binary against the real Kubernetes control plane
of the test run (tests/support/control_plane.py: etcd, kube-apiserver, kube-controller-manager),
a real kturnd fed over CDS, and coturn's turnutils_uclient relaying through it to "pod" IPs on
loopback. The operator runs as a ServiceAccount with a token from the TokenRequest API; every
manifest goes in with `kubectl apply`, every status comes back with `kubectl get`.

Manifests: tests/golden/seed000*/input, in namespaces and under class names
of this test's own (a Scope: other tests share the cluster). Other changes to the seed, each
needed to run on one machine: the Gateway's listener port is a free port (not 3478, which
parallel tests and a system turnserver may hold), the backend EndpointSlice lists one pod, and a
Dataplane of the test's own disables the :8086 health check (a fixed port). The pods are
addresses in a network namespace of the test's own (harness.PodNetwork: the API server refuses
loopback addresses in an EndpointSlice), behind a veth pair whose near end kturnd listens on.
Needs root for that namespace: exits 77 (skipped) without it.

Steps and checks:
  1. The seed's GatewayClass verbatim: the API server refuses it (its parametersRef lacks
     `group`, which the Gateway API CRD requires) and kubectl's error names the field. The fixed
     GatewayClass is accepted by the API server, but applied before its GatewayConfig: the
     operator writes Accepted False InvalidParameters naming the missing GatewayConfig. Then
     the rest of the manifests are applied.
  2. Deployment and Service of the Gateway applied (server-side apply, field manager
     kturn-operator, owned by the Gateway), Gateway Accepted/Programmed-listener and UDPRoute
     Accepted/ResolvedRefs True written; the Lease names the leader.
  3. CDS serves the Gateway's config with the pod IP; kturnd -w -c http://<cds> --id <ns>/<gw>
     takes it; uclient relays to turnutils_peer on pod A with every message echoed.
  4. The EndpointSlice moves the pod to pod B (kubectl replace): CDS pushes the new config,
     kturnd relays to turnutils_peer on pod B and refuses pod A (403); the Deployment
     was not re-applied (nothing in it changed: the API server's audit log says so).

With --kill-operator (the fault test interop_operator_kill, issue 9), between steps 3 and 4: while
uclient relays 600 messages through kturnd, the operator, and with it the CDS server kturnd
watches, is SIGKILLed. Every message must still be echoed, and kturnd must keep serving on its
last config (a new allocation to the pod is admitted while the server is away). The operator
is then started again (same identity, so it takes its own Lease back) and applies its objects once
more; step 4's EndpointSlice change reaching kturnd proves that kturnd's CDS watch reconnected.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Callable, Optional, Tuple

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "support"))
import control_plane as cp  # noqa: E402

SEED_FIXED = os.path.join(REPO, "tests", "golden", "seed000", "input")
SEED_VERBATIM = os.path.join(REPO, "tests", "golden", "seed000-verbatim", "input")
SECRET = "my-shared-hmac-key"  # seed000's Secret
GW_NAME = "media-server-gateway"
# The operator's /metrics and /healthz listen on :8080 and :8081 by default (STUNner's): tests
# that do not look at them turn them off rather than contend for those ports.
NO_OWN_ENDPOINTS = ["--metrics-bind-address", "0", "--health-probe-bind-address", "0"]


def wait_for(what: str, fn: Callable[[], object], timeout: float = 20.0, procs=(),
             interval: float = 0.1):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        for p in procs:
            h.check(p.running(), f"{p.name} exited while waiting for {what}")
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise h.TestFailure(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")


def condition(obj: Optional[dict], ctype: str, path=("status", "conditions")):
    node = obj
    for k in path:
        if not isinstance(node, dict):
            return None
        node = node.get(k)
    for c in node or []:
        if c.get("type") == ctype:
            return c
    return None


def load(path: str) -> list:
    docs = []
    for f in sorted(os.listdir(path)):
        with open(os.path.join(path, f)) as fh:
            docs += [x for x in yaml.safe_load_all(fh) if isinstance(x, dict)]
    return docs


def with_test_dataplane(docs: list, health_check: bool = False) -> list:
    """`docs` with a Dataplane of the test's own, named by every GatewayConfig: without the
    :8086 health check (unless `health_check`), a fixed port two kturnds on one host cannot both
    bind."""
    for d in docs:
        if d["kind"] == "GatewayConfig":
            d["spec"]["dataplane"] = "default"
    return docs + [{"apiVersion": "stunner.l7mp.io/v1", "kind": "Dataplane",
                    "metadata": {"name": "default"},
                    "spec": {"image": "kturn/kturnd:latest",
                             "disableHealthCheck": not health_check}}]


def manifests(turn_port: int, pod: str, health_check: bool = False) -> list:
    out = []
    for doc in load(SEED_FIXED):
        kind = doc["kind"]
        if kind == "Gateway":
            doc["spec"]["listeners"][0]["port"] = turn_port
        elif kind == "EndpointSlice":
            doc["endpoints"] = [{"addresses": [pod],
                                 "conditions": {"ready": True, "serving": True}}]
        out.append(doc)
    return with_test_dataplane(out, health_check)


def apply_verbatim_class(scope: "cp.Scope") -> None:
    """Step 1: the API server refuses the seed's GatewayClass as written, naming the field."""
    verbatim = next(x for x in load(SEED_VERBATIM) if x["kind"] == "GatewayClass")
    r = subprocess.run([os.path.join(scope.env["TOOLS"], "bin", "kubectl"), "--kubeconfig",
                        scope.kubeconfig, "apply", "-f", "-"],
                       input=json.dumps(scope.localize(verbatim)), capture_output=True, text=True,
                       timeout=60)
    print(f"verbatim GatewayClass: kubectl apply exited {r.returncode}: {r.stderr.strip()}")
    h.check(r.returncode != 0, "the API server accepted a GatewayClass without parametersRef.group")
    h.check("spec.parametersRef.group" in r.stderr, f"the error should name the field: {r.stderr}")


def start_uclient(workdir: str, turn: Tuple[str, int], peer_ip: str, peer_port: int, tag: str,
                  messages: int = 20, interval_ms: int = 5) -> h.Proc:
    """Two uclient sessions sending `messages` each, one every `interval_ms`."""
    argv = ["turnutils_uclient", "-p", str(turn[1]), "-e", peer_ip, "-r", str(peer_port),
            "-L", turn[0], "-m", "2", "-n", str(messages), "-l", "100",
            "-z", str(interval_ms), "-c", "-W", SECRET, "-u", "someuser", turn[0]]
    p = h.Proc(f"turnutils_uclient-{tag}", argv, workdir)
    h.register_log(p.log_path)
    return p.start()


def check_uclient(p: h.Proc, peer: str, messages: int = 20) -> None:
    rc = p.wait(timeout=40)
    out = p.output()
    import uclient_test  # the summary parser of the uclient test
    h.check(rc == 0, f"uclient to {peer} exited with {rc}:\n" +
            "\n".join(out.splitlines()[-8:]))
    s = uclient_test.parse_summary(out)
    print(f"uclient to {peer}: {s}")
    h.check(s["sent"] == 2 * messages and s["recv"] == 2 * messages and s["lost"] == 0,
            f"relay to {peer}: sent {s['sent']} received {s['recv']} lost {s['lost']}")


def uclient(workdir: str, turn: Tuple[str, int], peer_ip: str, peer_port: int, tag: str) -> None:
    check_uclient(start_uclient(workdir, turn, peer_ip, peer_port, tag),
                  f"{peer_ip}:{peer_port}")



def permission(turn: Tuple[str, int], peer_ip: str):
    """CreatePermission for peer_ip through a fresh allocation: None on success, else the
    error code."""
    user, password = h.rest_credentials(SECRET, "probe")
    with h.TurnClient(turn, user, password) as c:
        c.allocate()
        r = c.create_permission((peer_ip, 9))
        err = r.error_code()
        return None if r.cls == h.SUCCESS else (err[0] if err else -1)


def http_get(port: int, path: str) -> Tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def metric(port: int, name: str) -> float:
    """The value of an unlabelled series on the operator's /metrics, -1 if absent."""
    _, text = http_get(port, "/metrics")
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return -1


def check_endpoints(probe_port: int, metrics_port: int, want: dict) -> None:
    """The operator's own endpoints (STUNner's --health-probe-bind-address and
    --metrics-bind-address): /healthz and /readyz 200 once synced, the kturn_operator_* series
    with the values `want` and counters that moved, the process series."""
    for path in ("/healthz", "/readyz"):
        status, body = http_get(probe_port, path)
        h.check(status == 200, f"operator {path}: {status} {body!r}")
    status, _ = http_get(probe_port, "/metrics")
    h.check(status == 404, f"/metrics on the probe port: {status}, want 404")
    # The reconcile that applied the Deployment counts itself when it ends.
    wait_for(f"operator metrics {want}",
             lambda: {name: metric(metrics_port, name) for name in want} == want)
    got = {name: metric(metrics_port, name) for name in want}
    for name in ("kturn_operator_reconciles_total", "kturn_operator_objects_applied_total",
                 "kturn_operator_statuses_written_total"):
        h.check(metric(metrics_port, name) >= 1, f"operator metric {name} did not count")
    h.check(metric(metrics_port, "process_resident_memory_bytes") > 0,
            "no process_resident_memory_bytes on the operator's /metrics")
    print(f"operator /healthz, /readyz 200; /metrics {got}")


def body(args: argparse.Namespace, workdir: str) -> None:
    pods = h.PodNetwork().create()
    POD_A, POD_B = pods.pod_ips
    turn_port = h.free_port(pods.gateway_ip)
    turn = (pods.gateway_ip, turn_port)
    cds_port, metrics_port, probe_port = h.free_port(), h.free_port(), h.free_port()
    scope = cp.Scope()
    h.register_cleanup(scope.delete)
    GW_NS = scope.ns("media")
    operator_kubeconfig = scope.service_account_kubeconfig("kturn-operator")
    operator_user = scope.service_account_user("kturn-operator")

    def applies(plural: str) -> int:
        return scope.audit_count(operator_user, "patch", plural)

    def start_operator(tag: str) -> h.Proc:
        p = h.Proc(f"kturn-operator{tag}",
                   [os.path.abspath(args.operator), "--kubeconfig", operator_kubeconfig,
                    "--controller-name", scope.controller_name,
                    "--cds-addr", f"127.0.0.1:{cds_port}", "--leader-elect",
                    "--leader-election-namespace", scope.ns("stunner-system"),
                    "--leader-election-identity", "operator-0", "-l", "all:DEBUG",
                    "--metrics-bind-address", f"127.0.0.1:{metrics_port}",
                    "--health-probe-bind-address", f"127.0.0.1:{probe_port}"], workdir,
                   # STUNner's variable replaces the default filter (argocd.argoproj.io/instance)
                   env=dict(os.environ, STUNNER_GATEWAY_OPERATOR_LABEL_FILTER="team.example/owner"))
        h.register_log(p.log_path)
        p.start()
        h.register_cleanup(p.stop)
        return p

    operator = start_operator("")
    procs = [operator]

    # 1. The verbatim GatewayClass never gets in. The fixed one does, but until its
    #    GatewayConfig exists the operator reports it unusable, naming what is missing.
    apply_verbatim_class(scope)
    docs = manifests(turn_port, POD_A)
    scope.apply([d for d in docs if d["kind"] == "GatewayClass"])
    gc_name = scope.name("stunner-gatewayclass")
    c = wait_for("GatewayClass status without its GatewayConfig",
                 lambda: (lambda c: c if c and c["status"] == "False" else None)(
                     condition(scope.get("gatewayclass", gc_name), "Accepted")), procs=procs)
    print(f"GatewayClass before its GatewayConfig: Accepted {c['status']} {c['reason']}: "
          f"{c['message']}")
    h.check(c["reason"] == "InvalidParameters" and "GatewayConfig" in c["message"] and
            "not found" in c["message"], f"the condition should name the missing GatewayConfig: {c}")
    for d in docs:
        if d["kind"] == "Gateway":
            d["metadata"].setdefault("labels", {}).update(
                {"team.example/owner": "a", "argocd.argoproj.io/instance": "x"})
    scope.apply(docs)

    # 2. Everything is rendered, applied and reported.
    wait_for("GatewayClass Accepted True",
             lambda: (condition(scope.get("gatewayclass", gc_name), "Accepted") or {}).get(
                 "status") == "True", procs=procs)
    gw = wait_for("Gateway Accepted True",
                  lambda: (lambda g: g if (condition(g, "Accepted") or {}).get("status") == "True"
                           else None)(scope.get("gateways.gateway.networking.k8s.io", GW_NAME,
                                                "media")), procs=procs)
    listener = gw["status"]["listeners"][0]
    lc = {x["type"]: x["status"] for x in listener["conditions"]}
    print(f"Gateway listener {listener['name']}: {lc}, attachedRoutes "
          f"{listener.get('attachedRoutes')}")
    h.check(lc.get("Accepted") == "True" and lc.get("Programmed") == "True",
            f"listener conditions: {listener['conditions']}")
    h.check(listener.get("attachedRoutes") == 1, f"attachedRoutes: {listener}")

    dep = wait_for("Deployment applied", lambda: scope.get("deployment", GW_NAME, "media"),
                   procs=procs)
    managers = [m["manager"] for m in dep["metadata"].get("managedFields", [])]
    h.check("kturn-operator" in managers, f"Deployment field managers: {managers}")
    owner = dep["metadata"]["ownerReferences"][0]
    h.check(owner["kind"] == "Gateway" and owner["uid"] == gw["metadata"]["uid"],
            f"Deployment owner: {owner}")
    svc = wait_for("Service applied", lambda: scope.get("service", GW_NAME, "media"),
                   procs=procs)
    ports = [(p["port"], p["protocol"]) for p in svc["spec"]["ports"]]
    h.check((turn_port, "UDP") in ports, f"Service ports {ports}, want {turn_port}/UDP")

    # The statuses of one render are written one object at a time: until the route's own is
    # written it still says what the render before the GatewayClass fix said (Pending).
    def route_accepted():
        r = scope.get("udproutes.stunner.l7mp.io", "media-server-route", "media")
        parents = (r or {}).get("status", {}).get("parents") or []
        accepted = parents and (condition(parents[0], "Accepted", path=("conditions",)) or {}).get(
            "status") == "True"
        return r if accepted else None
    route = wait_for("UDPRoute Accepted True", route_accepted, procs=procs)
    rc = {x["type"]: x["status"] for x in route["status"]["parents"][0]["conditions"]}
    h.check(rc.get("Accepted") == "True" and rc.get("ResolvedRefs") == "True",
            f"UDPRoute parent conditions: {route['status']}")
    lease = scope.get("lease", "kturn-operator-leader", "stunner-system")
    h.check(lease is not None and lease["spec"]["holderIdentity"] == "operator-0",
            f"Lease: {lease}")
    deployment_applies = applies("deployments")
    h.check(deployment_applies >= 1, "no server-side apply of the Deployment was logged")
    labels = dep["metadata"].get("labels", {})
    h.check("team.example/owner" not in labels and labels.get("argocd.argoproj.io/instance") == "x",
            f"Deployment labels {labels}: STUNNER_GATEWAY_OPERATOR_LABEL_FILTER not applied")
    print(f"Deployment labels with the filter team.example/owner: {sorted(labels)}")
    check_endpoints(probe_port, metrics_port, {"kturn_operator_leader": 1,
                                               "kturn_operator_synced": 1,
                                               "kturn_operator_gateways": 1,
                                               "kturn_operator_cds_configs": 1})

    # 3. CDS -> kturnd -> relay to pod A.
    cds_url = f"http://127.0.0.1:{cds_port}/api/v1/configs/{GW_NS}/{GW_NAME}"

    def cds_endpoints():
        try:
            with urllib.request.urlopen(cds_url, timeout=2) as r:
                cfg = json.loads(r.read())
        except (urllib.error.URLError, OSError):
            return None
        return [e for cl in cfg.get("clusters", []) for e in cl.get("endpoints", [])]

    eps = wait_for("CDS config with pod A", lambda: (lambda e: e if e and POD_A in e else None)(
        cds_endpoints()), procs=procs)
    print(f"CDS endpoints: {eps}")
    kturnd = h.Proc("kturnd", [os.path.abspath(args.kturnd), "-w", "-c", f"http://127.0.0.1:{cds_port}",
                               "--id", f"{GW_NS}/{GW_NAME}", "-l", "all:DEBUG"], workdir,
                    env=dict(os.environ, STUNNER_ADDR=pods.gateway_ip))
    h.register_log(kturnd.log_path)
    kturnd.start()
    h.register_cleanup(kturnd.stop)
    procs.append(kturnd)
    wait_for("kturnd answering STUN", lambda: h.stun_binding_probe(turn),
             procs=procs)
    wait_for("kturnd's CDS watch on the operator's /metrics",
             lambda: metric(metrics_port, "kturn_operator_cds_watchers") >= 1, procs=procs)
    _, port_a = h.start_udp_echo_peer(workdir, POD_A, netns=pods.ns)
    uclient(workdir, turn, POD_A, port_a, "a")

    if args.kill_operator:
        # The operator (and its CDS server) dies mid-traffic: nothing relayed may be lost.
        messages = 300
        traffic = start_uclient(workdir, turn, POD_A, port_a, "during-kill", messages, 20)
        time.sleep(1.5)
        procs.remove(operator)
        operator.proc.kill()
        operator.proc.wait(timeout=5)
        print(f"operator SIGKILLed {1.5:.1f} s into a {messages * 20 / 1000:.0f} s uclient run")
        check_uclient(traffic, f"{POD_A}:{port_a} across the operator's SIGKILL", messages)
        h.check(kturnd.running(), "kturnd exited when the CDS server went away")
        # Its last config stays in force: new allocations to the pod are still admitted.
        h.check(permission(turn, POD_A) is None,
                "kturnd refused the pod while the CDS server was away")
        before = applies("deployments")
        operator = start_operator("-restarted")
        procs.append(operator)
        # Applied objects are remembered in memory only: the new process applies them once.
        wait_for("the restarted operator's apply", lambda: applies("deployments") > before,
                 procs=procs)
        print("operator restarted: it leads again and has applied its objects")
        deployment_applies = applies("deployments")

    # 4. The pod moves: the EndpointSlice now lists pod B only.
    es = scope.get("endpointslice", "media-server-x7k2p", "media")
    es["endpoints"] = [{"addresses": [POD_B], "conditions": {"ready": True, "serving": True}}]
    scope.kubectl("replace", "-f", "-", input=json.dumps(es))
    t0 = time.monotonic()
    eps = wait_for("CDS config with pod B only",
                   lambda: (lambda e: e if e and POD_B in e and POD_A not in e else None)(
                       cds_endpoints()), procs=procs)
    print(f"CDS endpoints after the change: {eps} ({time.monotonic() - t0:.2f} s)")
    wait_for("kturnd admitting pod B", lambda: permission(turn, POD_B) is None, 10, procs)
    print(f"kturnd relays to pod B {time.monotonic() - t0:.2f} s after the EndpointSlice change")
    _, port_b = h.start_udp_echo_peer(workdir, POD_B, netns=pods.ns)
    uclient(workdir, turn, POD_B, port_b, "b")
    refused = permission(turn, POD_A)
    h.check(refused == 403, f"CreatePermission for the removed pod {POD_A}: {refused}, want 403")
    print(f"removed pod {POD_A}: CreatePermission -> {refused}")
    h.check(applies("deployments") == deployment_applies,
            "the Deployment was applied again although only an endpoint changed")
    for p in procs:
        h.check(p.running(), f"{p.name} exited")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--operator", required=True, help="kturn-operator binary")
    p.add_argument("--kill-operator", action="store_true",
                   help="SIGKILL the operator mid-traffic and start it again (fault test)")
    args, _ = p.parse_known_args()
    h.root_or_skip("the media pods' network namespace")
    h.run_test("operator-kill" if args.kill_operator else "operator", body, p,
               overall_timeout=110)


if __name__ == "__main__":
    main()
