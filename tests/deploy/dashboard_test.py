#!/usr/bin/python3
"""deploy/grafana/kturn-dashboard.json against the series a real kturnd exports.

  * the JSON has a Grafana 10 dashboard's structure: the DS_PROMETHEUS input and datasource
    variable, namespace and pod variables, unique panel ids on the 24-column grid, every query
    on ${DS_PROMETHEUS}, no undefined $variables, and panels for every series family the
    dashboard is meant to show;
  * every metric name in every PromQL expression (panels and variable queries) is a series
    kturnd exports: kturnd runs on loopback with admin.metrics_endpoint on a free port, /metrics
    is parsed with prometheus_client's text parser (python3-prometheus-client).

  /usr/bin/python3 dashboard_test.py --server kturnd --kturnd build/kturnd
"""

import argparse
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "interop"))
import harness as h  # noqa: E402

DEFAULT_DASHBOARD = os.path.join(REPO, "deploy", "grafana", "kturn-dashboard.json")
DATASOURCE = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
GRAFANA_BUILTINS = {"__rate_interval", "__interval", "__range"}
# The panels the dashboard exists for: each of these series must be queried somewhere.
REQUIRED_SERIES = {
    "stunner_allocations_active", "kturn_allocations_created_total",
    "kturn_allocations_expired_total", "kturn_allocations_ended_total",
    "kturn_allocations_rejected_total", "kturn_request_duration_seconds_bucket",
    "kturn_relayed_packets_total", "kturn_relayed_bytes_total", "kturn_auth_failures_total",
    "kturn_drops_total", "kturn_permissions_rejected_total", "stunner_listener_packets_total",
    "stunner_listener_bytes_total",
    "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
}
# The sample names a metric family of each type puts into Prometheus.
SERIES_SUFFIXES = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"],
                   "summary": ["", "_sum", "_count"]}
PROMQL_KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan"}


def load_dashboard(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def variables(dashboard):
    return {v["name"]: v for v in dashboard["templating"]["list"]}


def queries(dashboard):
    """(where, PromQL) of every panel target and every query variable."""
    out = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            out.append((f"panel {panel['title']!r} {target['refId']}", target["expr"]))
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            out.append((f"variable {var['name']}", var["query"]["query"]))
    return out


def metric_names(promql):
    """Metric names in a PromQL expression (or a Grafana label_values() variable query)."""
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', promql)  # string literals
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges and subqueries
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    text = re.sub(r"\$\{?\w+\}?", "", text)  # Grafana variables
    text = re.sub(r"label_values\(\s*\w+\s*\)", "", text)  # label_values(label): no metric
    text = re.sub(r"label_values\(([^,()]*),\s*\w+\s*\)", r"label_values(\1)", text)
    names = set()
    for match in re.finditer(r"(?<![\w.])[A-Za-z_:][\w:]*", text):
        followed_by_call = text[match.end():].lstrip().startswith("(")
        if not followed_by_call and match.group(0).lower() not in PROMQL_KEYWORDS:
            names.add(match.group(0))
    return names


def check_structure(dashboard):
    h.check(dashboard.get("schemaVersion", 0) >= 37, "schemaVersion is older than Grafana 10")
    for key in ("title", "uid", "time", "panels", "templating"):
        h.check(key in dashboard, f"dashboard has no {key}")
    inputs = {i["name"]: i for i in dashboard.get("__inputs", [])}
    h.check(inputs.get("DS_PROMETHEUS", {}).get("pluginId") == "prometheus",
            f"no DS_PROMETHEUS prometheus input: {inputs}")
    vs = variables(dashboard)
    h.check(vs.get("DS_PROMETHEUS", {}).get("type") == "datasource", "no DS_PROMETHEUS variable")
    for name in ("namespace", "pod"):
        h.check(vs.get(name, {}).get("type") == "query", f"no {name} query variable")
    check_panels(dashboard["panels"])
    check_variable_references(dashboard)


def check_panels(panels):
    ids = [p["id"] for p in panels]
    h.check(len(ids) == len(set(ids)), f"duplicate panel ids: {ids}")
    for p in panels:
        g = p["gridPos"]
        h.check(g["x"] >= 0 and g["w"] > 0 and g["x"] + g["w"] <= 24 and g["h"] > 0,
                f"panel {p['title']!r}: gridPos {g} off the 24-column grid")
        if p["type"] == "row":
            continue
        h.check(p.get("datasource") == DATASOURCE, f"panel {p['title']!r}: datasource")
        h.check(p.get("targets"), f"panel {p['title']!r} has no queries")
        for t in p["targets"]:
            h.check(t.get("datasource") == DATASOURCE and t.get("expr"),
                    f"panel {p['title']!r} {t.get('refId')}: no expr on ${{DS_PROMETHEUS}}")


def check_variable_references(dashboard):
    defined = set(variables(dashboard)) | GRAFANA_BUILTINS
    for where, promql in queries(dashboard):
        used = set(re.findall(r"\$\{?(\w+)\}?", promql))
        h.check(used <= defined, f"{where}: undefined variables {sorted(used - defined)}")


def start_kturnd(binary, workdir, metrics_port):
    settings = h.ServerSettings(auth="static")
    config = h.KturndServer.config_for(settings)
    config["admin"]["metrics_endpoint"] = f"http://{h.LOOPBACK}:{metrics_port}/metrics"
    return h.KturndServer(binary, config, workdir=workdir, settings=settings,
                          loglevel="all:INFO")


def scrape(port, timeout=10.0):
    """The /metrics text, retried (bounded) until the endpoint answers."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            url = f"http://{h.LOOPBACK}:{port}/metrics"
            with urllib.request.urlopen(url, timeout=2) as r:
                return r.read().decode()
        except (urllib.error.URLError, ConnectionError) as e:
            if time.monotonic() > deadline:
                raise h.TestFailure(f"/metrics on port {port} did not answer: {e}")
            time.sleep(0.1)


def exported_series(text):
    """Every series name the exposition puts into Prometheus (samples, and the sample names of
    every declared family, so a histogram without observations still counts)."""
    from prometheus_client.parser import text_string_to_metric_families
    names = set()
    for family in text_string_to_metric_families(text):
        names |= {s.name for s in family.samples}
        names |= {family.name + sfx for sfx in SERIES_SUFFIXES.get(family.type, [""])}
    return names


def run(args, workdir):
    h.check(args.server == "kturnd" and bool(args.kturnd), "needs --server kturnd --kturnd PATH")
    dashboard = load_dashboard(args.dashboard)
    check_structure(dashboard)
    used = {}
    for where, promql in queries(dashboard):
        for name in metric_names(promql):
            used.setdefault(name, []).append(where)
    missing_panels = REQUIRED_SERIES - set(used)
    h.check(not missing_panels, f"no panel queries {sorted(missing_panels)}")

    port = h.free_port()
    with start_kturnd(args.kturnd, workdir, port):
        exported = exported_series(scrape(port))
    unknown = {name: where for name, where in used.items() if name not in exported}
    h.check(not unknown, "the dashboard queries series kturnd does not export:\n" +
            "\n".join(f"  {name}: {where}" for name, where in sorted(unknown.items())))
    unshown = sorted(n for n in exported if n.startswith(("kturn_", "stunner_")) and n not in used)
    print(f"dashboard: {len(used)} series queried, all exported; "
          f"exported but not on the dashboard: {unshown or 'none'}")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--dashboard", default=DEFAULT_DASHBOARD, help="dashboard JSON to check")
    h.run_test("dashboard", run, p)


if __name__ == "__main__":
    main()
