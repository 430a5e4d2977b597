#!/usr/bin/python3
"""The test suite's Kubernetes control plane: the real etcd, kube-apiserver and
kube-controller-manager (built by scripts/build-test-tools.sh), on loopback, with the CRDs
kturn serves installed (its own, and the Gateway API's). Never shipped.

    control_plane.py up   --dir DIR --tools TOOLS   start in the background; return when ready
    control_plane.py down --dir DIR                 stop it and remove its data
    control_plane.py run  --dir DIR --tools TOOLS   the same in the foreground, until Ctrl-C
    control_plane.py apiserver --dir DIR --out OUT [--etcd-prefix P] [--port N]
                          [--no-watch-cache] [--skip-crd NAME]... [--no-crds]
        one more kube-apiserver on the same etcd, in the foreground until SIGTERM (tests that
        stop a server, or need a cluster without some CRDs, or without any)
    control_plane.py compact --dir DIR              compact etcd's history up to now
    control_plane.py token --dir DIR NS SA          a ServiceAccount token (TokenRequest)

TOOLS is the folder scripts/build-test-tools.sh --link made (bin/ and gateway-api/). `up` is
ctest's FIXTURES_SETUP step and `down` its FIXTURES_CLEANUP: the processes outlive `up` under a
supervisor that stops them on `down`, on SIGTERM, or when the process that ran `up` (ctest) is
gone, so a killed test run leaves nothing behind. DIR then holds:

    kubeconfig      admin (client certificate, group system:masters)
    ca.crt          the cluster CA (serving and client certificates)
    audit.log       every request the API server answered, one JSON object a line (audit.k8s.io
                    Metadata level), for tests that count what a client wrote
    env             KUBECONFIG=..., ETCD_URL=..., APISERVER_URL=...
    logs/           each component's output

The apiserver runs with --authorization-mode=Node,RBAC and the default admission plugins;
ServiceAccount tokens are signed with the key in DIR/pki/sa.key and minted through the
TokenRequest API (`token`).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from typing import Callable, Dict, List, Optional

import yaml

SERVICE_CIDR = "10.96.0.0/16"
ISSUER = "https://kubernetes.default.svc.cluster.local"
STARTUP_LIMIT = 180  # seconds for the whole control plane to become ready

# Who the audit log leaves out: the control plane's own controllers, so that a test reads only
# what kturn (or the test itself) asked for.
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
  - level: None
    users: [system:apiserver, system:kube-controller-manager, system:kube-scheduler]
  - level: None
    userGroups: [system:serviceaccounts:kube-system, system:nodes]
  - level: None
    nonResourceURLs: ["/readyz*", "/livez*", "/healthz*", "/version", "/openapi/*", "/api",
                      "/apis", "/apis/*"]
  - level: Metadata
"""


def log(msg: str) -> None:
    print(f"control-plane: {msg}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


# --- certificates ---------------------------------------------------------------------------

EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

def sign_leaf(pki: str, name: str, subject: str, ext: List[str]) -> None:
    """pki/<name>.{key,crt}: an ECDSA P-256 key and a certificate for it from pki/ca.*."""
    p = lambda n: os.path.join(pki, n)  # noqa: E731
    openssl("req", "-new", *EC_KEY, "-keyout", p(name + ".key"), "-out", p(name + ".csr"),
            "-subj", subject, *sum((["-addext", e] for e in ext), []))
    openssl("x509", "-req", "-in", p(name + ".csr"), "-CA", p("ca.crt"), "-CAkey",
            p("ca.key"), "-CAcreateserial", "-out", p(name + ".crt"), "-days", "3",
            "-copy_extensions", "copyall")
    os.remove(p(name + ".csr"))


def client_leaf(pki: str, name: str, subject: str) -> None:
    sign_leaf(pki, name, subject, ["extendedKeyUsage=clientAuth",
                                   "keyUsage=critical,digitalSignature"])


def make_pki(pki: str, address: str = "127.0.0.1") -> None:
    """A CA, the apiserver's serving certificate (for `address`, loopback and the kubernetes
    Service), client certificates for the admin and the controller-manager, and the
    ServiceAccount signing key: ECDSA P-256 throughout."""
    os.makedirs(pki, exist_ok=True)
    p = lambda name: os.path.join(pki, name)  # noqa: E731
    openssl("req", "-x509", *EC_KEY, "-keyout", p("ca.key"), "-out", p("ca.crt"), "-days", "3",
            "-subj", "/CN=kturn-test-ca", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    ips = ",".join(f"IP:{ip}" for ip in dict.fromkeys(["127.0.0.1", address, "10.96.0.1"]))
    sign_leaf(pki, "apiserver", "/CN=kube-apiserver",
              [f"subjectAltName={ips},DNS:localhost,DNS:kubernetes,"
               "DNS:kubernetes.default,DNS:kubernetes.default.svc,"
               "DNS:kubernetes.default.svc.cluster.local", "extendedKeyUsage=serverAuth",
               "keyUsage=critical,digitalSignature"])
    client_leaf(pki, "admin", "/O=system:masters/CN=kturn-test-admin")
    client_leaf(pki, "controller-manager", "/CN=system:kube-controller-manager")
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out",
            p("sa.key"))
    openssl("pkey", "-in", p("sa.key"), "-pubout", "-out", p("sa.pub"))


def b64file(path: str) -> str:
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def write_kubeconfig(path: str, pki: str, url: str, user: str) -> None:
    """A kubeconfig for `url` that authenticates with pki/<user>.crt."""
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "kturn-test",
        "clusters": [{"name": "kturn-test", "cluster": {
            "server": url, "certificate-authority-data": b64file(os.path.join(pki, "ca.crt"))}}],
        "users": [{"name": user, "user": {
            "client-certificate-data": b64file(os.path.join(pki, user + ".crt")),
            "client-key-data": b64file(os.path.join(pki, user + ".key"))}}],
        "contexts": [{"name": "kturn-test", "context": {"cluster": "kturn-test", "user": user}}],
    }
    with open(path + ".tmp", "w") as f:
        json.dump(config, f, indent=1)  # JSON is YAML: kubectl and kturn read it
    os.replace(path + ".tmp", path)


def admin_context(pki: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
    ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
    return ctx


def api(url: str, pki: str, method: str, path: str, body: Optional[dict] = None,
        timeout: float = 10) -> dict:
    req = urllib.request.Request(url + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=admin_context(pki), timeout=timeout) as r:
        return json.loads(r.read() or b"{}")


# --- processes ------------------------------------------------------------------------------

class Component:
    def __init__(self, name: str, argv: List[str], logdir: str):
        self.name = name
        self.argv = argv
        os.makedirs(logdir, exist_ok=True)
        self.logfile = os.path.join(logdir, name + ".log")
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> None:
        out = open(self.logfile, "ab")
        self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        out.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = 30) -> str:
        try:
            with open(self.logfile, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def stop(self, grace: float = 10) -> None:
        if not self.alive():
            return
        self.proc.terminate()
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def wait_until(what: str, ready, components: List[Component], limit: float) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        for c in components:
            if not c.alive():
                raise RuntimeError(f"{c.name} exited while waiting for {what}:\n{c.tail()}")
        try:
            if ready():
                return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.1)
    raise RuntimeError(f"timed out after {limit:.0f} s waiting for {what}")


def etcd_component(tools: str, data: str, logdir: str, client_port: int) -> Component:
    peer = free_port()
    return Component("etcd", [
        os.path.join(tools, "bin", "etcd"), "--name", "kturn-test", "--data-dir", data,
        "--listen-client-urls", f"http://127.0.0.1:{client_port}",
        "--advertise-client-urls", f"http://127.0.0.1:{client_port}",
        "--listen-peer-urls", f"http://127.0.0.1:{peer}",
        "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
        "--initial-cluster", f"kturn-test=http://127.0.0.1:{peer}",
        "--unsafe-no-fsync", "--log-level", "warn"], logdir)


def apiserver_component(name: str, tools: str, pki: str, etcd_url: str, port: int,
                        logdir: str, extra: List[str], address: str = "127.0.0.1") -> Component:
    p = lambda n: os.path.join(pki, n)  # noqa: E731
    return Component(name, [
        os.path.join(tools, "bin", "kube-apiserver"),
        "--etcd-servers", etcd_url,
        "--bind-address", address, "--advertise-address", address,
        "--secure-port", str(port),
        "--tls-cert-file", p("apiserver.crt"), "--tls-private-key-file", p("apiserver.key"),
        "--client-ca-file", p("ca.crt"),
        "--service-account-issuer", ISSUER, "--service-account-key-file", p("sa.pub"),
        "--service-account-signing-key-file", p("sa.key"),
        "--service-cluster-ip-range", SERVICE_CIDR,
        "--authorization-mode", "Node,RBAC",
        "--allow-privileged=true", "--profiling=false", *extra], logdir)


def readyz(url: str, pki: str) -> bool:
    req = urllib.request.Request(url + "/readyz")
    with urllib.request.urlopen(req, context=admin_context(pki), timeout=2) as r:
        return r.status == 200


def install_crds(tools: str, kubeconfig: str, repo: str, skip: List[str]) -> None:
    """kturn's CRDs (deploy/crds) and the Gateway API's: the standard channel, with UDPRoute and
    TCPRoute from the experimental one (it serves gateway.networking.k8s.io/v1alpha2 UDPRoute,
    which STUNner's users have). Waits until every one is Established."""
    gwapi = os.path.join(tools, "gateway-api")
    files = {}
    for channel in ("standard", "experimental"):
        for f in sorted(os.listdir(os.path.join(gwapi, channel))):
            if channel == "standard" or "udproutes" in f or "tcproutes" in f:
                files[f] = os.path.join(gwapi, channel, f)
    crds = os.path.join(repo, "deploy", "crds")
    for f in sorted(os.listdir(crds)):
        if f.endswith(".yaml"):
            files[f] = os.path.join(crds, f)
    skipped = {"{1}_{0}.yaml".format(*s.split(".", 1)) for s in skip}
    chosen = [path for f, path in sorted(files.items()) if f not in skipped]
    kubectl = [os.path.join(tools, "bin", "kubectl"), "--kubeconfig", kubeconfig]
    args = sum((["-f", path] for path in chosen), [])
    subprocess.run(kubectl + ["apply", "--server-side", "--field-manager", "kturn-test",
                              *args], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(kubectl + ["wait", "--for", "condition=Established", "--timeout", "60s",
                              *args], check=True, stdout=subprocess.DEVNULL)
    # Established is not served yet: for a moment a new kind's storage answers 429 ("storage is
    # (re)initializing"). Ready means every kind lists.
    kinds = []
    for path in chosen:
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    kinds.append(f"{doc['spec']['names']['plural']}.{doc['spec']['group']}")
    deadline = time.monotonic() + 60
    while subprocess.run(kubectl + ["get", ",".join(kinds), "-A"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL).returncode != 0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the CRDs' kinds do not list: {','.join(kinds)}")
        time.sleep(0.2)


class ComponentGroup:
    """Processes started in order (self.components): the first that exited, and a stop of all
    of them in reverse order."""

    components: List[Component]

    def check(self) -> Optional[str]:
        for c in self.components:
            if not c.alive():
                return f"{c.name} exited:\n{c.tail()}"
        return None

    def stop(self) -> None:
        for c in reversed(self.components):
            c.stop()
        self.components.clear()


class ControlPlane(ComponentGroup):
    """etcd, kube-apiserver and kube-controller-manager, the apiserver on `address`: loopback for
    the test suite. With `nodes` (tests/e2e/cluster.py), `address` is the node's, which pods
    reach; kube-scheduler runs, and the apiserver has a client certificate for the kubelets'
    API and checks their serving certificates against the cluster CA. Without `crds` no CRD is
    installed: a new cluster, as `helm install` of the chart meets it. `pod_cidr` makes
    kube-controller-manager give each node a /24 of it (spec.podCIDR), for a CNI that routes
    between nodes."""

    def __init__(self, dirpath: str, tools: str, address: str = "127.0.0.1",
                 nodes: bool = False, crds: bool = True, pod_cidr: str = ""):
        self.dir = os.path.abspath(dirpath)
        self.tools = os.path.abspath(tools)
        self.address = address
        self.nodes = nodes
        self.crds = crds
        self.pod_cidr = pod_cidr
        self.pki = os.path.join(self.dir, "pki")
        self.logs = os.path.join(self.dir, "logs")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.components: List[Component] = []
        self.timings: Dict[str, float] = {}

    def apply(self, docs: List[dict]) -> None:
        """kubectl apply --server-side of `docs`, as the admin."""
        r = subprocess.run([os.path.join(self.tools, "bin", "kubectl"), "--kubeconfig",
                            self.kubeconfig, "apply", "--server-side", "-f", "-"],
                           input="\n---\n".join(json.dumps(d) for d in docs),
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"kubectl apply: {r.stderr.strip()}")

    def start(self) -> None:
        t0 = time.monotonic()
        for d in ("etcd", "pki", "logs"):
            shutil.rmtree(os.path.join(self.dir, d), ignore_errors=True)
        for f in ("audit.log", "ready", "failed", "env", "kubeconfig"):
            try:
                os.remove(os.path.join(self.dir, f))
            except FileNotFoundError:
                pass
        make_pki(self.pki, self.address)
        for f in ("ca.crt",):
            shutil.copy(os.path.join(self.pki, f), os.path.join(self.dir, f))
        etcd_port, api_port = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{etcd_port}"
        self.url = f"https://{self.address}:{api_port}"
        etcd = etcd_component(self.tools, os.path.join(self.dir, "etcd"), self.logs, etcd_port)
        etcd.start()
        self.components.append(etcd)
        wait_until("etcd", lambda: urllib.request.urlopen(self.etcd_url + "/health",
                                                          timeout=2).status == 200,
                   self.components, 30)
        self.timings["etcd"] = time.monotonic() - t0

        policy = os.path.join(self.dir, "audit-policy.yaml")
        with open(policy, "w") as f:
            f.write(AUDIT_POLICY)
        extra = ["--audit-policy-file", policy,
                 "--audit-log-path", os.path.join(self.dir, "audit.log")]
        if self.nodes:
            client_leaf(self.pki, "apiserver-kubelet-client",
                        "/O=system:masters/CN=kube-apiserver-kubelet-client")
            extra += ["--kubelet-client-certificate",
                      os.path.join(self.pki, "apiserver-kubelet-client.crt"),
                      "--kubelet-client-key",
                      os.path.join(self.pki, "apiserver-kubelet-client.key"),
                      "--kubelet-certificate-authority", os.path.join(self.pki, "ca.crt"),
                      "--kubelet-preferred-address-types", "InternalIP"]
        apiserver = apiserver_component("kube-apiserver", self.tools, self.pki, self.etcd_url,
                                        api_port, self.logs, extra, self.address)
        apiserver.start()
        self.components.append(apiserver)
        wait_until("kube-apiserver /readyz", lambda: readyz(self.url, self.pki),
                   self.components, 90)
        self.timings["kube-apiserver"] = time.monotonic() - t0
        write_kubeconfig(self.kubeconfig, self.pki, self.url, "admin")

        cm_kubeconfig = os.path.join(self.pki, "controller-manager.kubeconfig")
        write_kubeconfig(cm_kubeconfig, self.pki, self.url, "controller-manager")
        cm = Component("kube-controller-manager", [
            os.path.join(self.tools, "bin", "kube-controller-manager"),
            "--kubeconfig", cm_kubeconfig, "--use-service-account-credentials=true",
            "--service-account-private-key-file", os.path.join(self.pki, "sa.key"),
            "--root-ca-file", os.path.join(self.pki, "ca.crt"),
            "--service-cluster-ip-range", SERVICE_CIDR,
            "--leader-elect=false", "--secure-port", "0",
            *(["--allocate-node-cidrs", "--cluster-cidr", self.pod_cidr,
               "--node-cidr-mask-size", "24"] if self.pod_cidr else [])], self.logs)
        cm.start()
        self.components.append(cm)
        if self.nodes:
            client_leaf(self.pki, "scheduler", "/CN=system:kube-scheduler")
            sched_kubeconfig = os.path.join(self.pki, "scheduler.kubeconfig")
            write_kubeconfig(sched_kubeconfig, self.pki, self.url, "scheduler")
            sched = Component("kube-scheduler", [
                os.path.join(self.tools, "bin", "kube-scheduler"),
                "--kubeconfig", sched_kubeconfig, "--authentication-kubeconfig",
                sched_kubeconfig, "--authorization-kubeconfig", sched_kubeconfig,
                "--leader-elect=false", "--secure-port", "0"], self.logs)
            sched.start()
            self.components.append(sched)

        if self.crds:
            install_crds(self.tools, self.kubeconfig, repo_root(), [])
            self.timings["crds"] = time.monotonic() - t0
        # The ServiceAccount controller makes each namespace's `default` account: it runs.
        wait_until("kube-controller-manager (the default ServiceAccount)",
                   lambda: api(self.url, self.pki, "GET",
                               "/api/v1/namespaces/default/serviceaccounts/default"),
                   self.components, 60)
        self.timings["ready"] = time.monotonic() - t0
        with open(os.path.join(self.dir, "env"), "w") as f:
            f.write(f"KUBECONFIG={self.kubeconfig}\nETCD_URL={self.etcd_url}\n"
                    f"APISERVER_URL={self.url}\nTOOLS={self.tools}\n")



def repo_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read_env(dirpath: str) -> Dict[str, str]:
    with open(os.path.join(dirpath, "env")) as f:
        return dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)


# --- for tests: a scope of their own in the shared cluster -----------------------------------

class Scope:
    """A test's own part of the shared cluster, as ClusterScope in control_plane.h: namespaces
    and the cluster-scoped names kturn's objects use get a random suffix, localize() moves
    manifests written for `media`, `stunner`, ... into them, delete() removes what it made."""

    def __init__(self, dirpath: str = ""):
        self.dir = dirpath or os.environ["KTURN_CONTROL_PLANE"]
        self.env = read_env(self.dir)
        self.kubeconfig = self.env["KUBECONFIG"]
        self.suffix = base64.b32encode(os.urandom(5)).decode().lower()[:6]
        self.namespaces: Dict[str, str] = {}
        self.cluster_scoped: List[str] = []  # "kind/name" for kubectl delete
        self.files: List[str] = []

    def kubectl(self, *args: str, kubeconfig: str = "", check: bool = True,
                input: Optional[str] = None, stderr: bool = False) -> str:
        """kubectl's output (with its errors after it, stderr=True); check: fail on an error."""
        argv = [os.path.join(self.env["TOOLS"], "bin", "kubectl"), "--kubeconfig",
                kubeconfig or self.kubeconfig, *args]
        r = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=60)
        if check and r.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout + r.stderr if stderr else r.stdout

    def get(self, kind: str, name: str, ns: str = "") -> Optional[dict]:
        args = ["get", kind, name, "-o", "json", "--show-managed-fields"] + (
            ["-n", self.ns(ns)] if ns else [])
        out = self.kubectl(*args, check=False)
        return json.loads(out) if out.strip() else None

    def ns(self, base: str) -> str:
        if base not in self.namespaces:
            self.namespaces[base] = f"{base}-{self.suffix}"
            self.kubectl("create", "namespace", self.namespaces[base])
        return self.namespaces[base]

    def name(self, base: str) -> str:
        return f"{base}-{self.suffix}"

    @property
    def controller_name(self) -> str:
        return f"stunner.l7mp.io/gateway-operator-{self.suffix}"

    def localize(self, obj: dict) -> dict:
        obj = json.loads(json.dumps(obj))
        kind = obj.get("kind", "")

        def walk(node):
            if isinstance(node, dict):
                for k, v in node.items():
                    if k == "namespace" and isinstance(v, str):
                        node[k] = self.ns(v)
                    else:
                        walk(v)
            elif isinstance(node, list):
                for v in node:
                    walk(v)
        walk(obj)
        meta, spec = obj.setdefault("metadata", {}), obj.get("spec")
        if kind in ("GatewayClass", "Dataplane"):
            meta["name"] = self.name(meta["name"])
            self.cluster_scoped.append(f"{kind.lower()}/{meta['name']}")
        if isinstance(spec, dict):
            if kind == "GatewayClass":
                spec["controllerName"] = self.controller_name
            if "gatewayClassName" in spec:
                spec["gatewayClassName"] = self.name(spec["gatewayClassName"])
            if kind == "GatewayConfig" and "dataplane" in spec:
                spec["dataplane"] = self.name(spec["dataplane"])
            if kind == "Service":
                spec.pop("clusterIP", None)
                spec.pop("clusterIPs", None)
        return obj

    def apply(self, docs: List[dict]) -> None:
        """kubectl apply of the localized documents, as a user applies manifests."""
        local = [self.localize(d) for d in docs if d.get("kind") != "Namespace"]
        self.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                            "items": local}))

    def service_account_kubeconfig(self, sa: str, cluster_role: str = "cluster-admin",
                                   base: str = "kturn", create: bool = True) -> str:
        """A kubeconfig with a TokenRequest token of ServiceAccount `sa` in ns(base): made here
        and bound to `cluster_role` (none: ""), or, create=False, one that exists already."""
        ns = self.ns(base)
        if create:
            self.kubectl("create", "serviceaccount", sa, "-n", ns)
        if cluster_role:
            binding = self.name(sa)
            self.kubectl("create", "clusterrolebinding", binding, "--clusterrole", cluster_role,
                         "--serviceaccount", f"{ns}:{sa}")
            self.cluster_scoped.append(f"clusterrolebinding/{binding}")
        token = self.kubectl("create", "token", sa, "-n", ns, "--duration", "2h").strip()
        with open(self.kubeconfig) as f:
            config = json.load(f)
        config["users"][0]["user"] = {"token": token}
        path = os.path.join(self.dir, f"kubeconfig-{self.name(sa)}")
        with open(path, "w") as f:
            json.dump(config, f)
        self.files.append(path)
        return path

    def service_account_user(self, sa: str, base: str = "kturn") -> str:
        return f"system:serviceaccount:{self.ns(base)}:{sa}"

    def audit_events(self, user: str) -> List[dict]:
        """The audit log's events (stage ResponseComplete) of one user."""
        out = []
        with open(os.path.join(self.dir, "audit.log")) as f:
            for line in f:
                if user in line:
                    e = json.loads(line)
                    if e["user"]["username"] == user:
                        out.append(e)
        return out

    def audit_count(self, user: str, verb: str, resource: str, subresource: str = "") -> int:
        n = 0
        for e in self.audit_events(user):
            ref = e.get("objectRef", {})
            if (e["verb"] == verb and ref.get("resource") == resource and
                    (subresource == "*" or ref.get("subresource", "") == subresource)):
                n += 1
        return n

    def delete(self) -> None:
        for obj in self.cluster_scoped:
            self.kubectl("delete", obj, "--wait=false", "--ignore-not-found", check=False)
        for ns in self.namespaces.values():
            self.kubectl("delete", "namespace", ns, "--wait=false", check=False)
        for f in self.files:
            try:
                os.remove(f)
            except OSError:
                pass


# --- commands -------------------------------------------------------------------------------

class Stop(Exception):
    pass


def on_signal(*_):
    raise Stop()


def supervise(dirpath: str, owner: int, start: Callable[[], Dict[str, float]],
              check: Callable[[], Optional[str]], stop: Callable[[], None]) -> int:
    """The supervisor's life, for this control plane and tests/e2e/cluster.py's: start() (its
    timings go to DIR/ready, an exception to DIR/failed), then check() every second until it
    reports a problem, SIGTERM or SIGINT, or the owner process is gone (0: no owner); stop() in
    every case."""
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        try:
            timings = start()
        except Exception as e:  # noqa: BLE001
            with open(os.path.join(dirpath, "failed"), "w") as f:
                f.write(str(e))
            log(f"failed: {e}")
            return 1
        times = ", ".join(f"{k} {v:.1f} s" for k, v in timings.items())
        with open(os.path.join(dirpath, "ready"), "w") as f:
            f.write(times + "\n")
        log(f"ready ({times}); kubeconfig {os.path.join(dirpath, 'kubeconfig')}")
        while True:
            time.sleep(1)
            problem = check()
            if problem:
                log(problem)
                return 1
            if owner and not pid_alive(owner):
                log(f"owner {owner} is gone: stopping")
                return 0
    except Stop:
        return 0
    finally:
        stop()


def serve(args) -> int:
    """The supervisor: starts the control plane, then keeps it until told to stop or the owner
    process is gone."""
    plane = ControlPlane(args.dir, args.tools)

    def start() -> Dict[str, float]:
        plane.start()
        return plane.timings

    return supervise(plane.dir, args.owner, start, plane.check, plane.stop)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def spawn_supervisor(script: str, dirpath: str, argv: List[str], logname: str,
                     limit: float) -> int:
    """Runs `script serve --dir DIR ARGV...` in a session of its own (it outlives the caller),
    logging to DIR/LOGNAME, and waits up to `limit` seconds for it to write DIR/ready: 0, or 1
    with the end of its log when it failed or took too long."""
    for f in ("ready", "failed"):
        try:
            os.remove(os.path.join(dirpath, f))
        except FileNotFoundError:
            pass
    logfile = os.path.join(dirpath, logname)
    with open(logfile, "ab") as out:
        proc = subprocess.Popen([sys.executable, os.path.abspath(script), "serve", "--dir",
                                 dirpath, *argv], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    with open(os.path.join(dirpath, "serve.pid"), "w") as f:
        f.write(str(proc.pid))
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if os.path.exists(os.path.join(dirpath, "ready")):
            with open(os.path.join(dirpath, "ready")) as f:
                log(f"up in {time.monotonic() - t0:.1f} s ({f.read().strip()})")
            return 0
        if proc.poll() is not None or os.path.exists(os.path.join(dirpath, "failed")):
            break
        time.sleep(0.1)
    proc.terminate()
    try:
        proc.wait(60)  # it stops what it started
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    with open(logfile, errors="replace") as f:
        sys.stderr.write(f.read()[-6000:])
    log("did not start")
    return 1


def stop_supervisor(dirpath: str, script: str, grace: float) -> None:
    """SIGTERM to the supervisor in DIR/serve.pid, if it still is `script`'s; SIGKILL to its
    process group after `grace` seconds."""
    pidfile = os.path.join(dirpath, "serve.pid")
    try:
        with open(pidfile) as f:
            pid = int(f.read())
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            ours = os.path.basename(script).encode() in f.read()
    except (OSError, ValueError):
        ours = False  # gone already, or the number now belongs to another process
    if ours:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + grace
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if pid_alive(pid):
            os.killpg(pid, signal.SIGKILL)
    try:
        os.remove(pidfile)
    except OSError:
        pass


def cmd_up(args) -> int:
    os.makedirs(args.dir, exist_ok=True)
    stop_supervisor(args.dir, __file__, 30)  # a previous run's leftovers
    return spawn_supervisor(__file__, args.dir, ["--tools", args.tools, "--owner",
                                                 str(os.getppid())], "control-plane.log",
                            STARTUP_LIMIT)


def cmd_down(args) -> int:
    stop_supervisor(args.dir, __file__, 30)
    shutil.rmtree(os.path.join(args.dir, "etcd"), ignore_errors=True)
    log("stopped")
    return 0


def cmd_run(args) -> int:
    args.owner = 0
    return serve(args)


def cmd_apiserver(args) -> int:
    """One more kube-apiserver on the running control plane's etcd, with the same PKI, until
    SIGTERM. A new --etcd-prefix is an empty cluster (the CRDs are installed, less --skip-crd,
    none with --no-crds); the default prefix is the same cluster as the main server's."""
    env = read_env(args.dir)
    pki = os.path.join(args.dir, "pki")
    os.makedirs(args.out, exist_ok=True)
    port = args.port or free_port()
    url = f"https://127.0.0.1:{port}"
    extra = ["--etcd-prefix", args.etcd_prefix]
    if args.no_watch_cache:
        extra.append("--watch-cache=false")
    c = apiserver_component("kube-apiserver", env["TOOLS"], pki, env["ETCD_URL"], port,
                            args.out, extra)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        c.start()
        wait_until("kube-apiserver /readyz", lambda: readyz(url, pki), [c], 90)
        kubeconfig = os.path.join(args.out, "kubeconfig")
        write_kubeconfig(kubeconfig, pki, url, "admin")
        if args.etcd_prefix != "/registry" and not args.no_crds:
            install_crds(env["TOOLS"], kubeconfig, repo_root(), args.skip_crd)
        with open(os.path.join(args.out, "port.tmp"), "w") as f:
            f.write(f"{port}\n")
        os.replace(os.path.join(args.out, "port.tmp"), os.path.join(args.out, "port"))
        while c.alive():
            time.sleep(0.2)
        log(f"kube-apiserver exited:\n{c.tail()}")
        return 1
    except Stop:
        return 0
    except Exception as e:  # noqa: BLE001
        log(str(e))
        return 1
    finally:
        c.stop()


def cmd_compact(args) -> int:
    """Compacts etcd up to its current revision: older resourceVersions are gone (a watch from
    one gets 410 Expired where the API server has no watch cache to answer from)."""
    url = read_env(args.dir)["ETCD_URL"]
    rng = urllib.request.urlopen(urllib.request.Request(
        url + "/v3/kv/range", data=json.dumps({"key": base64.b64encode(b"/").decode()}).encode(),
        method="POST"), timeout=5)
    revision = int(json.loads(rng.read())["header"]["revision"])
    urllib.request.urlopen(urllib.request.Request(
        url + "/v3/kv/compaction",
        data=json.dumps({"revision": str(revision), "physical": True}).encode(), method="POST"),
        timeout=10).read()
    print(revision)
    return 0


def cmd_token(args) -> int:
    env = read_env(args.dir)
    pki = os.path.join(args.dir, "pki")
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": args.seconds}}
    got = api(env["APISERVER_URL"], pki, "POST",
              f"/api/v1/namespaces/{args.ns}/serviceaccounts/{args.sa}/token", body)
    print(got["status"]["token"])
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("up", "run", "serve"):
        p = sub.add_parser(name)
        p.add_argument("--dir", required=True)
        p.add_argument("--tools", required=True)
        if name == "serve":
            p.add_argument("--owner", type=int, default=0)
    sub.add_parser("down").add_argument("--dir", required=True)
    sub.add_parser("compact").add_argument("--dir", required=True)
    p = sub.add_parser("apiserver")
    p.add_argument("--dir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--etcd-prefix", default="/registry")
    p.add_argument("--no-watch-cache", action="store_true")
    p.add_argument("--skip-crd", action="append", default=[],
                   help="<plural>.<group> of a CRD not to install, e.g. udproutes.gateway.networking.k8s.io")
    p.add_argument("--no-crds", action="store_true",
                   help="a new --etcd-prefix without any CRD (what `helm install` meets on a new cluster)")
    p = sub.add_parser("token")
    p.add_argument("--dir", required=True)
    p.add_argument("--seconds", type=int, default=3600)
    p.add_argument("ns")
    p.add_argument("sa")
    args = ap.parse_args()
    if args.cmd in ("up", "run", "serve"):
        args.dir = os.path.abspath(args.dir)
        args.tools = os.path.abspath(args.tools)
    return {"up": cmd_up, "down": cmd_down, "run": cmd_run, "serve": serve,
            "apiserver": cmd_apiserver, "compact": cmd_compact, "token": cmd_token}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
