#!/usr/bin/python3
"""kturnd run with stunnerd's command lines, as a Dataplane written for STUNner runs it after the
image swap (migration breaker 3 of issue 23):

  1. STUNner's forms with a config file: `-v -w -c FILE`, `-w --udp-thread-num=16`, `-u 2 -d`,
     and the Kubernetes client flags: each kturnd starts, answers a STUN Binding, and logs the
     flags it ignores once.
  2. `-c k8s` against the test run's real control plane (tests/support/control_plane.py): the
     real kturn-operator serves the seed 000 Gateway over CDS; the API server holds a pod
     labelled stunner.l7mp.io/config-discovery-service=enabled whose status gives the address
     the operator listens on. kturnd, with a kubeconfig of a ServiceAccount that may only view,
     finds that pod through the API, takes its Gateway's config from it and serves the listener.
  3. `-c k8s` with no such pod in the namespace named: exits 1, naming the label it looked for.
  4. kturn-auth run as stunner-auth-service runs (no -c, the discovery and Kubernetes client
     flags, -v): it finds the same pod through the API and answers /?service=turn with a
     credential for the Gateway's listener.

  /usr/bin/python3 stunnerd_flags_test.py --server kturnd --kturnd build/kturnd \\
      --operator build/kturn-operator --kturn-auth build/kturn-auth
      (KTURN_CONTROL_PLANE: the control plane's folder)
"""

import argparse
import json
import os
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import operator_test as op  # noqa: E402  (its waits and seed manifests)
from operator_test import cp  # noqa: E402  (tests/support/control_plane.py)

LABEL = "stunner.l7mp.io/config-discovery-service"


def served(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def start_kturnd(args, workdir: str, tag: str, argv: list, env=None) -> h.Proc:
    p = h.Proc(f"kturnd-{tag}", [os.path.abspath(args.kturnd), *argv], workdir,
               env=dict(os.environ, STUNNER_ADDR=h.LOOPBACK, **(env or {})))
    h.register_log(p.log_path)
    return p.start()


def file_forms(args, workdir: str) -> None:
    forms = {
        "verbose": ["-v", "-w"],
        "dataplane": ["-w", "--udp-thread-num=16"],
        "short": ["-u", "2", "-d", "-i", "default/stunnerd"],
        "kubernetes-flags": ["--kubeconfig", "/nonexistent", "-n", "stunner", "--context", "x",
                             "--cds-server-namespace", "stunner-system"],
    }
    for tag, flags in forms.items():
        port = h.free_port(udp_only=True)
        config = os.path.join(workdir, f"stunnerd-{tag}.json")
        with open(config, "w") as f:
            json.dump({
                "version": "v1", "admin": {"name": tag, "healthcheck_endpoint": ""},
                "auth": {"type": "static", "credentials": {"username": "u", "password": "p"}},
                "listeners": [{"name": "udp", "protocol": "TURN-UDP", "address": h.LOOPBACK,
                               "port": port, "routes": []}],
                "clusters": []}, f)
        p = start_kturnd(args, workdir, tag, [*flags, "-c", f"file://{config}"])
        op.wait_for(f"kturnd {' '.join(flags)} answering STUN",
                    lambda: h.stun_binding_probe((h.LOOPBACK, port)), procs=[p])
        log = p.output()
        ignored = [line for line in log.splitlines() if "accepted and ignored" in line]
        expect = [f for f in ("--dry-run", "--namespace") if f in flags or
                  (f == "--namespace" and "-n" in flags) or (f == "--dry-run" and "-d" in flags)]
        h.check(len(ignored) == (1 if expect else 0) and all(f in "".join(ignored) for f in expect),
                f"kturnd {flags}: ignored-flag log lines {ignored}, want one naming {expect}")
        print(f"kturnd {' '.join(flags)}: serving; ignored: {expect or 'nothing'}")
        p.stop()


def body(args: argparse.Namespace, workdir: str) -> None:
    file_forms(args, workdir)

    # 2. -c k8s through the real API server.
    scope = cp.Scope()
    h.register_cleanup(scope.delete)
    turn_port, cds_port = h.free_port(udp_only=True), h.free_port()
    operator = h.Proc("kturn-operator", [
        os.path.abspath(args.operator), "--kubeconfig",
        scope.service_account_kubeconfig("kturn-operator"), "--controller-name",
        scope.controller_name, "--cds-addr", f"{h.LOOPBACK}:{cds_port}", "-l", "all:DEBUG",
        *op.NO_OWN_ENDPOINTS],
        workdir)
    h.register_log(operator.log_path)
    operator.start()
    docs = op.load(op.SEED_FIXED)
    for d in docs:
        if d["kind"] == "Gateway":
            d["spec"]["listeners"][0]["port"] = turn_port
    scope.apply(op.with_test_dataplane(docs))
    gateway = f"{scope.ns('media')}/media-server-gateway"
    op.wait_for("the Gateway's config over CDS", lambda: served(
        f"http://{h.LOOPBACK}:{cds_port}/api/v1/configs/{gateway}"), procs=[operator])

    # The operator's pod as the API server knows it: labelled, running, at its address.
    ns = scope.ns("stunner-system")
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "kturn-operator-0", "namespace": ns, "labels": {LABEL: "enabled"}},
           "spec": {"containers": [{"name": "operator", "image": "kturn/kturn-operator"}]}}
    op.wait_for("the namespace's default ServiceAccount", lambda: scope.get(
        "serviceaccount", "default", "stunner-system"))
    scope.kubectl("apply", "-f", "-", input=json.dumps(pod))
    scope.kubectl("patch", "pod", "kturn-operator-0", "-n", ns, "--subresource=status",
                  "--type=merge", "-p", json.dumps({"status": {
                      "phase": "Running", "podIP": h.LOOPBACK, "podIPs": [{"ip": h.LOOPBACK}]}}))
    viewer = scope.service_account_kubeconfig("viewer", cluster_role="view")
    kturnd = start_kturnd(args, workdir, "k8s", [
        "-v", "-w", "-c", "k8s", "--kubeconfig", viewer, "--cds-server-namespace", ns,
        "--cds-server-port", str(cds_port), "--id", gateway, "-u", "2", "-d"])
    op.wait_for("kturnd -c k8s answering STUN on the Gateway's listener",
                lambda: h.stun_binding_probe((h.LOOPBACK, turn_port)), procs=[kturnd, operator])
    found = f"-c k8s: config discovery server http://{h.LOOPBACK}:{cds_port}"
    h.check(found in kturnd.output(), f"kturnd's log does not say {found!r}")
    print(f"kturnd -c k8s: found the CDS server through the API ({found}), serving {gateway}")

    # 3. Nothing labelled in the namespace named: a clear exit.
    empty = scope.ns("empty")
    lost = start_kturnd(args, workdir, "k8s-none", [
        "-c", "k8s", "--kubeconfig", viewer, "--cds-server-namespace", empty])
    rc = lost.wait(timeout=20)
    h.check(rc == 1 and LABEL in lost.output(),
            f"-c k8s without a discovery server: exit {rc}, want 1 naming {LABEL}")
    print(f"-c k8s in {empty}: exit 1, {LABEL} named")

    # 4. kturn-auth with stunner-auth-service's command line: no -c.
    auth_port = h.free_port()
    auth = h.Proc("kturn-auth", [
        os.path.abspath(args.kturn_auth), "-v", "--kubeconfig", viewer, "--cds-server-namespace",
        ns, "--cds-server-port", str(cds_port), "-a", h.LOOPBACK, "-p", str(auth_port)], workdir)
    h.register_log(auth.log_path)
    auth.start()

    def credential():
        try:
            url = f"http://{h.LOOPBACK}:{auth_port}/?service=turn&username=alice"
            with urllib.request.urlopen(url, timeout=2) as r:
                return json.loads(r.read())
        except (urllib.error.URLError, OSError):
            return None
    doc = op.wait_for("kturn-auth answering /?service=turn", credential, procs=[auth, operator])
    h.check(any(uri.endswith(f":{turn_port}?transport=udp") for uri in doc.get("uris", [])) and
            doc.get("username") and doc.get("password"),
            f"kturn-auth's credential {doc}, want one for the Gateway's listener :{turn_port}")
    found = f"config discovery server http://{h.LOOPBACK}:{cds_port}"
    h.check(found in auth.output(), f"kturn-auth's log does not say {found!r}")
    print(f"kturn-auth without -c: found the CDS server through the API, /?service=turn: {doc}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--operator", required=True, help="kturn-operator binary")
    p.add_argument("--kturn-auth", required=True, help="kturn-auth binary")
    args, _ = p.parse_known_args()
    h.run_test("stunnerd-flags", body, p, overall_timeout=140)


if __name__ == "__main__":
    main()
