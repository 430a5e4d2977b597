#!/usr/bin/python3
"""The Gateway API CRDs that the Helm chart ships (deploy/helm/kturn/charts/gateway-api-*-crds,
rendered by templates/gateway-api-crds.yaml) and STUNner's two switches for them,
standardCrds.enabled (on by default) and experimentalCrds.enabled (off):

  PinnedReleaseTest  each subchart's files/ is the release the test tools pin
                     (GATEWAY_API_VERSION, scripts/build-test-tools.sh): every CRD file of that
                     channel in the sigs.k8s.io/gateway-api module, byte for byte below a header
                     naming it, and no other file (skipped, saying why, when the tool cache does
                     not hold that release: make test-tools); scripts/update-gateway-api-crds.sh
                     --check agrees; the subcharts' versions and the files' bundle-version
                     annotations are the pin (no tool cache needed);
  SwitchesTest       `helm template`: the default renders the standard channel's CRDs, each once
                     and as the file has it but for the chart's labels and
                     helm.sh/resource-policy: keep; standardCrds.enabled=false renders none and
                     leaves the rest of the release as it was; experimentalCrds.enabled=true
                     renders the experimental channel instead, whatever standardCrds.enabled
                     says, without a duplicate (also with --include-crds); `helm lint --strict`
                     passes for each; the seed's Gateway API kinds are served by the default
                     channel, every version the operator reads by the experimental one;
                     deploy/manifests/kturn.yaml holds none of them (scripts/update-manifests.sh
                     says why);
  InstallTest        the real Helm against the real API server: one more kube-apiserver on the
                     test control plane's etcd (KTURN_CONTROL_PLANE), under a prefix of its own:
                     on a cluster without any CRD, `helm install` with the defaults is all the
                     seed's manifests need (deploy/examples/seed000 applies); `helm upgrade` to
                     the experimental channel serves gateway.networking.k8s.io/v1alpha2 UDPRoute;
                     `helm uninstall` keeps the CRDs and the seed's Gateway. On a cluster whose
                     Gateway API CRDs someone else applied, the default install stops naming
                     one, standardCrds.enabled=false installs and leaves them as they were, and
                     --take-ownership --force-conflicts takes them over (docs/kubernetes.md).

  /usr/bin/python3 tests/deploy/gateway_api_crds_test.py [-v] [TestClass ...]
      KTURN_TEST_TOOLS: the tools folder (build/test-tools); KTURN_CONTROL_PLANE: the running
      control plane's folder (InstallTest is skipped without it)
"""

import functools
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import helm  # noqa: E402

CHART = os.path.join(REPO, "deploy", "helm", "kturn")
RELEASE = "kturn"
NAMESPACE = "kturn-system"
GROUP = "gateway.networking.k8s.io"
CHANNELS = ("standard", "experimental")
SWITCH = {"standard": "standardCrds", "experimental": "experimentalCrds"}
CONTROL_PLANE_SCRIPT = os.path.join(REPO, "tests", "support", "control_plane.py")
KEEP = ("helm.sh/resource-policy", "keep")


def read(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return f.read()


PIN = re.search(r"^GATEWAY_API_VERSION=(v[0-9.]+)", read("scripts/build-test-tools.sh"),
                re.M).group(1)


def subchart(channel):
    return os.path.join(CHART, "charts", f"gateway-api-{channel}-crds")


def shipped_files(channel):
    """{file name: text} of a subchart's files/."""
    out = {}
    for path in sorted(glob.glob(os.path.join(subchart(channel), "files", "*"))):
        with open(path, encoding="utf-8") as f:
            out[os.path.basename(path)] = f.read()
    return out


@functools.lru_cache(maxsize=None)
def shipped_crds(channel):
    """{CRD name: object} of a subchart's files (one CRD each)."""
    out = {}
    for name, text in shipped_files(channel).items():
        docs = [d for d in yaml.load_all(text, Loader=helm.KubeYamlLoader) if d is not None]
        assert len(docs) == 1, f"{channel}/{name}: {len(docs)} documents"
        out[docs[0]["metadata"]["name"]] = docs[0]
    return out


def gateway_crds(objects):
    return [o for o in objects if o["kind"] == "CustomResourceDefinition" and
            o["spec"]["group"] == GROUP]


def render(sets=(), include_crds=False):
    return helm.objects(helm.template(CHART, RELEASE, NAMESPACE, include_crds=include_crds,
                                      sets=sets))


def served(crd):
    return {v["name"] for v in crd["spec"]["versions"] if v["served"]}


# ---------------------------------------------------------------------------------------------

class PinnedReleaseTest(unittest.TestCase):
    """The subcharts' files against the pinned module in the tool cache."""

    @classmethod
    def setUpClass(cls):
        cls.source = os.path.join(helm.TOOLS, "gateway-api")
        if not os.path.isdir(os.path.join(cls.source, "standard")):
            raise unittest.SkipTest(f"no Gateway API CRDs in {cls.source}: make test-tools "
                                    "puts the pinned release there")
        cached = None
        try:
            with open(os.path.join(helm.TOOLS, "versions.env"), encoding="utf-8") as f:
                cached = dict(line.strip().split("=", 1) for line in f if "=" in line).get(
                    "GATEWAY_API_VERSION")
        except FileNotFoundError:
            pass
        if cached != PIN:
            raise unittest.SkipTest(f"{helm.TOOLS} holds Gateway API {cached}, the pin is {PIN}: "
                                    "make test-tools")

    def upstream(self, channel):
        out = {}
        for path in sorted(glob.glob(os.path.join(self.source, channel,
                                                  f"{GROUP}_*.yaml"))):
            with open(path, encoding="utf-8") as f:
                out[os.path.basename(path)] = f.read()
        self.assertTrue(out, f"{self.source}/{channel}: no CRD files")
        return out

    def test_files_are_the_pinned_releases(self):
        for channel in CHANNELS:
            upstream, shipped = self.upstream(channel), shipped_files(channel)
            with self.subTest(channel=channel):
                self.assertEqual(sorted(shipped), sorted(upstream),
                                 "other files than the release's: run make manifests")
            for name in sorted(set(upstream) & set(shipped)):
                with self.subTest(channel=channel, file=name):
                    text = shipped[name]
                    self.assertTrue(text.endswith(upstream[name]),
                                    "differs from the pinned release's: run make manifests")
                    header = text[:len(text) - len(upstream[name])]
                    self.assertTrue(header and all(
                        line.startswith("#") for line in header.splitlines()),
                        "a comment header, then the file")
                    for words in (f"sigs.k8s.io/gateway-api@{PIN}", f"config/crd/{channel}/{name}",
                                  "unchanged", "scripts/update-gateway-api-crds.sh"):
                        self.assertIn(words, " ".join(header.replace("#", " ").split()))

    def test_the_script_agrees(self):
        r = subprocess.run([os.path.join(REPO, "scripts", "update-gateway-api-crds.sh"),
                            "--check"], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, KTURN_TEST_TOOLS=helm.TOOLS))
        self.assertEqual(r.returncode, 0, r.stderr)


class ChartMetadataTest(unittest.TestCase):
    """What holds without the tool cache: versions, dependencies, defaults."""

    def test_subcharts_are_the_pinned_release(self):
        for channel in CHANNELS:
            with self.subTest(channel=channel):
                with open(os.path.join(subchart(channel), "Chart.yaml"), encoding="utf-8") as f:
                    meta = yaml.safe_load(f)
                self.assertEqual(meta["name"], f"gateway-api-{channel}-crds")
                self.assertEqual((meta["version"], meta["appVersion"]), (PIN[1:], PIN))
                crds = shipped_crds(channel)
                self.assertEqual(len(crds), len(shipped_files(channel)))
                for name, crd in crds.items():
                    annotations = crd["metadata"]["annotations"]
                    self.assertEqual(annotations["gateway.networking.k8s.io/bundle-version"], PIN,
                                     name)
                    self.assertEqual(annotations["gateway.networking.k8s.io/channel"], channel,
                                     name)

    def test_the_channels_define_the_same_crds(self):
        # Why the experimental channel replaces the standard one rather than adding to it.
        self.assertEqual(sorted(shipped_crds("standard")), sorted(shipped_crds("experimental")))

    def test_dependencies_and_defaults_are_stunners(self):
        with open(os.path.join(CHART, "Chart.yaml"), encoding="utf-8") as f:
            deps = {d["alias"]: d for d in yaml.safe_load(f)["dependencies"]}
        with open(os.path.join(CHART, "values.yaml"), encoding="utf-8") as f:
            values = yaml.safe_load(f)
        self.assertEqual(sorted(deps), sorted(SWITCH.values()))
        for channel, switch in SWITCH.items():
            with self.subTest(switch=switch):
                dep = deps[switch]
                self.assertEqual(dep["name"], f"gateway-api-{channel}-crds")
                self.assertEqual(dep["condition"], f"{switch}.enabled")
                self.assertEqual(dep["version"], PIN[1:])
                # In the chart's own charts/: nothing to fetch, no `helm dependency build`.
                self.assertEqual(dep["repository"], f"file://./charts/gateway-api-{channel}-crds")
        self.assertIs(values["standardCrds"]["enabled"], True)
        self.assertIs(values["experimentalCrds"]["enabled"], False)


class SwitchesTest(unittest.TestCase):
    """`helm template` with each combination of the switches."""

    @classmethod
    def setUpClass(cls):
        cls.default = render()

    def assert_channel(self, objects, channel):
        """The channel's CRDs, each once, as its files have them but for the chart's labels
        and the keep policy."""
        rendered = gateway_crds(objects)
        names = [o["metadata"]["name"] for o in rendered]
        self.assertEqual(sorted(names), sorted(set(names)), "a CRD rendered twice")
        want = shipped_crds(channel)
        self.assertEqual(sorted(names), sorted(want))
        # The chart's labels (templates/_helpers.tpl kturn.labels): a Deployment's, less its
        # component.
        labels = dict(next(o for o in objects if o["kind"] == "Deployment")["metadata"]["labels"])
        del labels["app.kubernetes.io/component"]
        for crd in rendered:
            name = crd["metadata"]["name"]
            with self.subTest(channel=channel, crd=name):
                meta, file_meta = crd["metadata"], want[name]["metadata"]
                self.assertEqual(meta["annotations"],
                                 dict(file_meta.get("annotations", {}), **dict([KEEP])))
                self.assertEqual(meta["labels"], dict(file_meta.get("labels", {}), **labels))
                self.assertEqual({k: v for k, v in crd.items() if k != "metadata"},
                                 {k: v for k, v in want[name].items() if k != "metadata"})
                self.assertEqual(set(meta), set(file_meta) | {"labels", "annotations"})

    def test_default_renders_the_standard_channel(self):
        self.assert_channel(self.default, "standard")

    def test_standard_off_renders_none(self):
        off = render(["standardCrds.enabled=false"])
        self.assertEqual(gateway_crds(off), [])
        self.assertEqual(off, [o for o in self.default if o not in gateway_crds(self.default)])

    def test_experimental_replaces_standard(self):
        for sets in (["experimentalCrds.enabled=true"],
                     ["experimentalCrds.enabled=true", "standardCrds.enabled=false"]):
            with self.subTest(sets=sets):
                objects = render(sets)
                self.assert_channel(objects, "experimental")
                ids = [(o["apiVersion"], o["kind"], o["metadata"].get("namespace"),
                        o["metadata"]["name"]) for o in objects]
                self.assertEqual(len(ids), len(set(ids)), "duplicate objects")
                rest = [o for o in objects if o not in gateway_crds(objects)]
                self.assertEqual(rest, [o for o in self.default
                                        if o not in gateway_crds(self.default)])

    def test_include_crds_adds_no_copy(self):
        # What Argo CD renders: the chart's crds/ holds kturn's CRDs only.
        for sets, channel in (([], "standard"), (["experimentalCrds.enabled=true"],
                                                 "experimental")):
            with self.subTest(channel=channel):
                objects = render(sets, include_crds=True)
                self.assert_channel(objects, channel)
                self.assertEqual(
                    sorted({o["spec"]["group"] for o in objects
                            if o["kind"] == "CustomResourceDefinition"}),
                    sorted({GROUP, "stunner.l7mp.io"}))

    def test_lint(self):
        for sets in ([], ["standardCrds.enabled=false"], ["experimentalCrds.enabled=true"],
                     ["standardCrds.enabled=false", "experimentalCrds.enabled=true"]):
            with self.subTest(sets=sets):
                rc, out = helm.lint(CHART, sets=sets)
                self.assertEqual(rc, 0, out)

    def test_notes_name_the_channel(self):
        self.assertIn(f"Gateway API CRDs: {PIN}, standard channel",
                      helm.notes(CHART, RELEASE, NAMESPACE))
        self.assertIn(f"Gateway API CRDs: {PIN}, experimental channel",
                      helm.notes(CHART, RELEASE, NAMESPACE,
                                 sets=["experimentalCrds.enabled=true"]))
        self.assertIn("not installed by this release",
                      helm.notes(CHART, RELEASE, NAMESPACE, sets=["standardCrds.enabled=false"]))

    def test_the_default_serves_the_seed(self):
        crds = {c["spec"]["names"]["kind"]: c for c in gateway_crds(self.default)}
        seen = 0
        for path in sorted(glob.glob(os.path.join(REPO, "deploy", "examples", "seed000",
                                                  "*.yaml"))):
            for doc in helm.objects(read(os.path.relpath(path, REPO))):
                group, _, version = doc["apiVersion"].rpartition("/")
                if group == GROUP:
                    seen += 1
                    self.assertIn(version, served(crds[doc["kind"]]),
                                  f"{path}: {doc['kind']} {version}")
        self.assertGreater(seen, 0)

    def test_the_versions_the_operator_reads(self):
        # src/k8s/resource_type.cc: {kGatewayGroup, "<version>", "<Kind>", ...}. Every one is
        # served by the experimental channel; the standard channel lacks only UDPRoute v1alpha2
        # (the operator then reads that kind as empty), which values.yaml and docs/kubernetes.md
        # send Gateway API UDPRoute users to the experimental channel for.
        read_versions = re.findall(r'\{kGatewayGroup, "(\w+)", "(\w+)"',
                                   read("src/k8s/resource_type.cc"))
        self.assertIn(("v1alpha2", "UDPRoute"), read_versions)
        for channel in CHANNELS:
            crds = {c["spec"]["names"]["kind"]: c for c in shipped_crds(channel).values()}
            missing = sorted((v, k) for v, k in read_versions if v not in served(crds[k]))
            with self.subTest(channel=channel):
                self.assertEqual(missing, [] if channel == "experimental"
                                 else [("v1alpha2", "UDPRoute")])

    def test_manifests_leave_them_out(self):
        manifests = helm.objects(read(helm.MANIFEST_PATH))
        self.assertEqual(gateway_crds(manifests), [])
        self.assertTrue([o for o in manifests if o["kind"] == "CustomResourceDefinition"])


# ---------------------------------------------------------------------------------------------

class ApiServer:
    """One more kube-apiserver on the control plane's etcd, under an etcd prefix of its own: a
    cluster of its own, with the control plane's CRDs (its Gateway API CRDs applied by the
    field manager kturn-test) or, with no_crds, none."""

    def __init__(self, control_plane, no_crds):
        self.dir = tempfile.mkdtemp(prefix="kturn-gateway-api-crds-")
        prefix = f"/kturn-gateway-api-crds-{os.getpid()}-{'empty' if no_crds else 'crds'}"
        argv = [sys.executable, CONTROL_PLANE_SCRIPT, "apiserver", "--dir", control_plane,
                "--out", self.dir, "--etcd-prefix", prefix] + (["--no-crds"] if no_crds else [])
        self.proc = None
        # As tests/support/control_plane.h's ExtraApiServer: a kube-apiserver that joins while
        # another creates a Service can exit at start (upstream's ClusterIP repair race).
        for _ in range(3):
            if self.launch(argv):
                self.kubeconfig = os.path.join(self.dir, "kubeconfig")
                return
        with open(os.path.join(self.dir, "log"), errors="replace") as f:
            log = f.read()[-4000:]
        self.stop()
        raise RuntimeError(f"one more kube-apiserver did not start:\n{log}")

    def launch(self, argv):
        with open(os.path.join(self.dir, "log"), "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if os.path.exists(os.path.join(self.dir, "port")):
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.1)
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)
        return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # it stops its kube-apiserver, then exits
            self.proc.wait(60)
        shutil.rmtree(self.dir, ignore_errors=True)

    def helm(self, *args):
        return helm.run("--kubeconfig", self.kubeconfig, *args)

    def kubectl(self, *args, input=None):
        r = subprocess.run([helm.KUBECTL, "--kubeconfig", self.kubeconfig, *args],
                           capture_output=True, text=True, input=input, timeout=120)
        return r.returncode, r.stdout, r.stderr

    def crds(self):
        rc, out, err = self.kubectl("get", "crd", "-o", "json")
        assert rc == 0, err
        return {c["metadata"]["name"]: c for c in json.loads(out)["items"]}

    def until(self, what, *args, input=None, limit=60):
        """kubectl ARGS until it succeeds: a kind is served a moment after its CRD is
        Established (429, or "no matches for kind", meanwhile)."""
        deadline = time.monotonic() + limit
        while True:
            rc, out, err = self.kubectl(*args, input=input)
            if rc == 0:
                return out
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: kubectl {' '.join(args)}: {err.strip()}")
            time.sleep(0.5)


def seed_manifests():
    return "\n---\n".join(read(os.path.relpath(p, REPO)) for p in sorted(
        glob.glob(os.path.join(REPO, "deploy", "examples", "seed000", "*.yaml"))))


class InstallTest(unittest.TestCase):
    """`helm install`, `upgrade` and `uninstall` against clusters of their own."""

    @classmethod
    def setUpClass(cls):
        cls.control_plane = os.environ.get("KTURN_CONTROL_PLANE")
        if not cls.control_plane:
            raise unittest.SkipTest("no KTURN_CONTROL_PLANE: ctest starts the control plane "
                                    "(tests/support/control_plane.py up)")

    def cluster(self, no_crds):
        server = ApiServer(self.control_plane, no_crds)
        self.addCleanup(server.stop)
        return server

    def ok(self, result, what):
        rc, out, err = result
        self.assertEqual(rc, 0, f"{what}: {err.strip()}")
        return out

    def channel_of(self, crd):
        return crd["metadata"]["annotations"]["gateway.networking.k8s.io/channel"]

    def test_install_on_an_empty_cluster(self):
        c = self.cluster(no_crds=True)
        self.assertEqual(c.crds(), {})
        self.ok(c.helm("install", RELEASE, CHART, "-n", NAMESPACE, "--create-namespace",
                       "--wait=hookOnly"), "helm install")
        crds = c.crds()
        gateway = {n: crd for n, crd in crds.items() if crd["spec"]["group"] == GROUP}
        self.assertEqual(sorted(gateway), sorted(shipped_crds("standard")))
        self.assertEqual(len(crds) - len(gateway),
                         len(glob.glob(os.path.join(REPO, "deploy", "crds", "*.yaml"))))
        for name, crd in gateway.items():
            with self.subTest(crd=name):
                self.assertEqual(self.channel_of(crd), "standard")
                self.assertEqual(crd["metadata"]["annotations"]["meta.helm.sh/release-name"],
                                 RELEASE)

        # The seed's manifests, nothing else first.
        self.ok(c.kubectl("create", "namespace", "stunner"), "namespace stunner")
        self.ok(c.kubectl("create", "namespace", "media"), "namespace media")
        c.until("the seed's manifests", "apply", "-f", "-", input=seed_manifests())
        self.ok(c.kubectl("get", "gateway", "media-server-gateway", "-n", "media"), "Gateway")

        # The experimental channel, by an upgrade: Gateway API UDPRoute at the operator's
        # version.
        self.ok(c.helm("upgrade", RELEASE, CHART, "-n", NAMESPACE, "--wait=hookOnly",
                       "--reuse-values", "--set", "experimentalCrds.enabled=true"),
                "helm upgrade")
        crds = c.crds()
        for name in shipped_crds("experimental"):
            self.assertEqual(self.channel_of(crds[name]), "experimental", name)
        c.until("UDPRoute v1alpha2 served", "get", f"udproutes.v1alpha2.{GROUP}", "-A")

        # Uninstalled: the CRDs stay, and with them the seed's Gateway.
        self.ok(c.helm("uninstall", RELEASE, "-n", NAMESPACE, "--wait=hookOnly"),
                "helm uninstall")
        self.assertLessEqual(set(shipped_crds("experimental")), set(c.crds()))
        self.ok(c.kubectl("get", "gateway", "media-server-gateway", "-n", "media"),
                "the seed's Gateway after helm uninstall")

    def test_install_where_someone_else_applied_them(self):
        c = self.cluster(no_crds=False)
        before = {n: crd for n, crd in c.crds().items() if crd["spec"]["group"] == GROUP}
        self.assertTrue(before)
        rc, _, err = c.helm("install", "a", CHART, "-n", "a", "--create-namespace",
                            "--wait=hookOnly")
        self.assertNotEqual(rc, 0, "helm install took over CRDs it did not make")
        self.assertRegex(err, rf'CustomResourceDefinition "[a-z]+\.{re.escape(GROUP)}" .*'
                              r"exists and cannot be imported into the current release")

        # Left to their owner.
        self.ok(c.helm("install", "b", CHART, "-n", "b", "--create-namespace", "--wait=hookOnly",
                       "--set", "standardCrds.enabled=false"), "helm install, standardCrds off")
        after = {n: crd for n, crd in c.crds().items() if crd["spec"]["group"] == GROUP}
        self.assertEqual({n: crd["metadata"]["resourceVersion"] for n, crd in after.items()},
                         {n: crd["metadata"]["resourceVersion"] for n, crd in before.items()})
        self.ok(c.helm("uninstall", "b", "-n", "b", "--wait=hookOnly"), "helm uninstall b")

        # Taken over: another manager's server-side apply is a conflict until forced.
        self.ok(c.helm("install", "c", CHART, "-n", "c", "--create-namespace", "--wait=hookOnly",
                       "--take-ownership", "--force-conflicts"), "helm install --take-ownership")
        for name, crd in c.crds().items():
            if crd["spec"]["group"] == GROUP:
                with self.subTest(crd=name):
                    self.assertEqual(self.channel_of(crd), "standard")
                    self.assertEqual(
                        crd["metadata"]["annotations"]["meta.helm.sh/release-name"], "c")


if __name__ == "__main__":
    unittest.main()
