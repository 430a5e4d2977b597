#!/usr/bin/python3
"""Writes the core/v1 schemas of the Dataplane CRD from Kubernetes' own OpenAPI document.

The Dataplane's pod-spec parts (affinity, securityContext, containerSecurityContext, env,
envFrom, imagePullSecrets, resources, tolerations, topologySpreadConstraints) are copied by the
operator into the Deployment's PodSpec and Container unchanged, so their schemas in
deploy/crds/stunner.l7mp.io_dataplanes.yaml are those of the PodSpec and Container fields they
land in, taken from api/openapi-spec/v3/api__v1_openapi.json of the Kubernetes release the test
tools pin (k8s.io/kubernetes in tests/tools/kubernetes/go.mod, found in the Go module cache
with `go mod download`), and made structural as a CRD needs:

  * every $ref (and the allOf around it) is expanded in place; a type that refers back to
    itself stops the generator (none of these parts is recursive, a new release might be);
  * Quantity and IntOrString become x-kubernetes-int-or-string (Quantity with the pattern of
    its <quantity> grammar), the only multi-type value a structural schema admits;
  * defaults are kept only on optional scalar fields (the explicit +default markers, such as
    `name: ""` of a LocalObjectReference): the zero-value defaults openapi-gen writes on
    required fields would fill a missing field in and so hide `required`, and object defaults
    ({}) are not valid on a required object;
  * x-kubernetes-list-type, -list-map-keys and -map-type are kept where a CRD admits them (a
    map list's keys are scalar properties that are required or defaulted); the patch-strategy
    and union markers, which CRDs do not have, are dropped; any other keyword stops the
    generator, so a new release cannot slip something unchecked in;
  * descriptions are cut to their first sentence (at most DESCRIPTION_LIMIT characters), so the
    CRD stays far below the 262144 bytes that `kubectl apply` (client-side) can keep in its
    last-applied annotation.

Only those fields' schemas are rewritten, in every version that has them (v1 has all, the
served v1alpha1 the ones it had); the rest of the file, its hand-written descriptions of the
fields themselves and its comments stay as they are.

  scripts/gen-dataplane-schemas.py            rewrite the CRD file
  scripts/gen-dataplane-schemas.py --check    exit 1 with a diff if the file is not what the
                                              pinned release makes (tests/deploy/crd_schema_test.py)
  scripts/gen-dataplane-schemas.py --json     print the generated schemas as JSON
  --openapi FILE   read this api__v1_openapi.json instead of the module cache's
  --crd FILE       the CRD file (default deploy/crds/stunner.l7mp.io_dataplanes.yaml)

Re-run it (then `make manifests`) after bumping Kubernetes in tests/tools/kubernetes/go.mod and
scripts/build-test-tools.sh. Needs Go (on PATH or /usr/local/go/bin) only when the release is
not in the module cache yet; then `go mod download` fetches it through the module proxy.
"""

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
CRD_FILE = os.path.join(REPO, "deploy", "crds", "stunner.l7mp.io_dataplanes.yaml")
TOOLS_MODULE = os.path.join(REPO, "tests", "tools", "kubernetes")
OPENAPI_PATH = "api/openapi-spec/v3/api__v1_openapi.json"

CORE = "io.k8s.api.core.v1."
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"

# Dataplane spec field -> the PodSpec or Container property it is copied into (src/k8s
# readDataplane, src/operator's Deployment renderer).
FIELDS = {
    "imagePullSecrets": ("PodSpec", "imagePullSecrets"),
    "envFrom": ("Container", "envFrom"),
    "env": ("Container", "env"),
    "containerSecurityContext": ("Container", "securityContext"),
    "resources": ("Container", "resources"),
    "affinity": ("PodSpec", "affinity"),
    "securityContext": ("PodSpec", "securityContext"),
    "tolerations": ("PodSpec", "tolerations"),
    "topologySpreadConstraints": ("PodSpec", "topologySpreadConstraints"),
}
# The version that must have every one of them (the others have what they have).
FULL_VERSION = "v1"

# The <quantity> grammar of Quantity's description (signed decimal number, then a binary SI,
# decimal SI or exponent suffix), as a pattern for the string form.
QUANTITY_PATTERN = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
                    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")

DESCRIPTION_LIMIT = 120

# Keywords of the OpenAPI document: what becomes of each.
KEPT = {"type", "format", "properties", "items", "additionalProperties", "required",
        "description", "default", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type"}
DROPPED = {"x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key", "x-kubernetes-unions"}
SCALARS = {"string", "integer", "number", "boolean"}

# Key order of the emitted schema nodes.
ORDER = ["description", "type", "format", "default", "x-kubernetes-int-or-string", "anyOf",
         "pattern", "required", "properties", "items", "additionalProperties",
         "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type"]


class GenerateError(Exception):
    pass


# --- the OpenAPI document ----------------------------------------------------------------------

def pinned_release():
    with open(os.path.join(TOOLS_MODULE, "go.mod"), encoding="utf-8") as f:
        m = re.search(r"^\s*k8s\.io/kubernetes (v\S+)", f.read(), re.M)
    if not m:
        raise GenerateError("tests/tools/kubernetes/go.mod does not require k8s.io/kubernetes")
    return m.group(1)


def find_go():
    go = shutil.which("go") or "/usr/local/go/bin/go"
    return go if os.access(go, os.X_OK) else None


def cached_openapi(release):
    """The document in an extracted module cache (Go verified it when it extracted it), for a
    machine whose test tools were built but that has no Go now."""
    cache = os.environ.get("GOMODCACHE") or os.path.join(
        os.environ.get("GOPATH") or os.path.expanduser("~/go"), "pkg", "mod")
    path = os.path.join(cache, f"k8s.io/kubernetes@{release}", OPENAPI_PATH)
    if not os.path.isfile(path):
        raise GenerateError(f"Go is not installed (on PATH or /usr/local/go/bin) and {path} "
                            "does not exist; install Go or pass --openapi FILE")
    return path


def module_openapi(release):
    """api__v1_openapi.json of k8s.io/kubernetes@release, from the Go module cache."""
    go = find_go()
    if go is None:
        return cached_openapi(release)
    env = dict(os.environ, GOFLAGS="-mod=readonly", GOTOOLCHAIN="local")
    r = subprocess.run([go, "mod", "download", "-json", "k8s.io/kubernetes"],
                       cwd=TOOLS_MODULE, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise GenerateError(f"go mod download k8s.io/kubernetes: {r.stderr.strip() or r.stdout}")
    info = json.loads(r.stdout)
    if info.get("Version") != release:
        raise GenerateError(f"go mod download gave k8s.io/kubernetes {info.get('Version')}, "
                            f"go.mod pins {release}")
    return os.path.join(info["Dir"], OPENAPI_PATH)


# --- OpenAPI to structural schema --------------------------------------------------------------

def short(text):
    """The first sentence of a description, at most DESCRIPTION_LIMIT characters."""
    text = " ".join(text.split())
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    if m:
        text = m.group(1)
    if len(text) > DESCRIPTION_LIMIT:
        text = text[:DESCRIPTION_LIMIT - 3].rsplit(" ", 1)[0] + "..."
    return text


class Converter:
    def __init__(self, schemas):
        self.schemas = schemas
        self.notes = []

    def ref(self, name, where, stack):
        if name in stack:
            raise GenerateError(f"{where}: {name} refers to itself "
                                f"({' -> '.join(stack + [name])}); a CRD cannot hold it")
        if name == QUANTITY:
            return {"x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "pattern": QUANTITY_PATTERN}
        if name == INT_OR_STRING:
            return {"x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}]}
        if name not in self.schemas:
            raise GenerateError(f"{where}: no schema {name}")
        return self.node(self.schemas[name], where, stack + [name])

    def node(self, src, where, stack):
        """The structural schema of one OpenAPI schema node."""
        src = dict(src)
        out = {}
        if "$ref" in src or "allOf" in src:
            refs = [src.pop("$ref")] if "$ref" in src else [
                r.get("$ref") for r in src.pop("allOf")]
            if len(refs) != 1 or not refs[0]:
                raise GenerateError(f"{where}: allOf other than one $ref")
            out = self.ref(refs[0].rsplit("/", 1)[-1], where, stack)
        unknown = set(src) - KEPT - DROPPED
        if unknown:
            raise GenerateError(f"{where}: keyword(s) {sorted(unknown)} not handled")
        for key, value in src.items():
            if key == "description":
                out["description"] = short(value)  # the referring field's, over the type's
            elif key == "properties":
                out["properties"] = {
                    name: self.node(sub, f"{where}.{name}", stack)
                    for name, sub in value.items()}
            elif key == "items":
                out["items"] = self.node(value, f"{where}[]", stack)
            elif key == "additionalProperties":
                out["additionalProperties"] = self.node(value, f"{where}.*", stack)
            elif key in KEPT:
                out[key] = value
        if "properties" in out and "additionalProperties" in out:
            raise GenerateError(f"{where}: properties and additionalProperties together")
        if "type" not in out and not out.get("x-kubernetes-int-or-string"):
            raise GenerateError(f"{where}: no type")
        return out

    def finish(self, node, where, required=False, in_items=False):
        """Second pass, on the expanded tree: defaults and list markers a CRD admits."""
        if "default" in node and (required or in_items or node.get("type") not in SCALARS
                                  or where.endswith(".*")):
            del node["default"]
        for name, sub in node.get("properties", {}).items():
            self.finish(sub, f"{where}.{name}", required=name in node.get("required", []))
        if "items" in node:
            self.finish(node["items"], f"{where}[]", in_items=True)
        if "additionalProperties" in node:
            self.finish(node["additionalProperties"], f"{where}.*", in_items=True)
        self.check_markers(node, where)

    def check_markers(self, node, where):
        list_type = node.get("x-kubernetes-list-type")
        items = node.get("items", {})
        valid = True
        if list_type is not None and node.get("type") != "array":
            valid = False
        elif list_type == "set":
            valid = items.get("type") in SCALARS
        elif list_type == "map":
            keys = node.get("x-kubernetes-list-map-keys") or []
            props = items.get("properties", {})
            valid = items.get("type") == "object" and bool(keys) and all(
                k in props and props[k].get("type") in SCALARS
                and (k in items.get("required", []) or "default" in props[k]) for k in keys)
        if not valid:
            self.notes.append(f"{where}: x-kubernetes-list-type {list_type} dropped "
                              "(not valid in a CRD here)")
            node.pop("x-kubernetes-list-type")
        if node.get("x-kubernetes-list-type") != "map":
            node.pop("x-kubernetes-list-map-keys", None)
        if "x-kubernetes-map-type" in node and node.get("type") != "object":
            self.notes.append(f"{where}: x-kubernetes-map-type dropped (not an object)")
            del node["x-kubernetes-map-type"]

    def field(self, owner, prop):
        where = f"{owner}.{prop}"
        src = self.schemas[CORE + owner]["properties"][prop]
        node = self.node(src, where, [CORE + owner])
        self.finish(node, where)
        node.pop("description", None)  # the CRD's own, hand-written, stays
        return node


def generate(openapi_path):
    with open(openapi_path, encoding="utf-8") as f:
        schemas = json.load(f)["components"]["schemas"]
    conv = Converter(schemas)
    out = {name: conv.field(owner, prop) for name, (owner, prop) in FIELDS.items()}
    return out, conv.notes


# --- YAML out ----------------------------------------------------------------------------------

PLAIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.\-/]*")
YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}


def scalar(value, flow=False):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if value is None:
        return "null"
    plain = (PLAIN_WORD.fullmatch(value) if flow else
             re.fullmatch(r"[A-Za-z][^\n\t]*", value) and ": " not in value
             and " #" not in value and not value.endswith((":", " ")))
    if plain and value.lower() not in YAML_WORDS:
        return value
    return json.dumps(value, ensure_ascii=False)


def emit(node, indent):
    pad = " " * indent
    lines = []
    keys = sorted(node, key=lambda k: ORDER.index(k) if k in ORDER else len(ORDER))
    for key in keys:
        value = node[key]
        if key in ("properties",):
            lines.append(f"{pad}{key}:")
            for name, sub in value.items():
                lines.append(f"{pad}  {scalar(name, flow=True)}:")
                lines += emit(sub, indent + 4)
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            lines.append(f"{pad}{key}:")
            lines += emit(value, indent + 2)
        elif key == "anyOf":
            lines.append(f"{pad}{key}:")
            for alt in value:
                sub = emit(alt, indent + 4)
                lines.append(f"{pad}  - {sub[0].strip()}")
                lines += sub[1:]
        elif isinstance(value, list):
            lines.append(f"{pad}{key}: [{', '.join(scalar(v, flow=True) for v in value)}]")
        elif isinstance(value, dict):
            raise GenerateError(f"no YAML form for {key}: {value}")
        else:
            lines.append(f"{pad}{key}: {scalar(value)}")
    return lines


# --- the CRD file ------------------------------------------------------------------------------

def indent_of(line):
    return len(line) - len(line.lstrip(" "))


def significant(line):
    return line.strip() != ""


def block_end(lines, i, indent):
    """The end of the block whose head is lines[i] (at `indent`)."""
    j = i + 1
    while j < len(lines) and (not significant(lines[j]) or indent_of(lines[j]) > indent):
        j += 1
    while j > i + 1 and not significant(lines[j - 1]):
        j -= 1
    return j


def child(lines, start, end, key):
    """The line of mapping key `key` among the children of the block lines[start:end]."""
    body = [i for i in range(start, end)
            if significant(lines[i]) and not lines[i].lstrip().startswith("#")]
    if not body:
        return None
    indent = indent_of(lines[body[0]])
    for i in body:
        if indent_of(lines[i]) == indent and re.fullmatch(rf"\s*{re.escape(key)}:\s*",
                                                           lines[i]):
            return i
    return None


def versions(lines):
    """(name, first line, end) of each entry of spec.versions."""
    out = []
    for i, line in enumerate(lines):
        m = re.fullmatch(r"(\s*)- name: (\S+)\s*", line)
        if not m:
            continue
        parent = next((lines[k] for k in range(i - 1, -1, -1) if significant(lines[k])
                       and indent_of(lines[k]) < len(m.group(1))), "")
        if re.fullmatch(r"\s*versions:\s*", parent):
            out.append((m.group(2), i, block_end(lines, i, len(m.group(1)))))
    return out


def spec_properties(lines, start, end, version):
    """(start, end) of the body of schema.openAPIV3Schema.properties.spec.properties."""
    i, lo, hi = None, start + 1, end
    for key in ("schema", "openAPIV3Schema", "properties", "spec", "properties"):
        i = child(lines, lo, hi, key)
        if i is None:
            raise GenerateError(f"version {version}: no {key} on the way to spec.properties")
        lo, hi = i + 1, block_end(lines, i, indent_of(lines[i]))
    return lo, hi


def rewrite(text, fields):
    lines = text.split("\n")
    edits = []  # (start, end, new lines)
    for version, vstart, vend in versions(lines):
        lo, hi = spec_properties(lines, vstart, vend, version)
        for name, schema in fields.items():
            i = child(lines, lo, hi, name)
            if i is None:
                if version == FULL_VERSION:
                    raise GenerateError(f"version {version}: spec.{name} is missing")
                continue
            indent = indent_of(lines[i])
            end = block_end(lines, i, indent)
            keep = [lines[i]]
            body = lines[i + 1:end]
            if body and re.match(r"\s*description: ", body[0]):
                if len(body) > 1 and indent_of(body[1]) > indent_of(body[0]):
                    raise GenerateError(f"{version} spec.{name}: the description must be "
                                        "one line")
                keep.append(body[0])
                body = body[1:]
            comments = [b for b in body if b.lstrip().startswith("#")]
            if comments:
                raise GenerateError(f"{version} spec.{name}: a comment inside a generated "
                                    f"schema would be lost: {comments[0].strip()}")
            edits.append((i, end, keep + emit(schema, indent + 2)))
    for start, end, new in sorted(edits, reverse=True):
        lines[start:end] = new
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--openapi")
    ap.add_argument("--crd", default=CRD_FILE)
    args = ap.parse_args()
    try:
        release = pinned_release()
        openapi = args.openapi or module_openapi(release)
        fields, notes = generate(openapi)
        if args.json:
            json.dump(fields, sys.stdout, indent=1)
            print()
            return 0
        with open(args.crd, encoding="utf-8") as f:
            old = f.read()
        new = rewrite(old, fields)
    except (GenerateError, OSError, KeyError, ValueError) as e:
        print(f"gen-dataplane-schemas: {e}", file=sys.stderr)
        return 2
    for note in notes:
        print(f"gen-dataplane-schemas: {note}", file=sys.stderr)
    if args.check:
        if new == old:
            return 0
        name = os.path.relpath(args.crd, REPO)
        sys.stdout.writelines(difflib.unified_diff(
            old.splitlines(True), new.splitlines(True), name,
            f"{name} (from Kubernetes {release}, scripts/gen-dataplane-schemas.py)"))
        print(f"gen-dataplane-schemas: {name} is not what Kubernetes {release} makes; "
              "run scripts/gen-dataplane-schemas.py", file=sys.stderr)
        return 1
    if new != old:
        with open(args.crd + ".tmp", "w", encoding="utf-8") as f:
            f.write(new)
        os.replace(args.crd + ".tmp", args.crd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
