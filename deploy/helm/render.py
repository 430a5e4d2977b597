#!/usr/bin/python3
"""Renders deploy/helm/kturn the way `helm template` does, for tests and for the plain manifests.

Helm cannot be installed on the development machines, so this is a small, strict subset of Go's
text/template with Helm's functions, enough for the kturn chart and no more:

  {{ .Values.a.b }}  {{ .Release.Name }}  {{ .Release.Namespace }}  {{ .Chart.AppVersion }}
  {{ $.Values.x }}   {{ . }}               "string" and integer literals, ( sub-pipelines )
  {{- if PIPELINE }} ... {{- else }} ... {{- end }}       {{/* comments */}}
  {{- define "name" }} ... {{- end }}    {{ include "name" . }}
  functions: quote, default, required, not, toYaml, indent, nindent; pipelines with |
  whitespace trimming with {{- and -}}

Anything else (range, with, variables, other functions, `else if`) is an error, never silently
skipped, so the chart cannot drift into constructs this renderer gets wrong. It is also stricter
than Helm where Helm is lax: a missing value in output position is an error (Helm prints an
empty string), and so is printing an integer >= 1,000,000 (Helm reads values as float64 and
would print 1e+06).

The output is assembled as Helm 3/4 does (pkg/action/action.go renderResources,
pkg/release/v1/util/manifest_sorter.go and kind_sorter.go): with --include-crds the files of
crds/ first, verbatim; then every document of every rendered template, files in path order,
documents in file order, stably sorted by Helm's install order of kinds (unknown kinds last,
alphabetically), each as "---\\n# Source: <chart>/templates/<file>\\n<document>\\n"; the whole
stream stripped and ended with one newline. toYaml emits what sigs.k8s.io/yaml (go-yaml v2)
does for the value types it accepts: maps with sorted keys, sequences not indented under their
key, strings quoted only when they must be.

  python3 deploy/helm/render.py deploy/helm/kturn --release-name kturn \\
      --namespace kturn-system --include-crds [-f my-values.yaml] [--set a.b=c]
  python3 deploy/helm/render.py --update-manifests   # rewrites deploy/manifests/kturn.yaml
"""

import argparse
import copy
import os
import re
import sys

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# deploy/manifests/kturn.yaml: the chart's defaults, plus the Namespace object that `helm install
# --create-namespace` would otherwise create, so that one `kubectl apply -f` installs everything.
MANIFEST_PATH = "deploy/manifests/kturn.yaml"
MANIFEST_OPTIONS = {
    "chart": "deploy/helm/kturn",
    "release_name": "kturn",
    "namespace": "kturn-system",
    "include_crds": True,
    "sets": ["namespace.create=true"],
}
MANIFEST_HEADER = """\
# kturn: operator, config discovery, auth service, RBAC, CRDs and the default Dataplane.
# Generated from the Helm chart deploy/helm/kturn; do not edit. Regenerate with
#   python3 deploy/helm/render.py --update-manifests
# which renders what
#   helm template kturn deploy/helm/kturn -n kturn-system --include-crds --set namespace.create=true
# prints. Install: kubectl apply -f deploy/manifests/kturn.yaml (docs/kubernetes.md).
"""

# pkg/release/v1/util/kind_sorter.go InstallOrder.
INSTALL_ORDER = [
    "PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
    "PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList",
    "ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
    "CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
    "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service",
    "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
    "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
    "APIService", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
]

# Go's %v prints a float64 of 1e6 or more in exponent form; Helm's values are float64.
GO_FLOAT_EXPONENT_FROM = 1_000_000


class TemplateError(Exception):
    """A template, value or option this renderer refuses; the message names the place."""


class KubeYamlLoader(yaml.SafeLoader):
    """YAML as sigs.k8s.io/yaml reads it for the purposes here: timestamps stay strings."""


KubeYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml(text, where):
    try:
        return yaml.load(text, Loader=KubeYamlLoader)
    except yaml.YAMLError as e:
        raise TemplateError(f"{where}: {e}") from None


# ---------------------------------------------------------------------------------------------
# Lexing: text and {{ actions }}, with trim markers applied.

class Text:
    def __init__(self, text):
        self.text = text


class Action:
    def __init__(self, body, where):
        self.body = body  # the action without delimiters, trim markers and outer spaces
        self.where = where


def lex(source, name):
    """[Text | Action] of a template, with {{- and -}} trimming done."""
    items = []
    pos = 0
    trim_next = False
    while True:
        start = source.find("{{", pos)
        text = source[pos:] if start < 0 else source[pos:start]
        if trim_next:
            text = text.lstrip(" \t\r\n")
        if start < 0:
            items.append(Text(text))
            return items
        line = source.count("\n", 0, start) + 1
        where = f"{name}:{line}"
        inner = start + 2
        trim_left = source.startswith("-", inner) and source[inner + 1:inner + 2] in (" ", "\t",
                                                                                    "\r", "\n")
        if trim_left:
            text = text.rstrip(" \t\r\n")
            inner += 1
        end = find_action_end(source, inner, where)
        body = source[inner:end]
        trim_next = False
        if body.endswith("-") and body[-2:-1] in (" ", "\t", "\r", "\n"):
            trim_next = True
            body = body[:-1]
        items.append(Text(text))
        body = body.strip()
        if not (body.startswith("/*") and body.endswith("*/")):
            items.append(Action(body, where))
        elif "*/" in body[2:-2]:
            raise TemplateError(f"{where}: text after a comment inside one action")
        pos = end + 2


def find_action_end(source, pos, where):
    """Index of the "}}" closing an action that starts at pos (quoted strings skipped)."""
    i = pos
    while i < len(source):
        c = source[i]
        if c == '"':
            i += 1
            while i < len(source) and source[i] != '"':
                i += 2 if source[i] == "\\" else 1
        elif c == "`":
            raise TemplateError(f"{where}: raw strings are not supported")
        elif source.startswith("}}", i):
            return i
        elif source.startswith("/*", i):
            close = source.find("*/", i + 2)
            if close < 0:
                raise TemplateError(f"{where}: unterminated comment")
            i = close + 1
        i += 1
    raise TemplateError(f"{where}: unterminated action")


# ---------------------------------------------------------------------------------------------
# Parsing actions into pipelines, and the template into a tree.

TOKEN_RE = re.compile(r"""
    \s*(?:
      (?P<string>"(?:[^"\\]|\\.)*")
    | (?P<number>-?[0-9]+)(?![\w.])
    | (?P<field>\$?(?:\.[A-Za-z_][A-Za-z0-9_]*)+|\.|\$)
    | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<punct>[|()])
    )""", re.X)

STRING_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def tokenize(body, where):
    tokens = []
    pos = 0
    body = body.rstrip()
    while pos < len(body):
        m = TOKEN_RE.match(body, pos)
        if not m or m.end() == pos:
            raise TemplateError(f"{where}: cannot read {body[pos:].strip()!r} in {{{{ {body} }}}}")
        kind = m.lastgroup
        value = m.group(kind)
        if kind == "string":
            value = re.sub(r"\\(.)", lambda e: unescape(e.group(1), where), value[1:-1])
        elif kind == "number":
            value = int(value)
        tokens.append((kind, value))
        pos = m.end()
    return tokens


def unescape(char, where):
    if char not in STRING_ESCAPES:
        raise TemplateError(f"{where}: string escape \\{char} is not supported")
    return STRING_ESCAPES[char]


class Pipeline:
    def __init__(self, commands, where):
        self.commands = commands  # [[operand, ...], ...]; an operand is a (kind, value) token
        self.where = where


def parse_pipeline(tokens, where):
    pipeline, rest = _parse_pipeline(tokens, where)
    if rest:
        raise TemplateError(f"{where}: unexpected {rest[0][1]!r}")
    return pipeline


def _parse_pipeline(tokens, where):
    commands = [[]]
    while tokens:
        kind, value = tokens[0]
        if kind == "punct" and value == ")":
            break
        tokens = tokens[1:]
        if kind == "punct" and value == "|":
            if not commands[-1]:
                raise TemplateError(f"{where}: empty command before |")
            commands.append([])
        elif kind == "punct" and value == "(":
            sub, tokens = _parse_pipeline(tokens, where)
            if not tokens or tokens[0] != ("punct", ")"):
                raise TemplateError(f"{where}: missing )")
            tokens = tokens[1:]
            commands[-1].append(("pipeline", sub))
        else:
            commands[-1].append((kind, value))
    if not commands[-1]:
        raise TemplateError(f"{where}: empty pipeline")
    return Pipeline(commands, where), tokens


class Output:
    def __init__(self, pipeline):
        self.pipeline = pipeline


class If:
    def __init__(self, pipeline):
        self.pipeline = pipeline
        self.then = []
        self.otherwise = []


class Define:
    def __init__(self, name, where):
        self.name = name
        self.where = where
        self.body = []


UNSUPPORTED_KEYWORDS = {"range", "with", "template", "block", "break", "continue"}


def parse(source, name):
    """(nodes, {define name: Define}) of one template file."""
    root = []
    defines = {}
    stack = [(None, root)]  # (If or Define, the list being filled)
    for item in lex(source, name):
        target = stack[-1][1]
        if isinstance(item, Text):
            if item.text:
                target.append(item)
            continue
        tokens = tokenize(item.body, item.where)
        if not tokens:
            raise TemplateError(f"{item.where}: empty action")
        head = tokens[0]
        if head[0] == "ident" and head[1] in UNSUPPORTED_KEYWORDS:
            raise TemplateError(f"{item.where}: {{{{ {head[1]} }}}} is not supported")
        if re.search(r"\$[A-Za-z_]|:?=", re.sub(r'"(?:[^"\\]|\\.)*"', '""', item.body)):
            raise TemplateError(f"{item.where}: template variables are not supported")
        if head == ("ident", "if"):
            node = If(parse_pipeline(tokens[1:], item.where))
            target.append(node)
            stack.append((node, node.then))
        elif head == ("ident", "else"):
            node = stack[-1][0]
            if not isinstance(node, If) or stack[-1][1] is node.otherwise:
                raise TemplateError(f"{item.where}: else without if")
            if len(tokens) > 1:
                raise TemplateError(f"{item.where}: 'else {tokens[1][1]}' is not supported")
            stack[-1] = (node, node.otherwise)
        elif head == ("ident", "end"):
            if len(stack) == 1 or len(tokens) > 1:
                raise TemplateError(f"{item.where}: unexpected end")
            stack.pop()
        elif head == ("ident", "define"):
            if len(stack) != 1 or len(tokens) != 2 or tokens[1][0] != "string":
                raise TemplateError(f"{item.where}: define \"name\" at the top level only")
            node = Define(tokens[1][1], item.where)
            if node.name in defines:
                raise TemplateError(f"{item.where}: {node.name} defined twice")
            defines[node.name] = node
            stack.append((node, node.body))
        else:
            target.append(Output(parse_pipeline(tokens, item.where)))
    if len(stack) != 1:
        raise TemplateError(f"{name}: {type(stack[-1][0]).__name__.lower()} without end")
    return root, defines


# ---------------------------------------------------------------------------------------------
# Evaluation.

def truthy(value):
    """Go text/template's truth: false, 0, nil and empty strings and collections are false."""
    return not (value is None or value is False or value == 0 and not isinstance(value, bool)
                or isinstance(value, (str, list, dict)) and len(value) == 0)


def go_string(value, where):
    """What {{ value }} prints (fmt's %v), for the values this renderer allows in output."""
    if value is None:
        raise TemplateError(f"{where}: missing value (Helm would print an empty string)")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if abs(value) >= GO_FLOAT_EXPONENT_FROM:
            raise TemplateError(f"{where}: {value}: Helm prints numbers from values as float64 "
                                "(1e+06); quote it in the values")
        return str(value)
    if isinstance(value, str):
        return value
    raise TemplateError(f"{where}: cannot print a {type(value).__name__}; use toYaml")


def go_quote(text):
    """fmt's %q of a string, for printable text (what sprig's quote emits)."""
    out = []
    for c in text:
        if c in ('"', "\\"):
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif ord(c) < 0x20 or ord(c) == 0x7f:
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def indent_text(spaces, text):
    pad = " " * spaces
    return pad + text.replace("\n", "\n" + pad)


class Renderer:
    def __init__(self, defines, root):
        self.defines = defines
        self.root = root  # $: {Values, Release, Chart}
        self.include_depth = 0

    def render(self, nodes, dot):
        return "".join(self.render_node(n, dot) for n in nodes)

    def render_node(self, node, dot):
        if isinstance(node, Text):
            return node.text
        if isinstance(node, Output):
            return go_string(self.pipeline(node.pipeline, dot), node.pipeline.where)
        if isinstance(node, If):
            branch = node.then if truthy(self.pipeline(node.pipeline, dot)) else node.otherwise
            return self.render(branch, dot)
        raise AssertionError(node)

    def pipeline(self, pipeline, dot):
        value = None
        for i, command in enumerate(pipeline.commands):
            piped = [value] if i > 0 else []
            value = self.command(command, dot, piped, pipeline.where)
        return value

    def command(self, operands, dot, piped, where):
        kind, name = operands[0]
        if kind != "ident":
            if len(operands) > 1 or piped:
                raise TemplateError(f"{where}: {name!r} is not a function")
            return self.operand(operands[0], dot, where)
        if name in ("true", "false"):
            if len(operands) > 1 or piped:
                raise TemplateError(f"{where}: {name} is not a function")
            return name == "true"
        function = FUNCTIONS.get(name)
        if function is None:
            raise TemplateError(f"{where}: function {name!r} is not supported")
        args = [self.operand(o, dot, where) for o in operands[1:]] + piped
        return function(self, where, *args)

    def operand(self, operand, dot, where):
        kind, value = operand
        if kind in ("string", "number"):
            return value
        if kind == "pipeline":
            return self.pipeline(value, dot)
        if kind == "field":
            return self.field(value, dot, where)
        if kind == "ident" and value in ("true", "false"):
            return value == "true"
        raise TemplateError(f"{where}: {value!r} cannot be an argument here")

    def field(self, path, dot, where):
        if path.startswith("$"):
            value, path = self.root, path[1:]
        else:
            value = dot
        for key in [k for k in path.split(".") if k]:
            if not isinstance(value, dict):
                raise TemplateError(f"{where}: {path}: .{key} of a "
                                    f"{'missing value' if value is None else type(value).__name__}")
            value = value.get(key)  # a missing key is nil, as with Helm's missingkey=zero
        return value


def fn_include(renderer, where, name, dot):
    define = renderer.defines.get(name)
    if define is None:
        raise TemplateError(f"{where}: no template {name!r}")
    renderer.include_depth += 1
    if renderer.include_depth > 100:
        raise TemplateError(f"{where}: include nested too deeply")
    try:
        return renderer.render(define.body, dot)
    finally:
        renderer.include_depth -= 1


def fn_quote(renderer, where, *values):
    # sprig: every non-nil argument as %q of its string form, joined by spaces.
    return " ".join(go_quote(go_string(v, where)) for v in values if v is not None)


def fn_default(renderer, where, fallback, *given):
    if len(given) != 1:
        raise TemplateError(f"{where}: default wants 2 arguments")
    return given[0] if truthy(given[0]) else fallback


def fn_required(renderer, where, message, value):
    if value is None or value == "":
        raise TemplateError(f"{where}: required: {message}")
    return value


def fn_not(renderer, where, value):
    return not truthy(value)


def fn_to_yaml(renderer, where, value):
    return to_yaml(value, where)


def fn_indent(renderer, where, spaces, text):
    if not isinstance(spaces, int) or not isinstance(text, str):
        raise TemplateError(f"{where}: indent wants a number and a string")
    return indent_text(spaces, text)


def fn_nindent(renderer, where, spaces, text):
    return "\n" + fn_indent(renderer, where, spaces, text)


FUNCTIONS = {
    "include": fn_include,
    "quote": fn_quote,
    "default": fn_default,
    "required": fn_required,
    "not": fn_not,
    "toYaml": fn_to_yaml,
    "indent": fn_indent,
    "nindent": fn_nindent,
}


# ---------------------------------------------------------------------------------------------
# toYaml as sigs.k8s.io/yaml (JSON, then go-yaml v2) writes it.

# Plain scalars go-yaml v2 would read back as something other than a string: those it writes
# double-quoted (encode.go stringv: canUsePlain needs the str tag). YAML 1.1 booleans (y and n
# too: go-yaml v2 writes a key "y" as "y") and nulls (the empty string too), ints in any base,
# floats, base-60 numbers and timestamps.
NON_STRING_PLAIN = re.compile(r"""^(?:
      ~|null|Null|NULL
    | y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
    | [-+]?(?:0b[01_]+|0x[0-9a-fA-F_]+|0o?[0-7_]+|[0-9][0-9_]*)
    | [-+]?(?:\.[0-9]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?
    | [-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
    | [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?
    | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}
      (?:[Tt\ ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]+)?(?:Z|[-+][0-9]{2}:[0-9]{2})?)?
    )$""", re.X)

# libyaml's emitter (yaml_emitter_analyze_scalar): characters that keep a block-context plain
# scalar from being plain, which go-yaml then writes single-quoted.
FIRST_CHAR_INDICATORS = set("#,[]{}&*!|>'\"%@`")


def plain_allowed(text):
    if text == "" or text != text.strip(" ") or text.startswith(("---", "...")):
        return False
    if text[0] in FIRST_CHAR_INDICATORS:
        return False
    if text[0] in "?:-" and (len(text) == 1 or text[1] == " "):
        return False
    if ": " in text or " #" in text or text.endswith(":"):
        return False
    return all(0x20 <= ord(c) != 0x7f for c in text)


def yaml_scalar(value, where):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if "\n" in value or any(ord(c) < 0x20 and c != "\t" for c in value):
            raise TemplateError(f"{where}: toYaml of multi-line strings is not supported")
        if value == "" or NON_STRING_PLAIN.match(value):
            return go_quote(value)
        if plain_allowed(value):
            return value
        return "'" + value.replace("'", "''") + "'"
    raise TemplateError(f"{where}: toYaml of a {type(value).__name__} is not supported")


def to_yaml(value, where):
    """sigs.k8s.io/yaml Marshal of value, without the final newline (Helm's toYaml)."""
    return "\n".join(_yaml_lines(value, where))


def _yaml_lines(value, where):
    if isinstance(value, dict):
        if not value:
            return ["{}"]
        lines = []
        for key in sorted(value):
            if not isinstance(key, str):
                raise TemplateError(f"{where}: toYaml: map key {key!r} is not a string")
            lines += _yaml_entry(yaml_scalar(key, where) + ":", value[key], "  ", where)
        return lines
    if isinstance(value, list):
        if not value:
            return ["[]"]
        lines = []
        for item in value:
            if isinstance(item, list) and item:
                raise TemplateError(f"{where}: toYaml of nested lists is not supported")
            sub = _yaml_lines(item, where)
            lines.append("- " + sub[0])
            lines += ["  " + line for line in sub[1:]]
        return lines
    return [yaml_scalar(value, where)]


def _yaml_entry(head, value, pad, where):
    if isinstance(value, dict) and value:
        return [head] + [pad + line for line in _yaml_lines(value, where)]
    if isinstance(value, list) and value:
        return [head] + _yaml_lines(value, where)  # go-yaml v2 does not indent a key's list
    return [head + " " + _yaml_lines(value, where)[0]]


# ---------------------------------------------------------------------------------------------
# Values.

def merge_values(base, override):
    """Helm's coalescing: maps merge key by key, anything else replaces, null deletes."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_values(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_set(expression):
    """--set a.b=c (comma-separated pairs) as a nested map; scalars typed as Helm's strvals."""
    out = {}
    for pair in expression.split(","):
        if "=" not in pair:
            raise TemplateError(f"--set {pair}: want key=value")
        key, raw = pair.split("=", 1)
        if any(c in key for c in "[]\\") or any(c in raw for c in "{}[]\\"):
            raise TemplateError(f"--set {pair}: lists and escapes are not supported")
        if raw in ("true", "false"):
            value = raw == "true"
        elif raw == "null":
            value = None
        elif re.fullmatch(r"-?(0|[1-9][0-9]*)", raw):
            value = int(raw)
        else:
            value = raw
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


# ---------------------------------------------------------------------------------------------
# The chart.

class Chart:
    def __init__(self, path):
        self.path = os.path.abspath(path)
        with open(os.path.join(self.path, "Chart.yaml"), encoding="utf-8") as f:
            meta = load_yaml(f.read(), "Chart.yaml")
        for key in ("apiVersion", "name", "version"):
            if key not in meta:
                raise TemplateError(f"Chart.yaml: {key} missing")
        if meta["apiVersion"] != "v2":
            raise TemplateError("Chart.yaml: apiVersion must be v2")
        if meta.get("dependencies"):
            raise TemplateError("Chart.yaml: dependencies are not supported")
        self.meta = meta
        self.name = meta["name"]
        with open(os.path.join(self.path, "values.yaml"), encoding="utf-8") as f:
            self.values = load_yaml(f.read(), "values.yaml") or {}

    def files(self, folder):
        """Paths relative to the chart of the files under folder, sorted as Helm walks them."""
        base = os.path.join(self.path, folder)
        out = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for f in filenames:
                out.append(os.path.relpath(os.path.join(dirpath, f), self.path))
        return sorted(out)

    def crd_files(self):
        # chart.CRDObjects(): crds/ files with a manifest extension.
        return [f for f in self.files("crds") if f.endswith((".yaml", ".yml", ".json"))]

    def read(self, relpath):
        with open(os.path.join(self.path, relpath), encoding="utf-8") as f:
            return f.read()


def render_templates(chart, values, release_name, namespace):
    """{"<chart>/templates/<file>": rendered text} of every template, partials and NOTES too."""
    parsed = {}
    defines = {}
    for relpath in chart.files("templates"):
        name = f"{chart.name}/{relpath}"
        nodes, file_defines = parse(chart.read(relpath), name)
        for define_name, define in file_defines.items():
            if define_name in defines:
                raise TemplateError(f"{define.where}: {define_name} already defined")
            defines[define_name] = define
        parsed[name] = nodes
    root = {
        "Values": values,
        "Release": {"Name": release_name, "Namespace": namespace, "Service": "Helm",
                    "IsInstall": True, "IsUpgrade": False, "Revision": 1},
        "Chart": {"Name": chart.meta["name"], "Version": chart.meta["version"],
                  "AppVersion": chart.meta.get("appVersion", "")},
    }
    renderer = Renderer(defines, root)
    return {name: renderer.render(nodes, root) for name, nodes in parsed.items()}


def split_manifests(text):
    """releaseutil.SplitManifests: documents of a rendered file, left-trimmed, in order."""
    docs = re.split(r"(?m)^---[ \t]*", text.lstrip())
    return [d.lstrip() for d in docs if d.strip()]


def kind_rank(kind):
    return (0, INSTALL_ORDER.index(kind), "") if kind in INSTALL_ORDER else (1, 0, kind)


def render(chart_path, release_name="release-name", namespace="default", include_crds=False,
           value_files=(), sets=()):
    """(manifest stream as `helm template` prints it, NOTES.txt text)."""
    chart = Chart(chart_path)
    values = chart.values
    for path in value_files:
        with open(path, encoding="utf-8") as f:
            values = merge_values(values, load_yaml(f.read(), path) or {})
    for expression in sets:
        values = merge_values(values, parse_set(expression))
    files = render_templates(chart, values, release_name, namespace)

    notes = ""
    manifests = []
    for name in sorted(files):
        base = os.path.basename(name)
        if base == "NOTES.txt":
            notes = files[name]
            continue
        if base.startswith("_") or not files[name].strip():
            continue
        for doc in split_manifests(files[name]):
            head = load_yaml(doc, name)
            if not isinstance(head, dict):
                raise TemplateError(f"{name}: a document that is not a mapping:\n{doc}")
            manifests.append((name, doc, head.get("kind") or ""))
    manifests.sort(key=lambda m: kind_rank(m[2]))  # stable: file and document order otherwise

    out = []
    if include_crds:
        for relpath in chart.crd_files():
            out.append(f"---\n# Source: {chart.name}/{relpath}\n{chart.read(relpath)}\n")
    for name, doc, _ in manifests:
        out.append(f"---\n# Source: {name}\n{doc}\n")
    return "".join(out).strip() + "\n", notes


def canonical_manifests():
    """What deploy/manifests/kturn.yaml must hold."""
    o = MANIFEST_OPTIONS
    stream, _ = render(os.path.join(REPO, o["chart"]), o["release_name"], o["namespace"],
                       o["include_crds"], sets=o["sets"])
    return MANIFEST_HEADER + stream


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chart", nargs="?", help="chart directory")
    parser.add_argument("--release-name", default="release-name")
    parser.add_argument("-n", "--namespace", default="default")
    parser.add_argument("--include-crds", action="store_true")
    parser.add_argument("-f", "--values", action="append", default=[], metavar="FILE")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--notes", action="store_true", help="print NOTES.txt instead")
    parser.add_argument("--update-manifests", action="store_true",
                        help=f"rewrite {MANIFEST_PATH} from the chart's defaults")
    args = parser.parse_args(argv)
    try:
        if args.update_manifests:
            text = canonical_manifests()
            with open(os.path.join(REPO, MANIFEST_PATH), "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {MANIFEST_PATH}", file=sys.stderr)
            return 0
        if not args.chart:
            parser.error("a chart directory (or --update-manifests) is required")
        stream, notes = render(args.chart, args.release_name, args.namespace, args.include_crds,
                               args.values, args.set)
    except TemplateError as e:
        print(f"render.py: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(notes if args.notes else stream)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
