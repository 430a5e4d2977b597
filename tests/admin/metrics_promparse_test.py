#!/usr/bin/python3
"""Parses kturn's Prometheus exposition with the Prometheus project's own Python parser.

Usage: metrics_promparse_test.py <path to admin_test>

Runs ExpositionSampleTest in the given gtest binary with KTURN_PROM_SAMPLE_OUT set, then checks
the text with prometheus_client.parser (Debian: python3-prometheus-client): an independent
implementation of the 0.0.4 text format, so a rendering bug the C++ tests share with the renderer
still fails here. Exits 77 (ctest SKIP_RETURN_CODE) when the parser is not installed.
"""
import os
import subprocess
import sys
import tempfile

SKIP = 77

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("SKIP: python3-prometheus-client is not installed")
    sys.exit(SKIP)

STUNNER_SERIES = {
    # family name as the parser reports it (counters lose "_total") -> (type, label names)
    "stunner_allocations_active": ("gauge", set()),
    "stunner_listener_packets": ("counter", {"name", "direction"}),
    "stunner_listener_bytes": ("counter", {"name", "direction"}),
    "stunner_listener_connections_total": ("counter", {"name"}),
    "stunner_listener_connections": ("gauge", {"name"}),
    "stunner_cluster_packets": ("counter", {"name", "direction"}),
    "stunner_cluster_bytes": ("counter", {"name", "direction"}),
}


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "exposition.txt")
        env = dict(os.environ, KTURN_PROM_SAMPLE_OUT=out)
        subprocess.run([sys.argv[1], "--gtest_filter=ExpositionSampleTest.*"], env=env,
                       check=True, stdout=subprocess.DEVNULL, timeout=60)
        with open(out, encoding="utf-8") as f:
            text = f.read()

    parsed = list(text_string_to_metric_families(text))
    families = {f.name: f for f in parsed}

    # stunner_listener_connections_total (counter) and stunner_listener_connections (gauge) get
    # the same family name once the parser strips "_total"; both are STUNner's names, so look
    # samples up across all families rather than by family.
    samples = {s.name: s for f in parsed for s in f.samples}
    for name, (kind, labels) in STUNNER_SERIES.items():
        sample_name = name + "_total" if kind == "counter" and not name.endswith("_total") else name
        assert sample_name in samples, f"missing {sample_name}"
        assert set(samples[sample_name].labels) == labels, (sample_name, samples[sample_name])
        assert samples[sample_name].value == 12, samples[sample_name]

    weird = families["kturn_test_weird_labels"]
    assert weird.documentation == "help with \\ backslash\nand newline", weird.documentation
    assert weird.samples[0].labels["name"] == 'a\\b"c\nd', weird.samples[0].labels
    assert weird.samples[0].value == 1.5

    hist = families["kturn_request_duration_seconds"]
    assert hist.type == "histogram", hist.type
    buckets = [s for s in hist.samples if s.name.endswith("_bucket")]
    counts = [s.value for s in buckets]
    assert counts == sorted(counts), counts
    assert buckets[-1].labels["le"] == "+Inf" and buckets[-1].value == 11, buckets[-1]
    count = [s for s in hist.samples if s.name.endswith("_count")][0]
    assert count.value == 11, count

    for name in ("process_cpu_seconds", "process_resident_memory_bytes", "process_open_fds"):
        assert name in families, f"missing {name}"

    print(f"OK: {len(parsed)} families parsed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
