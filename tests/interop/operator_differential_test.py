#!/usr/bin/python3
"""The renderer differential (issue 40): STUNner's gateway operator v1.2.1 (built from
../shared/reference/ by scripts/build-test-tools.sh) and kturn-operator, side by side on the real
control plane of the test run (tests/support/control_plane.py), fed the same inputs and compared
through what each publishes:

  - the dataplane configs their config discovery servers serve (GET /api/v1/configs: both speak
    the protocol);
  - the Deployments, DaemonSets, Services and ConfigMaps they create in the API server;
  - the statuses they write: GatewayClass, Gateway (conditions, addresses, listeners), UDPRoute
    and TCPRoute parents.

The inputs: every golden case of tests/golden (but those rendered with non-default options, and
bad-manifests, which the API server refuses), every operator-* and docs-* set of
../shared/stunner-fixtures/ when it is beside the checkout, and --seeds object sets from the
generator below (tests/interop/stunner_inputs.py): GatewayClasses, GatewayConfigs of each auth
mode, Gateways with every listener protocol, addresses and the annotations STUNner reads,
UDPRoutes of both groups and TCPRoutes across namespaces, Services with and without selectors,
EndpointSlices with ready and not-ready endpoints, StaticServices and Dataplanes.

Each input is applied twice, once into namespaces of each operator's own (a suffix apiece, and
each operator's GatewayClasses carry its own controller name), all at once; the comparison waits
until both operators' output has stopped changing. Names are then put back (suffixes removed,
ClusterIPs replaced by the Service they belong to) and every difference is either one that
docs/migration-from-stunner.md lists as deliberate (DELIBERATE below: a pattern on the
difference's path, and the doc's reason) or a failure. Condition messages are not compared
(their wording is each project's own); types, statuses and reasons are.

  /usr/bin/python3 operator_differential_test.py --server kturnd --kturnd build/kturnd \\
      --operator build/kturn-operator \\
      --stunner-operator build/test-tools/bin/stunner-gateway-operator --seeds 8
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import urllib.request
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from operator_test import cp  # noqa: E402  (tests/support/control_plane.py)
import stunner_inputs  # noqa: E402  (the generator)
from cds_crossover_test import start_operator  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GOLDEN = os.path.join(REPO, "tests", "golden")
FIXTURES = os.path.join(os.path.dirname(REPO), "shared", "stunner-fixtures")
# Golden cases that are not inputs of this comparison: the API server refuses bad-manifests'
# objects by design; the others are rendered with a non-default option (their options.yaml).
NOT_COMPARED = {"bad-manifests"}

NODEPORT_ANNOTATION = "stunner.l7mp.io/nodeport"
STABLE = 10.0  # seconds without a change in either operator's output: settled
OWNED_KINDS = "deployments,daemonsets,services,configmaps"
STATUS_KINDS = ("gatewayclasses.gateway.networking.k8s.io,gateways.gateway.networking.k8s.io,"
                "udproutes.stunner.l7mp.io,udproutes.gateway.networking.k8s.io,"
                "tcproutes.gateway.networking.k8s.io")

MIGRATION_DOC = os.path.join(REPO, "docs", "migration-from-stunner.md")
ABSENT = "<absent>"


def transports(listener: dict) -> str:
    return "UDP" if listener.get("protocol") in ("TURN-UDP", "TURN-DTLS") else "TCP"


def clashing(case: "Case") -> set:
    """ns/name of the case's Gateways with two listeners of one transport on one port."""
    out = set()
    for d in case.docs:
        if d.get("kind") == "Gateway":
            seen = [(l.get("port"), transports(l)) for l in d["spec"].get("listeners", [])]
            if len(seen) != len(set(seen)):
                out.add(f"{d['metadata']['namespace']}/{d['metadata']['name']}")
    return out


def tcproutes(case: "Case") -> set:
    return {f"{d['metadata']['namespace']}/{d['metadata']['name']}" for d in case.docs
            if d.get("kind") == "TCPRoute"}


def gateway_of(path: str) -> str:
    """ns/name of the Gateway a path starts with: a status or object path (.Kind/ns/name, the
    Gateway's own, its Service's or Deployment's) or a config path (.ns/name, the config's)."""
    m = re.match(r"\.[A-Za-z0-9.]+/([^/]*)/([^./]+)", path) or \
        re.match(r"\.([^/.]+)/([^./]+)", path)
    return f"{m.group(1)}/{m.group(2)}" if m else ""


def port_of(v: Any) -> int:
    """A port number, or the port of a URL such as http://:18000/metrics; -1 if none."""
    m = re.fullmatch(r"(\d+)", str(v)) or re.search(r":(\d+)(/|$)", str(v))
    return int(m.group(1)) if m else -1


# The differences docs/migration-from-stunner.md lists as deliberate ("The renderer
# differential"): (its id there, a pattern on "<case> <category> <path>", a check of STUNner's
# value a, kturn's b and the case). Every other difference fails, and so does an id the doc's
# table does not have.
DELIBERATE: List[Tuple[str, str, Any]] = [
    ("listener-programmed", r" status .*\.listeners\.[^.]+\.conditions\.Programmed$",
     lambda a, b, c, p: a == ABSENT),
    ("tcproute-kind", r" status .*\.listeners\.[^.]+\.supportedKinds$",
     lambda a, b, c, p: set(b) - set(a) == {"stunner.l7mp.io/TCPRoute"}),
    ("tcproute-rendered", r" (config .*\.(clusters|listeners\[\d+\]\.routes)|"
                          r"status .*\.attachedRoutes)$",
     lambda a, b, c, p: bool(tcproutes(c)) and (
         (isinstance(b, int) and isinstance(a, int) and b > a) or
         all((isinstance(r, str) and r in tcproutes(c)) or '"protocol": "TCP"' in json.dumps(r)
             for r in (b if isinstance(b, list) else [])
             if a == ABSENT or r not in a))),
    ("certificate-valid", r" status .*\.conditions\.kturn\.io/CertificateValid$",
     lambda a, b, c, p: a == ABSENT),
    ("no-api-token", r" object .*\.automountServiceAccountToken$",
     lambda a, b, c, p: a == ABSENT and b is False),
    ("hostnetwork-ports", r" (config .*\.admin\.(healthcheck|metrics)_endpoint|object .*\."
                          r"(livenessProbe\.httpGet\.port|readinessProbe\.httpGet\.port|"
                          r"containers\[\d+\]\.ports\[\d+\]\.containerPort))$",
     lambda a, b, c, p: 18000 <= port_of(b) < 20000),
    ("hostnetwork-dns", r" object .*\.dnsPolicy$",
     lambda a, b, c, p: a == "ClusterFirst" and b == "ClusterFirstWithHostNet"),
    ("kturn-annotations", r" config .*\.(admin\.(capacity|region)|"
                          r"listeners\[\d+\]\.alternate_(servers|domain))$",
     lambda a, b, c, p: a == ABSENT),
    ("kturn-annotations-checked", r"^golden/global-annotations .*bad-gateway",
     lambda a, b, c, p: True),
    ("user-quota", r" config .*\.admin\.user_quota$", lambda a, b, c, p: a == ABSENT),
    ("not-accepted-reason", r" status .*\.conditions\.Accepted\[1\]$",
     lambda a, b, c, p: a == "Pending" and b == "InvalidParameters"),
    ("not-accepted-listeners", r" status .*\.listeners\.[^.]+\.conditions\."
                               r"(Conflicted|ResolvedRefs)$",
     lambda a, b, c, p: b == ABSENT),
    ("listeners-not-valid", r" status .*\.conditions\.Accepted\[1\]$",
     lambda a, b, c, p: a == "Accepted" and b == "ListenersNotValid"),
    ("conflicted-service", r" (object \.Service/[^ ]*|status \.Gateway[^ ]*\.addresses|"
                           r"status \.Gateway[^ ]*\.conditions\.Programmed\[[01]\]|"
                           r"config .*\.listeners\[\d+\]\.public_(address|port))$",
     lambda a, b, c, p: gateway_of(p) in clashing(c) and
     a in (ABSENT, [], "False", "AddressNotAssigned")),
    ("missing-dataplane", r"^generated/missing-dataplane ", lambda a, b, c, p: True),
    ("certificate-isolated", r"^golden/tls-missing-secret (config .*\.listeners$|"
                             r"object .*\.spec\.ports$|status .*turn-tls-no-refs.*ResolvedRefs)",
     lambda a, b, c, p: True),
    ("route-of-no-gateway", r" status \.UDPRoute[^ ]*\.parents\.",
     lambda a, b, c, p: b == ABSENT and isinstance(a, dict) and
     a.get("conditions", {}).get("Accepted") == ["False", "NoMatchingParent"]),
    ("all-rules", r"^golden/static-service config .*\.clusters$", lambda a, b, c, p: True),
    ("masked-route", r" status \.UDPRoute\.gateway\.networking\.k8s\.io/.*"
                     r"\.conditions\.ResolvedRefs$", lambda a, b, c, p: b == ABSENT),
    ("default-command", r" object .*\.containers\[\d+\]\.command\[0\]$",
     lambda a, b, c, p: a == "stunnerd" and b == "kturnd"),
]


def documented_ids() -> set:
    """The ids of docs/migration-from-stunner.md's differential table (`id` in a row's first
    cell)."""
    with open(MIGRATION_DOC) as f:
        return set(re.findall(r"^\| `([a-z0-9-]+)` \|", f.read(), re.M))


# --- the two operators ---------------------------------------------------------------------

class Operator:
    """One operator process and the controller name its GatewayClasses carry."""

    def __init__(self, impl: str, binary: str, runner: "cp.Scope", workdir: str):
        self.impl = impl
        self.cds_port = h.free_port()
        self.controller = f"stunner.l7mp.io/{impl}-differential-{runner.suffix}"
        self.cds = f"{h.LOOPBACK}:{self.cds_port}"
        self.proc = start_operator(impl, binary, runner, self.controller, self.cds, workdir)

    def configs(self) -> List[dict]:
        """Every config the operator's CDS server holds."""
        url = f"http://{h.LOOPBACK}:{self.cds_port}/api/v1/configs"
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.loads(r.read().decode()).get("items") or []
        except OSError:
            return []


class CaseScope(cp.Scope):
    """One input's namespaces and cluster-scoped names for one operator: as cp.Scope, but with
    the operator's controller name, and the namespaces made by the same apply as the objects."""

    def __init__(self, operator: "Operator"):
        super().__init__()
        self._controller = operator.controller
        self.cds = operator.cds

    @property
    def controller_name(self) -> str:
        return self._controller

    def ns(self, base: str) -> str:
        return self.namespaces.setdefault(base, f"{base}-{self.suffix}")

    def localize(self, obj: dict) -> dict:
        """As cp.Scope's, but a GatewayClass of another controller (two-tenants' envoy) keeps
        its controller: neither operator's to take."""
        local = super().localize(obj)
        if obj.get("kind") == "GatewayClass" and \
                obj.get("spec", {}).get("controllerName") != stunner_inputs.CONTROLLER:
            local["spec"]["controllerName"] = obj["spec"]["controllerName"]
        return local

    def manifests(self, docs: List[dict]) -> List[dict]:
        local = [self.localize(d) for d in docs if d.get("kind") != "Namespace"]
        return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                for n in self.namespaces.values()] + local


class Case:
    """One input, applied once per operator."""

    def __init__(self, name: str, docs: List[dict], operators: List[Operator]):
        self.name = name
        self.docs = with_explicit_dataplane(docs)
        self.scopes = {o.impl: CaseScope(o) for o in operators}

    def manifests(self) -> List[dict]:
        return [m for s in self.scopes.values() for m in s.manifests(self.docs)]


def with_explicit_dataplane(docs: List[dict]) -> List[dict]:
    """A GatewayConfig without spec.dataplane means Dataplane `default` in both operators; the
    name is written out so that localize() moves it with the Dataplane (a cluster-scoped object,
    renamed per operator), and STUNner's chart's `default` Dataplane is added where the input
    has none of that name: STUNner renders nothing without one (kturn renders with its defaults:
    the `missing-dataplane` generated case keeps that difference in view)."""
    # A Service owned by a Gateway stands for the operator's own Service in kturnctl render's
    # inputs (its node ports); here each operator makes its own. A Node (an external address
    # for NodePort Gateways) is left out: cluster-wide, it would become every operator's public
    # address on the shared control plane, the other tests' too.
    docs = [d for d in json.loads(json.dumps(docs)) if d.get("kind") != "Node" and not (
        d.get("kind") == "Service" and any(r.get("kind") == "Gateway" for r in
                                           d.get("metadata", {}).get("ownerReferences", [])))]
    for d in docs:
        # Each operator's copy gets node ports of the API server's choosing: one port cannot
        # be pinned for two copies (a Service's nodePort, the nodeport annotation).
        if d.get("kind") == "Service":
            for p in d.get("spec", {}).get("ports", []):
                p.pop("nodePort", None)
        d.get("metadata", {}).get("annotations", {}).pop(NODEPORT_ANNOTATION, None)
    names = {d["metadata"]["name"] for d in docs if d.get("kind") == "Dataplane"}
    wanted = False
    for d in docs:
        if d.get("kind") == "GatewayConfig" and not d.get("spec", {}).get("dataplane"):
            if d.get("metadata", {}).get("annotations", {}).get(
                    stunner_inputs.KEEP_DATAPLANE_IMPLICIT) is not None:
                continue
            d.setdefault("spec", {})["dataplane"] = "default"
            wanted = True
    if wanted and "default" not in names:
        docs.append(stunner_inputs.default_dataplane())
    return docs


# --- inputs --------------------------------------------------------------------------------

def load_dir(path: str) -> List[dict]:
    import yaml
    docs: List[dict] = []
    for f in sorted(os.listdir(path)):
        if f.endswith((".yaml", ".yml")) and f != "options.yaml":
            with open(os.path.join(path, f)) as fh:
                docs += [d for d in yaml.safe_load_all(fh) if isinstance(d, dict)]
    return docs


def golden_inputs() -> List[Tuple[str, List[dict]]]:
    out = []
    for name in sorted(os.listdir(GOLDEN)):
        case = os.path.join(GOLDEN, name)
        if name in NOT_COMPARED or os.path.exists(os.path.join(case, "options.yaml")):
            continue
        # A case in steps (endpoint-churn: 1-before, 2-after) is compared at each step's input.
        steps = [d for d in sorted(os.listdir(case)) if os.path.isdir(os.path.join(case, d))]
        for step in (["input"] if "input" in steps else steps):
            path = os.path.join(case, step, "input") if step != "input" else \
                os.path.join(case, "input")
            if os.path.isdir(path):
                out.append((f"golden/{name}" + ("" if step == "input" else f"/{step}"),
                            load_dir(path)))
    return out


def fixture_inputs() -> List[Tuple[str, List[dict]]]:
    if not os.path.isdir(FIXTURES):
        print(f"no {FIXTURES}: STUNner's fixture sets are not compared")
        return []
    return [(f"fixture/{name}", load_dir(os.path.join(FIXTURES, name, "input")))
            for name in sorted(os.listdir(FIXTURES))
            if name.startswith(("operator-", "docs-"))]


# --- what each operator published ----------------------------------------------------------

def kubectl_items(runner: "cp.Scope", kinds: str) -> List[dict]:
    out = runner.kubectl("get", kinds, "-A", "-o", "json", check=False)
    return json.loads(out).get("items", []) if out.strip() else []


def snapshot(cases: List[Case], operators: List[Operator], runner: "cp.Scope") -> Dict[str, Any]:
    """Per case and operator: configs, owned objects and statuses, names put back."""
    owned = kubectl_items(runner, OWNED_KINDS)
    statuses = kubectl_items(runner, STATUS_KINDS)
    configs = {o.impl: o.configs() for o in operators}
    out: Dict[str, Any] = {}
    for case in cases:
        for impl, scope in case.scopes.items():
            namespaces = set(scope.namespaces.values())
            mine = [x for x in owned if x["metadata"].get("namespace") in namespaces]
            names = renames(scope, mine)
            ours = lambda x: (x["metadata"].get("namespace") in namespaces or  # noqa: E731
                              x["metadata"]["name"].endswith("-" + scope.suffix))
            view = {
                "config": {c["admin"]["name"]: config_view(c, mine) for c in configs[impl]
                           if c.get("admin", {}).get("name", "").split("/")[0] in namespaces},
                "object": {key(x): owned_view(x) for x in mine},
                "status": {key(x): status_view(x, scope.controller_name)
                           for x in statuses if ours(x)},
            }
            out[f"{case.name} {impl}"] = sort_endpoints(restore(view, names))
    return out


def key(obj: dict) -> str:
    """kind[.group]/namespace/name: both groups have a UDPRoute, and a case may name one of each
    alike (static-service)."""
    m = obj["metadata"]
    group = obj["apiVersion"].rpartition("/")[0]
    kind = f"{obj['kind']}.{group}" if group else obj["kind"]
    return f"{kind}/{m.get('namespace', '')}/{m['name']}"


def renames(scope: CaseScope, services: List[dict]) -> List[Tuple[str, str]]:
    """(from, to) pairs that put an operator's names back: the namespaces' and cluster-scoped
    names' suffix, the controller name, each Service's ClusterIP (random per apply)."""
    pairs = [(s["spec"]["clusterIP"], f"<clusterIP {s['metadata']['name']}>")
             for s in services if s["kind"] == "Service" and
             s.get("spec", {}).get("clusterIP") not in (None, "", "None")]
    return pairs + [(scope.controller_name, "<controller>"), (scope.cds, "<cds>"),
                    ("-" + scope.suffix, "")]


def config_view(config: dict, services: List[dict]) -> dict:
    """A served config with each listener's public_port that is a node port of the case's
    Services (the API server's pick, per copy) named by its Service and port instead."""
    config = json.loads(json.dumps(config))
    node_ports = {p["nodePort"]: f"<nodePort {s['metadata']['name']}/{p.get('name', '')}>"
                  for s in services if s["kind"] == "Service"
                  for p in s.get("spec", {}).get("ports", []) if p.get("nodePort")}
    for listener in config.get("listeners") or []:
        if listener.get("public_port") in node_ports:
            listener["public_port"] = node_ports[listener["public_port"]]
    return config


def sort_endpoints(view: dict) -> dict:
    """Lists whose order means nothing to a data plane, sorted: cluster endpoints once
    ClusterIPs are names (each operator sorts the addresses, which differ per copy), clusters
    and a listener's routes (names looked up; STUNner lists them as its store holds them, kturn
    by name)."""
    for config in view["config"].values():
        for cluster in config.get("clusters") or []:
            if isinstance(cluster.get("endpoints"), list):
                cluster["endpoints"].sort()
        if isinstance(config.get("clusters"), list):
            config["clusters"].sort(key=lambda c: c.get("name", ""))
        for listener in config.get("listeners") or []:
            if isinstance(listener.get("routes"), list):
                listener["routes"].sort()
    return view


def restore(value: Any, names: List[Tuple[str, str]]) -> Any:
    text = json.dumps(value, sort_keys=True)
    for old, new in names:
        text = text.replace(old, new)
    return json.loads(text)


BOOKKEEPING = ("kubectl.kubernetes.io/last-applied-configuration", "deployment.kubernetes.io/")


def owned_view(obj: dict) -> dict:
    """What an operator decided about an object it owns: labels, annotations, owner, spec;
    without what the API server and the controllers fill in."""
    m = obj["metadata"]
    spec = json.loads(json.dumps(obj.get("spec", {})))
    for f in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "healthCheckNodePort",
              "internalTrafficPolicy", "revisionHistoryLimit", "progressDeadlineSeconds"):
        spec.pop(f, None)
    for p in spec.get("ports", []):
        p.pop("nodePort", None)
    return {
        "labels": m.get("labels", {}),
        "annotations": {k: v for k, v in m.get("annotations", {}).items()
                        if not k.startswith(BOOKKEEPING)},
        "owners": sorted(f"{r['kind']}/{r['name']}" for r in m.get("ownerReferences", [])),
        "spec": spec,
        "data": obj.get("data"),
    }


def conditions(cs: Optional[list]) -> Dict[str, list]:
    return {c["type"]: [c["status"], c.get("reason")] for c in cs or []}


def status_view(obj: dict, controller: str) -> dict:
    """What the operator of `controller` wrote in the status: conditions by type (status and
    reason), a Gateway's addresses and listeners, a route's parents of that controller (each
    operator writes only its own entries; STUNner's also in routes of other controllers'
    Gateways, which is its own difference, seen in its copy)."""
    s = obj.get("status") or {}
    if obj["kind"] in ("GatewayClass", "Gateway"):
        view: Dict[str, Any] = {"conditions": conditions(s.get("conditions"))}
        if obj["kind"] == "Gateway":
            view["addresses"] = sorted(f"{a.get('type')}/{a.get('value')}"
                                       for a in s.get("addresses") or [])
            view["listeners"] = {
                l["name"]: {"attachedRoutes": l.get("attachedRoutes"),
                            "supportedKinds": sorted(f"{k.get('group')}/{k['kind']}"
                                                     for k in l.get("supportedKinds") or []),
                            "conditions": conditions(l.get("conditions"))}
                for l in s.get("listeners") or []}
        return view
    return {"parents": {json.dumps(p.get("parentRef"), sort_keys=True): {
        "controller": p.get("controllerName"), "conditions": conditions(p.get("conditions"))}
        for p in s.get("parents") or [] if p.get("controllerName") == controller}}


# --- the comparison ------------------------------------------------------------------------

def diff(a: Any, b: Any, path: str = "") -> List[Tuple[str, Any, Any]]:
    """Where `a` (STUNner's) and `b` (kturn's) differ: (path, a's value, b's value)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            if k not in a:
                out.append((f"{path}.{k}", "<absent>", b[k]))
            elif k not in b:
                out.append((f"{path}.{k}", a[k], "<absent>"))
            else:
                out += diff(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path, a, b)]


def compare(cases: List[Case], snap: Dict[str, Any]) -> Tuple[list, list]:
    """(deliberate, unexplained) differences: (case, category, path, stunner, kturn[, why])."""
    deliberate, unexplained = [], []
    for case in cases:
        s, k = snap[f"{case.name} stunner"], snap[f"{case.name} kturn"]
        for category in ("config", "object", "status"):
            for path, a, b in diff(s[category], k[category]):
                where = f"{case.name} {category} {path}"
                why = next((i for i, pattern, ok in DELIBERATE if re.search(pattern, where) and
                            ok(a, b, case, path)), None)
                (deliberate if why else unexplained).append((case.name, category, path, a, b, why))
    return deliberate, unexplained


def settle(cases: List[Case], operators: List[Operator], runner: "cp.Scope",
           timeout: float) -> Dict[str, Any]:
    """The snapshot once it has not changed for STABLE seconds: STUNner throttles renders by
    250 ms and kturn debounces by 100 ms, but STUNner renders every GatewayClass on each event,
    which takes seconds with many inputs on a loaded machine; the API server's controllers add
    writes of their own."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while True:
        for o in operators:
            h.check(o.proc.running(), f"{o.impl}'s operator exited; see {o.proc.log_path}")
        snap = snapshot(cases, operators, runner)
        now = time.monotonic()
        if snap != last:
            last, since = snap, now
        elif now - since >= STABLE:
            return snap
        h.check(now < deadline, f"the operators' output kept changing for {timeout:.0f} s")
        time.sleep(0.5)


def short(v: Any, n: int = 70) -> str:
    s = json.dumps(v, sort_keys=True) if not isinstance(v, str) else v
    return s if len(s) <= n else s[:n - 3] + "..."


def body(args: argparse.Namespace, workdir: str) -> None:
    runner = cp.Scope()
    h.register_cleanup(runner.delete)
    operators = [Operator("stunner", args.stunner_operator, runner, workdir),
                 Operator("kturn", args.operator, runner, workdir)]
    inputs = golden_inputs() + fixture_inputs() + [
        (f"seed/{seed}", stunner_inputs.generate(seed, workdir))
        for seed in range(args.first_seed, args.first_seed + args.seeds)] + [
        ("generated/missing-dataplane", stunner_inputs.missing_dataplane())]
    cases = [Case(name, docs, operators) for name, docs in inputs
             if re.search(args.cases, name)]
    for case in cases:
        for scope in case.scopes.values():
            h.register_cleanup(scope.delete)
    t0 = time.monotonic()
    for case in cases:
        # --validate=false: the API server judges each object; kubectl's own schema check would
        # refuse the whole list for one object.
        items = {"apiVersion": "v1", "kind": "List", "items": case.manifests()}
        out = runner.kubectl("apply", "--validate=false", "-f", "-", check=False, stderr=True,
                             input=json.dumps(items))
        refused = [line for line in out.splitlines() if line.lower().startswith("error")]
        if refused:
            print(f"{case.name}: the API server refused {len(refused)} object(s) for both "
                  f"operators alike: {refused[0][:160]}")
    print(f"{len(cases)} inputs applied for both operators in {time.monotonic() - t0:.1f} s")
    snap = settle(cases, operators, runner, args.settle_timeout)
    print(f"both operators settled {time.monotonic() - t0:.1f} s after the first apply")
    deliberate, unexplained = compare(cases, snap)
    published = {impl: [sum(len(snap[f"{c.name} {impl}"][k]) for c in cases)
                        for k in ("config", "object", "status")] for impl in ("stunner", "kturn")}
    print(f"published (configs, objects, statuses): {published}")
    h.check(all(n > 0 for counts in published.values() for n in counts),
            f"an operator published nothing of some kind: {published}")

    by_category: Dict[str, int] = {}
    for d in deliberate + unexplained:
        by_category[d[1]] = by_category.get(d[1], 0) + 1
    print(f"\n{len(cases)} inputs ({len(golden_inputs())} golden, {len(fixture_inputs())} "
          f"fixture sets, {args.seeds} seeds from {args.first_seed}); differences: "
          f"{len(deliberate)} deliberate, {len(unexplained)} unexplained; by kind: {by_category}")
    seen = set()
    for c, category, path, a, b, why in deliberate:
        if (category, why) not in seen:
            seen.add((category, why))
            print(f"  deliberate ({category}): {why} (first: {c} {path})")
    for c, category, path, a, b, _ in unexplained:
        print(f"  DIFF {c} {category} {path}: STUNner {short(a)} | kturn {short(b)}")
    with open(os.path.join(workdir, "differences.json"), "w") as f:
        json.dump({"deliberate": deliberate, "unexplained": unexplained, "snapshot": snap}, f,
                  indent=1, sort_keys=True)
    undocumented = {d[5] for d in deliberate} - documented_ids()
    h.check(not undocumented, f"deliberate differences without their row in {MIGRATION_DOC}'s "
                              f"renderer differential table: {sorted(undocumented)}")
    h.check(not unexplained, f"{len(unexplained)} differences between STUNner's operator and "
                             "kturn-operator that docs/migration-from-stunner.md does not list")
    for o in operators:
        h.check(o.proc.running(), f"{o.impl}'s operator exited")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--operator", required=True, help="kturn-operator")
    p.add_argument("--stunner-operator", required=True, help="STUNner's gateway operator")
    p.add_argument("--seeds", type=int, default=8, help="generated inputs")
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--settle-timeout", type=float, default=120.0)
    p.add_argument("--cases", default="", help="only the inputs whose name matches this regex")
    args, _ = p.parse_known_args()
    if not os.access(args.stunner_operator, os.X_OK):
        print(f"SKIP: no STUNner operator at {args.stunner_operator}: scripts/build-test-tools.sh "
              "builds it from ../shared/reference/, which is not beside this checkout")
        sys.exit(77)
    h.run_test("operator-differential", body, p,
               overall_timeout=int(180 + args.settle_timeout + 8 * args.seeds))


if __name__ == "__main__":
    main()
