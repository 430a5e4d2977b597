#!/usr/bin/python3
"""Each operator's config discovery server drives the other project's data plane: the two halves
of the drop-in, checked against the real control plane (tests/support/control_plane.py) with
tests/golden/seed000's manifests (as in operator_test.py: a Scope of the test's own, a free
listener port, pods in a network namespace of the test's own behind harness.PodNetwork, root
needed: exits 77 without it).

  --operator-impl kturn --dataplane stunnerd: STUNner's stunnerd v1.2.1 (built from its Go module
      by scripts/build-test-tools.sh) on kturn-operator's CDS (issue 23);
  --operator-impl stunner --dataplane kturnd: kturnd on STUNner's gateway operator v1.2.1 (built
      from ../shared/reference/ by the same script; issue 40).

The data plane runs as a Dataplane pod would, `-w -c http://<cds> --id <namespace>/<gateway>`
with STUNNER_ADDR set:

  1. CDS serves the Gateway's config; the data plane takes it and coturn's turnutils_uclient
     relays through it to turnutils_peer on pod A, every message echoed.
  2. The EndpointSlice moves the pod to pod B: the CDS server pushes the new config over the
     WebSocket, the data plane relays to pod B and refuses pod A (kturnd with 403 Forbidden, as
     RFC 8656 section 9.2 has it; pion/turn's error response has no ERROR-CODE).
  3. The Gateway is deleted: its Deployment and Service go (deleted by kturn-operator, collected
     by the API's garbage collector for STUNner's, whose owner references name the Gateway), and
     the CDS server pushes the zero config, which the data plane ignores (both watch with
     deletions suppressed) and goes on serving its last config until its pod ends.

  /usr/bin/python3 cds_crossover_test.py --server kturnd --kturnd build/kturnd \\
      --operator-impl stunner --operator build/test-tools/bin/stunner-gateway-operator \\
      --dataplane kturnd
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


def start_operator(impl: str, binary: str, scope: "cp.Scope", controller: str, cds: str,
                   workdir: str) -> h.Proc:
    """kturn-operator (impl "kturn") or STUNner's gateway operator, as its chart runs it but for
    the controller name, the CDS address (`cds`, a free loopback address; kturn's pods are told
    the same one, as STUNner's are) and no metrics or health endpoints of its own (fixed ports,
    shared host); its kubeconfig a ServiceAccount's of `scope`."""
    kubeconfig = scope.service_account_kubeconfig(f"{impl}-operator")
    if impl == "kturn":
        argv = ["--kubeconfig", kubeconfig, "--cds-addr", cds, "--cds-server-address", cds,
                "-l", "all:INFO"]
    else:  # STUNner's: controller-runtime finds the kubeconfig in $KUBECONFIG. Its log flags as
        # its chart sets them: at zap's development default (debug), a UDPRoute of two rules
        # makes it panic (renderCluster logs printf-style arguments as key-value pairs, and
        # zap's development mode panics on that).
        argv = ["--config-discovery-address", cds, "--zap-encoder=console",
                "--zap-log-level=info"]
    operator = h.Proc(f"{impl}-operator", [
        os.path.abspath(binary), "--controller-name", controller, *argv, *op.NO_OWN_ENDPOINTS],
        workdir, env=dict(os.environ, KUBECONFIG=kubeconfig))
    h.register_log(operator.log_path)
    return operator.start()


def start_dataplane(args: argparse.Namespace, cds_port: int, gateway: str, address: str,
                    workdir: str) -> h.Proc:
    binary = args.stunnerd if args.dataplane == "stunnerd" else args.kturnd
    h.check(bool(binary) and os.access(binary, os.X_OK),
            f"no {args.dataplane} at {binary} (--{args.dataplane})")
    p = h.Proc(args.dataplane, [
        os.path.abspath(binary), "-w", "-c", f"http://{h.LOOPBACK}:{cds_port}", "--id", gateway,
        "-l", "all:INFO"], workdir, env=dict(os.environ, STUNNER_ADDR=address))
    h.register_log(p.log_path)
    return p.start()


def body(args: argparse.Namespace, workdir: str) -> None:
    h.check(os.access(args.operator, os.X_OK),
            f"no operator at {args.operator} (scripts/build-test-tools.sh builds STUNner's)")
    pods = h.PodNetwork().create()
    pod_a, pod_b = pods.pod_ips
    turn_port = h.free_port(pods.gateway_ip, udp_only=True)
    turn = (pods.gateway_ip, turn_port)
    cds_port = h.free_port()
    scope = cp.Scope()
    h.register_cleanup(scope.delete)
    operator = start_operator(args.operator_impl, args.operator, scope, scope.controller_name,
                              f"{h.LOOPBACK}:{cds_port}", workdir)
    procs = [operator]
    # stunnerd keeps STUNner's default :8086 health check. stunnerd v1.2.1 bootstraps with it
    # (-w); a first config that turns it off, served a few milliseconds later, races its health
    # server's start (internal/object/admin.go reconcileHealthCheck nils the server its serving
    # goroutine has yet to read) and stunnerd panics. Seen here once: a STUNner bug, not kturn's,
    # which STUNner's operator triggers the same way with disableHealthCheck: true. kturnd goes
    # without: the fixed port would keep two tests from running side by side.
    docs = op.manifests(turn_port, pod_a, health_check=args.dataplane == "stunnerd")
    scope.apply(docs)
    gw_ns = scope.ns("media")
    gateway = f"{gw_ns}/{op.GW_NAME}"
    pair = f"{args.dataplane} on {args.operator_impl}'s CDS"

    # 1. The data plane on the other project's CDS, relaying to pod A.
    dataplane = start_dataplane(args, cds_port, gateway, pods.gateway_ip, workdir)
    procs.append(dataplane)
    op.wait_for(f"{pair} answering STUN on the Gateway's listener",
                lambda: h.stun_binding_probe(turn), 30, procs=procs)
    _, port_a = h.start_udp_echo_peer(workdir, pod_a, netns=pods.ns)
    op.uclient(workdir, turn, pod_a, port_a, f"{args.dataplane}-a")
    print(f"{pair} relays to pod {pod_a}")

    # 2. The pod moves; the CDS server pushes the config, the data plane follows.
    es = scope.get("endpointslice", "media-server-x7k2p", "media")
    es["endpoints"] = [{"addresses": [pod_b], "conditions": {"ready": True, "serving": True}}]
    scope.kubectl("replace", "-f", "-", input=json.dumps(es))
    t0 = time.monotonic()
    op.wait_for(f"{pair} admitting pod B", lambda: op.permission(turn, pod_b) is None, 20, procs)
    print(f"{pair} admits pod {pod_b} {time.monotonic() - t0:.2f} s after the EndpointSlice "
          "change")
    _, port_b = h.start_udp_echo_peer(workdir, pod_b, netns=pods.ns)
    op.uclient(workdir, turn, pod_b, port_b, f"{args.dataplane}-b")
    refused = op.permission(turn, pod_a)
    if args.dataplane == "kturnd":
        h.check(refused == 403, f"{pair}: CreatePermission for the removed pod {pod_a}: "
                                f"{refused}, want 403")
    else:  # pion/turn's error response carries no ERROR-CODE (-1 here)
        h.check(refused is not None, f"{pair} admitted the removed pod {pod_a}")
    print(f"removed pod {pod_a}: {args.dataplane} refuses CreatePermission "
          f"({'no ERROR-CODE' if refused == -1 else refused})")

    # 3. The Gateway goes: the CDS server pushes the zero config, which the data plane ignores
    #    (it watches with deletions suppressed: docs/cds.md); its pod would end with the
    #    Deployment.
    scope.kubectl("delete", "gateways.gateway.networking.k8s.io", op.GW_NAME, "-n", gw_ns)
    ignored = ("Ignoring delete configuration update" if args.dataplane == "stunnerd" else
               "the server deleted this config (zero config)")
    op.wait_for(f"{pair} ignoring the zero config", lambda: ignored in dataplane.output(), 20,
                procs)
    op.wait_for("the Gateway's Deployment and Service deleted",
                lambda: scope.get("deployment", op.GW_NAME, "media") is None and
                scope.get("service", op.GW_NAME, "media") is None, 30, procs)
    op.uclient(workdir, turn, pod_b, port_b, f"{args.dataplane}-after-delete")
    print(f"Gateway deleted: its Deployment and Service went; {args.dataplane} ignored the zero "
          "config and relays on its last config until its pod goes")
    h.check(dataplane.running() and operator.running(),
            f"{args.dataplane} or the operator exited")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--operator-impl", choices=("kturn", "stunner"), default="kturn",
                   help="whose operator --operator is")
    p.add_argument("--operator", required=True, help="kturn-operator or STUNner's operator")
    p.add_argument("--dataplane", choices=("stunnerd", "kturnd"), default="stunnerd")
    p.add_argument("--stunnerd", help="STUNner's stunnerd (test tool), with --dataplane stunnerd")
    args, _ = p.parse_known_args()
    if args.operator_impl == "stunner" and not os.access(args.operator, os.X_OK):
        print(f"SKIP: no STUNner operator at {args.operator}: scripts/build-test-tools.sh builds "
              "it from ../shared/reference/, which is not beside this checkout")
        sys.exit(77)
    h.root_or_skip("the media pods live in a network namespace of the test's own")
    h.run_test(f"{args.dataplane}-on-{args.operator_impl}-cds", body, p, overall_timeout=150)


if __name__ == "__main__":
    main()
