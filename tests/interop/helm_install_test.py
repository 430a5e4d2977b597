#!/usr/bin/python3
"""The Helm chart installed with the real Helm into the test run's real control plane
(tests/support/control_plane.py), then its RBAC proven by use and its leader election by a kill:

  1. `helm install` of deploy/helm/kturn into a namespace of this test's own, waiting for hooks
     only (the cluster has no node: the pods stay Pending). The release is deployed, and the API
     server holds what the chart renders: the operator's and kturn-auth's ServiceAccounts,
     Deployments and Services, the ClusterRole and the leader-election Role with their
     bindings. Not the chart's `default` Dataplane (dataplane.create=false): it is cluster-scoped,
     and in this cluster, which the other tests share, it would become the Dataplane of every
     other test's Gateways while it exists (deploy_crd_schema has the API server validate it).
     Nor the Gateway API CRDs (standardCrds.enabled=false): the control plane installed them,
     with the experimental UDPRoute the other tests use, and Helm takes over no object it did
     not make (tests/deploy/gateway_api_crds_test.py installs the chart on an empty cluster).
  2. Two kturn-operator processes run here as the chart's operator ServiceAccount, with a token
     from the TokenRequest API, so with exactly the chart's ClusterRole and Role under RBAC
     authorization, and with the container arguments the chart gives the operator (its Lease,
     its namespace), less what only makes sense in a pod (the CDS listen address). The seed 000
     manifests are applied with kubectl: the leader renders, applies the Gateway's Deployment and
     Service and writes every status. The API server's audit log must show no 403 for the
     operator's account, and every write the operator needs answered 2xx. The replicas make
     the CDS CA Secret (the chart's default operator.cds.tls). Then the operator's token, as a
     thief would use it, against what the chart does not grant: getting Secrets by name outside
     its CA, writing Secrets, ConfigMaps, pods/exec, binding itself more: each 403 (or "no")
     from the API server.
  3. The leader is SIGKILLed: the other replica takes the Lease over within the lease duration
     (15 s) plus one retry period, and applies the Gateway's objects again.
  4. `helm uninstall` removes the release.

kturn-auth needs no Kubernetes access (its config comes over CDS): the chart gives its
ServiceAccount no API token and no Kubernetes RBAC, only its configs.cds.kturn.io grant, which
tests/deploy/chart_test.py checks.

  /usr/bin/python3 helm_install_test.py --server kturnd --kturnd build/kturnd \\
      --operator build/kturn-operator        (KTURN_CONTROL_PLANE: the control plane's folder)
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import operator_test as op  # noqa: E402  (its waits and seed manifests)
from operator_test import cp  # noqa: E402  (tests/support/control_plane.py)

REPO = op.REPO
CHART = os.path.join(REPO, "deploy", "helm", "kturn")
LEASE_DURATION = 15  # seconds: the operator's default (src/bin/operator_main.cc)
RETRY_PERIOD = 2


def helm(scope: "cp.Scope", *args: str, check: bool = True) -> str:
    r = subprocess.run([os.path.join(scope.env["TOOLS"], "bin", "helm"), "--kubeconfig",
                        scope.kubeconfig, *args], capture_output=True, text=True, timeout=120)
    h.check(r.returncode == 0 or not check, f"helm {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def chart_args(scope: "cp.Scope", release: str, ns: str) -> list:
    """The operator container's arguments from the installed Deployment."""
    dep = scope.get("deployment", f"{release}-operator", "kturn-system")
    h.check(dep is not None, "the chart's operator Deployment is not in the cluster")
    spec = dep["spec"]["template"]["spec"]
    h.check(spec["serviceAccountName"] == f"{release}-operator",
            f"operator ServiceAccount: {spec['serviceAccountName']}")
    return spec["containers"][0]["args"]


def body(args: argparse.Namespace, workdir: str) -> None:
    scope = cp.Scope()
    h.register_cleanup(scope.delete)
    ns = scope.ns("kturn-system")
    release = scope.name("kturn")

    # 1. helm install, and what it created.
    out = helm(scope, "install", release, CHART, "-n", ns, "--wait=hookOnly",
               "--set", f"operator.controllerName={scope.controller_name}",
               "--set", "dataplane.create=false", "--set", "standardCrds.enabled=false")
    h.register_cleanup(lambda: helm(scope, "uninstall", release, "-n", ns, "--wait=hookOnly",
                                    check=False))
    status = json.loads(helm(scope, "status", release, "-n", ns, "-o", "json"))
    h.check(status["info"]["status"] == "deployed", f"helm status: {status['info']}")
    print(f"helm install {release}: {status['info']['status']}, "
          f"revision {status['version']}\n{out.splitlines()[0] if out else ''}")
    for kind, name, where in (("serviceaccount", f"{release}-operator", "kturn-system"),
                              ("serviceaccount", f"{release}-auth", "kturn-system"),
                              ("deployment", f"{release}-operator", "kturn-system"),
                              ("deployment", f"{release}-auth", "kturn-system"),
                              ("service", f"{release}-config-discovery", "kturn-system"),
                              ("role", f"{release}-operator-leader-election", "kturn-system"),
                              ("clusterrole", f"{release}-operator", ""),
                              ("clusterrolebinding", f"{release}-operator", ""),
                              ("role", f"{release}-operator-cds-ca", "kturn-system"),
                              ("clusterrole", f"{release}-auth-cds", "")):
        h.check(scope.get(kind, name, where) is not None, f"{kind} {name} not installed")
    print("the release's ServiceAccounts, Deployments, Services and RBAC are there")

    # 2. Two replicas as the chart's ServiceAccount, with the chart's arguments.
    kubeconfig = scope.service_account_kubeconfig(f"{release}-operator", cluster_role="",
                                                  base="kturn-system", create=False)
    user = scope.service_account_user(f"{release}-operator", base="kturn-system")
    # The listen addresses are the pod's; here each replica gets loopback ports of its own.
    listen = ("--cds-addr=", "--metrics-bind-address=", "--health-probe-bind-address=")
    argv = [a for a in chart_args(scope, release, ns) if not a.startswith((*listen, "--log="))]

    def start(identity: str) -> h.Proc:
        ports = [f"{flag}127.0.0.1:{h.free_port()}" for flag in listen]
        p = h.Proc(f"kturn-operator-{identity}",
                   [os.path.abspath(args.operator), "--kubeconfig", kubeconfig, *argv, *ports,
                    "--leader-election-identity", identity, "-l", "all:DEBUG"], workdir)
        h.register_log(p.log_path)
        return p.start()

    lease_ns = next(a.split("=", 1)[1] for a in argv
                    if a.startswith("--leader-election-namespace="))
    lease_name = next(a.split("=", 1)[1] for a in argv if a.startswith("--leader-election-id="))
    h.check(lease_ns == ns, f"the chart's Lease namespace {lease_ns}, want the release's {ns}")

    def holder():
        lease = scope.kubectl("get", "lease", lease_name, "-n", lease_ns, "-o", "json",
                              check=False)
        return json.loads(lease)["spec"].get("holderIdentity") if lease.strip() else None

    a = start("a")
    op.wait_for("replica a leading", lambda: holder() == "a", procs=[a])
    b = start("b")
    scope.apply(op.load(op.SEED_FIXED))
    gw = op.wait_for("Gateway Accepted True", lambda: (lambda g: g if (op.condition(
        g, "Accepted") or {}).get("status") == "True" else None)(scope.get(
            "gateways.gateway.networking.k8s.io", "media-server-gateway", "media")),
        procs=[a, b])
    op.wait_for("the Gateway's Deployment and Service applied", lambda: scope.get(
        "deployment", "media-server-gateway", "media") and scope.get(
        "service", "media-server-gateway", "media"), procs=[a, b])
    op.wait_for("UDPRoute status written", lambda: (scope.get(
        "udproutes.stunner.l7mp.io", "media-server-route", "media") or {}).get(
        "status", {}).get("parents"), procs=[a, b])
    print(f"replica a renders as {user}: Gateway {gw['metadata']['name']} Accepted, "
          "Deployment, Service and statuses written")

    def forbidden():
        # The operator's own requests: the thief's below come from kubectl with its token.
        return [e for e in scope.audit_events(user) if e["responseStatus"]["code"] == 403 and
                not e.get("userAgent", "").startswith("kubectl")]

    denied = forbidden()
    h.check(not denied, "the chart's RBAC denied the operator:\n" + "\n".join(
        f"{e['verb']} {e['requestURI']}: {e['responseStatus'].get('message', '')}"
        for e in denied[:10]))
    writes = [e for e in scope.audit_events(user)
              if e["verb"] in ("create", "update", "patch", "delete")]
    failed = [e for e in writes if not 200 <= e["responseStatus"]["code"] < 300]
    h.check(writes and not failed, f"{len(writes)} writes, failed: {failed[:5]}")
    print(f"RBAC by use: {len(scope.audit_events(user))} requests, {len(writes)} writes, no 403")

    # The operator's token, stolen, against what the chart does not grant: the API server says
    # 403. What it does grant: list and watch Secrets everywhere (auth and TLS Secrets may be in
    # any namespace) and get its own CDS CA Secret, which the replicas made.
    media = scope.ns("media")
    h.check(scope.get("secret", "kturn-cds-ca", "kturn-system") is not None,
            "the operator did not make its CDS CA Secret")
    for what, argv in [
            ("get a Secret by name in another namespace", ["get", "secret", "x", "-n", media]),
            ("get another Secret of its own namespace", ["get", "secret", "x", "-n", ns]),
            ("create a Secret in another namespace",
             ["create", "secret", "generic", "stolen", "-n", media, "--from-literal=a=b"]),
            ("delete its CDS CA", ["delete", "secret", "kturn-cds-ca", "-n", ns]),
            ("update a Secret", ["label", "secret", "kturn-cds-ca", "-n", ns, "x=y"]),
            ("read ConfigMaps", ["get", "configmaps", "-n", media]),
            ("exec into pods", ["auth", "can-i", "create", "pods/exec", "-n", media]),
            ("bind itself more", ["create", "clusterrolebinding", scope.name("escalate"),
                                  "--clusterrole", "cluster-admin",
                                  f"--serviceaccount={ns}:{release}-operator"])]:
        out = scope.kubectl(*argv, kubeconfig=kubeconfig, check=False, stderr=True)
        refused = "forbidden" in out.lower() or out.strip() == "no"
        h.check(refused, f"the operator's token could {what}: {out.strip()[:300]}")
        print(f"  the operator's token may not {what}: "
              f"{'no' if out.strip() == 'no' else 'Forbidden'}")
    cert = scope.get("secret", "kturn-cds-ca-cert", "kturn-system")
    h.check(cert is not None and set(cert["data"]) == {"ca.crt"},
            f"the CDS CA certificate Secret kturn-auth mounts: {cert and sorted(cert['data'])}")
    for what, argv in [("list Secrets everywhere", ["auth", "can-i", "list", "secrets", "-A"]),
                       ("get its CDS CA", ["get", "secret", "kturn-cds-ca", "-n", ns]),
                       ("get its CDS CA certificate",
                        ["get", "secret", "kturn-cds-ca-cert", "-n", ns])]:
        out = scope.kubectl(*argv, kubeconfig=kubeconfig, check=False, stderr=True)
        h.check("forbidden" not in out.lower() and out.strip() != "no",
                f"the operator's token may not {what}: {out.strip()[:300]}")

    # 3. The leader dies; the other replica takes over within the lease duration.
    applies = scope.audit_count(user, "patch", "deployments")
    a.proc.kill()
    a.proc.wait(timeout=5)
    killed = time.monotonic()
    op.wait_for("replica b leading", lambda: holder() == "b", LEASE_DURATION + 10, procs=[b])
    took = time.monotonic() - killed
    print(f"replica a SIGKILLed: b leads {took:.1f} s later (lease {LEASE_DURATION} s)")
    h.check(took <= LEASE_DURATION + RETRY_PERIOD + 1,
            f"takeover took {took:.1f} s, more than the lease duration plus a retry period")
    op.wait_for("replica b applying the Gateway's objects",
                lambda: scope.audit_count(user, "patch", "deployments") > applies, procs=[b])
    h.check(not forbidden(), "403 after the takeover")

    # 4. helm uninstall.
    helm(scope, "uninstall", release, "-n", ns, "--wait=hookOnly")
    op.wait_for("the release's ClusterRole removed",
                lambda: scope.get("clusterrole", f"{release}-operator") is None)
    print("helm uninstall: the release's cluster-wide objects are gone")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--operator", required=True, help="kturn-operator binary")
    args, _ = p.parse_known_args()
    h.run_test("helm-install", body, p, overall_timeout=110)


if __name__ == "__main__":
    main()
