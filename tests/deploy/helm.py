"""The real Helm for the deploy tests: `helm template`, `helm lint` and the chart's NOTES, with the
helm that scripts/build-test-tools.sh built (KTURN_TEST_TOOLS, set by tests/deploy/CMakeLists.txt;
build/test-tools by default)."""

import os
import subprocess
from typing import List, Sequence, Tuple

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOLS = os.environ.get("KTURN_TEST_TOOLS") or os.path.join(REPO, "build", "test-tools")
HELM = os.path.join(TOOLS, "bin", "helm")
KUBECTL = os.path.join(TOOLS, "bin", "kubectl")
MANIFEST_PATH = "deploy/manifests/kturn.yaml"


class KubeYamlLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """YAML as sigs.k8s.io/yaml reads it for the purposes here: timestamps stay strings. Parsed
    by libyaml where PyYAML has it (Debian's does): a render holds megabytes of Gateway API CRDs,
    which the pure-Python parser takes a second a megabyte for."""


KubeYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def run(*args: str) -> Tuple[int, str, str]:
    # No cluster is needed: an empty KUBECONFIG keeps a developer's own out of it.
    env = dict(os.environ, KUBECONFIG=os.devnull, HELM_CACHE_HOME="/tmp/kturn-helm-cache",
               HELM_CONFIG_HOME="/tmp/kturn-helm-config", HELM_DATA_HOME="/tmp/kturn-helm-data")
    r = subprocess.run([HELM, *args], capture_output=True, text=True, env=env, timeout=120)
    return r.returncode, r.stdout, r.stderr


def options(value_files: Sequence[str] = (), sets: Sequence[str] = ()) -> List[str]:
    out = []
    for f in value_files:
        out += ["-f", f]
    for s in sets:
        out += ["--set", s]
    return out


def template(chart: str, release: str = "release-name", namespace: str = "default",
             include_crds: bool = False, value_files: Sequence[str] = (),
             sets: Sequence[str] = ()) -> str:
    """What `helm template` prints; an error raises with Helm's message."""
    args = ["template", release, chart, "-n", namespace, *options(value_files, sets)]
    if include_crds:
        args.append("--include-crds")
    rc, out, err = run(*args)
    if rc != 0:
        raise RuntimeError(f"helm {' '.join(args)}: {err.strip()}")
    return out


def objects(stream: str) -> list:
    return [d for d in yaml.load_all(stream, Loader=KubeYamlLoader) if d is not None]


def notes(chart: str, release: str, namespace: str, sets: Sequence[str] = ()) -> str:
    """The chart's NOTES.txt as `helm install` prints them (a client-side dry run)."""
    args = ["install", release, chart, "-n", namespace, "--dry-run=client", *options(sets=sets)]
    rc, out, err = run(*args)
    if rc != 0:
        raise RuntimeError(f"helm {' '.join(args)}: {err.strip()}")
    return out.split("NOTES:\n", 1)[1] if "NOTES:\n" in out else ""


def lint(chart: str, value_files: Sequence[str] = (), sets: Sequence[str] = ()) -> Tuple[int, str]:
    rc, out, err = run("lint", "--strict", chart, *options(value_files, sets))
    return rc, out + err


def canonical_manifests() -> str:
    """What deploy/manifests/kturn.yaml must hold (scripts/update-manifests.sh --stdout)."""
    r = subprocess.run([os.path.join(REPO, "scripts", "update-manifests.sh"), "--stdout"],
                       capture_output=True, text=True, env=dict(os.environ, HELM=HELM),
                       timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"scripts/update-manifests.sh: {r.stderr.strip()}")
    return r.stdout
