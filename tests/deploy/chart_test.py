#!/usr/bin/python3
"""deploy/helm/kturn (and deploy/manifests/kturn.yaml, rendered from it) against the code.

The chart is rendered with the real Helm (`helm template`, built by scripts/build-test-tools.sh)
twice: with its defaults and with every optional part on (tests/deploy/fixtures/
chart-all-features.yaml). Then:

  * `helm lint --strict` passes for both;

  * every object is well-formed: apiVersion, kind, name, a namespace exactly when namespaced,
    a kind this chart is meant to ship, no two objects with one identity;
  * references resolve: Deployment selectors match their pod labels, Services select a pod and
    their targetPorts exist on its containers, ServiceAccounts, Roles and binding subjects exist,
    probes name real ports, images are pinned;
  * container args are flags the binaries define (src/bin/operator_main.cc,
    src/bin/kturn_auth_main.cc, src/daemon/command_line.cc), and the addresses agree (the CDS
    Service, its port, the Lease name and namespace);
  * RBAC is exactly what the operator's code does, derived from the sources: the kinds it
    watches (WatchedCluster::kinds()), the objects it applies and deletes (the renderers'
    literal apiVersion/kind), the statuses it writes (renderer.cc), the Lease
    (leader_elector.cc), with the verbs of the ApiClient calls at each call site. A new kind or
    call site without a rule fails, so does a rule nothing uses; no wildcards; Gateway API and
    stunner.l7mp.io in separate rules; nothing for the dataplane pods, and for kturn-auth only
    its configs.cds.kturn.io grant; kturn-auth's CDS token and CA match the operator's flags;
  * pods meet the restricted Pod Security Standard; only kturnd adds a capability, and only
    NET_BIND_SERVICE;
  * the default Dataplane is accepted by the API server (a server-side dry run against the
    test control plane, tests/support/control_plane.py) and sets only fields the operator reads;
    the PodMonitor selects the labels and port the operator gives gateway pods; the HPA uses
    series kturnd exports (docs/metrics.md) and scales the Deployment the operator names;
  * the NetworkPolicies (on by default) select the operator's and kturn-auth's pods, name ports
    those containers have, restrict ingress only, admit to CDS exactly every Gateway's kturnd
    pods (the operator's label, src/operator/well_known.h), kturn-auth and
    networkPolicy.cds.extraFrom, to the metrics and health ports only the monitoring peers and to
    kturn-auth only networkPolicy.auth.from; an empty list admits no one, never everyone; the API
    server accepts them (a server-side dry run); networkPolicy.enabled=false renders none;
  * the chart's crds/ is a link to deploy/crds, and deploy/manifests/kturn.yaml is
    what `helm template` makes of the chart now (scripts/update-manifests.sh).

The Gateway API CRDs the chart renders by default (its subcharts, standardCrds.enabled) are in
both renders here and pass the generic checks; tests/deploy/gateway_api_crds_test.py checks them
and their switches.

  /usr/bin/python3 tests/deploy/chart_test.py [-v]
"""

import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import helm  # noqa: E402

CHART = os.path.join(REPO, "deploy", "helm", "kturn")
RELEASE = "kturn"
NAMESPACE = "kturn-system"
ALL_FEATURES = os.path.join(HERE, "fixtures", "chart-all-features.yaml")

# (apiVersion, kind) -> namespaced: everything the chart may render.
KNOWN_KINDS = {
    ("v1", "Namespace"): False,
    ("v1", "ServiceAccount"): True,
    ("v1", "Service"): True,
    ("apps/v1", "Deployment"): True,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): False,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): False,
    ("rbac.authorization.k8s.io/v1", "Role"): True,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): True,
    ("stunner.l7mp.io/v1", "Dataplane"): False,
    ("monitoring.coreos.com/v1", "PodMonitor"): True,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): True,
    ("networking.k8s.io/v1", "NetworkPolicy"): True,
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): False,
}

GATEWAY_GROUP = "gateway.networking.k8s.io"
STUNNER_GROUP = "stunner.l7mp.io"

# The verbs each ApiClient method needs (src/k8s/api_client.cc): apply is a server-side apply
# PATCH, which the API server also authorizes as create when the object does not exist yet
# (apiserver endpoints/handlers/patch.go); applyStatus patches an existing object's status.
METHOD_VERBS = {
    "get": {"get"}, "list": {"list"}, "watch": {"watch"}, "create": {"create"},
    "update": {"update"}, "remove": {"delete"}, "apply": {"patch", "create"},
    "applyStatus": {"patch"},
}
API_CALL = re.compile(r"\bclient_?\s*(?:\.|->)\s*(\w+)\(")
# A call that names its resource type right away: client_.get(k8s::resources::pod(), ...).
TYPED_API_CALL = re.compile(r"\bclient_?\s*(?:\.|->)\s*(\w+)\(\s*k8s::resources::(\w+)\(\)")

# The Pod Security Standards' safe sysctls (baseline, kept by restricted).
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",
}
RESTRICTED_VOLUME_TYPES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                           "persistentVolumeClaim", "projected", "secret"}


def read(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return f.read()


def render_chart(value_files=()):
    return helm.objects(helm.template(CHART, RELEASE, NAMESPACE, value_files=value_files))


def chart_file(name):
    with open(os.path.join(CHART, name), encoding="utf-8") as f:
        return yaml.safe_load(f)


DEFAULT = render_chart()
FULL = render_chart([ALL_FEATURES])
RENDERS = {"defaults": DEFAULT, "all features": FULL}
# The eBPF fast path on (values dataplane.offload): a Dataplane that runs kturnd as root with
# three capabilities more. Its own case: the restricted checks above do not hold for it.
OFFLOAD_SETS = ["dataplane.offload.engine=TC", "dataplane.offload.interfaces={eth0}"]
OFFLOAD = helm.objects(helm.template(CHART, RELEASE, NAMESPACE, sets=OFFLOAD_SETS))
OFFLOAD_CAPABILITIES = {"BPF", "PERFMON", "NET_ADMIN"}
# Relay ports without a socket each (values dataplane.relaySockets=shared).
SHARED = helm.objects(helm.template(CHART, RELEASE, NAMESPACE,
                                    sets=["dataplane.relaySockets=shared"]))
VALUES = chart_file("values.yaml")
with open(ALL_FEATURES, encoding="utf-8") as _f:
    ALL_FEATURES_VALUES = yaml.safe_load(_f)


def value(case, *path):
    """A value as Helm merges it for a render of RENDERS: the fixture's, else the chart's (maps
    merge key by key, a list replaces the chart's whole)."""
    for values in ([ALL_FEATURES_VALUES] if case == "all features" else []) + [VALUES]:
        node = values
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None:
            return node
    raise KeyError(".".join(path))


def find(objects, kind, name=None, namespace=None):
    out = [o for o in objects if o["kind"] == kind and
           (name is None or o["metadata"]["name"] == name) and
           (namespace is None or o["metadata"].get("namespace") == namespace)]
    return out


def one(objects, kind, name=None, namespace=None):
    found = find(objects, kind, name, namespace)
    assert len(found) == 1, f"want one {kind} {namespace}/{name}, have {len(found)}"
    return found[0]


def component(objects, kind, name):
    return one(objects, kind, name, NAMESPACE)


# ---------------------------------------------------------------------------------------------
# What the sources say.

def cpp_literal(token, constants):
    token = token.strip()
    if token.startswith('"'):
        return token.strip('"')
    if token in ("true", "false"):
        return token == "true"
    if token in constants:
        return constants[token]
    raise AssertionError(f"cannot read {token!r} in src/k8s/resource_type.cc")


def resource_types():
    """function name in k8s::resources -> (group, version, kind, plural, namespaced)."""
    text = read("src/k8s/resource_type.cc")
    constants = dict(re.findall(r'constexpr const char\* (\w+) = "([^"]*)";', text))
    out = {}
    for name, body in re.findall(r"ResourceType (\w+)\(\) \{\s*return \{([^}]*)\};", text):
        out[name] = tuple(cpp_literal(t, constants) for t in body.split(","))
    assert "lease" in out and "gateway" in out, "src/k8s/resource_type.cc: kinds not found"
    return out


def function_body(path, signature_regex):
    """The text between the braces of the C++ function whose signature matches."""
    text = read(path)
    m = re.search(signature_regex + r"[^{;]*\{", text)
    assert m, f"{path}: no {signature_regex}"
    depth, i = 1, m.end()
    while depth:
        assert i < len(text), f"{path}: {signature_regex}: unbalanced braces"
        if text[i] == '"':  # skip string literals, which may hold braces
            i = text.index('"', i + 1)
            while text[i - 1] == "\\":
                i = text.index('"', i + 1)
        elif text[i] in "{}":
            depth += 1 if text[i] == "{" else -1
        i += 1
    return text[m.end():i - 1]


def watched_types():
    body = function_body("src/operator/watched_cluster.cc", r"WatchedCluster::kinds\(\)")
    types = resource_types()
    names = re.findall(r"r::(\w+)\(\)", body)
    assert names, "WatchedCluster::kinds() lists no kinds"
    return [types[n] for n in names]


def status_kinds():
    """Kinds the renderers write statuses for: every StatusUpdate the code in src/operator
    builds, `{<object>.meta.apiVersion, <kind>, <key>, <status>}`, whose kind is a literal or a
    function of the file returning literals."""
    kinds = set()
    for path in sorted(glob.glob(os.path.join(REPO, "src", "operator", "*.cc"))):
        rel = os.path.relpath(path, REPO)
        text = read(rel)
        for expr in re.findall(r"\{\s*\w+(?:\.|->)meta\.apiVersion,\s*([^,]+),", text):
            expr = expr.strip()
            if expr.startswith('"'):
                kinds.add(expr.strip('"'))
                continue
            function = re.match(r"(\w+)\(", expr)
            assert function, f"{rel}: status kind {expr!r} not understood"
            body = function_body(rel, rf"std::string {function.group(1)}\(")
            kinds |= set(re.findall(r'"(\w+)"', body))
    assert {"GatewayClass", "Gateway", "UDPRoute"} <= kinds, f"status kinds {kinds}"
    return kinds


def owned_types():
    """Types of the objects the operator builds (k8s::Object with a literal apiVersion and
    kind) in src/operator: what OwnedObjectApplier applies. Owner references and the like,
    JSON that is not an Object, do not count."""
    types = resource_types()
    out = set()
    for path in glob.glob(os.path.join(REPO, "src", "operator", "*.cc")):
        text = read(os.path.relpath(path, REPO))
        for api_version, kind_expr in re.findall(
                r'k8s::Object\(\s*(?:k8s::)?Json\{\s*\{"apiVersion",\s*"([^"]+)"\},'
                r'\s*\{"kind",\s*([^}]+)\}', text):
            group = api_version.rpartition("/")[0]
            for kind in re.findall(r'"(\w+)"', kind_expr):
                matches = [t for t in types.values() if t[0] == group and t[2] == kind]
                assert matches, f"{path}: renders {api_version} {kind}, not in resource_type.cc"
                out.add(matches[0])
    assert out, "src/operator: no rendered k8s::Object found"
    return out


def api_call_sites():
    """{source file: {ApiClient methods it calls}} over src/, the client itself excluded."""
    sites = {}
    for path in glob.glob(os.path.join(REPO, "src", "**", "*.cc"), recursive=True):
        rel = os.path.relpath(path, REPO)
        if rel.startswith("src/k8s/api_client"):
            continue
        # Only code that can reach an ApiClient (it, or its own header, includes the client)
        # calls the Kubernetes API; other `client.get()`s are CDS or HTTP clients.
        header = rel[:-3] + ".h"
        texts = read(rel) + (read(header) if os.path.exists(os.path.join(REPO, header)) else "")
        if '#include "k8s/api_client.h"' not in texts:
            continue
        methods = set(API_CALL.findall(read(rel))) & (set(METHOD_VERBS) | {"request"})
        if methods:
            sites[rel] = methods
    return sites


def verbs_of(methods, where):
    assert "request" not in methods, f"{where}: raw ApiClient::request, derive its RBAC by hand"
    return set().union(*(METHOD_VERBS[m] for m in methods))


def needed_permissions():
    """{(scope, group, resource, verb)}; scope "cluster" or "namespace" (the release's)."""
    sites = api_call_sites()
    # kturnd's `-c k8s` (stunnerd's: find the CDS server through the API) runs with the
    # credentials its user gives it; the chart's dataplane pods take their config origin from
    # STUNNER_CONFIG_ORIGIN and get no token (ReleaseTest.test_only_the_operator_has_...).
    sites.pop("src/k8s/config_discovery_lookup.cc", None)
    known = {"src/k8s/informer.cc", "src/k8s/leader_elector.cc",
             "src/operator/owned_object_applier.cc", "src/operator/status_writer.cc",
             "src/operator/watched_cluster.cc", "src/operator/cds_authorizer.cc",
             "src/operator/cds_tls.cc"}
    assert set(sites) == known, (
        f"the Kubernetes API is called from {sorted(set(sites) - known)} (or no longer from "
        f"{sorted(known - set(sites))}): derive the RBAC of that call site here and in "
        "deploy/helm/kturn/templates/operator-rbac.yaml")
    need = set()
    # Informers list and watch every watched kind in all namespaces (InformerOptions.ns "").
    # WatchedCluster::listOnce (kturnctl render --kubeconfig, with the user's own credentials)
    # lists the same kinds once: nothing beyond what the informers need.
    for group, _, _, plural, _ in watched_types():
        for verb in verbs_of(sites["src/k8s/informer.cc"] | sites["src/operator/watched_cluster.cc"],
                             "informer.cc, watched_cluster.cc"):
            need.add(("cluster", group, plural, verb))
    # Owned objects: applied and deleted in the Gateways' namespaces.
    for group, _, _, plural, _ in owned_types():
        for verb in verbs_of(sites["src/operator/owned_object_applier.cc"], "applier"):
            need.add(("cluster", group, plural, verb))
    # Statuses: of every watched type whose kind gets one (UDPRoute: both groups).
    kinds = status_kinds()
    for group, _, kind, plural, _ in watched_types():
        if kind in kinds:
            for verb in verbs_of(sites["src/operator/status_writer.cc"], "status_writer.cc"):
                need.add(("cluster", group, plural + "/status", verb))
    # The Lease, in --leader-election-namespace (the release namespace).
    lease_text = read("src/k8s/leader_elector.cc")
    types = resource_types()
    for name in set(re.findall(r"resources::(\w+)\(\)", lease_text)):
        group, _, _, plural, namespaced = types[name]
        assert namespaced, f"leader_elector.cc uses cluster-scoped {plural}"
        for verb in verbs_of(sites["src/k8s/leader_elector.cc"], "leader_elector.cc"):
            need.add(("namespace", group, plural, verb))
    # CDS access control (operator.cds.auth, on in every render here): TokenReviews and
    # SubjectAccessReviews (cluster-scoped), and the pod a token is bound to up to its Gateway,
    # in any namespace. The CDS CA (operator.cds.tls): one Secret of the release namespace. Each
    # call there names its type, and every call must.
    for rel, scope in (("src/operator/cds_authorizer.cc", "cluster"),
                       ("src/operator/cds_tls.cc", "namespace")):
        text = read(rel)
        typed = TYPED_API_CALL.findall(text)
        assert len(typed) == len(API_CALL.findall(text)), f"{rel}: an API call without its type"
        for method, name in typed:
            group, _, _, plural, namespaced = types[name]
            for verb in verbs_of({method}, rel):
                need.add((scope if namespaced else "cluster", group, plural, verb))
    return need


def granted_permissions(objects):
    """{(scope, group, resource, verb)} the operator's ServiceAccount is bound to."""
    sa = ("ServiceAccount", NAMESPACE, f"{RELEASE}-operator")
    out = set()
    for binding in find(objects, "ClusterRoleBinding") + find(objects, "RoleBinding"):
        subjects = {(s["kind"], s.get("namespace"), s["name"]) for s in binding["subjects"]}
        if sa not in subjects:
            continue
        ref = binding["roleRef"]
        scope = "cluster" if binding["kind"] == "ClusterRoleBinding" else "namespace"
        role = one(objects, ref["kind"], ref["name"],
                   binding["metadata"].get("namespace") if ref["kind"] == "Role" else None)
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        out.add((scope, group, resource, verb))
    return out


def cli_flags(path):
    """Every option and flag name a CLI11 main defines, e.g. {"--log", "-l", ...}."""
    names = set()
    for spec in re.findall(r'add_(?:option|flag)\(\s*"([^"]+)"', read(path)):
        names |= {n for n in spec.split(",") if n.startswith("-")}
    assert names, f"{path}: no CLI11 options found"
    return names


def pods(objects):
    """(where, pod spec, pod labels) of every Deployment."""
    for d in find(objects, "Deployment"):
        yield (f"Deployment {d['metadata']['name']}", d["spec"]["template"]["spec"],
               d["spec"]["template"]["metadata"].get("labels", {}))


def args_map(args):
    out = {}
    for a in args:
        key, _, value = a.partition("=")
        out[key] = value
    return out


# ---------------------------------------------------------------------------------------------

class WellFormedTest(unittest.TestCase):
    def test_envelope_and_known_kinds(self):
        for case, objects in RENDERS.items():
            for o in objects:
                key = (o.get("apiVersion"), o.get("kind"))
                with self.subTest(case=case, object=key, name=o.get("metadata", {}).get("name")):
                    self.assertIn(key, KNOWN_KINDS, "a kind the chart should not ship")
                    self.assertTrue(o["metadata"].get("name"))
                    namespaced = KNOWN_KINDS[key]
                    self.assertEqual("namespace" in o["metadata"], namespaced)
                    if namespaced and o["kind"] != "HorizontalPodAutoscaler":
                        self.assertEqual(o["metadata"]["namespace"], NAMESPACE)
                    labels = o["metadata"].get("labels", {})
                    self.assertEqual(labels.get("app.kubernetes.io/instance"), RELEASE)

    def test_identities_unique(self):
        for case, objects in RENDERS.items():
            ids = [(o["apiVersion"], o["kind"], o["metadata"].get("namespace"),
                    o["metadata"]["name"]) for o in objects]
            with self.subTest(case=case):
                self.assertEqual(len(ids), len(set(ids)), "duplicate object")

    def test_optional_parts_render_only_when_enabled(self):
        kinds = lambda objects: {o["kind"] for o in objects}  # noqa: E731
        self.assertFalse({"Namespace", "PodMonitor", "HorizontalPodAutoscaler"} & kinds(DEFAULT))
        self.assertLessEqual({"Namespace", "PodMonitor", "HorizontalPodAutoscaler"}, kinds(FULL))
        for kind in ("Deployment", "ClusterRole", "Role", "Dataplane", "Service", "NetworkPolicy"):
            self.assertIn(kind, kinds(DEFAULT))

    def test_notes_render(self):
        self.assertIn(f"svc/{RELEASE}-auth", helm.notes(CHART, RELEASE, NAMESPACE))

    def test_lint(self):
        for case, files in {"defaults": [], "all features": [ALL_FEATURES]}.items():
            with self.subTest(case=case):
                rc, out = helm.lint(CHART, files)
                self.assertEqual(rc, 0, out)

    def test_chart_app_version_is_the_project_version(self):
        version = re.search(r"project\(kturn VERSION ([0-9.]+)", read("CMakeLists.txt")).group(1)
        self.assertEqual(chart_file("Chart.yaml")["appVersion"], version)


class ReferencesTest(unittest.TestCase):
    def test_deployment_selectors_match_their_pods(self):
        for case, objects in RENDERS.items():
            for d in find(objects, "Deployment"):
                with self.subTest(case=case, deployment=d["metadata"]["name"]):
                    selector = d["spec"]["selector"]["matchLabels"]
                    labels = d["spec"]["template"]["metadata"]["labels"]
                    self.assertTrue(selector)
                    self.assertLessEqual(selector.items(), labels.items())

    def test_no_two_deployments_select_the_same_pods(self):
        for case, objects in RENDERS.items():
            selectors = [tuple(sorted(d["spec"]["selector"]["matchLabels"].items()))
                         for d in find(objects, "Deployment")]
            self.assertEqual(len(selectors), len(set(selectors)), case)

    def test_services_select_a_pod_and_target_its_ports(self):
        for case, objects in RENDERS.items():
            for svc in find(objects, "Service"):
                with self.subTest(case=case, service=svc["metadata"]["name"]):
                    selector = svc["spec"]["selector"]
                    matched = [(spec, labels) for _, spec, labels in pods(objects)
                               if selector.items() <= labels.items()]
                    self.assertEqual(len(matched), 1, "selects no pod, or more than one kind")
                    ports = [p for c in matched[0][0]["containers"] for p in c.get("ports", [])]
                    for port in svc["spec"]["ports"]:
                        target = port.get("targetPort", port["port"])
                        key = "name" if isinstance(target, str) else "containerPort"
                        self.assertIn(target, [p.get(key) for p in ports], port)
                        container_port = next(p for p in ports if p.get(key) == target)
                        self.assertEqual(port["protocol"], container_port["protocol"])

    def test_service_accounts_exist(self):
        for case, objects in RENDERS.items():
            for where, spec, _ in pods(objects):
                with self.subTest(case=case, pod=where):
                    name = spec.get("serviceAccountName")
                    self.assertTrue(name, "pods name their ServiceAccount")
                    one(objects, "ServiceAccount", name, NAMESPACE)

    def test_bindings_resolve(self):
        for case, objects in RENDERS.items():
            for b in find(objects, "ClusterRoleBinding") + find(objects, "RoleBinding"):
                with self.subTest(case=case, binding=b["metadata"]["name"]):
                    ref = b["roleRef"]
                    self.assertEqual(ref["apiGroup"], "rbac.authorization.k8s.io")
                    if b["kind"] == "RoleBinding":
                        self.assertIn(ref["kind"], ("Role", "ClusterRole"))
                    else:
                        self.assertEqual(ref["kind"], "ClusterRole")
                    ns = b["metadata"].get("namespace") if ref["kind"] == "Role" else None
                    one(objects, ref["kind"], ref["name"], ns)
                    for s in b["subjects"]:
                        self.assertEqual(s["kind"], "ServiceAccount")
                        one(objects, "ServiceAccount", s["name"], s["namespace"])

    def test_containers_pinned_probed_and_ported(self):
        for case, objects in RENDERS.items():
            for where, spec, _ in pods(objects):
                for c in spec["containers"]:
                    with self.subTest(case=case, pod=where, container=c["name"]):
                        repo, _, tag = c["image"].rpartition(":")
                        self.assertTrue(repo and tag and tag != "latest", c["image"])
                        self.assertIn(c["imagePullPolicy"], ("IfNotPresent", "Always"))
                        ports = c["ports"]
                        names = {p["name"] for p in ports}
                        numbers = {p["containerPort"] for p in ports}
                        for probe in ("livenessProbe", "readinessProbe"):
                            self.assertIn(probe, c)
                            handler = c[probe].get("httpGet") or c[probe].get("tcpSocket")
                            self.assertIsNotNone(handler, f"{probe}: httpGet or tcpSocket")
                            port = handler["port"]
                            self.assertIn(port, names if isinstance(port, str) else numbers)
                        self.assertIn("memory", c["resources"]["limits"])
                        self.assertIn("cpu", c["resources"]["requests"])


class BinariesTest(unittest.TestCase):
    """Container args against the CLI11 options in the mains, and the addresses they share."""

    def operator(self, objects):
        return component(objects, "Deployment", f"{RELEASE}-operator")

    def test_args_are_real_flags(self):
        binaries = {
            f"{RELEASE}-operator": "src/bin/operator_main.cc",
            f"{RELEASE}-auth": "src/bin/kturn_auth_main.cc",
        }
        for case, objects in RENDERS.items():
            for name, main in binaries.items():
                flags = cli_flags(main)
                if "addDiscoveryOptions" in read(main):  # the shared CDS and Kubernetes flags
                    flags |= cli_flags("src/k8s/discovery_flags.cc")
                for c in component(objects, "Deployment", name)["spec"]["template"]["spec"][
                        "containers"]:
                    for arg in c["args"]:
                        with self.subTest(case=case, binary=main, arg=arg):
                            self.assertIn(arg.partition("=")[0], flags)
            dataplane = one(objects, "Dataplane", "default")["spec"]
            flags = cli_flags("src/daemon/command_line.cc")
            for arg in dataplane["args"]:
                with self.subTest(case=case, binary="kturnd", arg=arg):
                    self.assertIn(arg.partition("=")[0], flags)

    def test_operator_addresses_agree(self):
        for case, objects in RENDERS.items():
            with self.subTest(case=case):
                container = self.operator(objects)["spec"]["template"]["spec"]["containers"][0]
                args = args_map(container["args"])
                cds = component(objects, "Service", f"{RELEASE}-config-discovery")
                port = cds["spec"]["ports"][0]
                self.assertEqual(args["--cds-addr"], f":{port['port']}")
                self.assertEqual(
                    {p["name"]: p["containerPort"] for p in container["ports"]}[port["targetPort"]],
                    port["port"])
                self.assertEqual(args["--cds-server-address"],
                                 f"{RELEASE}-config-discovery.{NAMESPACE}.svc:{port['port']}")
                self.assertEqual(args["--leader-election-namespace"], NAMESPACE)
                self.assertIn("--leader-elect", args)
                lease = component(objects, "Role", f"{RELEASE}-operator-leader-election")
                named = [r for r in lease["rules"] if r.get("resourceNames")]
                self.assertEqual([r["resourceNames"] for r in named],
                                 [[args["--leader-election-id"]]])
                env = {e["name"]: e for e in container["env"]}
                self.assertEqual(env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"],
                                 "metadata.name")
                dataplane = one(objects, "Dataplane", "default")["spec"]
                self.assertEqual(args["--dataplane-image"], dataplane["image"])

    def test_auth_follows_the_cds_service(self):
        for case, objects in RENDERS.items():
            with self.subTest(case=case):
                auth = component(objects, "Deployment", f"{RELEASE}-auth")
                spec = auth["spec"]["template"]["spec"]
                args = args_map(spec["containers"][0]["args"])
                self.assertEqual(args["--config"],
                                 f"https://{RELEASE}-config-discovery.{NAMESPACE}.svc:13478")
                self.assertRegex(args["--id"], r"^[a-z0-9-]+/[a-z0-9-]+$")
                self.assertEqual(int(args["--port"]), spec["containers"][0]["ports"][0][
                    "containerPort"])

    def test_auth_is_probed_on_its_own_routes_and_drains(self):
        """Readiness is kturn-auth's /ready (configs read, not shutting down), not an open port;
        after SIGTERM it goes on answering for shutdownDelaySeconds, within the grace period."""
        for sets, delay in (([], 5), (["auth.shutdownDelaySeconds=20"], 20)):
            with self.subTest(sets=sets):
                objects = helm.objects(helm.template(CHART, RELEASE, NAMESPACE, sets=sets))
                spec = component(objects, "Deployment", f"{RELEASE}-auth")["spec"]["template"][
                    "spec"]
                container = spec["containers"][0]
                self.assertEqual(container["readinessProbe"]["httpGet"],
                                 {"path": "/ready", "port": "http"})
                self.assertEqual(container["livenessProbe"]["httpGet"],
                                 {"path": "/live", "port": "http"})
                self.assertEqual(args_map(container["args"])["--shutdown-delay"], str(delay))
                self.assertGreater(spec["terminationGracePeriodSeconds"], delay)

    def test_auth_token_file_is_mounted(self):
        spec = component(FULL, "Deployment", f"{RELEASE}-auth")["spec"]["template"]["spec"]
        args = args_map(spec["containers"][0]["args"])
        mount = next(m for m in spec["containers"][0]["volumeMounts"]
                     if m["name"] == "bearer-token")
        self.assertEqual(os.path.dirname(args["--token-file"]), mount["mountPath"])
        volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
        self.assertEqual(volume["secret"]["items"][0]["path"],
                         os.path.basename(args["--token-file"]))
        self.assertNotIn("--token-file", args_map(component(
            DEFAULT, "Deployment", f"{RELEASE}-auth")["spec"]["template"]["spec"][
            "containers"][0]["args"]))

    def test_auth_without_a_gateway_follows_every_gateway(self):
        objects = helm.objects(helm.template(CHART, RELEASE, NAMESPACE, sets=["auth.gateway="]))
        notes = helm.notes(CHART, RELEASE, NAMESPACE, sets=["auth.gateway="])
        spec = component(objects, "Deployment", f"{RELEASE}-auth")["spec"]["template"]["spec"]
        args = args_map(spec["containers"][0]["args"])
        self.assertNotIn("--id", args)
        self.assertIn("--config", args)
        self.assertIn("TURN credentials for every Gateway", notes)


class RbacTest(unittest.TestCase):
    def test_operator_gets_exactly_what_the_code_uses(self):
        need = needed_permissions()
        for case, objects in RENDERS.items():
            with self.subTest(case=case):
                granted = granted_permissions(objects)
                self.assertEqual(sorted(need - granted), [], "the code needs, the chart lacks")
                self.assertEqual(sorted(granted - need), [], "granted, but no code uses it")

    def test_derivation_sees_what_the_operator_is_known_to_do(self):
        # A guard on the source parsing above: these must be among the derived permissions.
        need = needed_permissions()
        for p in [("cluster", GATEWAY_GROUP, "udproutes", "watch"),
                  ("cluster", STUNNER_GROUP, "udproutes", "watch"),
                  ("cluster", GATEWAY_GROUP, "gateways/status", "patch"),
                  ("cluster", STUNNER_GROUP, "tcproutes/status", "patch"),
                  ("cluster", "apps", "daemonsets", "create"),
                  ("cluster", "", "services", "delete"),
                  ("cluster", "", "secrets", "list"),
                  ("namespace", "coordination.k8s.io", "leases", "update"),
                  ("cluster", "authentication.k8s.io", "tokenreviews", "create"),
                  ("cluster", "authorization.k8s.io", "subjectaccessreviews", "create"),
                  ("cluster", "", "pods", "get"),
                  ("cluster", "apps", "replicasets", "get"),
                  ("namespace", "", "secrets", "create")]:
            self.assertIn(p, need)
        self.assertNotIn(("cluster", "", "secrets", "patch"), need)

    def rules(self, objects):
        for kind in ("ClusterRole", "Role"):
            for role in find(objects, kind):
                for rule in role["rules"]:
                    yield role["metadata"]["name"], rule

    def test_no_wildcards_or_dangerous_verbs(self):
        for case, objects in RENDERS.items():
            for role, rule in self.rules(objects):
                with self.subTest(case=case, role=role, rule=rule):
                    self.assertNotIn("nonResourceURLs", rule)
                    for field in ("apiGroups", "resources", "verbs"):
                        self.assertNotIn("*", rule[field])
                    self.assertFalse({"escalate", "bind", "impersonate", "deletecollection"} &
                                     set(rule["verbs"]))
                    if "secrets" in rule["resources"]:
                        if role.endswith("-cds-ca"):  # the operator's own CA, in its namespace
                            # create (cannot be limited to a name); get of the CA; get and
                            # update of the CA's certificate Secret, by name.
                            names = rule.get("resourceNames") or []
                            self.assertTrue(
                                set(rule["verbs"]) == {"create"} or
                                (set(rule["verbs"]) == {"get"} and names) or
                                (set(rule["verbs"]) == {"get", "update"} and
                                 names == [value(case, "operator", "cds", "tls",
                                                 "caCertSecret")]))
                        else:
                            self.assertLessEqual(set(rule["verbs"]), {"list", "watch"})

    def test_each_rule_names_one_api_group(self):
        # Gateway API and stunner.l7mp.io grants never share a rule (seed 000: access to one
        # group never covers the other, and a mixed rule hides which one a 403 is about).
        for case, objects in RENDERS.items():
            groups = set()
            for role, rule in self.rules(objects):
                with self.subTest(case=case, role=role, rule=rule):
                    self.assertEqual(len(rule["apiGroups"]), 1)
                    groups.add(rule["apiGroups"][0])
            self.assertLessEqual({GATEWAY_GROUP, STUNNER_GROUP}, groups)

    def test_lease_role_is_named_where_it_can_be(self):
        for case, objects in RENDERS.items():
            role = component(objects, "Role", f"{RELEASE}-operator-leader-election")
            with self.subTest(case=case):
                for rule in role["rules"]:
                    # create is authorized before the object has a name: it cannot be narrowed.
                    if "create" in rule["verbs"]:
                        self.assertEqual(rule["verbs"], ["create"])
                        self.assertNotIn("resourceNames", rule)
                    else:
                        self.assertTrue(rule.get("resourceNames"))

    def test_auth_shows_a_cds_token_and_trusts_the_cds_ca(self):
        for case, objects in RENDERS.items():
            with self.subTest(case=case):
                spec = component(objects, "Deployment", f"{RELEASE}-auth")["spec"]["template"][
                    "spec"]
                args = args_map(spec["containers"][0]["args"])
                mounts = {m["name"]: m["mountPath"] for m in spec["containers"][0]["volumeMounts"]}
                volumes = {v["name"]: v for v in spec["volumes"]}
                token = volumes["cds-token"]["projected"]["sources"][0]["serviceAccountToken"]
                self.assertEqual(token["audience"], value(case, "operator", "cds", "auth",
                                                          "audience"))
                self.assertEqual(os.path.join(mounts["cds-token"], token["path"]),
                                 args["--cds-token-file"])
                ca = volumes["cds-ca"]["secret"]
                # The Secret of the certificate alone: the kubelet fetches a mounted Secret
                # whole, so the CA's own Secret (with its key) must not be mounted here.
                self.assertEqual(ca["secretName"], value(case, "operator", "cds", "tls",
                                                         "caCertSecret"))
                self.assertNotEqual(ca["secretName"], value(case, "operator", "cds", "tls",
                                                            "caSecret"))
                # The certificate only: the CA's key stays with the operator.
                self.assertEqual(ca["items"], [{"key": "ca.crt", "path": "ca.crt"}])
                self.assertEqual(os.path.join(mounts["cds-ca"], "ca.crt"), args["--cds-ca-file"])
                operator_args = args_map(component(objects, "Deployment", f"{RELEASE}-operator")[
                    "spec"]["template"]["spec"]["containers"][0]["args"])
                self.assertIn("--cds-auth", operator_args)
                self.assertEqual(operator_args["--cds-token-audience"], token["audience"])
                self.assertEqual(operator_args["--cds-tls-secret"],
                                 value(case, "operator", "cds", "tls", "caSecret"))
                self.assertEqual(operator_args["--cds-tls-ca-cert-secret"], ca["secretName"])
                self.assertEqual(operator_args["--cds-tls-secret-namespace"], NAMESPACE)
                # Hosts beyond the Service's names, for clients outside the cluster.
                extra = value(case, "operator", "cds", "tls", "extraHosts")
                if extra:
                    self.assertEqual(operator_args["--cds-tls-extra-hosts"], ",".join(extra))
                else:
                    self.assertNotIn("--cds-tls-extra-hosts", operator_args)
        off = helm.objects(helm.template(CHART, RELEASE, NAMESPACE, sets=[
            "operator.cds.auth.enabled=false", "operator.cds.tls.enabled=false"]))
        spec = component(off, "Deployment", f"{RELEASE}-auth")["spec"]["template"]["spec"]
        self.assertNotIn("volumes", spec)
        args = args_map(spec["containers"][0]["args"])
        self.assertTrue(args["--config"].startswith("http://"))
        self.assertNotIn("--cds-token-file", args)
        operator_args = args_map(component(off, "Deployment", f"{RELEASE}-operator")["spec"][
            "template"]["spec"]["containers"][0]["args"])
        self.assertNotIn("--cds-auth", operator_args)
        self.assertNotIn("--cds-tls-secret", operator_args)
        self.assertEqual(find(off, "ClusterRole", f"{RELEASE}-auth-cds"), [])

    def test_auth_reads_only_its_gateway_over_cds(self):
        for case, objects in RENDERS.items():
            with self.subTest(case=case):
                role = one(objects, "ClusterRole", f"{RELEASE}-auth-cds")
                gateway = value(case, "auth", "gateway")
                self.assertEqual(role["rules"], [{
                    "apiGroups": ["cds.kturn.io"], "resources": ["configs"],
                    "resourceNames": [gateway.split("/")[1]], "verbs": ["get", "watch"]}])
        every = helm.objects(helm.template(CHART, RELEASE, NAMESPACE, sets=["auth.gateway="]))
        self.assertEqual(one(every, "ClusterRole", f"{RELEASE}-auth-cds")["rules"], [{
            "apiGroups": ["cds.kturn.io"], "resources": ["configs"],
            "verbs": ["get", "list", "watch"]}])

    def test_only_the_operator_has_rbac_and_a_token(self):
        # kturnd and kturn-auth call the Kubernetes API only to find the config discovery server
        # (kturnd -c k8s; kturn-auth without -c, as stunner-auth-service), one function in
        # src/k8s; the chart gives both an explicit origin, so their pods need no token.
        discovery = read("src/k8s/discovery_flags.cc")
        self.assertEqual(discovery.count("ApiClient::create"), 1)
        self.assertIn("ApiClient::create", function_body(
            "src/k8s/discovery_flags.cc", r"Result<std::string> discoverConfigDiscoveryServer\("))
        for path in ("src/bin/kturnd_main.cc", "src/bin/kturn_auth_main.cc"):
            self.assertEqual(read(path).count("discoverConfigDiscoveryServer("), 1, path)
        for objects in RENDERS.values():
            dataplane = one(objects, "Dataplane", "default")["spec"]
            self.assertNotIn("k8s", dataplane.get("args", []) + dataplane.get("command", []))
            auth = component(objects, "Deployment", f"{RELEASE}-auth")["spec"]["template"]
            origin = [a for a in auth["spec"]["containers"][0]["args"]
                      if a.startswith("--config=")]
            self.assertEqual(len(origin), 1)
            self.assertNotEqual(origin[0], "--config=k8s")
        for folder in ("auth", "daemon", "cds", "admin"):
            for path in glob.glob(os.path.join(REPO, "src", folder, "*")):
                self.assertNotIn("k8s/api_client.h", read(os.path.relpath(path, REPO)), path)
        for case, objects in RENDERS.items():
            with self.subTest(case=case):
                subjects = {s["name"] for b in find(objects, "ClusterRoleBinding") +
                            find(objects, "RoleBinding") for s in b["subjects"]}
                self.assertEqual(subjects, {f"{RELEASE}-operator", f"{RELEASE}-auth"})
                # kturn-auth's one grant is the CDS one, on a resource the API server does not
                # serve: no Kubernetes API access at all.
                for binding in find(objects, "ClusterRoleBinding") + find(objects, "RoleBinding"):
                    if {s["name"] for s in binding["subjects"]} == {f"{RELEASE}-auth"}:
                        role = one(objects, binding["roleRef"]["kind"], binding["roleRef"]["name"])
                        self.assertEqual({g for r in role["rules"] for g in r["apiGroups"]},
                                         {"cds.kturn.io"})
                sa = component(objects, "ServiceAccount", f"{RELEASE}-auth")
                self.assertIs(sa["automountServiceAccountToken"], False)
                pod = component(objects, "Deployment", f"{RELEASE}-auth")["spec"]["template"]
                self.assertIs(pod["spec"]["automountServiceAccountToken"], False)


class SecurityTest(unittest.TestCase):
    def check_pod(self, where, pod_ctx, containers, host_network=False, volumes=()):
        """The restricted Pod Security Standard, plus readOnlyRootFilesystem and drop ALL."""
        self.assertFalse(host_network, where)
        self.assertIs(pod_ctx.get("runAsNonRoot"), True, where)
        self.assertNotEqual(pod_ctx.get("runAsUser", 0), 0, where)
        self.assertEqual(pod_ctx.get("seccompProfile", {}).get("type"), "RuntimeDefault", where)
        for sysctl in pod_ctx.get("sysctls", []):
            self.assertIn(sysctl["name"], SAFE_SYSCTLS, where)
        for v in volumes:
            self.assertLessEqual(set(v) - {"name"}, RESTRICTED_VOLUME_TYPES, where)
        added = set()
        for name, ctx in containers:
            self.assertIs(ctx.get("allowPrivilegeEscalation"), False, f"{where}/{name}")
            self.assertIs(ctx.get("readOnlyRootFilesystem"), True, f"{where}/{name}")
            self.assertFalse(ctx.get("privileged", False), f"{where}/{name}")
            self.assertNotEqual(ctx.get("runAsUser", 1), 0, f"{where}/{name}")
            self.assertEqual(ctx["capabilities"]["drop"], ["ALL"], f"{where}/{name}")
            added |= set(ctx["capabilities"].get("add", []))
        return added

    def test_operator_and_auth_pods(self):
        for case, objects in RENDERS.items():
            for where, spec, _ in pods(objects):
                with self.subTest(case=case, pod=where):
                    self.assertFalse(spec.get("hostPID") or spec.get("hostIPC"))
                    added = self.check_pod(
                        where, spec["securityContext"],
                        [(c["name"], c["securityContext"]) for c in spec["containers"]],
                        spec.get("hostNetwork", False), spec.get("volumes", []))
                    self.assertEqual(added, set(), "the operator and auth need no capability")

    def test_dataplane_pods(self):
        for case, objects in RENDERS.items():
            spec = one(objects, "Dataplane", "default")["spec"]
            with self.subTest(case=case):
                added = self.check_pod("Dataplane default", spec["securityContext"],
                                       [("kturnd", spec["containerSecurityContext"])],
                                       spec["hostNetwork"])
                self.assertEqual(added, {"NET_BIND_SERVICE"})
                sysctls = {s["name"]: s["value"] for s in spec["securityContext"]["sysctls"]}
                self.assertEqual(sysctls, {"net.ipv4.ip_unprivileged_port_start": "0"})

    def test_offload_dataplane_adds_only_what_the_kernel_wants(self):
        """With the fast path on, kturnd is root (a non-root process gets no capabilities in
        Kubernetes) with BPF, PERFMON and NET_ADMIN added and every other capability still
        dropped; tests/interop/offload_capabilities_test.py runs kturnd with exactly the
        capabilities this render grants and with each of the three taken away."""
        spec = one(OFFLOAD, "Dataplane", "default")["spec"]
        self.assertEqual(spec["offloadEngine"], "TC")
        self.assertEqual(spec["offloadInterfaces"], ["eth0"])
        pod, ctx = spec["securityContext"], spec["containerSecurityContext"]
        self.assertEqual((pod["runAsUser"], pod["runAsNonRoot"]), (0, False))
        self.assertEqual(pod["seccompProfile"], {"type": "RuntimeDefault"})
        self.assertEqual(ctx["capabilities"]["drop"], ["ALL"])
        self.assertEqual(set(ctx["capabilities"]["add"]),
                         {"NET_BIND_SERVICE"} | OFFLOAD_CAPABILITIES)
        self.assertIs(ctx["allowPrivilegeEscalation"], False)
        self.assertIs(ctx["readOnlyRootFilesystem"], True)
        self.assertFalse(ctx.get("privileged", False))
        self.assertIs(spec["hostNetwork"], False)
        # Only the Dataplane changes: the default render's other objects stay as they are.
        self.assertEqual([o for o in OFFLOAD if o["kind"] != "Dataplane"],
                         [o for o in DEFAULT if o["kind"] != "Dataplane"])
        default = one(DEFAULT, "Dataplane", "default")["spec"]
        self.assertNotIn("offloadEngine", default)
        self.assertEqual(default["securityContext"]["runAsUser"], 65532)

    def test_shared_relay_sockets_add_only_what_the_kernel_wants(self):
        """dataplane.relaySockets=shared: the env that turns them on, root, and BPF, NET_ADMIN
        and NET_RAW added (tests/interop/offload_capabilities_test.py --relay-sockets runs
        kturnd with exactly these and with each taken away)."""
        spec = one(SHARED, "Dataplane", "default")["spec"]
        self.assertIn({"name": "KTURN_RELAY_SOCKETS", "value": "shared"}, spec["env"])
        self.assertNotIn("offloadEngine", spec)
        ctx = spec["containerSecurityContext"]
        self.assertEqual(spec["securityContext"]["runAsUser"], 0)
        self.assertEqual(ctx["capabilities"]["drop"], ["ALL"])
        self.assertEqual(set(ctx["capabilities"]["add"]),
                         {"NET_BIND_SERVICE", "BPF", "NET_ADMIN", "NET_RAW"})
        self.assertIs(ctx["allowPrivilegeEscalation"], False)
        self.assertNotIn("KTURN_RELAY_SOCKETS",
                         {e["name"] for e in one(DEFAULT, "Dataplane", "default")["spec"]["env"]})

    def test_restricted_namespace(self):
        ns = one(FULL, "Namespace", NAMESPACE)
        self.assertEqual(ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
                         "restricted")


class DataplaneTest(unittest.TestCase):
    def test_the_api_server_accepts_it(self):
        kubeconfig = os.path.join(os.environ["KTURN_CONTROL_PLANE"], "kubeconfig")
        for case, objects in dict(RENDERS, offload=OFFLOAD, shared=SHARED).items():
            with self.subTest(case=case):
                r = subprocess.run([helm.KUBECTL, "--kubeconfig", kubeconfig, "apply",
                                    "--dry-run=server", "-f", "-"], capture_output=True,
                                   text=True, input=json.dumps(one(objects, "Dataplane",
                                                                   "default")), timeout=60)
                self.assertEqual(r.returncode, 0, r.stderr)

    def test_sets_only_fields_the_operator_reads(self):
        body = function_body("src/k8s/stunner_api.cc", r"Dataplane readDataplane\(")
        read_fields = set(re.findall(r'"([a-z][A-Za-z]*)"', body))
        for case, objects in dict(RENDERS, offload=OFFLOAD, shared=SHARED).items():
            spec = one(objects, "Dataplane", "default")["spec"]
            with self.subTest(case=case):
                self.assertLessEqual(set(spec), read_fields)

    def test_named_as_the_operator_looks_it_up(self):
        self.assertIn('kDefaultDataplaneName = "default"', read("src/operator/well_known.h"))

    def test_kturnd_image_and_command(self):
        for case, objects in RENDERS.items():
            spec = one(objects, "Dataplane", "default")["spec"]
            with self.subTest(case=case):
                self.assertRegex(spec["image"], r"^kturn/kturnd:[0-9]")
                self.assertEqual(spec["command"], ["kturnd"])
                self.assertIn("-w", spec["args"])  # follow the CDS config, as STUNner's -w

    def test_replicas_left_to_an_autoscaler(self):
        spec = one(FULL, "Dataplane", "default")["spec"]
        self.assertNotIn("replicas", spec)
        self.assertIsNone(VALUES["dataplane"]["replicas"])
        stream = helm.template(CHART, RELEASE, NAMESPACE, sets=["dataplane.replicas=3"])
        self.assertIn("\n  replicas: 3\n", stream)

    def test_metrics_endpoint_follows_the_pod_monitor(self):
        self.assertIs(one(DEFAULT, "Dataplane", "default")["spec"]["enableMetricsEndpoint"],
                      False)
        self.assertIs(one(FULL, "Dataplane", "default")["spec"]["enableMetricsEndpoint"], True)


class MonitoringTest(unittest.TestCase):
    def test_pod_monitor_selects_gateway_pods(self):
        well_known = read("src/operator/well_known.h")
        app_label = re.search(r'kAppLabel = "([^"]+)"', well_known).group(1)
        app_value = re.search(r'kAppValue = "([^"]+)"', well_known).group(1)
        gateway_label = re.search(r'kRelatedGatewayName =\s*"([^"]+)"', well_known).group(1)
        metrics_port = re.search(r'\{"name", "([^"]+)"\},\s*\{"containerPort", ports\.metrics\}',
                                 read("src/operator/deployment_renderer.cc")).group(1)
        monitor = component(FULL, "PodMonitor", f"{RELEASE}-dataplane")["spec"]
        self.assertEqual(monitor["selector"]["matchLabels"], {app_label: app_value})
        self.assertEqual(monitor["selector"]["matchExpressions"],
                         [{"key": gateway_label, "operator": "Exists"}])
        self.assertEqual(monitor["namespaceSelector"], {"any": True})
        self.assertEqual([e["port"] for e in monitor["podMetricsEndpoints"]], [metrics_port])
        self.assertEqual(monitor["podMetricsEndpoints"][0]["path"], "/metrics")

    def test_hpa_uses_exported_series(self):
        documented = dict(re.findall(r"^\| `([a-z_]+)` \| (counter|gauge|histogram) \|",
                                     read("docs/metrics.md"), re.M))
        self.assertIn("stunner_allocations_active", documented)
        hpa = one(FULL, "HorizontalPodAutoscaler")
        names = [m["pods"]["metric"]["name"] for m in hpa["spec"]["metrics"]]
        self.assertTrue(names)
        for name in names:
            with self.subTest(metric=name):
                # The adapter serves a gauge under its own name, and a counter's rate as
                # <name without _total>_per_second (docs/kubernetes.md).
                base = name.removesuffix("_per_second") + "_total"
                self.assertTrue(documented.get(name) == "gauge" or
                                name.endswith("_per_second") and documented.get(base) == "counter",
                                f"{name}: not a series kturnd exports")

    def test_hpa_scales_the_gateway_deployment(self):
        # The operator names a Gateway's Deployment after the Gateway, in its namespace.
        self.assertRegex(read("src/operator/deployment_renderer.cc"),
                         r'Json meta = \{\{"name", gw\.meta\.name\},\s*'
                         r'\{"namespace", gw\.meta\.ns\}')
        hpa = one(FULL, "HorizontalPodAutoscaler")
        target = hpa["spec"]["scaleTargetRef"]
        self.assertEqual((target["apiVersion"], target["kind"]), ("apps/v1", "Deployment"))
        self.assertEqual((hpa["metadata"]["namespace"], target["name"]), ("stunner", "udp-gateway"))
        self.assertLessEqual(hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"])


    def test_hpa_behaviour_is_the_seeds(self):
        # Source document 001: scale up at once by 100 % or 10 pods per 15 s (the larger), down
        # after a 600 s window by 10 % a minute.
        behavior = one(FULL, "HorizontalPodAutoscaler")["spec"]["behavior"]
        up, down = behavior["scaleUp"], behavior["scaleDown"]
        self.assertEqual((up["stabilizationWindowSeconds"], up["selectPolicy"]), (0, "Max"))
        self.assertEqual(sorted((p["type"], p["value"], p["periodSeconds"]) for p in up["policies"]),
                         [("Percent", 100, 15), ("Pods", 10, 15)])
        self.assertEqual(down["stabilizationWindowSeconds"], 600)
        self.assertEqual([(p["type"], p["value"], p["periodSeconds"]) for p in down["policies"]],
                         [("Percent", 10, 60)])


class NetworkPolicyTest(unittest.TestCase):
    """deploy/helm/kturn/templates/networkpolicy.yaml: who may reach the operator and kturn-auth."""

    def policies(self, objects):
        return {p["metadata"]["name"]: p for p in find(objects, "NetworkPolicy")}

    def selected_pod(self, objects, policy):
        """(pod spec, labels) of the one Deployment whose pods the policy selects."""
        selector = policy["spec"]["podSelector"]
        self.assertEqual(set(selector), {"matchLabels"}, "select by labels only")
        matched = [(spec, labels) for _, spec, labels in pods(objects)
                   if selector["matchLabels"].items() <= labels.items()]
        self.assertEqual(len(matched), 1, "selects no pod, or more than one kind")
        return matched[0]

    def container_ports(self, spec):
        return [p for c in spec["containers"] for p in c.get("ports", [])]

    def admitted(self, objects, policy, port_name):
        """Every peer the policy admits to the selected pods' port of that name; None for a rule
        that admits every source (no `from`, or an empty one)."""
        spec, _ = self.selected_pod(objects, policy)
        port = next(p for p in self.container_ports(spec) if p["name"] == port_name)
        peers = []
        for rule in policy["spec"].get("ingress", []):
            covered = not rule.get("ports") or any(
                p.get("port") in (port["name"], port["containerPort"]) and
                p.get("protocol", "TCP") == port["protocol"] for p in rule["ports"])
            if covered:
                if not rule.get("from"):
                    return None
                peers += rule["from"]
        return peers

    def dataplane_peer(self):
        well_known = read("src/operator/well_known.h")
        app_label = re.search(r'kAppLabel = "([^"]+)"', well_known).group(1)
        app_value = re.search(r'kAppValue = "([^"]+)"', well_known).group(1)
        return {"namespaceSelector": {}, "podSelector": {"matchLabels": {app_label: app_value}}}

    def auth_peer(self, objects):
        # No namespaceSelector: the policy's own namespace, the release's.
        auth = component(objects, "Deployment", f"{RELEASE}-auth")
        return {"podSelector": {"matchLabels": auth["spec"]["selector"]["matchLabels"]}}

    def test_policies_exist_by_default(self):
        self.assertIs(VALUES["networkPolicy"]["enabled"], True)
        for case, objects in RENDERS.items():
            with self.subTest(case=case):
                self.assertEqual(sorted(self.policies(objects)),
                                 [f"{RELEASE}-auth", f"{RELEASE}-operator"])
                for policy in self.policies(objects).values():
                    self.assertEqual(policy["metadata"]["namespace"], NAMESPACE)

    def test_policies_select_their_deployments_pods(self):
        for case, objects in RENDERS.items():
            for name, policy in self.policies(objects).items():
                with self.subTest(case=case, policy=name):
                    _, labels = self.selected_pod(objects, policy)
                    deployment = component(objects, "Deployment", name)
                    self.assertEqual(labels, deployment["spec"]["template"]["metadata"]["labels"])

    def test_policies_name_ports_the_containers_have(self):
        for case, objects in RENDERS.items():
            for name, policy in self.policies(objects).items():
                spec, _ = self.selected_pod(objects, policy)
                ports = self.container_ports(spec)
                for rule in policy["spec"]["ingress"]:
                    self.assertTrue(rule.get("ports"), f"{name}: a rule for every port")
                    for port in rule["ports"]:
                        with self.subTest(case=case, policy=name, port=port):
                            key = "name" if isinstance(port["port"], str) else "containerPort"
                            self.assertIn(port["port"], [p[key] for p in ports])
                            container_port = next(p for p in ports if p[key] == port["port"])
                            self.assertEqual(port["protocol"], container_port["protocol"])

    def test_services_target_ports_the_policies_open(self):
        # What the operator's and kturn-auth's Services carry is what the policies admit to.
        for case, objects in RENDERS.items():
            for service, policy in ((f"{RELEASE}-config-discovery", f"{RELEASE}-operator"),
                                    (f"{RELEASE}-auth", f"{RELEASE}-auth")):
                with self.subTest(case=case, service=service):
                    target = component(objects, "Service", service)["spec"]["ports"][0][
                        "targetPort"]
                    self.assertTrue(self.admitted(objects, self.policies(objects)[policy],
                                                  target))

    def test_ingress_only(self):
        # Egress stays open: the operator calls the API server, whose address no portable rule
        # names (networkpolicy.yaml).
        for case, objects in RENDERS.items():
            for name, policy in self.policies(objects).items():
                with self.subTest(case=case, policy=name):
                    self.assertEqual(policy["spec"]["policyTypes"], ["Ingress"])
                    self.assertNotIn("egress", policy["spec"])

    def test_cds_admits_the_dataplane_and_auth_only(self):
        for case, objects in RENDERS.items():
            with self.subTest(case=case):
                policy = self.policies(objects)[f"{RELEASE}-operator"]
                want = ([self.dataplane_peer(), self.auth_peer(objects)] +
                        value(case, "networkPolicy", "cds", "extraFrom"))
                self.assertEqual(self.admitted(objects, policy, "cds"), want)
                # The auth peer selects the kturn-auth pods of this render.
                _, labels = self.selected_pod(objects, self.policies(objects)[f"{RELEASE}-auth"])
                self.assertLessEqual(want[1]["podSelector"]["matchLabels"].items(),
                                     labels.items())
        self.assertEqual(VALUES["networkPolicy"]["cds"]["extraFrom"], [])
        self.assertTrue(ALL_FEATURES_VALUES["networkPolicy"]["cds"]["extraFrom"])

    def test_cds_without_auth_admits_the_dataplane_only(self):
        objects = helm.objects(helm.template(CHART, RELEASE, NAMESPACE,
                                             sets=["auth.enabled=false"]))
        self.assertEqual(sorted(self.policies(objects)), [f"{RELEASE}-operator"])
        self.assertEqual(self.admitted(objects, self.policies(objects)[f"{RELEASE}-operator"],
                                       "cds"), [self.dataplane_peer()])

    def test_metrics_and_health_admit_only_monitoring(self):
        self.assertEqual(VALUES["networkPolicy"]["monitoring"]["from"], [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}])
        for case, objects in RENDERS.items():
            policy = self.policies(objects)[f"{RELEASE}-operator"]
            for port in ("metrics", "health"):
                with self.subTest(case=case, port=port):
                    self.assertEqual(self.admitted(objects, policy, port),
                                     value(case, "networkPolicy", "monitoring", "from"))

    def test_auth_admits_only_the_configured_peers(self):
        # The default: pods of the release namespace only (no namespaceSelector), until the user
        # names the signalling server's.
        self.assertEqual(VALUES["networkPolicy"]["auth"]["from"], [{"podSelector": {}}])
        for case, objects in RENDERS.items():
            with self.subTest(case=case):
                policy = self.policies(objects)[f"{RELEASE}-auth"]
                self.assertEqual(self.admitted(objects, policy, "http"),
                                 value(case, "networkPolicy", "auth", "from"))

    def test_empty_peer_lists_admit_no_one(self):
        # An empty `from` in a NetworkPolicy rule admits every source: the chart leaves the rule
        # out instead.
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            yaml.safe_dump({"networkPolicy": {"auth": {"from": []},
                                              "monitoring": {"from": []}}}, f)
            f.flush()
            objects = helm.objects(helm.template(CHART, RELEASE, NAMESPACE, value_files=[f.name]))
        policies = self.policies(objects)
        self.assertEqual(policies[f"{RELEASE}-auth"]["spec"]["ingress"], [])
        self.assertEqual(self.admitted(objects, policies[f"{RELEASE}-auth"], "http"), [])
        operator = policies[f"{RELEASE}-operator"]
        for port in ("metrics", "health"):
            self.assertEqual(self.admitted(objects, operator, port), [], port)
        self.assertEqual(len(self.admitted(objects, operator, "cds")), 2)

    def test_disabled_renders_none(self):
        objects = helm.objects(helm.template(CHART, RELEASE, NAMESPACE,
                                             sets=["networkPolicy.enabled=false"]))
        self.assertEqual(find(objects, "NetworkPolicy"), [])
        self.assertTrue(find(objects, "Deployment"))

    def test_the_api_server_accepts_them(self):
        # A server-side dry run in namespace default: the release namespace need not exist in
        # the test control plane, and nothing in the policies depends on it.
        kubeconfig = os.path.join(os.environ["KTURN_CONTROL_PLANE"], "kubeconfig")
        for case, objects in RENDERS.items():
            for name, policy in self.policies(objects).items():
                with self.subTest(case=case, policy=name):
                    local = json.loads(json.dumps(policy))
                    local["metadata"]["namespace"] = "default"
                    r = subprocess.run([helm.KUBECTL, "--kubeconfig", kubeconfig, "apply",
                                        "--dry-run=server", "-f", "-"], capture_output=True,
                                       text=True, input=json.dumps(local), timeout=60)
                    self.assertEqual(r.returncode, 0, r.stderr)


class GeneratedFilesTest(unittest.TestCase):
    def test_chart_crds_are_deploy_crds(self):
        # One copy: the chart's crds/ is a symlink to deploy/crds (Helm follows symlinks when it
        # loads a chart directory, and `helm package` stores the files it points to).
        link = os.path.join(CHART, "crds")
        self.assertTrue(os.path.islink(link), "deploy/helm/kturn/crds must link to deploy/crds")
        self.assertEqual(os.path.realpath(link),
                         os.path.realpath(os.path.join(REPO, "deploy", "crds")))
        # ... and the renderer installs every CRD through it, and nothing else (no README).
        stream = helm.template(CHART, RELEASE, NAMESPACE, include_crds=True)
        self.assertEqual(
            sorted(re.findall(r"^# Source: kturn/crds/(\S+)$", stream, re.M)),
            sorted(os.path.basename(p) for p in
                   glob.glob(os.path.join(REPO, "deploy", "crds", "*.yaml"))))

    def test_manifests_are_up_to_date(self):
        with open(os.path.join(REPO, helm.MANIFEST_PATH), encoding="utf-8") as f:
            current = f.read()
        self.assertTrue(current == helm.canonical_manifests(),
                        f"{helm.MANIFEST_PATH} is stale: run make manifests")

    def test_manifests_hold_crds_namespace_and_the_default_release(self):
        objects = helm.objects(read(helm.MANIFEST_PATH))
        kinds = [o["kind"] for o in objects]
        self.assertEqual(kinds[:5], ["CustomResourceDefinition"] * 5)
        self.assertEqual(kinds[5], "Namespace")
        self.assertEqual(len(find(objects, "Deployment")), 2)
        self.assertEqual(one(objects, "Namespace")["metadata"]["name"], NAMESPACE)


if __name__ == "__main__":
    unittest.main()
