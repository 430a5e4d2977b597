#!/usr/bin/python3
"""STUNner's own stunnerd fed by kturn-operator's config discovery server: the data plane half of
the drop-in, the other way round (issue 23). STUNner's stunnerd v1.2.1 (built from its Go module
by scripts/build-test-tools.sh) runs as a Dataplane pod would, `stunnerd -w -c http://<cds> --id
<namespace>/<gateway>` with STUNNER_ADDR set, against the real kturn-operator on the test run's
real control plane (tests/support/control_plane.py), with tests/golden/seed000's manifests (as in
operator_test.py: a Scope of the test's own, a free listener port, pods in a network namespace of
the test's own behind harness.PodNetwork, root needed: exits 77 without it).

  1. CDS serves the Gateway's config; stunnerd takes it and coturn's turnutils_uclient relays
     through it to turnutils_peer on pod A, every message echoed.
  2. The EndpointSlice moves the pod to pod B: kturn's CDS pushes the new config over the
     WebSocket, stunnerd relays to pod B and refuses pod A (an error response to
     CreatePermission; pion/turn's has no ERROR-CODE).
  3. The Gateway is deleted: the operator deletes its Deployment and Service, and its CDS
     server pushes the zero config, which stunnerd ignores (it watches with deletions
     suppressed, as kturnd does) and goes on serving its last config until its pod ends.

  /usr/bin/python3 stunnerd_cds_test.py --server kturnd --kturnd build/kturnd \\
      --operator build/kturn-operator --stunnerd build/test-tools/bin/stunnerd
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import operator_test as op  # noqa: E402  (the seed manifests, uclient, waits)
from operator_test import cp  # noqa: E402


def body(args: argparse.Namespace, workdir: str) -> None:
    h.check(os.access(args.stunnerd, os.X_OK),
            f"no stunnerd at {args.stunnerd} (scripts/build-test-tools.sh builds it)")
    pods = h.PodNetwork().create()
    pod_a, pod_b = pods.pod_ips
    turn_port = h.free_port(pods.gateway_ip, udp_only=True)
    turn = (pods.gateway_ip, turn_port)
    cds_port = h.free_port()
    scope = cp.Scope()
    h.register_cleanup(scope.delete)
    operator = h.Proc("kturn-operator", [
        os.path.abspath(args.operator), "--kubeconfig",
        scope.service_account_kubeconfig("kturn-operator"), "--controller-name",
        scope.controller_name, "--cds-addr", f"{h.LOOPBACK}:{cds_port}", "-l", "all:DEBUG",
        *op.NO_OWN_ENDPOINTS], workdir)
    h.register_log(operator.log_path)
    operator.start()
    h.register_cleanup(operator.stop)
    procs = [operator]
    # The Dataplane keeps STUNner's default :8086 health check. stunnerd v1.2.1 bootstraps with it
    # (-w); a first config that turns it off, served a few milliseconds later, races its health
    # server's start (internal/object/admin.go reconcileHealthCheck nils the server its serving
    # goroutine has yet to read) and stunnerd panics. Seen here once: a STUNner bug, not kturn's,
    # which STUNner's operator triggers the same way with disableHealthCheck: true.
    docs = op.manifests(turn_port, pod_a, health_check=True)
    scope.apply(docs)
    gw_ns = scope.ns("media")
    gateway = f"{gw_ns}/{op.GW_NAME}"

    # 1. stunnerd on kturn's CDS, relaying to pod A.
    stunnerd = h.Proc("stunnerd", [
        os.path.abspath(args.stunnerd), "-w", "-c", f"http://{h.LOOPBACK}:{cds_port}", "--id",
        gateway, "-l", "all:INFO"], workdir, env=dict(os.environ, STUNNER_ADDR=pods.gateway_ip))
    h.register_log(stunnerd.log_path)
    stunnerd.start()
    h.register_cleanup(stunnerd.stop)
    procs.append(stunnerd)
    op.wait_for("stunnerd answering STUN on the Gateway's listener",
                lambda: h.stun_binding_probe(turn), procs=procs)
    _, port_a = h.start_udp_echo_peer(workdir, pod_a, netns=pods.ns)
    op.uclient(workdir, turn, pod_a, port_a, "stunnerd-a")
    print(f"stunnerd on kturn-operator's CDS relays to pod {pod_a}")

    # 2. The pod moves; kturn's CDS pushes the config, stunnerd follows.
    es = scope.get("endpointslice", "media-server-x7k2p", "media")
    es["endpoints"] = [{"addresses": [pod_b], "conditions": {"ready": True, "serving": True}}]
    scope.kubectl("replace", "-f", "-", input=json.dumps(es))
    t0 = time.monotonic()
    op.wait_for("stunnerd admitting pod B", lambda: op.permission(turn, pod_b) is None, 20, procs)
    print(f"stunnerd admits pod {pod_b} {time.monotonic() - t0:.2f} s after the EndpointSlice "
          "change")
    _, port_b = h.start_udp_echo_peer(workdir, pod_b, netns=pods.ns)
    op.uclient(workdir, turn, pod_b, port_b, "stunnerd-b")
    # Refused with an error response; pion/turn's carries no ERROR-CODE (-1 here), where kturnd
    # answers 403 Forbidden as RFC 8656 §9.2 has it (docs/migration-from-stunner.md).
    refused = op.permission(turn, pod_a)
    h.check(refused is not None, f"stunnerd admitted the removed pod {pod_a}")
    print(f"removed pod {pod_a}: stunnerd refuses CreatePermission "
          f"({'no ERROR-CODE' if refused == -1 else refused})")

    # 3. The Gateway goes: kturn's CDS pushes the zero config, which stunnerd ignores as it
    #    ignores STUNner's (it watches with deletions suppressed, as kturnd does: docs/cds.md);
    #    the pod ends with the Deployment, which the operator deletes.
    scope.kubectl("delete", "gateways.gateway.networking.k8s.io", op.GW_NAME, "-n", gw_ns)
    op.wait_for("stunnerd ignoring the zero config",
                lambda: "Ignoring delete configuration update" in stunnerd.output(), 20, procs)
    op.wait_for("the Gateway's Deployment and Service deleted",
                lambda: scope.get("deployment", op.GW_NAME, "media") is None and
                scope.get("service", op.GW_NAME, "media") is None, 20, procs)
    h.check(h.stun_binding_probe(turn) is not None,
            "stunnerd stopped serving its last config on the zero config")
    print("Gateway deleted: the operator deleted its Deployment and Service; stunnerd ignored "
          "the zero config and serves its last config until its pod goes")
    h.check(stunnerd.running() and operator.running(), "stunnerd or the operator exited")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--operator", required=True, help="kturn-operator binary")
    p.add_argument("--stunnerd", required=True, help="STUNner's stunnerd (test tool)")
    args, _ = p.parse_known_args()
    h.root_or_skip("the media pods live in a network namespace of the test's own")
    h.run_test("stunnerd-cds", body, p, overall_timeout=110)


if __name__ == "__main__":
    main()
