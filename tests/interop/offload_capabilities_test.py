#!/usr/bin/python3
"""The capabilities the chart's Dataplane grants for the eBPF fast path are the ones kturnd
needs, no more and no fewer.

The chart (deploy/helm/kturn, rendered by the real Helm with dataplane.offload.engine=TC) runs
kturnd as root with all capabilities dropped but the few it adds. This test runs kturnd the way
the container runtime would, as root with exactly that capability set and nothing else
(setpriv --bounding-set -all,+...), in a network namespace of its own with `offload_engine: TC`
on lo, and a turnutils_uclient call (10 clients x 1,000 ChannelData) through it to
turnutils_peer:

  * with the chart's set, the kernel relays at least 99 % of the call each way;
  * without any one of BPF, PERFMON and NET_ADMIN, kturnd logs that it relays in user space
    (naming the capabilities), the kernel relays nothing, and the call still echoes every
    message: the documented fallback.

With --relay-sockets, the same for dataplane.relaySockets=shared (docs/offload.md#relay-ports-
without-a-socket-each): with the render's env and capabilities kturnd relays the call from
shared relay sockets (/status admin.relay_sockets), and without any one of BPF, NET_ADMIN and
NET_RAW it says so and keeps a socket per allocation, the call echoed all the same.

Needs root: exits 77 (skipped) without it.
Network safety: all traffic stays in the namespace this test makes and deletes.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import offload_clients_test as oc  # noqa: E402

SKIP = 77
NEEDED = ("BPF", "PERFMON", "NET_ADMIN")
SHARED_NEEDED = ("BPF", "NET_ADMIN", "NET_RAW")  # --relay-sockets shared


def chart_dataplane(helm: str, chart: str, value: str) -> dict:
    """The chart's Dataplane spec with `value` set, after checking it runs kturnd as root with
    every capability dropped but those it adds."""
    import yaml
    out = subprocess.run([helm, "template", "kturn", chart, "-n", "kturn-system",
                          "--set", value], capture_output=True, text=True, timeout=60)
    h.check(out.returncode == 0, f"helm template: {out.stderr.strip()}")
    (dataplane,) = [d for d in yaml.safe_load_all(out.stdout)
                    if d and d.get("kind") == "Dataplane"]
    spec = dataplane["spec"]
    h.check(spec["securityContext"]["runAsUser"] == 0, f"the Dataplane with {value} is not root")
    h.check(spec["containerSecurityContext"]["capabilities"]["drop"] == ["ALL"],
            f"the Dataplane with {value} does not drop every other capability")
    return spec


def capabilities(spec: dict) -> list:
    return spec["containerSecurityContext"]["capabilities"]["add"]


def setpriv(granted: list) -> list:
    """Runs a command as root with exactly `granted` capabilities, as the container runtime
    runs a root container with capabilities dropped and added."""
    bounding = ",".join(["-all"] + [f"+{c.lower()}" for c in granted])
    return ["setpriv", f"--bounding-set={bounding}", "--inh-caps=-all", "--"]


def shared_relay_sockets(args: argparse.Namespace, workdir: str, layout: "oc.Layout") -> None:
    """dataplane.relaySockets=shared: kturnd with the env and the capabilities of the render
    serves its relay ports from shared sockets; without BPF, NET_ADMIN or NET_RAW it says so and
    keeps a socket per allocation. A uclient call is echoed in every case."""
    spec = chart_dataplane(args.helm, args.chart, "dataplane.relaySockets=shared")
    env = {e["name"]: e.get("value") for e in spec.get("env", [])}
    h.check(env.get("KTURN_RELAY_SOCKETS") == "shared", f"the Dataplane's env: {env}")
    caps = capabilities(spec)
    h.check(set(SHARED_NEEDED) <= set(caps), f"the chart's Dataplane adds {caps}")
    print(f"the chart's shared-relay-sockets Dataplane: root with {', '.join(caps)}, "
          f"KTURN_RELAY_SOCKETS=shared")
    cases = [("the chart's", caps)] + [(f"without {c}", [x for x in caps if x != c])
                                       for c in SHARED_NEEDED]
    for n, (name, granted) in enumerate(cases):
        kturnd = oc.start_kturnd(layout, "None", args.kturnd, workdir, setpriv(granted),
                                 tag=f"-shared-{n}", args=["--relay-sockets", "shared"])
        oc.uclient_call(layout, workdir, tag=f"-shared-{n}")
        with h.in_netns(layout.server_ns):
            with urllib.request.urlopen(f"http://{layout.listener_ip}:9086/status",
                                        timeout=5) as r:
                relay = json.loads(r.read())["admin"].get("relay_sockets")
        log = kturnd.output()
        oc.stop(kturnd)
        if granted == caps:
            h.check(relay is not None and relay.get("mode") == "shared" and
                    relay.get("shared_addresses", 0) > 0,
                    f"{name} capabilities: /status admin.relay_sockets {relay}:\n{log}")
            print(f"{name} capabilities: the call relayed from {relay['shared_addresses']} "
                  f"shared relayed addresses")
            continue
        warning = re.search(r"warn.*relay sockets: .*a socket per allocation", log)
        h.check(warning is not None and relay is None,
                f"{name}: kturnd did not fall back to a socket per allocation, saying why "
                f"(/status {relay}):\n{log}")
        print(f"{name}: '{warning.group(0).split('] ', 1)[-1]}'; the call echoed")


def body(args: argparse.Namespace, workdir: str) -> None:
    layout = oc.Layout("loopback")
    h.start_udp_echo_peer(workdir, host=layout.peer_ip, port=oc.PEER_PORT, netns=layout.peer_ns)
    if args.relay_sockets:
        return shared_relay_sockets(args, workdir, layout)
    caps = capabilities(chart_dataplane(args.helm, args.chart, "dataplane.offload.engine=TC"))
    h.check(set(NEEDED) <= set(caps), f"the chart's Dataplane adds {caps}")
    print(f"the chart's offload Dataplane: root with {', '.join(caps)}")
    cases = [("the chart's", caps)] + [(f"without {c}", [x for x in caps if x != c])
                                       for c in NEEDED]
    for n, (name, granted) in enumerate(cases):
        kturnd = oc.start_kturnd(layout, "TC", args.kturnd, workdir, setpriv(granted),
                                 tag=f"-{n}")
        before, after, sent = oc.uclient_call(layout, workdir, tag=f"-{n}")
        log = kturnd.output()
        oc.stop(kturnd)
        if granted == caps:
            h.check(oc.FALLBACK not in log, f"{name} capabilities: kturnd fell back:\n{log}")
            shares = oc.check_kernel_share(f"{name} capabilities", before, after, sent)
            print(f"{name} capabilities ({', '.join(granted)}): the kernel relayed {shares}")
            continue
        fallback = re.search(rf"warn.*offload: .*{oc.FALLBACK}", log)
        h.check(fallback is not None and "CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN" in log,
                f"{name}: kturnd did not say it relays in user space, and why:\n{log}")
        for d in ("rx", "tx"):
            h.check(after.kernel[d] == before.kernel[d],
                    f"{name}: the kernel relayed {after.kernel[d] - before.kernel[d]:.0f} ({d})")
            h.check(after.relayed[d] - before.relayed[d] >= sent,
                    f"{name}: kturnd relayed {after.relayed[d] - before.relayed[d]:.0f} ({d})")
        print(f"{name}: '{fallback.group(0).split('] ', 1)[-1]}'; the call's {sent} messages "
              f"relayed in user space, every one echoed")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--helm", required=True, help="the helm binary (make test-tools)")
    p.add_argument("--chart", required=True, help="deploy/helm/kturn")
    p.add_argument("--relay-sockets", action="store_true",
                   help="the shared relay sockets' Dataplane (dataplane.relaySockets=shared) "
                        "instead of the fast path's")
    args, _ = p.parse_known_args()
    if os.geteuid() != 0 or not os.path.isdir("/proc/sys/net"):
        print("SKIP: needs root for network namespaces and BPF")
        sys.exit(SKIP)
    h.run_test("offload-capabilities" + ("-shared" if args.relay_sockets else ""), body, p)


if __name__ == "__main__":
    main()
