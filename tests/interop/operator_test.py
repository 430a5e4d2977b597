#!/usr/bin/python3
"""kturn-operator end to end: the real operator binary against kturn-test-apiserver (the in-repo
Kubernetes API test server, tests/support/k8s_api_server), a real kturnd fed over CDS, and
coturn's turnutils_uclient relaying through it to "pod" IPs on loopback.

Manifests: source document 000 (tests/golden/seed000*/input). The GatewayClass is applied
verbatim first (its parametersRef lacks `group`), so the operator must report that in the
GatewayClass status; the test then fixes it through the API, as a user would. Other changes to
the seed, each needed to run on one machine: the Gateway's listener port is a free port (not
3478, which parallel tests and a system turnserver may hold), the backend EndpointSlice lists
one pod at 127.0.0.1, and a `default` Dataplane disables the :8086 health check (a fixed port).

Steps and checks:
  1. GatewayClass (verbatim) -> status Accepted False InvalidParameters written back.
  2. parametersRef.group fixed -> Deployment and Service media/media-server-gateway applied
     (server-side apply, field manager kturn-operator), Gateway Accepted/Programmed-listener and
     UDPRoute Accepted/ResolvedRefs True written; the Lease names the leader.
  3. CDS serves media/media-server-gateway with the pod IP; kturnd -w -c http://<cds> --id
     media/media-server-gateway takes it; uclient relays to turnutils_peer on 127.0.0.1 with
     every message echoed.
  4. The EndpointSlice moves the pod to 127.0.0.2 (PUT through the API): CDS pushes the new
     config, kturnd relays to turnutils_peer on 127.0.0.2 and refuses 127.0.0.1 (403); the
     Deployment was not re-applied (nothing in it changed).

With --kill-operator (the fault test interop_operator_kill, issue 9), between steps 3 and 4: while
uclient relays 600 messages through kturnd, the operator, and with it the CDS server kturnd
watches, is SIGKILLed. Every message must still be echoed, and kturnd must keep serving on its
last config (a new allocation to the pod is admitted while the server is away). The operator
is then started again (same identity, so it takes its own Lease back) and applies its objects once
more; step 4's EndpointSlice change reaching kturnd proves that kturnd's CDS watch reconnected.
"""

import argparse
import base64
import copy
import json
import os
import socket
import ssl
import sys
import tempfile
import time
import urllib.error
import urllib.request
from typing import Callable, Optional

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
APISERVER = os.path.join(REPO, "tests", "support", "k8s_api_server", "kturn_test_apiserver.py")
SEED_FIXED = os.path.join(REPO, "tests", "golden", "seed000", "input")
SEED_VERBATIM = os.path.join(REPO, "tests", "golden", "seed000-verbatim", "input")
TOKEN = "operator-interop-token"
SECRET = "my-shared-hmac-key"  # seed000's Secret
POD_A, POD_B = "127.0.0.1", "127.0.0.2"
GW_NS, GW_NAME = "media", "media-server-gateway"


class Api:
    """A minimal client for the test API server (HTTPS with its CA, bearer token)."""

    def __init__(self, kubeconfig: str):
        with open(kubeconfig) as f:
            cfg = yaml.safe_load(f)
        cluster = cfg["clusters"][0]["cluster"]
        self.base = cluster["server"]
        self.ctx = ssl.create_default_context(
            cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())

    def call(self, method: str, path: str, body=None, ctype="application/json"):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {TOKEN}")
        if data is not None:
            req.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=5) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def get(self, path: str):
        code, body = self.call("GET", path)
        return body if code == 200 else None


def wait_for(what: str, fn: Callable[[], object], timeout: float = 20.0, procs=()):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        for p in procs:
            h.check(p.running(), f"{p.name} exited while waiting for {what}")
        last = fn()
        if last:
            return last
        time.sleep(0.1)
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


def manifests(workdir: str, turn_port: int) -> str:
    docs = []
    for d in (SEED_FIXED,):
        for f in sorted(os.listdir(d)):
            with open(os.path.join(d, f)) as fh:
                docs += [x for x in yaml.safe_load_all(fh) if isinstance(x, dict)]
    with open(os.path.join(SEED_VERBATIM, "00-platform.yaml")) as fh:
        verbatim_class = next(x for x in yaml.safe_load_all(fh) if x["kind"] == "GatewayClass")
    out = []
    for doc in docs:
        kind = doc["kind"]
        if kind == "GatewayClass":
            doc = copy.deepcopy(verbatim_class)
        elif kind == "Gateway":
            doc["spec"]["listeners"][0]["port"] = turn_port
        elif kind == "EndpointSlice":
            doc["endpoints"] = [{"addresses": [POD_A],
                                 "conditions": {"ready": True, "serving": True}}]
        out.append(doc)
    out.append({"apiVersion": "stunner.l7mp.io/v1", "kind": "Dataplane",
                "metadata": {"name": "default"},
                "spec": {"image": "kturn/kturnd:latest", "disableHealthCheck": True}})
    path = os.path.join(workdir, "manifests.yaml")
    with open(path, "w") as f:
        yaml.safe_dump_all(out, f)
    h.register_log(path)
    return path


def start_apiserver(workdir: str, manifest_path: str) -> str:
    ready = os.path.join(workdir, "apiserver.port")
    kubeconfig = os.path.join(workdir, "kubeconfig")
    proc = h.Proc("kturn-test-apiserver",
                  ["/usr/bin/python3", APISERVER, "--tls", "--cert-dir", workdir,
                   "--token", TOKEN, "--manifests", manifest_path, "--ready-file", ready,
                   "--kubeconfig-out", kubeconfig, "--bookmark-interval", "5"], workdir)
    h.register_log(proc.log_path)
    proc.start()
    h.register_cleanup(proc.stop)
    wait_for("the API server", lambda: os.path.exists(ready), 15, [proc])
    return kubeconfig, proc


def start_uclient(workdir: str, turn_port: int, peer_ip: str, peer_port: int, tag: str,
                  messages: int = 20, interval_ms: int = 5) -> h.Proc:
    """Two uclient sessions sending `messages` each, one every `interval_ms`."""
    argv = ["turnutils_uclient", "-p", str(turn_port), "-e", peer_ip, "-r", str(peer_port),
            "-L", h.LOOPBACK, "-m", "2", "-n", str(messages), "-l", "100",
            "-z", str(interval_ms), "-c", "-W", SECRET, "-u", "someuser", h.LOOPBACK]
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


def uclient(workdir: str, turn_port: int, peer_ip: str, peer_port: int, tag: str) -> None:
    check_uclient(start_uclient(workdir, turn_port, peer_ip, peer_port, tag),
                  f"{peer_ip}:{peer_port}")



def permission(turn_port: int, peer_ip: str):
    """CreatePermission for peer_ip through a fresh allocation: None on success, else the
    error code."""
    user, password = h.rest_credentials(SECRET, "probe")
    with h.TurnClient((h.LOOPBACK, turn_port), user, password) as c:
        c.allocate()
        r = c.create_permission((peer_ip, 9))
        err = r.error_code()
        return None if r.cls == h.SUCCESS else (err[0] if err else -1)


def applies(api: Api, plural: str) -> int:
    log = api.get("/testctl/requests")["requests"]
    return sum(1 for r in log if r["method"] == "PATCH" and f"/{plural}/" in r["path"]
               and r["contentType"].startswith("application/apply-patch+yaml")
               and "/status" not in r["path"])


def body(args: argparse.Namespace, workdir: str) -> None:
    turn_port = h.free_port()
    cds_port = h.free_port()
    kubeconfig, apiserver = start_apiserver(workdir, manifests(workdir, turn_port))
    api = Api(kubeconfig)

    def start_operator(tag: str) -> h.Proc:
        p = h.Proc(f"kturn-operator{tag}",
                   [os.path.abspath(args.operator), "--kubeconfig", kubeconfig,
                    "--cds-addr", f"127.0.0.1:{cds_port}", "--leader-elect",
                    "--leader-election-identity", "operator-0", "-l", "all:DEBUG"], workdir)
        h.register_log(p.log_path)
        p.start()
        h.register_cleanup(p.stop)
        return p

    operator = start_operator("")
    procs = [apiserver, operator]

    # 1. The verbatim GatewayClass: the operator says what is wrong with it.
    gc_path = "/apis/gateway.networking.k8s.io/v1/gatewayclasses/stunner-gatewayclass"
    c = wait_for("GatewayClass status (verbatim manifest)",
                 lambda: condition(api.get(gc_path), "Accepted"), procs=procs)
    print(f"verbatim GatewayClass: Accepted {c['status']} {c['reason']}: {c['message']}")
    h.check(c["status"] == "False" and c["reason"] == "InvalidParameters",
            f"verbatim GatewayClass should be rejected with InvalidParameters: {c}")
    h.check("group" in c["message"], f"the message should name the missing group: {c}")

    # 2. Fixed through the API: everything is rendered, applied and reported.
    code, _ = api.call("PATCH", gc_path, {"spec": {"parametersRef": {"group": "stunner.l7mp.io"}}},
                       "application/merge-patch+json")
    h.check(code == 200, f"patching the GatewayClass: HTTP {code}")
    wait_for("GatewayClass Accepted True",
             lambda: (condition(api.get(gc_path), "Accepted") or {}).get("status") == "True",
             procs=procs)
    gw_path = f"/apis/gateway.networking.k8s.io/v1/namespaces/{GW_NS}/gateways/{GW_NAME}"
    gw = wait_for("Gateway Accepted True",
                  lambda: (lambda g: g if (condition(g, "Accepted") or {}).get("status") == "True"
                           else None)(api.get(gw_path)), procs=procs)
    listener = gw["status"]["listeners"][0]
    lc = {x["type"]: x["status"] for x in listener["conditions"]}
    print(f"Gateway listener {listener['name']}: {lc}, attachedRoutes "
          f"{listener.get('attachedRoutes')}")
    h.check(lc.get("Accepted") == "True" and lc.get("Programmed") == "True",
            f"listener conditions: {listener['conditions']}")
    h.check(listener.get("attachedRoutes") == 1, f"attachedRoutes: {listener}")

    dep = wait_for("Deployment applied", lambda: api.get(
        f"/apis/apps/v1/namespaces/{GW_NS}/deployments/{GW_NAME}"), procs=procs)
    managers = [m["manager"] for m in dep["metadata"].get("managedFields", [])]
    h.check("kturn-operator" in managers, f"Deployment field managers: {managers}")
    owner = dep["metadata"]["ownerReferences"][0]
    h.check(owner["kind"] == "Gateway" and owner["uid"] == gw["metadata"]["uid"],
            f"Deployment owner: {owner}")
    svc = wait_for("Service applied", lambda: api.get(
        f"/api/v1/namespaces/{GW_NS}/services/{GW_NAME}"), procs=procs)
    ports = [(p["port"], p["protocol"]) for p in svc["spec"]["ports"]]
    h.check((turn_port, "UDP") in ports, f"Service ports {ports}, want {turn_port}/UDP")

    route_path = f"/apis/stunner.l7mp.io/v1/namespaces/{GW_NS}/udproutes/media-server-route"
    # The statuses of one render are written one object at a time: until the route's own is
    # written it still says what the render before the GatewayClass fix said (Pending).
    def route_accepted():
        r = api.get(route_path)
        parents = (r or {}).get("status", {}).get("parents") or []
        accepted = parents and (condition(parents[0], "Accepted", path=("conditions",)) or {}).get(
            "status") == "True"
        return r if accepted else None
    route = wait_for("UDPRoute Accepted True", route_accepted, procs=procs)
    rc = {x["type"]: x["status"] for x in route["status"]["parents"][0]["conditions"]}
    h.check(rc.get("Accepted") == "True" and rc.get("ResolvedRefs") == "True",
            f"UDPRoute parent conditions: {route['status']}")
    lease = api.get("/apis/coordination.k8s.io/v1/namespaces/stunner-system/leases/"
                    "kturn-operator-leader")
    h.check(lease is not None and lease["spec"]["holderIdentity"] == "operator-0",
            f"Lease: {lease}")
    deployment_applies = applies(api, "deployments")
    h.check(deployment_applies >= 1, "no server-side apply of the Deployment was logged")

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
                    env=dict(os.environ, STUNNER_ADDR=h.LOOPBACK))
    h.register_log(kturnd.log_path)
    kturnd.start()
    h.register_cleanup(kturnd.stop)
    procs.append(kturnd)
    wait_for("kturnd answering STUN", lambda: h.stun_binding_probe((h.LOOPBACK, turn_port)),
             procs=procs)
    _, port_a = h.start_udp_echo_peer(workdir, POD_A)
    uclient(workdir, turn_port, POD_A, port_a, "a")

    if args.kill_operator:
        # The operator (and its CDS server) dies mid-traffic: nothing relayed may be lost.
        messages = 300
        traffic = start_uclient(workdir, turn_port, POD_A, port_a, "during-kill", messages, 20)
        time.sleep(1.5)
        procs.remove(operator)
        operator.proc.kill()
        operator.proc.wait(timeout=5)
        print(f"operator SIGKILLed {1.5:.1f} s into a {messages * 20 / 1000:.0f} s uclient run")
        check_uclient(traffic, f"{POD_A}:{port_a} across the operator's SIGKILL", messages)
        h.check(kturnd.running(), "kturnd exited when the CDS server went away")
        # Its last config stays in force: new allocations to the pod are still admitted.
        h.check(permission(turn_port, POD_A) is None,
                "kturnd refused the pod while the CDS server was away")
        before = applies(api, "deployments")
        operator = start_operator("-restarted")
        procs.append(operator)
        # Applied objects are remembered in memory only: the new process applies them once.
        wait_for("the restarted operator's apply", lambda: applies(api, "deployments") > before,
                 procs=procs)
        print("operator restarted: it leads again and has applied its objects")
        deployment_applies = applies(api, "deployments")

    # 4. The pod moves: the EndpointSlice now lists pod B only.
    slice_path = f"/apis/discovery.k8s.io/v1/namespaces/{GW_NS}/endpointslices/media-server-x7k2p"
    es = api.get(slice_path)
    es["endpoints"] = [{"addresses": [POD_B], "conditions": {"ready": True, "serving": True}}]
    code, _ = api.call("PUT", slice_path, es)
    h.check(code == 200, f"updating the EndpointSlice: HTTP {code}")
    t0 = time.monotonic()
    eps = wait_for("CDS config with pod B only",
                   lambda: (lambda e: e if e and POD_B in e and POD_A not in e else None)(
                       cds_endpoints()), procs=procs)
    print(f"CDS endpoints after the change: {eps} ({time.monotonic() - t0:.2f} s)")
    wait_for("kturnd admitting pod B", lambda: permission(turn_port, POD_B) is None, 10, procs)
    print(f"kturnd relays to pod B {time.monotonic() - t0:.2f} s after the EndpointSlice change")
    _, port_b = h.start_udp_echo_peer(workdir, POD_B)
    uclient(workdir, turn_port, POD_B, port_b, "b")
    refused = permission(turn_port, POD_A)
    h.check(refused == 403, f"CreatePermission for the removed pod {POD_A}: {refused}, want 403")
    print(f"removed pod {POD_A}: CreatePermission -> {refused}")
    h.check(applies(api, "deployments") == deployment_applies,
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
    h.run_test("operator-kill" if args.kill_operator else "operator", body, p,
               overall_timeout=110)


if __name__ == "__main__":
    main()
