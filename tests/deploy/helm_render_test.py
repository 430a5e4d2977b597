#!/usr/bin/python3
"""deploy/helm/render.py, the Helm-template subset the chart is rendered with in tests:

  * Go template semantics it implements: trim markers, if/else, define/include, pipelines,
    quote/default/required/not/indent/nindent, Go truthiness, missing map keys;
  * toYaml as sigs.k8s.io/yaml writes it (sorted keys, unindented sequences, go-yaml quoting),
    and that what it writes reads back as the same value;
  * everything outside the subset is an error, not silently rendered;
  * the stream is assembled as `helm template` assembles it (CRDs first, install order of
    kinds, "# Source:" lines, document splitting);
  * --set and values files merge as Helm's do.

  /usr/bin/python3 tests/deploy/helm_render_test.py [-v]
"""

import os
import sys
import tempfile
import textwrap
import unittest

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "deploy", "helm"))
import render  # noqa: E402
from render import TemplateError  # noqa: E402

ROOT = {
    "Values": {"name": "kturn", "port": 13478, "on": True, "off": False, "zero": 0, "empty": "",
               "list": [], "map": {}, "big": 1000000, "nested": {"a": {"b": "deep"}},
               "res": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "2"}}},
    "Release": {"Name": "rel", "Namespace": "ns"},
    "Chart": {"Name": "kturn", "Version": "0.1.0", "AppVersion": "0.1.0"},
}


def run(source, values=None):
    nodes, defines = render.parse(source, "t.yaml")
    root = dict(ROOT, Values=values if values is not None else ROOT["Values"])
    return render.Renderer(defines, root).render(nodes, root)


class TemplateSemanticsTest(unittest.TestCase):
    def test_fields_and_literals(self):
        self.assertEqual(run("{{ .Values.name }}:{{ .Values.port }}"), "kturn:13478")
        self.assertEqual(run("{{ .Release.Namespace }}/{{ $.Release.Name }}"), "ns/rel")
        self.assertEqual(run("{{ .Values.nested.a.b }}"), "deep")
        self.assertEqual(run('{{ "x" }}{{ 42 }}{{ true }}'), "x42true")

    def test_trim_markers(self):
        self.assertEqual(run("a  \n  {{- .Values.name }}\nb"), "akturn\nb")
        self.assertEqual(run("a\n{{ .Values.name -}}  \n  b"), "a\nkturnb")
        # A dash without the space is a negative number, not a trim marker.
        self.assertEqual(run("a {{-3}} b"), "a -3 b")

    def test_comments_render_nothing(self):
        self.assertEqual(run("a\n{{- /* a comment */}}\nb"), "a\nb")
        self.assertEqual(run("a{{/* x */}}b"), "ab")

    def test_if_else_and_go_truthiness(self):
        for field, want in [("on", "T"), ("off", "F"), ("zero", "F"), ("empty", "F"),
                            ("list", "F"), ("map", "F"), ("missing", "F"), ("name", "T"),
                            ("port", "T"), ("res", "T")]:
            with self.subTest(field=field):
                self.assertEqual(run(f"{{{{ if .Values.{field} }}}}T{{{{ else }}}}F{{{{ end }}}}"),
                                 want)
        self.assertEqual(run("{{ if not .Values.off }}yes{{ end }}"), "yes")

    def test_define_include_nindent(self):
        source = textwrap.dedent("""\
            {{- define "labels" -}}
            a: {{ .Values.name }}
            b: x
            {{- end }}
            metadata:
              labels:
                {{- include "labels" . | nindent 4 }}
            """)
        # The newline after {{- end }} stays, as in Go (in a chart it sits in _helpers.tpl).
        self.assertEqual(run(source), "\nmetadata:\n  labels:\n    a: kturn\n    b: x\n")

    def test_pipeline_passes_the_value_last(self):
        self.assertEqual(run('{{ .Values.empty | default "fallback" }}'), "fallback")
        self.assertEqual(run('{{ default "fallback" .Values.name }}'), "kturn")
        self.assertEqual(run('{{ .Values.missing | default .Chart.AppVersion }}'), "0.1.0")
        self.assertEqual(run("{{ .Values.name | quote }}"), '"kturn"')
        self.assertEqual(run("{{ .Values.port | quote }}"), '"13478"')
        self.assertEqual(run('{{ quote "a\\"b\\\\c" }}'), '"a\\"b\\\\c"')
        self.assertEqual(run('{{ (.Values.empty | default "x") | quote }}'), '"x"')
        self.assertEqual(run('{{ required "need it" .Values.name }}'), "kturn")
        self.assertEqual(run("{{ indent 2 .Values.name }}"), "  kturn")

    def test_to_yaml_nindent(self):
        source = "resources:\n  {{- toYaml .Values.res | nindent 2 }}\n"
        self.assertEqual(run(source), "resources:\n  limits:\n    cpu: \"2\"\n  requests:\n"
                                      "    cpu: 100m\n    memory: 64Mi\n")


class UnsupportedIsAnErrorTest(unittest.TestCase):
    CASES = {
        "range": "{{ range .Values.list }}x{{ end }}",
        "with": "{{ with .Values.map }}x{{ end }}",
        "template": '{{ template "x" . }}',
        "variables": "{{ $x := .Values.name }}",
        "variable use": "{{ $x }}",
        "unknown function": "{{ .Values.name | upper }}",
        "printf": '{{ printf "%s" .Values.name }}',
        "else if": "{{ if .Values.on }}a{{ else if .Values.off }}b{{ end }}",
        "unclosed if": "{{ if .Values.on }}a",
        "stray end": "a{{ end }}",
        "unterminated action": "{{ .Values.name ",
        "missing value printed": "{{ .Values.missing }}",
        "field of a missing value": "{{ .Values.missing.x }}",
        "a map printed": "{{ .Values.res }}",
        "a number Helm prints as 1e+06": "{{ .Values.big }}",
        "required and empty": '{{ required "need it" .Values.empty }}',
        "include of an unknown name": '{{ include "nope" . }}',
        "argument to a value": "{{ .Values.name .Values.port }}",
        "raw string": "{{ `raw` }}",
        "unknown escape": '{{ "\\u0041" }}',
        "define not at top level": '{{ if .Values.on }}{{ define "x" }}{{ end }}{{ end }}',
    }

    def test_each_is_refused(self):
        for what, source in self.CASES.items():
            with self.subTest(what=what):
                with self.assertRaises(TemplateError):
                    run(source)

    def test_errors_name_the_place(self):
        with self.assertRaisesRegex(TemplateError, r"t\.yaml:2: .*range"):
            run("ok\n{{ range .Values.list }}{{ end }}")

    def test_to_yaml_refuses_what_it_cannot_write_exactly(self):
        for value in ["two\nlines", 1.5, [[1]], {1: "a"}]:
            with self.subTest(value=value):
                with self.assertRaises(TemplateError):
                    render.to_yaml(value, "here")


class ToYamlTest(unittest.TestCase):
    def test_layout_like_go_yaml_v2(self):
        # Sorted keys, a key's sequence not indented, "y" quoted (YAML 1.1 reads it as true).
        value = {"b": [{"y": 1, "x": "s"}, "plain"], "a": {"k": []}, "c": {}, "d": None,
                 "e": True}
        self.assertEqual(render.to_yaml(value, "here"), textwrap.dedent("""\
            a:
              k: []
            b:
            - x: s
              "y": 1
            - plain
            c: {}
            d: null
            e: true"""))

    def test_quoting(self):
        cases = {
            # plain
            "100m": "100m", "-w": "-w", "--udp-thread-num=2": "--udp-thread-num=2",
            "kturn/kturnd:0.1.0": "kturn/kturnd:0.1.0", "NET_BIND_SERVICE": "NET_BIND_SERVICE",
            "a:b": "a:b", "1.2.3": "1.2.3", "http://x:1/y": "http://x:1/y", "a#b": "a#b",
            # would read back as another type: double-quoted
            "2": '"2"', "0x1F": '"0x1F"', "1e3": '"1e3"', "true": '"true"', "on": '"on"',
            "y": '"y"', "No": '"No"', "null": '"null"', "~": '"~"', "": '""', "1_000": '"1_000"',
            ".inf": '".inf"', "1:30": '"1:30"', "2024-01-02": '"2024-01-02"',
            # not plain in a block: single-quoted
            "a: b": "'a: b'", "#x": "'#x'", "*": "'*'", "- x": "'- x'", " lead": "' lead'",
            "trail ": "'trail '", "it's: x": "'it''s: x'", "x #y": "'x #y'", "end:": "'end:'",
            "---": "'---'", "[a]": "'[a]'", "{a}": "'{a}'", "!tag": "'!tag'", "&a": "'&a'",
            "%x": "'%x'", "@x": "'@x'", "`x": "'`x'", "|": "'|'", ">": "'>'",
        }
        for text, want in cases.items():
            with self.subTest(text=text):
                self.assertEqual(render.to_yaml(text, "here"), want)

    def test_round_trip(self):
        values = [
            {"requests": {"cpu": "500m", "memory": "128Mi"}, "limits": {"cpu": "2"}},
            [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}],
            {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"], "n": 3, "f": False, "z": None},
            {"weird keys": {"a: b": "c", "true": "yes", "": "empty"}},
            ["on", "off", "1e3", "0o17", "-", "?", ":", "a: b", "'q'", '"d"', "x # y"],
        ]
        for value in values:
            with self.subTest(value=value):
                text = render.to_yaml(value, "here")
                self.assertEqual(yaml.load(text, Loader=render.KubeYamlLoader), value)


class AssemblyTest(unittest.TestCase):
    def chart(self, files, values="{}\n"):
        tmp = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(tmp))
        files = dict(files)
        files.setdefault("Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.2.3\n"
                                       "appVersion: \"9.9\"\n")
        files.setdefault("values.yaml", values)
        for name, text in files.items():
            path = os.path.join(tmp, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return tmp

    def test_helm_template_layout(self):
        chart = self.chart({
            "crds/b.yaml": "kind: CustomResourceDefinition # b\n",
            "crds/a.yaml": "kind: CustomResourceDefinition # a\n",
            "crds/README.md": "not a manifest\n",
            "templates/_helpers.tpl": '{{- define "n" }}{{ .Release.Name }}-x{{ end }}',
            "templates/z.yaml": "kind: ClusterRole\nmetadata:\n  name: {{ include \"n\" . }}\n"
                                "---\nkind: ServiceAccount\nmetadata:\n  name: sa\n",
            "templates/a.yaml": "kind: Zeta\n---   \nkind: Alpha\n---\nkind: Deployment\n",
            "templates/empty.yaml": "{{- if false }}kind: Secret{{ end }}\n",
            "templates/NOTES.txt": "release {{ .Release.Name }}",
        })
        stream, notes = render.render(chart, "r", "ns", include_crds=True)
        self.assertEqual(notes, "release r")
        self.assertEqual(stream, textwrap.dedent("""\
            ---
            # Source: c/crds/a.yaml
            kind: CustomResourceDefinition # a

            ---
            # Source: c/crds/b.yaml
            kind: CustomResourceDefinition # b

            ---
            # Source: c/templates/z.yaml
            kind: ServiceAccount
            metadata:
              name: sa

            ---
            # Source: c/templates/z.yaml
            kind: ClusterRole
            metadata:
              name: r-x

            ---
            # Source: c/templates/a.yaml
            kind: Deployment

            ---
            # Source: c/templates/a.yaml
            kind: Alpha

            ---
            # Source: c/templates/a.yaml
            kind: Zeta
            """))

    def test_without_crds_and_defaults(self):
        chart = self.chart({"crds/a.yaml": "kind: X\n",
                            "templates/s.yaml": "kind: Service\nns: {{ .Release.Namespace }}\n"
                                                "name: {{ .Release.Name }}\n"})
        stream, _ = render.render(chart)
        self.assertEqual(stream, "---\n# Source: c/templates/s.yaml\nkind: Service\n"
                                 "ns: default\nname: release-name\n")

    def test_values_files_and_set(self):
        chart = self.chart({"templates/v.yaml": "kind: V\na: {{ .Values.a.x }}\n"
                                                "b: {{ .Values.b }}\n"
                                                "{{- if .Values.c }}\nc: set{{ end }}\n"},
                           values="a: {x: 1, y: 2}\nb: base\nc: {k: v}\n")
        override = os.path.join(chart, "override.yaml")
        with open(override, "w", encoding="utf-8") as f:
            f.write("a: {x: 5}\nc: null\n")
        stream, _ = render.render(chart, value_files=[override], sets=["b=top,a.y=3"])
        self.assertIn("a: 5\nb: top\n", stream)
        self.assertNotIn("c: set", stream)  # null in a values file deletes the default

    def test_set_types(self):
        self.assertEqual(render.parse_set("a.b=true,c=12,d=-1,e=null,f=0.5,g=x=y"),
                         {"a": {"b": True}, "c": 12, "d": -1, "e": None, "f": "0.5",
                          "g": "x=y"})
        for bad in ["a[0]=x", "a={b}", "noequals"]:
            with self.subTest(bad=bad):
                with self.assertRaises(TemplateError):
                    render.parse_set(bad)

    def test_a_document_that_is_not_a_mapping_is_an_error(self):
        chart = self.chart({"templates/x.yaml": "- a list\n"})
        with self.assertRaises(TemplateError):
            render.render(chart)


if __name__ == "__main__":
    unittest.main()
