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

Needs root: exits 77 (skipped) without it.
Network safety: all traffic stays in the namespace this test makes and deletes.
"""

import argparse
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import offload_clients_test as oc  # noqa: E402

SKIP = 77
NEEDED = ("BPF", "PERFMON", "NET_ADMIN")


def chart_capabilities(helm: str, chart: str) -> list:
    """The capabilities the chart's Dataplane adds with the fast path on."""
    import yaml
    out = subprocess.run([helm, "template", "kturn", chart, "-n", "kturn-system",
                          "--set", "dataplane.offload.engine=TC"],
                         capture_output=True, text=True, timeout=60)
    h.check(out.returncode == 0, f"helm template: {out.stderr.strip()}")
    (dataplane,) = [d for d in yaml.safe_load_all(out.stdout)
                    if d and d.get("kind") == "Dataplane"]
    spec = dataplane["spec"]
    h.check(spec["securityContext"]["runAsUser"] == 0, "the offload Dataplane is not root")
    h.check(spec["containerSecurityContext"]["capabilities"]["drop"] == ["ALL"],
            "the offload Dataplane does not drop every other capability")
    return spec["containerSecurityContext"]["capabilities"]["add"]


def stop(kturnd: h.Proc) -> None:
    """SIGINT: kturnd stops at once (uclient leaves its allocations), detaching the program."""
    os.killpg(kturnd.proc.pid, signal.SIGINT)
    h.check(kturnd.wait(10) == 0, "kturnd did not exit cleanly on SIGINT")


def body(args: argparse.Namespace, workdir: str) -> None:
    caps = chart_capabilities(args.helm, args.chart)
    h.check(set(NEEDED) <= set(caps), f"the chart's Dataplane adds {caps}")
    print(f"the chart's offload Dataplane: root with {', '.join(caps)}")
    layout = oc.Layout("loopback")
    h.start_udp_echo_peer(workdir, host=layout.peer_ip, port=oc.PEER_PORT, netns=layout.peer_ns)
    cases = [("the chart's", caps)] + [(f"without {c}", [x for x in caps if x != c])
                                       for c in NEEDED]
    for n, (name, granted) in enumerate(cases):
        bounding = ",".join(["-all"] + [f"+{c.lower()}" for c in granted])
        prefix = ["setpriv", f"--bounding-set={bounding}", "--inh-caps=-all", "--"]
        kturnd = oc.start_kturnd(layout, "TC", args.kturnd, workdir, prefix, tag=f"-{n}")
        before, after, sent = oc.uclient_call(layout, workdir, tag=f"-{n}")
        log = kturnd.output()
        stop(kturnd)
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
    args, _ = p.parse_known_args()
    if os.geteuid() != 0 or not os.path.isdir("/proc/sys/net"):
        print("SKIP: needs root for network namespaces and BPF")
        sys.exit(SKIP)
    h.run_test("offload-capabilities", body, p)


if __name__ == "__main__":
    main()
