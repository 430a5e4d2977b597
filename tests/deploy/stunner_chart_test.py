#!/usr/bin/python3
"""STUNner's Helm chart (helm/stunner 1.2.0, released source, MIT; scripts/build-test-tools.sh
links its chart folder into the tool cache as stunner-helm) against kturn's (deploy/helm/kturn):
a STUNner user who installs kturn's chart with their STUNner values file, only the image names
changed, keeps what their other software depends on, and every STUNner values key either takes
effect in kturn's render or is named as not mapped (docs/migration-from-stunner.md#the-helm-chart).

Both charts are rendered with the real Helm (`helm template`, no cluster), into STUNner's
namespace, with the same values: STUNner's own values.yaml, the values of the parameter table in
STUNner's chart README, and a file that gives every STUNner key a value of its own. For each:

  * by name: the Service STUNner's chart makes for its auth service (stunner-auth, port 8088)
    and for config discovery (stunner-config-discovery, 13478, the label that marks it) exist in
    kturn's render under the same name, namespace, port and labels, select kturn-auth's and
    kturn-operator's pods and reach the port those listen on; the labels STUNner puts on its
    operator's and auth service's pods (what a NetworkPolicy or PodMonitor selects) are on
    kturn's, and the selector of every Service of STUNner's selects kturn's counterpart pods;
  * the pods: replicas, resources, pull policy, node selector, tolerations, affinity, pull
    secrets, spread constraints, annotations and the security context fields STUNner renders
    are kturn's too, and kturn's pods stay hardened (non-root, seccomp, no privilege escalation,
    read-only root, every capability dropped);
  * the Dataplane `default`: every field STUNner renders has the same value in kturn's, but the
    image (kturn's name), the command (stunnerd becomes kturnd) and the security contexts
    (STUNner's fields merged into kturn's);
  * container args are flags kturn's binaries define.

Then, per key: each STUNner key with a kturn counterpart, given a value of its own, shows up
where the kturn key puts it (the operator's, kturn-auth's and the Dataplane's fields, flags and
ports); each key without one is ignored as STUNner's chart ignores it, or refused with a message
naming it; the table in docs/migration-from-stunner.md lists exactly these keys with these kturn
keys, and every key of STUNner's values.yaml and README is in it. The CRD switches
standardCrds.enabled and experimentalCrds.enabled, in each combination (STUNner's README shows
three), render the Gateway API CRDs of the same channel that STUNner's do, each once; STUNner's
own CRDs are all in kturn's. The precedence (a STUNner key with a value wins, an empty one leaves
kturn's key) and the switch stunnerCompat (auto, true, false; a release named "stunner") are
checked too. kturn's own values render no STUNner name.

It prints a table of the objects each chart creates (kind/name), with the kturn counterpart of
each STUNner object kturn does not create under STUNner's name, or why there is none.

Exits 77 (ctest's SKIP_RETURN_CODE), printing "SKIP: <why>", when Helm or STUNner's chart is
not in the tool cache.

  /usr/bin/python3 tests/deploy/stunner_chart_test.py [-v]
      KTURN_TEST_TOOLS: the tools folder (build/test-tools: bin/helm, stunner-helm);
      KTURN_STUNNER_CHART: STUNner's chart folder elsewhere (the tarball's helm/stunner)
"""

import base64
import concurrent.futures
import copy
import functools
import os
import re
import sys
import tempfile
import unittest
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import helm  # noqa: E402

KTURN_CHART = os.path.join(REPO, "deploy", "helm", "kturn")
STUNNER_CHART = os.environ.get("KTURN_STUNNER_CHART") or os.path.join(helm.TOOLS, "stunner-helm")
STUNNER_VERSION = "1.2.0"
MIGRATION_DOC = os.path.join(REPO, "docs", "migration-from-stunner.md")
SKIP = 77

# STUNner's namespace and release; kturn's release as its docs install it.
NAMESPACE = "stunner-system"
STUNNER_RELEASE = "stunner"
KTURN_RELEASE = "kturn"

# What STUNner's chart names its objects (checked against its render, StunnerFactsTest).
STUNNER_OPERATOR = "stunner-gateway-operator-controller-manager"
STUNNER_AUTH = "stunner-auth"
STUNNER_CDS = "stunner-config-discovery"
CDS_SERVICE_LABEL = "stunner.l7mp.io/config-discovery-service"

# STUNner's three image sections, and the kturn image name a migrating user puts there.
OPERATOR_IMAGE = ("stunnerGatewayOperator", "deployment", "container", "manager", "image")
DATAPLANE_IMAGE = ("stunnerGatewayOperator", "dataplane", "spec", "image")
AUTH_IMAGE = ("stunnerAuthService", "deployment", "container", "authService", "image")
KTURN_IMAGES = {
    OPERATOR_IMAGE: "registry.example.com/kturn/kturn-operator",
    DATAPLANE_IMAGE: "registry.example.com/kturn/kturnd",
    AUTH_IMAGE: "registry.example.com/kturn/kturn-auth",
}

GATEWAY_GROUP = "gateway.networking.k8s.io"
# Gateway API v1.4.1's experimental channel (STUNner's subchart) also has these, of the group
# gateway.networking.x-k8s.io; kturn's subcharts ship the gateway.networking.k8s.io CRDs only,
# and neither operator reads these kinds.
STUNNER_ONLY_EXPERIMENTAL_CRDS = {
    "xbackendtrafficpolicies.gateway.networking.x-k8s.io",
    "xlistenersets.gateway.networking.x-k8s.io",
    "xmeshes.gateway.networking.x-k8s.io",
}

# STUNner's objects that kturn's chart (with STUNner's values) does not create under the same
# kind and name: the kturn object that does the job ("{release}" is kturn's release), or why
# there is none. The comparison table prints these; every such object must have an entry.
COUNTERPARTS: Dict[Tuple[str, str], Tuple[str, str]] = {
    ("ServiceAccount", STUNNER_OPERATOR): ("ServiceAccount", "{release}-operator"),
    ("ClusterRole", "stunner-gateway-operator-manager-role"): ("ClusterRole", "{release}-operator"),
    ("ClusterRole", "stunner-gateway-operator-proxy-role"): ("ClusterRole", "{release}-operator"),
    ("ClusterRoleBinding", "stunner-gateway-operator-manager-rolebinding"):
        ("ClusterRoleBinding", "{release}-operator"),
    ("ClusterRoleBinding", "stunner-gateway-operator-proxy-rolebinding"):
        ("ClusterRoleBinding", "{release}-operator"),
    ("Role", "stunner-gateway-operator-leader-election-role"):
        ("Role", "{release}-operator-leader-election"),
    ("RoleBinding", "stunner-gateway-operator-leader-election-rolebinding"):
        ("RoleBinding", "{release}-operator-leader-election"),
    ("Deployment", STUNNER_OPERATOR): ("Deployment", "{release}-operator"),
    ("Deployment", STUNNER_AUTH): ("Deployment", "{release}-auth"),
}
NO_COUNTERPART: Dict[Tuple[str, str], str] = {
    ("ConfigMap", "stunner-gateway-operator-manager-config"):
        "a controller-runtime config file no container mounts",
    ("ClusterRole", "stunner-gateway-operator-metrics-reader"):
        "for a kube-rbac-proxy STUNner's chart does not run",
    ("Service", "stunner-gateway-operator-controller-manager-metrics-service"):
        "targets port https, which no container has (kturn: the operator's port metrics)",
}

OP = "stunnerGatewayOperator.deployment."
MGR = OP + "container.manager."
DP = "stunnerGatewayOperator.dataplane.spec."
AU = "stunnerAuthService.deployment."
AC = AU + "container.authService."


# --- rendering --------------------------------------------------------------------------------

def skip_reason() -> Optional[str]:
    """Why the test cannot run here, or None."""
    if not os.access(helm.HELM, os.X_OK):
        return f"no helm at {helm.HELM} (make test-tools builds it)"
    if not os.path.isfile(os.path.join(STUNNER_CHART, "Chart.yaml")):
        return (f"no STUNner chart at {STUNNER_CHART}: scripts/build-test-tools.sh links "
                "helm/stunner of /work/shared/reference/stunner-helm-4c6736e.tar.gz there "
                "(or set KTURN_STUNNER_CHART)")
    return None


@functools.lru_cache(maxsize=None)
def _helm_template(chart: str, release: str, values_yaml: str, sets: Tuple[str, ...],
                   include_crds: bool, show_only: Optional[str]) -> Tuple[int, str, str]:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(values_yaml)
        f.flush()
        args = ["template", release, chart, "-n", NAMESPACE, "-f", f.name]
        for s in sets:
            args += ["--set", s]
        if include_crds:
            args.append("--include-crds")
        if show_only:
            args += ["--show-only", show_only]
        return helm.run(*args)


def template(chart: str, release: str, values: Optional[dict] = None, sets: Sequence[str] = (),
             include_crds: bool = False, show_only: Optional[str] = None) -> str:
    """What `helm template` prints for these values (a YAML file) and --set flags."""
    rc, out, err = _helm_template(chart, release, yaml.safe_dump(values or {}), tuple(sets),
                                  include_crds, show_only)
    if rc != 0:
        raise RuntimeError(f"helm template {chart}: {err.strip()}")
    return out


DOCUMENT = re.compile(r"^---[ \t]*$", re.M)
CRD_KIND = re.compile(r"^kind: CustomResourceDefinition[ \t]*$", re.M)
TOP_LEVEL_SPEC = re.compile(r"^spec:", re.M)


@functools.lru_cache(maxsize=None)
def _objects(stream: str, crd_specs: bool) -> Tuple[dict, ...]:
    """The stream's objects; without crd_specs, a CRD's apiVersion, kind and metadata only
    (its spec is most of a render's megabyte, and most tests need the CRDs' names only)."""
    out = []
    for doc in DOCUMENT.split(stream):
        if not crd_specs and CRD_KIND.search(doc):
            head = yaml.load(TOP_LEVEL_SPEC.split(doc, maxsplit=1)[0], Loader=helm.KubeYamlLoader)
            if head and "metadata" in head:
                out.append(head)
                continue
        o = yaml.load(doc, Loader=helm.KubeYamlLoader)
        if o is not None:
            out.append(o)
    return tuple(out)


def render(chart: str, release: str, values: Optional[dict] = None, sets: Sequence[str] = (),
           include_crds: bool = False, show_only: Optional[str] = None,
           crd_specs: bool = False) -> List[dict]:
    """The objects of a render (each call its own deep copy: tests may not share mutations)."""
    return copy.deepcopy(list(_objects(template(chart, release, values, sets, include_crds,
                                                show_only), crd_specs)))


def in_parallel(calls: Sequence[Callable[[], Any]]) -> List[Any]:
    """Runs independent renders side by side (each is a helm process): their results."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return [f.result() for f in [pool.submit(c) for c in calls]]


def refusal(chart: str, values: Optional[dict] = None, sets: Sequence[str] = ()) -> str:
    """Helm's message for a render that must fail; raises if it renders."""
    rc, _, err = _helm_template(chart, KTURN_RELEASE, yaml.safe_dump(values or {}), tuple(sets),
                                False, None)
    if rc == 0:
        raise AssertionError(f"helm template {chart} rendered values it should refuse: "
                             f"{values} {list(sets)}")
    return err


def stunner(values: Optional[dict] = None, **kw: Any) -> List[dict]:
    return render(STUNNER_CHART, STUNNER_RELEASE, values, **kw)


def kturn(values: Optional[dict] = None, release: str = KTURN_RELEASE, **kw: Any) -> List[dict]:
    return render(KTURN_CHART, release, values, **kw)


def load_yaml(path: str) -> Any:
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


# --- values -----------------------------------------------------------------------------------

def set_path(values: dict, dotted: str, value: Any) -> None:
    node = values
    *parents, last = dotted.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value


def get_path(values: dict, path: Sequence[str]) -> Any:
    node: Any = values
    for key in path:
        node = (node or {}).get(key)
    return node


def with_kturn_images(values: dict) -> dict:
    """A STUNner values file with only the image names changed to kturn's: the migration."""
    out = copy.deepcopy(values)
    for path, name in KTURN_IMAGES.items():
        image = get_path(out, path)
        if isinstance(image, dict):
            image["name"] = name
    return out


def stunner_values() -> dict:
    """STUNner's own values.yaml."""
    return load_yaml(os.path.join(STUNNER_CHART, "values.yaml"))


def readme_rows() -> List[Tuple[str, str]]:
    """(key, value) of every row of the parameter tables in STUNner's chart README; the value is
    the backticked text of the last column, "" where it has none."""
    rows = []
    for line in read(os.path.join(STUNNER_CHART, "README.md")).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and re.fullmatch(r"`[A-Za-z][\w.]*`", cells[0]):
            value = re.fullmatch(r"`(.*)`", cells[-1])
            rows.append((cells[0].strip("`"), value.group(1) if value else ""))
    return rows


def readme_values() -> dict:
    """The values STUNner's README shows: every row that has a value, as YAML reads it."""
    values: dict = {}
    for key, text in readme_rows():
        if text:
            set_path(values, key, yaml.safe_load(text))
    return values


def leaf_keys(values: dict, known: set, prefix: str = "") -> List[str]:
    """The keys of a values tree down to a key in `known` or a leaf (a scalar, a list, an empty
    map): what a table of keys must cover."""
    out = []
    for key, value in values.items():
        path = prefix + key
        if path not in known and isinstance(value, dict) and value:
            out += leaf_keys(value, known, path + ".")
        else:
            out.append(path)
    return out


# --- objects ----------------------------------------------------------------------------------

def find(objects: List[dict], kind: str, name: Optional[str] = None) -> List[dict]:
    return [o for o in objects if o["kind"] == kind and
            (name is None or o["metadata"]["name"] == name)]


def one(objects: List[dict], kind: str, name: str) -> dict:
    found = find(objects, kind, name)
    if len(found) != 1:
        raise AssertionError(f"{kind} {name}: {len(found)} in the render, want 1")
    return found[0]


def pod_meta(deployment: dict) -> dict:
    return deployment["spec"]["template"]["metadata"]


def pod_spec(deployment: dict) -> dict:
    return deployment["spec"]["template"]["spec"]


def main_container(deployment: dict) -> dict:
    containers = pod_spec(deployment)["containers"]
    if len(containers) != 1:
        raise AssertionError(f"{deployment['metadata']['name']}: {len(containers)} containers")
    return containers[0]


def args_map(args: Sequence[str]) -> Dict[str, str]:
    return {a.partition("=")[0]: a.partition("=")[2] for a in args}


def selects(selector: dict, labels: dict) -> bool:
    return bool(selector) and selector.items() <= labels.items()


# Security context fields a pod sets for all its containers, unless a container sets its own.
POD_WIDE_SECURITY = {"runAsUser", "runAsGroup", "runAsNonRoot", "seLinuxOptions",
                     "seccompProfile", "windowsOptions", "appArmorProfile"}


def effective_security(pod: dict, container: dict) -> dict:
    """The security context a container runs with: the pod's pod-wide fields, overridden by the
    container's own."""
    out = {k: v for k, v in (pod.get("securityContext") or {}).items() if k in POD_WIDE_SECURITY}
    out.update(container.get("securityContext") or {})
    return out


def nonempty(value: Any) -> Any:
    """None for a value Kubernetes treats as unset ({} , [], null): STUNner's chart renders
    `affinity: {}` where kturn's leaves the field out."""
    return value if value not in (None, {}, []) else None


def crds(objects: List[dict]) -> Dict[str, List[str]]:
    """CRD name -> the Gateway API channels of its copies in the render (None for a CRD that
    names none)."""
    out: Dict[str, List[str]] = {}
    for o in find(objects, "CustomResourceDefinition"):
        channel = o["metadata"].get("annotations", {}).get("gateway.networking.k8s.io/channel")
        out.setdefault(o["metadata"]["name"], []).append(channel)
    return out


class Pair(NamedTuple):
    """One set of values rendered by both charts: STUNner's with the values as they are, kturn's
    with the image names changed to kturn's."""
    values: dict
    stunner: List[dict]
    kturn: List[dict]
    release: str


def pair(values: dict, release: str = KTURN_RELEASE) -> Pair:
    theirs, ours = in_parallel([lambda: stunner(values),
                                lambda: kturn(with_kturn_images(values), release=release)])
    return Pair(values, theirs, ours, release)


def kturn_operator(objects: List[dict], release: str = KTURN_RELEASE) -> dict:
    return one(objects, "Deployment", f"{release}-operator")


def kturn_auth(objects: List[dict], release: str = KTURN_RELEASE) -> dict:
    return one(objects, "Deployment", f"{release}-auth")


def dataplane(objects: List[dict]) -> dict:
    return one(objects, "Dataplane", "default")["spec"]


def cli_flags(*paths: str) -> set:
    """Every option and flag name the CLI11 mains define."""
    names = set()
    for path in paths:
        text = read(os.path.join(REPO, path))
        for spec in re.findall(r'add_(?:option|flag)\(\s*"([^"]+)"', text):
            names |= {n for n in spec.split(",") if n.startswith("-")}
    return names


# --- what every STUNner key does in kturn's chart ----------------------------------------------

def affinity(role: str) -> dict:
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 10, "podAffinityTerm": {
            "topologyKey": "kubernetes.io/hostname",
            "labelSelector": {"matchLabels": {"example.com/role": role}}}}]}}


def tolerations(role: str) -> list:
    return [{"key": f"example.com/{role}", "operator": "Exists", "effect": "NoSchedule"}]


def spread(role: str) -> list:
    return [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
             "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"example.com/role": role}}}]


def resources(cpu: str, memory: str) -> dict:
    return {"limits": {"cpu": cpu, "memory": memory},
            "requests": {"cpu": cpu, "memory": memory}}


Check = Callable[[unittest.TestCase, List[dict]], None]


class Case(NamedTuple):
    """A STUNner key with a kturn counterpart: the kturn keys the migration doc names for it, a
    value of its own, and what that value must do in kturn's render."""
    kturn: Tuple[str, ...]
    value: Any
    check: Check
    # Rendered on its own (with STUNner's values.yaml, images changed) instead of with every
    # other case's value: the value would switch the others off.
    alone: bool = False


def op_pod(objs: List[dict]) -> dict:
    return pod_spec(kturn_operator(objs))


def auth_pod(objs: List[dict]) -> dict:
    return pod_spec(kturn_auth(objs))


def op_args(objs: List[dict]) -> Dict[str, str]:
    return args_map(main_container(kturn_operator(objs))["args"])


def auth_args(objs: List[dict]) -> Dict[str, str]:
    return args_map(main_container(kturn_auth(objs))["args"])


def ports(deployment: dict) -> Dict[str, int]:
    return {p["name"]: p["containerPort"] for p in main_container(deployment)["ports"]}


def service_port(objs: List[dict], name: str) -> dict:
    svc = one(objs, "Service", name)
    t_ports = svc["spec"]["ports"]
    if len(t_ports) != 1:
        raise AssertionError(f"Service {name}: {len(t_ports)} ports")
    return t_ports[0]


def check_pod_field(kind: str, field: str, want: Any) -> Check:
    def check(t: unittest.TestCase, objs: List[dict]) -> None:
        spec = op_pod(objs) if kind == "operator" else auth_pod(objs)
        t.assertEqual(spec.get(field), want)
    return check


def check_pod_meta(kind: str, field: str, want: dict) -> Check:
    def check(t: unittest.TestCase, objs: List[dict]) -> None:
        deployment = kturn_operator(objs) if kind == "operator" else kturn_auth(objs)
        t.assertLessEqual(want.items(), (pod_meta(deployment).get(field) or {}).items())
    return check


def check_container(kind: str, field: str, want: Any) -> Check:
    def check(t: unittest.TestCase, objs: List[dict]) -> None:
        deployment = kturn_operator(objs) if kind == "operator" else kturn_auth(objs)
        t.assertEqual(main_container(deployment).get(field), want)
    return check


def check_replicas(kind: str, want: int) -> Check:
    def check(t: unittest.TestCase, objs: List[dict]) -> None:
        deployment = kturn_operator(objs) if kind == "operator" else kturn_auth(objs)
        t.assertEqual(deployment["spec"]["replicas"], want)
    return check


def check_image(kind: str, want: str) -> Check:
    def check(t: unittest.TestCase, objs: List[dict]) -> None:
        if kind == "dataplane":
            t.assertEqual(dataplane(objs)["image"], want)
            t.assertEqual(op_args(objs)["--dataplane-image"], want)
        else:
            deployment = kturn_operator(objs) if kind == "operator" else kturn_auth(objs)
            t.assertEqual(main_container(deployment)["image"], want)
    return check


def check_pull_policy(kind: str, want: str) -> Check:
    def check(t: unittest.TestCase, objs: List[dict]) -> None:
        if kind == "dataplane":
            t.assertEqual(dataplane(objs)["imagePullPolicy"], want)
        else:
            deployment = kturn_operator(objs) if kind == "operator" else kturn_auth(objs)
            t.assertEqual(main_container(deployment)["imagePullPolicy"], want)
    return check


def check_merged(where: Callable[[List[dict]], dict], added: dict) -> Check:
    """STUNner's security context fields are in kturn's, and kturn's hardening stays."""
    def check(t: unittest.TestCase, objs: List[dict]) -> None:
        ctx = where(objs)
        t.assertLessEqual(added.items(), ctx.items())
        if "capabilities" in ctx:  # a container's
            t.assertEqual(ctx["capabilities"]["drop"], ["ALL"])
            t.assertIs(ctx["allowPrivilegeEscalation"], False)
            t.assertIs(ctx["readOnlyRootFilesystem"], True)
        else:  # a pod's
            t.assertEqual(ctx["runAsUser"], 65532)
            t.assertIs(ctx["runAsNonRoot"], True)
            t.assertEqual(ctx["seccompProfile"], {"type": "RuntimeDefault"})
    return check


def check_dataplane(field: str, want: Any) -> Check:
    def check(t: unittest.TestCase, objs: List[dict]) -> None:
        t.assertEqual(dataplane(objs).get(field), want)
    return check


def check_operator_args(t: unittest.TestCase, objs: List[dict]) -> None:
    """STUNner's operator flags, each on its kturn key: ports (without the host), controller
    name, endpoint discovery; --leader-elect and --throttle-timeout have nothing to set."""
    operator = kturn_operator(objs)
    args = op_args(objs)
    t.assertEqual(ports(operator), {"cds": 23478, "metrics": 9080, "health": 9081})
    t.assertEqual(args["--health-probe-bind-address"], ":9081")
    t.assertEqual(args["--metrics-bind-address"], ":9080")
    t.assertEqual(args["--cds-addr"], ":23478")
    t.assertEqual(args["--cds-server-address"],
                  f"{KTURN_RELEASE}-config-discovery.{NAMESPACE}.svc:23478")
    t.assertEqual(service_port(objs, f"{KTURN_RELEASE}-config-discovery")["port"], 23478)
    t.assertEqual(args["--controller-name"], "example.com/turn-operator")
    t.assertEqual(args["--endpoint-discovery"], "false")
    t.assertIn("--leader-elect", args)
    for probe in ("livenessProbe", "readinessProbe"):
        t.assertEqual(main_container(operator)[probe]["httpGet"]["port"], "health")


def check_auth_args(t: unittest.TestCase, objs: List[dict]) -> None:
    """--port moves kturn-auth and its own Service to the port; STUNner's Service name stays on
    8088 and reaches it; -v logs at all:DEBUG."""
    auth = kturn_auth(objs)
    t.assertEqual(ports(auth), {"http": 9088})
    t.assertEqual(auth_args(objs)["--port"], "9088")
    t.assertEqual(auth_args(objs)["--log"], "all:DEBUG")
    t.assertEqual(service_port(objs, f"{KTURN_RELEASE}-auth")["port"], 9088)
    alias = service_port(objs, STUNNER_AUTH)
    t.assertEqual((alias["port"], alias["targetPort"]), (8088, "http"))


def check_auth_disabled(t: unittest.TestCase, objs: List[dict]) -> None:
    names = {(o["kind"], o["metadata"]["name"]) for o in objs}
    for gone in (("Deployment", f"{KTURN_RELEASE}-auth"), ("Service", f"{KTURN_RELEASE}-auth"),
                 ("Service", STUNNER_AUTH), ("NetworkPolicy", f"{KTURN_RELEASE}-auth")):
        t.assertNotIn(gone, names)
    t.assertIn(("Deployment", f"{KTURN_RELEASE}-operator"), names)


def check_no_gateway_api_crds(t: unittest.TestCase, objs: List[dict]) -> None:
    t.assertEqual([n for n in crds(objs) if GATEWAY_GROUP in n], [])
    # ... which the default renders (the switch is what leaves them out).
    t.assertIn(f"gatewayclasses.{GATEWAY_GROUP}", crds(kturn({})))


def check_experimental_crds(t: unittest.TestCase, objs: List[dict]) -> None:
    t.assertEqual(crds(objs)[f"gatewayclasses.{GATEWAY_GROUP}"], ["experimental"])
    t.assertEqual(crds(objs)[f"udproutes.{GATEWAY_GROUP}"], ["experimental"])


def check_dataplane_args(t: unittest.TestCase, objs: List[dict]) -> None:
    t.assertEqual(dataplane(objs)["args"][:2], ["-w", "--udp-thread-num=4"])


def check_dataplane_log_format(t: unittest.TestCase, objs: List[dict]) -> None:
    args = dataplane(objs)["args"]
    t.assertEqual(args[-1], "--log-format=json")
    t.assertEqual(len([a for a in args if a.startswith("--log-format")]), 1)


def check_dataplane_env(t: unittest.TestCase, objs: List[dict]) -> None:
    env = dataplane(objs)["env"]
    t.assertEqual(env[0]["name"], "KTURN_ADMIN_ADDRESS")
    t.assertIn({"name": "EXAMPLE_ENV", "value": "1"}, env)


def check_host_network(t: unittest.TestCase, objs: List[dict]) -> None:
    spec = dataplane(objs)
    t.assertIs(spec["hostNetwork"], True)
    # The API server refuses the namespaced sysctl in the host's network namespace.
    t.assertNotIn("net.ipv4.ip_unprivileged_port_start",
                  {s["name"] for s in spec["securityContext"].get("sysctls", [])})


def check_command(t: unittest.TestCase, objs: List[dict]) -> None:
    """stunnerd, the binary of STUNner's image, runs kturnd, the binary of kturn's."""
    t.assertEqual(dataplane(objs)["command"], ["kturnd", "-v"])


CASES: Dict[str, Case] = {
    "standardCrds.enabled": Case(("standardCrds.enabled",), False, check_no_gateway_api_crds),
    "experimentalCrds.enabled": Case(("experimentalCrds.enabled",), True,
                                     check_experimental_crds, alone=True),
    "logging.operator.format": Case(
        ("operator.log.format",), "JSON",
        lambda t, o: t.assertEqual(op_args(o)["--log-format"], "json")),
    "logging.operator.level": Case(
        ("operator.log.level",), "debug",
        lambda t, o: t.assertEqual(op_args(o)["--log"], "all:DEBUG")),
    "logging.dataplane.format": Case(("dataplane.args",), "json", check_dataplane_log_format),
    "logging.authService.format": Case(
        ("auth.log.format",), "json",
        lambda t, o: t.assertEqual(auth_args(o)["--log-format"], "json")),

    OP + "podLabels": Case(("operator.podLabels",), {"example.com/team": "operator"},
                           check_pod_meta("operator", "labels", {"example.com/team": "operator"})),
    OP + "podAnnotations": Case(("operator.podAnnotations",), {"example.com/note": "operator"},
                                check_pod_meta("operator", "annotations",
                                               {"example.com/note": "operator"})),
    OP + "affinity": Case(("operator.affinity",), affinity("operator"),
                          check_pod_field("operator", "affinity", affinity("operator"))),
    OP + "tolerations": Case(("operator.tolerations",), tolerations("operator"),
                             check_pod_field("operator", "tolerations", tolerations("operator"))),
    OP + "replicas": Case(("operator.replicas",), 3, check_replicas("operator", 3)),
    # Maps merge into kturn's, as Helm merges values into a chart's defaults.
    OP + "nodeSelector": Case(("operator.nodeSelector",), {"example.com/pool": "operator"},
                              check_pod_field("operator", "nodeSelector",
                                              {"example.com/pool": "operator",
                                               "kubernetes.io/os": "linux"})),
    OP + "imagePullSecrets": Case(("operator.imagePullSecrets",), [{"name": "pull-operator"}],
                                  check_pod_field("operator", "imagePullSecrets",
                                                  [{"name": "pull-operator"}])),
    OP + "securityContext": Case(
        ("operator.podSecurityContext",), {"fsGroup": 2001},
        check_merged(lambda o: pod_spec(kturn_operator(o))["securityContext"],
                     {"fsGroup": 2001})),
    OP + "topologySpreadConstraints": Case(
        ("operator.topologySpreadConstraints",), spread("operator"),
        check_pod_field("operator", "topologySpreadConstraints", spread("operator"))),
    MGR + "image.name": Case(("operator.image.repository",), "registry.example.com/op",
                             check_image("operator", "registry.example.com/op:9.9.1")),
    MGR + "image.tag": Case(("operator.image.tag",), "9.9.1",
                            check_image("operator", "registry.example.com/op:9.9.1")),
    MGR + "image.pullPolicy": Case(("operator.image.pullPolicy",), "Always",
                                   check_pull_policy("operator", "Always")),
    MGR + "resources": Case(("operator.resources",), resources("700m", "300Mi"),
                            check_container("operator", "resources",
                                            resources("700m", "300Mi"))),
    MGR + "args": Case(
        ("operator.health.port", "operator.metrics.port", "operator.cds.port",
         "operator.controllerName", "operator.endpointDiscovery", "operator.log.level",
         "operator.log.format"),
        ["--health-probe-bind-address=:9081", "--metrics-bind-address=127.0.0.1:9080",
         "--config-discovery-address=:23478", "--leader-elect",
         "--controller-name=example.com/turn-operator", "--endpoint-discovery=false",
         "--throttle-timeout=250ms"],
        check_operator_args),
    MGR + "securityContext": Case(
        ("operator.securityContext",), {"seLinuxOptions": {"level": "s0:c1,c2"}},
        check_merged(lambda o: main_container(kturn_operator(o))["securityContext"],
                     {"seLinuxOptions": {"level": "s0:c1,c2"}})),

    DP + "replicas": Case(("dataplane.replicas",), 4, check_dataplane("replicas", 4)),
    DP + "image.name": Case(("dataplane.image.repository",), "registry.example.com/dp",
                            check_image("dataplane", "registry.example.com/dp:9.9.2")),
    DP + "image.tag": Case(("dataplane.image.tag",), "9.9.2",
                           check_image("dataplane", "registry.example.com/dp:9.9.2")),
    DP + "image.pullPolicy": Case(("dataplane.image.pullPolicy",), "Always",
                                  check_pull_policy("dataplane", "Always")),
    DP + "imagePullSecrets": Case(("dataplane.imagePullSecrets",), [{"name": "pull-dataplane"}],
                                  check_dataplane("imagePullSecrets",
                                                  [{"name": "pull-dataplane"}])),
    DP + "command": Case(("dataplane.command",), ["stunnerd", "-v"], check_command),
    DP + "args": Case(("dataplane.args",), ["-w", "--udp-thread-num=4"], check_dataplane_args),
    DP + "env": Case(("dataplane.env",), [{"name": "EXAMPLE_ENV", "value": "1"}],
                     check_dataplane_env),
    DP + "resources": Case(("dataplane.resources",), resources("3", "1Gi"),
                           check_dataplane("resources", resources("3", "1Gi"))),
    DP + "terminationGracePeriodSeconds": Case(
        ("dataplane.terminationGracePeriodSeconds",), 120,
        check_dataplane("terminationGracePeriodSeconds", 120)),
    DP + "enableMetricsEndpoint": Case(("dataplane.enableMetricsEndpoint",), True,
                                       check_dataplane("enableMetricsEndpoint", True)),
    DP + "hostNetwork": Case(("dataplane.hostNetwork",), True, check_host_network),
    DP + "labels": Case(("dataplane.labels",), {"example.com/team": "dataplane"},
                        check_dataplane("labels", {"example.com/team": "dataplane"})),
    DP + "annotations": Case(("dataplane.annotations",), {"example.com/note": "dataplane"},
                             check_dataplane("annotations", {"example.com/note": "dataplane"})),
    DP + "affinity": Case(("dataplane.affinity",), affinity("dataplane"),
                          check_dataplane("affinity", affinity("dataplane"))),
    DP + "containerSecurityContext": Case(
        ("dataplane.containerSecurityContext",), {"seLinuxOptions": {"level": "s0:c5,c6"}},
        check_merged(lambda o: dataplane(o)["containerSecurityContext"],
                     {"seLinuxOptions": {"level": "s0:c5,c6"}})),
    DP + "securityContext": Case(
        ("dataplane.podSecurityContext",), {"fsGroup": 2002},
        check_merged(lambda o: dataplane(o)["securityContext"], {"fsGroup": 2002})),
    DP + "tolerations": Case(("dataplane.tolerations",), tolerations("dataplane"),
                             check_dataplane("tolerations", tolerations("dataplane"))),
    DP + "topologySpreadConstraints": Case(
        ("dataplane.topologySpreadConstraints",), spread("dataplane"),
        check_dataplane("topologySpreadConstraints", spread("dataplane"))),

    "stunnerAuthService.enabled": Case(("auth.enabled",), False, check_auth_disabled,
                                       alone=True),
    AU + "podLabels": Case(("auth.podLabels",), {"example.com/team": "auth"},
                           check_pod_meta("auth", "labels", {"example.com/team": "auth"})),
    AU + "podAnnotations": Case(("auth.podAnnotations",), {"example.com/note": "auth"},
                                check_pod_meta("auth", "annotations",
                                               {"example.com/note": "auth"})),
    AU + "affinity": Case(("auth.affinity",), affinity("auth"),
                          check_pod_field("auth", "affinity", affinity("auth"))),
    AU + "tolerations": Case(("auth.tolerations",), tolerations("auth"),
                             check_pod_field("auth", "tolerations", tolerations("auth"))),
    AU + "replicas": Case(("auth.replicas",), 2, check_replicas("auth", 2)),
    AU + "nodeSelector": Case(("auth.nodeSelector",), {"example.com/pool": "auth"},
                              check_pod_field("auth", "nodeSelector",
                                              {"example.com/pool": "auth",
                                               "kubernetes.io/os": "linux"})),
    AU + "imagePullSecrets": Case(("auth.imagePullSecrets",), [{"name": "pull-auth"}],
                                  check_pod_field("auth", "imagePullSecrets",
                                                  [{"name": "pull-auth"}])),
    AU + "topologySpreadConstraints": Case(
        ("auth.topologySpreadConstraints",), spread("auth"),
        check_pod_field("auth", "topologySpreadConstraints", spread("auth"))),
    AC + "securityContext": Case(
        ("auth.securityContext",), {"seLinuxOptions": {"level": "s0:c3,c4"}},
        check_merged(lambda o: main_container(kturn_auth(o))["securityContext"],
                     {"seLinuxOptions": {"level": "s0:c3,c4"}})),
    AC + "image.name": Case(("auth.image.repository",), "registry.example.com/auth",
                            check_image("auth", "registry.example.com/auth:9.9.3")),
    AC + "image.tag": Case(("auth.image.tag",), "9.9.3",
                           check_image("auth", "registry.example.com/auth:9.9.3")),
    AC + "image.pullPolicy": Case(("auth.image.pullPolicy",), "Always",
                                  check_pull_policy("auth", "Always")),
    AC + "resources": Case(("auth.resources",), resources("150m", "96Mi"),
                           check_container("auth", "resources", resources("150m", "96Mi"))),
    AC + "args": Case(("auth.port", "auth.log.level", "auth.log.format"), ["--port=9088", "-v"],
                      check_auth_args),
}

# STUNner keys without a kturn counterpart (NotMappedTest checks what each does).
NOT_MAPPED = {
    "stunnerGatewayOperator.enabled",
    "stunnerGatewayOperator.customerKey",
    OP + "name",
    "stunnerGatewayOperator.dataplane.mode",
    "namespace",
}


def every_case_values() -> dict:
    """One values file giving every STUNner key of CASES its value (but the `alone` ones)."""
    values: dict = {}
    for key, case in CASES.items():
        if not case.alone:
            set_path(values, key, case.value)
    return values


def doc_table() -> Dict[str, Tuple[str, ...]]:
    """docs/migration-from-stunner.md, "### STUNner's keys": STUNner key -> the kturn keys its
    second column names (empty for "not mapped")."""
    text = read(MIGRATION_DOC)
    section = text.split("## The Helm chart", 1)[1].split("\n## ", 1)[0]
    table = section.split("### STUNner's keys", 1)[1]
    rows = {}
    for line in table.splitlines():
        m = re.match(r"\| `([^`]+)` \| ([^|]*) \|", line)
        if m:
            second = m.group(2).strip()
            rows[m.group(1)] = (() if second == "not mapped"
                                else tuple(re.findall(r"`([^`]+)`", second)))
    return rows


# --- the tests --------------------------------------------------------------------------------

class StunnerFactsTest(unittest.TestCase):
    """What STUNner's chart itself creates: the facts the other tests compare kturn's with."""

    def test_chart_is_the_pinned_release(self) -> None:
        chart = load_yaml(os.path.join(STUNNER_CHART, "Chart.yaml"))
        self.assertEqual((chart["name"], chart["version"]), ("stunner", STUNNER_VERSION))

    def test_auth_and_cds_services(self) -> None:
        objs = stunner()
        auth = one(objs, "Service", STUNNER_AUTH)
        self.assertEqual(auth["metadata"]["namespace"], NAMESPACE)
        self.assertEqual([p["port"] for p in auth["spec"]["ports"]], [8088])
        self.assertTrue(selects(auth["spec"]["selector"],
                                pod_meta(one(objs, "Deployment", STUNNER_AUTH))["labels"]))
        cds = [s for s in find(objs, "Service")
               if CDS_SERVICE_LABEL in s["metadata"].get("labels", {})]
        self.assertEqual([s["metadata"]["name"] for s in cds], [STUNNER_CDS])
        self.assertEqual([p["port"] for p in cds[0]["spec"]["ports"]], [13478])
        self.assertTrue(selects(cds[0]["spec"]["selector"],
                                pod_meta(one(objs, "Deployment", STUNNER_OPERATOR))["labels"]))


class ObjectsTest(unittest.TestCase):
    """The objects each chart creates, side by side."""

    def test_table_of_objects(self) -> None:
        renders = {
            "STUNner": stunner(include_crds=True),
            "kturn": kturn(include_crds=True),
            "kturn, STUNner's values": kturn(with_kturn_images(stunner_values()),
                                             include_crds=True),
        }
        names = {c: {(o["kind"], o["metadata"]["name"]) for o in objs}
                 for c, objs in renders.items()}
        migrated = renders["kturn, STUNner's values"]
        rows = []
        for kind, name in sorted(set().union(*names.values())):
            note = ""
            if (kind, name) in names["STUNner"] and (kind, name) not in names[
                    "kturn, STUNner's values"]:
                if (kind, name) in COUNTERPARTS:
                    ck, cn = COUNTERPARTS[(kind, name)]
                    cn = cn.format(release=KTURN_RELEASE)
                    self.assertTrue(find(migrated, ck, cn), f"{kind} {name}: no {ck} {cn}")
                    note = f"-> {ck} {cn}"
                elif (kind, name) in NO_COUNTERPART:
                    note = f"none: {NO_COUNTERPART[(kind, name)]}"
                elif name in STUNNER_ONLY_EXPERIMENTAL_CRDS:
                    note = "none: not a gateway.networking.k8s.io CRD"
                else:
                    self.fail(f"{kind} {name}: STUNner's chart creates it, kturn's does not, "
                              "and the test says neither what replaces it nor why nothing does")
            rows.append((kind, name, *("yes" if (kind, name) in names[c] else "-"
                                       for c in renders), note))
        header = ("kind", "name", *renders, "kturn's counterpart")
        widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
        print("\nObjects of `helm template` in", NAMESPACE, "(STUNner: release", STUNNER_RELEASE,
              "defaults; kturn: release", KTURN_RELEASE + ", defaults and STUNner's values.yaml"
              " with kturn's image names; CRDs included)")
        for r in [header] + rows:
            print("  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
        # The table's point: both by-name contracts are in the migrated render.
        self.assertIn(("Service", STUNNER_AUTH), names["kturn, STUNner's values"])
        self.assertIn(("Service", STUNNER_CDS), names["kturn, STUNner's values"])


class SameValuesTest(unittest.TestCase):
    """Each set of values through both charts: what STUNner's render has, kturn's keeps."""

    @classmethod
    def setUpClass(cls) -> None:
        cases = {
            "STUNner's values.yaml": (stunner_values(), KTURN_RELEASE),
            "STUNner's README": (readme_values(), KTURN_RELEASE),
            "every key a value": (every_case_values(), KTURN_RELEASE),
            "release stunner": (stunner_values(), STUNNER_RELEASE),
        }
        pairs = in_parallel([functools.partial(pair, v, r) for v, r in cases.values()])
        cls.pairs = dict(zip(cases, pairs))

    def counterpart(self, p: Pair, stunner_deployment: str) -> dict:
        return {STUNNER_OPERATOR: kturn_operator, STUNNER_AUTH: kturn_auth}[stunner_deployment](
            p.kturn, p.release)

    def test_auth_service_by_name(self) -> None:
        """stunner-auth: same name, namespace, port and labels, in front of kturn-auth's pods
        and on the port kturn-auth listens on."""
        for case, p in self.pairs.items():
            with self.subTest(values=case):
                theirs = one(p.stunner, "Service", STUNNER_AUTH)
                ours = one(p.kturn, "Service", STUNNER_AUTH)
                self.assertEqual(ours["metadata"]["namespace"], theirs["metadata"]["namespace"])
                self.assertLessEqual(theirs["metadata"]["labels"].items(),
                                     ours["metadata"]["labels"].items())
                # ... and the only Service with STUNner's labels, as in STUNner's render.
                self.assertEqual(
                    [s["metadata"]["name"] for s in find(p.kturn, "Service")
                     if theirs["metadata"]["labels"].items() <= s["metadata"]["labels"].items()],
                    [STUNNER_AUTH])
                self.assertEqual({(x["port"], x.get("protocol", "TCP"))
                                  for x in theirs["spec"]["ports"]},
                                 {(x["port"], x["protocol"]) for x in ours["spec"]["ports"]})
                auth = kturn_auth(p.kturn, p.release)
                self.assertTrue(selects(ours["spec"]["selector"], pod_meta(auth)["labels"]))
                listening = int(args_map(main_container(auth)["args"])["--port"])
                for port in ours["spec"]["ports"]:
                    self.assertEqual(ports(auth)[port["targetPort"]], listening)

    def test_cds_service_by_name(self) -> None:
        """STUNner's config discovery Service (found by its label): same name, port and
        labels, in front of kturn-operator's pods and on the port its CDS server binds."""
        for case, p in self.pairs.items():
            with self.subTest(values=case):
                theirs = [s for s in find(p.stunner, "Service")
                          if CDS_SERVICE_LABEL in s["metadata"].get("labels", {})]
                self.assertEqual(len(theirs), 1)
                ours = one(p.kturn, "Service", theirs[0]["metadata"]["name"])
                # One Service with the label, as in STUNner's render: what looks it up by the
                # label finds one.
                self.assertEqual([s["metadata"]["name"] for s in find(p.kturn, "Service")
                                  if CDS_SERVICE_LABEL in s["metadata"]["labels"]],
                                 [ours["metadata"]["name"]])
                self.assertLessEqual(theirs[0]["metadata"]["labels"].items(),
                                     ours["metadata"]["labels"].items())
                self.assertEqual({x["port"] for x in theirs[0]["spec"]["ports"]},
                                 {x["port"] for x in ours["spec"]["ports"]})
                operator = kturn_operator(p.kturn, p.release)
                self.assertTrue(selects(ours["spec"]["selector"], pod_meta(operator)["labels"]))
                cds_addr = args_map(main_container(operator)["args"])["--cds-addr"]
                for port in ours["spec"]["ports"]:
                    self.assertEqual(f":{ports(operator)[port['targetPort']]}", cds_addr)

    def test_pod_labels_and_selectors(self) -> None:
        """STUNner's pod labels are on kturn's counterpart pods (a NetworkPolicy or PodMonitor
        written for STUNner selects them), and every Service of STUNner's, as a selector, picks
        the counterpart of the pods it picks in STUNner's render."""
        for case, p in self.pairs.items():
            for name in (STUNNER_OPERATOR, STUNNER_AUTH):
                with self.subTest(values=case, pods=name):
                    theirs = pod_meta(one(p.stunner, "Deployment", name))["labels"]
                    ours = pod_meta(self.counterpart(p, name))["labels"]
                    self.assertLessEqual(theirs.items(), ours.items())
            for svc in find(p.stunner, "Service"):
                selector = svc["spec"]["selector"]
                with self.subTest(values=case, selector=svc["metadata"]["name"]):
                    picked = [d["metadata"]["name"] for d in find(p.stunner, "Deployment")
                              if selects(selector, pod_meta(d)["labels"])]
                    self.assertEqual(len(picked), 1)
                    want = self.counterpart(p, picked[0])["metadata"]["name"]
                    got = [d["metadata"]["name"] for d in find(p.kturn, "Deployment")
                           if selects(selector, pod_meta(d)["labels"])]
                    self.assertEqual(got, [want])

    def test_pod_settings(self) -> None:
        """What STUNner's chart puts on its operator's and auth service's pods, kturn's chart
        puts on kturn-operator's and kturn-auth's, with kturn's image names."""
        images = {STUNNER_OPERATOR: OPERATOR_IMAGE, STUNNER_AUTH: AUTH_IMAGE}
        for case, p in self.pairs.items():
            for name in (STUNNER_OPERATOR, STUNNER_AUTH):
                with self.subTest(values=case, pods=name):
                    theirs = one(p.stunner, "Deployment", name)
                    ours = self.counterpart(p, name)
                    self.assertEqual(ours["spec"]["replicas"], theirs["spec"]["replicas"])
                    for field in ("nodeSelector", "tolerations", "affinity", "imagePullSecrets",
                                  "topologySpreadConstraints"):
                        self.assertEqual(nonempty(pod_spec(ours).get(field)),
                                         nonempty(pod_spec(theirs).get(field)), field)
                    # kubectl's default container: kturn's pods have one container.
                    annotations = dict(pod_meta(theirs).get("annotations") or {})
                    annotations.pop("kubectl.kubernetes.io/default-container", None)
                    self.assertLessEqual(annotations.items(),
                                         (pod_meta(ours).get("annotations") or {}).items())
                    c_theirs, c_ours = main_container(theirs), main_container(ours)
                    self.assertEqual(c_ours["resources"], c_theirs["resources"])
                    self.assertEqual(c_ours["imagePullPolicy"], c_theirs["imagePullPolicy"])
                    tag = c_theirs["image"].rpartition(":")[2]
                    self.assertEqual(c_ours["image"], f"{KTURN_IMAGES[images[name]]}:{tag}")
                    pod_ctx, ctx = pod_spec(ours)["securityContext"], c_ours["securityContext"]
                    self.assertLessEqual((pod_spec(theirs).get("securityContext") or {}).items(),
                                         pod_ctx.items())
                    # Where a field sits (STUNner's auth service sets runAsNonRoot on the
                    # container, kturn's chart on the pod) does not matter to the container.
                    self.assertLessEqual(
                        effective_security(pod_spec(theirs), c_theirs).items(),
                        effective_security(pod_spec(ours), c_ours).items())
                    self.assertIs(pod_ctx["runAsNonRoot"], True)
                    self.assertNotEqual(pod_ctx["runAsUser"], 0)
                    self.assertEqual(pod_ctx["seccompProfile"], {"type": "RuntimeDefault"})
                    self.assertIs(ctx["allowPrivilegeEscalation"], False)
                    self.assertIs(ctx["readOnlyRootFilesystem"], True)
                    self.assertEqual(ctx["capabilities"]["drop"], ["ALL"])

    def test_dataplane(self) -> None:
        """The Dataplane `default`: every field STUNner renders, the same in kturn's; the image
        with kturn's name, stunnerd's command running kturnd, STUNner's env and security
        context fields kept beside kturn's."""
        for case, p in self.pairs.items():
            with self.subTest(values=case):
                theirs, ours = dataplane(p.stunner), dataplane(p.kturn)
                special = {"image", "command", "env", "securityContext",
                           "containerSecurityContext"}
                for field in set(theirs) - special:
                    self.assertEqual(ours.get(field), theirs[field], field)
                tag = theirs["image"].rpartition(":")[2]
                self.assertEqual(ours["image"], f"{KTURN_IMAGES[DATAPLANE_IMAGE]}:{tag}")
                self.assertEqual(theirs["command"][0], "stunnerd")
                self.assertEqual(ours["command"], ["kturnd"] + theirs["command"][1:])
                for env in theirs.get("env", []):
                    self.assertIn(env, ours["env"])
                for field in ("securityContext", "containerSecurityContext"):
                    self.assertLessEqual(theirs.get(field, {}).items(), ours[field].items(),
                                         field)

    def test_args_are_real_flags(self) -> None:
        """What the STUNner keys turned into are flags kturn's binaries define."""
        flags = {
            "operator": cli_flags("src/bin/operator_main.cc"),
            "auth": cli_flags("src/bin/kturn_auth_main.cc", "src/k8s/discovery_flags.cc"),
            "dataplane": cli_flags("src/daemon/command_line.cc"),
        }
        for case, p in self.pairs.items():
            args = {
                "operator": main_container(kturn_operator(p.kturn, p.release))["args"],
                "auth": main_container(kturn_auth(p.kturn, p.release))["args"],
                "dataplane": dataplane(p.kturn)["args"],
            }
            for binary, given in args.items():
                for arg in given:
                    with self.subTest(values=case, binary=binary, arg=arg):
                        self.assertIn(arg.partition("=")[0], flags[binary])


class EveryKeyTest(unittest.TestCase):
    """Each STUNner key: its value shows up where its kturn key puts it, or the key is named
    as not mapped; the migration doc's table says the same."""

    def test_every_stunner_key_is_classified(self) -> None:
        """Every key of STUNner's values.yaml and of its README's parameter tables is either
        checked below (CASES) or named as not mapped: a key STUNner adds fails here first."""
        known = set(CASES) | NOT_MAPPED
        for key in leaf_keys(stunner_values(), known):
            with self.subTest(source="values.yaml", key=key):
                self.assertIn(key, known)
        for key, _ in readme_rows():
            with self.subTest(source="README", key=key):
                # A row for a section (`...container`) or a part of a map (`resources.limits.cpu`)
                # is covered by the keys below or above it.
                self.assertTrue(key in known or any(k.startswith(key + ".") for k in known) or
                                any(key.startswith(k + ".") for k in known), key)

    def test_doc_table_matches(self) -> None:
        """The table in docs/migration-from-stunner.md names exactly these STUNner keys, with
        the kturn keys each case checks, and "not mapped" for the others."""
        table = doc_table()
        want = {key: case.kturn for key, case in CASES.items()}
        want.update({key: () for key in NOT_MAPPED})
        self.assertEqual(table, want)

    def test_each_key_takes_effect(self) -> None:
        """Each STUNner key's own value shows up in kturn's render where its kturn key puts it
        (all together in one render, the few that would switch others off each alone)."""
        together = kturn(every_case_values())
        for key, case in CASES.items():
            with self.subTest(key=key):
                if case.alone:
                    values = with_kturn_images(stunner_values())
                    set_path(values, key, case.value)
                    case.check(self, kturn(values))
                else:
                    case.check(self, together)

    def test_each_value_is_not_kturns_default(self) -> None:
        """A check that passes with kturn's defaults would prove nothing: each fails there."""
        defaults = kturn({})
        for key, case in CASES.items():
            with self.subTest(key=key):
                with self.assertRaises(AssertionError):
                    case.check(self, defaults)

    def test_operator_log_levels(self) -> None:
        """logging.operator.level, zap's levels, as kturn log specs."""
        # One of each branch (debug: CASES; info: STUNner's values.yaml, SameValuesTest).
        levels = {"warning": "all:WARN", "fatal": "all:ERROR", "1": "all:DEBUG",
                  "5": "all:TRACE", "all:INFO,cds:DEBUG": "all:INFO,cds:DEBUG"}
        for level, spec in levels.items():
            with self.subTest(level=level):
                objs = kturn({"logging": {"operator": {"level": level}}},
                             show_only="templates/operator.yaml")
                self.assertEqual(op_args(objs)["--log"], spec)

    def test_zap_flags_and_logging_keys(self) -> None:
        """--zap-log-level and --zap-encoder in the operator's args set the same kturn keys;
        logging.operator.*, which STUNner's chart appends after them, wins."""
        args = ["--zap-log-level=warn", "--zap-encoder=json"]
        alone = kturn({"stunnerGatewayOperator": {"deployment": {"container": {"manager": {
            "args": args}}}}}, show_only="templates/operator.yaml")
        self.assertEqual((op_args(alone)["--log"], op_args(alone)["--log-format"]),
                         ("all:WARN", "json"))
        both = kturn({"logging": {"operator": {"level": "error", "format": "text"}},
                      "stunnerGatewayOperator": {"deployment": {"container": {"manager": {
                          "args": args}}}}}, show_only="templates/operator.yaml")
        self.assertEqual((op_args(both)["--log"], op_args(both)["--log-format"]),
                         ("all:ERROR", "text"))

    def test_auth_log_flag_wins_over_verbose(self) -> None:
        """As in stunner-auth-service: -l/--log wins over -v; --log-format carries over."""
        objs = kturn({"stunnerAuthService": {"deployment": {"container": {"authService": {
            "args": ["-v", "--log=all:WARN", "--log-format=json"]}}}}},
            show_only="templates/auth.yaml")
        self.assertEqual((auth_args(objs)["--log"], auth_args(objs)["--log-format"]),
                         ("all:WARN", "json"))

    def test_stunnerd_image_keeps_its_command(self) -> None:
        """stunnerd's own image (stunnerd following kturn's CDS) keeps `stunnerd`."""
        values = stunner_values()  # STUNner's images, unchanged
        self.assertEqual(dataplane(kturn(values))["command"], ["stunnerd"])
        self.assertEqual(dataplane(kturn(with_kturn_images(values)))["command"], ["kturnd"])

    def test_auth_follows_every_gateway(self) -> None:
        """STUNner's auth service mints credentials for every Gateway: so does kturn-auth given
        STUNner's section; kturn's default follows one Gateway."""
        self.assertIn("--id", auth_args(kturn({})))
        self.assertNotIn("--id", auth_args(kturn(with_kturn_images(stunner_values()))))

    def test_unknown_flags_are_refused(self) -> None:
        """A flag or value with no kturn counterpart stops the render, naming it, rather than
        being dropped or reaching a binary that would exit on it."""
        err = refusal(KTURN_CHART, {"stunnerGatewayOperator": {"deployment": {"container": {
            "manager": {"args": ["--leader-elect", "--webhook-port=9443"]}}}}})
        self.assertIn('"--webhook-port=9443" has no kturn-operator counterpart', err)
        err = refusal(KTURN_CHART, {"stunnerAuthService": {"deployment": {"container": {
            "authService": {"args": ["--port=8088", "--cds-server-port=13478"]}}}}})
        self.assertIn('"--cds-server-port=13478" has no kturn-auth counterpart', err)
        err = refusal(KTURN_CHART, {"logging": {"operator": {"level": "loud"}}})
        self.assertIn('logging level "loud"', err)
        err = refusal(KTURN_CHART, {"logging": {"dataplane": {"format": "xml"}}})
        self.assertIn("logging.dataplane.format", err)


class NotMappedTest(unittest.TestCase):
    """The STUNner keys without a kturn counterpart do in kturn's chart what the doc says."""

    def test_keys_stunner_ignores_too(self) -> None:
        """stunnerGatewayOperator.enabled=false and deployment.name change nothing in STUNner's
        render, nor in kturn's; customerKey becomes a Secret in STUNner's and appears nowhere in
        kturn's."""
        key = "not-a-real-customer-key-4711"
        values = {"stunnerGatewayOperator": {"enabled": False, "customerKey": key,
                                             "deployment": {"name": "my-operator"}}}
        theirs = template(STUNNER_CHART, STUNNER_RELEASE, values)
        self.assertTrue(find(helm.objects(theirs), "Deployment", STUNNER_OPERATOR))
        self.assertNotIn("my-operator", theirs)
        self.assertIn(base64.b64encode(key.encode()).decode(), theirs)
        ours = template(KTURN_CHART, KTURN_RELEASE, with_kturn_images(values))
        self.assertTrue(find(helm.objects(ours), "Deployment", f"{KTURN_RELEASE}-operator"))
        self.assertEqual(find(helm.objects(ours), "Secret"), [])
        for secret in (key, base64.b64encode(key.encode()).decode(), "my-operator"):
            self.assertNotIn(secret, ours)

    def test_dataplane_mode(self) -> None:
        """managed: the Dataplane `default`, in both; legacy: none in STUNner's, refused by
        kturn's, whose operator has no such mode."""
        values = {"stunnerGatewayOperator": {"dataplane": {"mode": "managed"}}}
        self.assertTrue(find(kturn(values), "Dataplane", "default"))
        values["stunnerGatewayOperator"]["dataplane"]["mode"] = "legacy"
        self.assertEqual(find(stunner(values), "Dataplane"), [])
        self.assertIn('stunnerGatewayOperator.dataplane.mode: "legacy"',
                      refusal(KTURN_CHART, values))

    def test_namespace(self) -> None:
        """STUNner's templates move objects to `namespace`; kturn's refuses a name there,
        asking for -n, and takes "" (the release namespace)."""
        theirs = stunner({"namespace": "elsewhere"})
        self.assertEqual(one(theirs, "Service", STUNNER_AUTH)["metadata"]["namespace"],
                         "elsewhere")
        self.assertIn("install with -n elsewhere", refusal(KTURN_CHART, {"namespace": "elsewhere"}))
        # "" is the release namespace in STUNner's chart, and where kturn's puts everything.
        ours = kturn({"namespace": ""}, show_only="templates/auth.yaml")
        namespaced = [o for o in ours if not o["kind"].startswith("Cluster")]
        self.assertTrue(namespaced)
        self.assertEqual({o["metadata"]["namespace"] for o in namespaced}, {NAMESPACE})


class CrdSwitchesTest(unittest.TestCase):
    """standardCrds.enabled and experimentalCrds.enabled, every combination (STUNner's README
    shows the default, standard off, experimental on)."""

    def test_readme_shows_these_switches(self) -> None:
        """The CRD settings STUNner's README shows are the two switches, as booleans: each is
        one of the combinations the next test renders."""
        readme = read(os.path.join(STUNNER_CHART, "README.md"))
        shown = set(re.findall(r"--set (\w+Crds\.enabled)=(\S+)", readme))
        self.assertEqual(shown, {("standardCrds.enabled", "false"),
                                 ("experimentalCrds.enabled", "true")})

    def test_same_gateway_api_crds_per_channel(self) -> None:
        """Every Gateway API CRD STUNner's chart installs, kturn's renders, from the same
        channel and once; none when both switches are off. STUNner's experimental channel
        (Gateway API v1.4.1) also has three x-k8s.io CRDs kturn's subchart does not ship."""
        combinations = [(s, e) for s in (True, False) for e in (False, True)]
        sets_of = {c: [f"standardCrds.enabled={str(c[0]).lower()}",
                       f"experimentalCrds.enabled={str(c[1]).lower()}"] for c in combinations}
        renders = in_parallel(
            [functools.partial(f, sets=sets_of[c], include_crds=True)
             for c in combinations for f in (stunner, kturn)])
        for i, (standard, experimental) in enumerate(combinations):
            sets = sets_of[(standard, experimental)]
            with self.subTest(sets=sets):
                theirs, ours = crds(renders[2 * i]), crds(renders[2 * i + 1])
                gateway_api = {n: c for n, c in theirs.items() if n.endswith(GATEWAY_GROUP)}
                if not (standard or experimental):
                    self.assertEqual(gateway_api, {})
                    self.assertEqual([n for n in ours if GATEWAY_GROUP in n], [])
                for name, channels in gateway_api.items():
                    # STUNner installs both channels' copies with both switches on, the
                    # experimental one being the superset; kturn renders that one, once.
                    want = "experimental" if "experimental" in channels else "standard"
                    self.assertEqual(ours.get(name), [want], name)
                others = {n for n in theirs if n.endswith(".x-k8s.io")}
                self.assertEqual(others,
                                 STUNNER_ONLY_EXPERIMENTAL_CRDS if experimental else set())
                self.assertFalse(others & set(ours))
                for name, channels in ours.items():
                    self.assertEqual(len(channels), 1, f"{name} rendered twice")

    def test_stunner_crds_in_kturns(self) -> None:
        """STUNner's own CRDs (its crds/ folder) are all in kturn's, each with every version
        STUNner's serves (deploy_crd_schema checks their fields)."""
        theirs = {o["metadata"]["name"]: o for o in find(
            stunner(include_crds=True, crd_specs=True), "CustomResourceDefinition")}
        ours = {o["metadata"]["name"]: o for o in find(
            kturn(include_crds=True, crd_specs=True), "CustomResourceDefinition")}
        mine = [n for n in theirs if n.endswith(".stunner.l7mp.io")]
        self.assertTrue(mine)
        for name in mine:
            with self.subTest(crd=name):
                self.assertIn(name, ours)
                self.assertLessEqual({v["name"] for v in theirs[name]["spec"]["versions"]},
                                     {v["name"] for v in ours[name]["spec"]["versions"]})


class PrecedenceAndCompatTest(unittest.TestCase):
    """Which key wins, and when STUNner's names are rendered (values stunnerCompat)."""

    def test_stunner_key_with_a_value_wins(self) -> None:
        values = with_kturn_images(stunner_values())
        values["operator"] = {"replicas": 5, "tolerations": tolerations("kturn")}
        objs = kturn(values)
        # deployment.replicas: 1 in STUNner's file, a value: it wins over operator.replicas.
        self.assertEqual(kturn_operator(objs)["spec"]["replicas"], 1)
        # deployment.tolerations: [] in STUNner's file, empty: operator.tolerations stays.
        self.assertEqual(pod_spec(kturn_operator(objs))["tolerations"], tolerations("kturn"))

    def test_own_labels_win_over_pod_labels(self) -> None:
        """podLabels (STUNner's or kturn's) add labels but cannot replace the ones the chart's
        selectors and NetworkPolicies use."""
        objs = kturn({"stunnerGatewayOperator": {"deployment": {"podLabels": {
            "app.kubernetes.io/component": "hijacked", "example.com/team": "media"}}}},
            show_only="templates/operator.yaml")
        labels = pod_meta(kturn_operator(objs))["labels"]
        self.assertEqual(labels["app.kubernetes.io/component"], "operator")
        self.assertEqual(labels["example.com/team"], "media")
        self.assertTrue(selects(kturn_operator(objs)["spec"]["selector"]["matchLabels"], labels))

    def test_kturn_values_render_no_stunner_names(self) -> None:
        """stunnerCompat: auto is off for kturn's own values: no second Service, no STUNner
        label, kturn-auth's NetworkPolicy as networkPolicy.auth.from says."""
        objs = kturn({})
        self.assertEqual([s["metadata"]["name"] for s in find(objs, "Service")
                          if s["metadata"]["name"].startswith("stunner")], [])
        for o in find(objs, "Service") + find(objs, "Deployment"):
            labels = dict(o["metadata"]["labels"])
            if o["kind"] == "Deployment":
                labels.update(pod_meta(o)["labels"])
            with self.subTest(object=o["metadata"]["name"]):
                self.assertNotIn("control-plane", labels)
                self.assertNotIn("app", labels)
        self.assertNotIn(CDS_SERVICE_LABEL,
                         one(objs, "Service", f"{KTURN_RELEASE}-config-discovery")["metadata"][
                             "labels"])
        policy = one(objs, "NetworkPolicy", f"{KTURN_RELEASE}-auth")
        self.assertNotIn({"namespaceSelector": {}}, policy["spec"]["ingress"][0]["from"])

    def test_compat_switch(self) -> None:
        """stunnerCompat.enabled: true renders STUNner's names for kturn's own values, false
        leaves them out of a STUNner values render, anything else is refused."""
        on = kturn(sets=["stunnerCompat.enabled=true"])
        self.assertTrue(find(on, "Service", STUNNER_AUTH) and find(on, "Service", STUNNER_CDS))
        self.assertEqual(pod_meta(kturn_auth(on))["labels"]["app"], "stunner-auth")
        off = kturn(with_kturn_images(stunner_values()), sets=["stunnerCompat.enabled=false"])
        self.assertEqual(find(off, "Service", STUNNER_AUTH) + find(off, "Service", STUNNER_CDS),
                         [])
        self.assertNotIn("control-plane", pod_meta(kturn_operator(off))["labels"])
        self.assertIn('stunnerCompat.enabled: "maybe" is not auto, true or false',
                      refusal(KTURN_CHART, sets=["stunnerCompat.enabled=maybe"]))

    def test_auth_open_to_every_namespace(self) -> None:
        """STUNner's auth service had no NetworkPolicy: with STUNner's values kturn-auth's admits
        every pod of every namespace to its port, unless authFromAllNamespaces is off."""
        values = with_kturn_images(stunner_values())
        policy = one(kturn(values), "NetworkPolicy", f"{KTURN_RELEASE}-auth")
        (rule,) = policy["spec"]["ingress"]
        self.assertEqual(rule["ports"], [{"port": "http", "protocol": "TCP"}])
        self.assertIn({"namespaceSelector": {}}, rule["from"])
        closed = one(kturn(values, sets=["stunnerCompat.authFromAllNamespaces=false"]),
                     "NetworkPolicy", f"{KTURN_RELEASE}-auth")
        self.assertEqual(closed["spec"]["ingress"][0]["from"], [{"podSelector": {}}])

    def test_release_named_stunner(self) -> None:
        """kturn's own Services already have STUNner's names: one of each, on STUNner's ports."""
        objs = kturn(with_kturn_images(stunner_values()), release=STUNNER_RELEASE)
        self.assertEqual(service_port(objs, STUNNER_AUTH)["port"], 8088)
        self.assertEqual(service_port(objs, STUNNER_CDS)["port"], 13478)

    def test_lint(self) -> None:
        """`helm lint --strict` passes for STUNner's values.yaml, image names changed."""
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            yaml.safe_dump(with_kturn_images(stunner_values()), f)
            f.flush()
            rc, out = helm.lint(KTURN_CHART, [f.name])
            self.assertEqual(rc, 0, out)


if __name__ == "__main__":
    reason = skip_reason()
    if reason:
        print(f"SKIP: {reason}")
        sys.exit(SKIP)
    unittest.main()
