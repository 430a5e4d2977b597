#!/usr/bin/python3
"""One bad object costs only itself (issue 39): kturn-operator and kturnd against the real API
server of the test run (tests/support/control_plane.py), with malformed objects the API server
lets through applied beside a good Gateway that a real kturnd serves over CDS.

The good Gateway is seed 000's (tests/golden/seed000/input, moved into this test's namespaces,
as operator_test.py does), with one more listener: TURN-TLS, whose Secret's `tls.crt` is not a
certificate (the API server takes a kubernetes.io/tls Secret whatever its keys hold).

  1. The bad certificate: the Gateway's status names the listener and the Secret (listener
     ResolvedRefs False InvalidCertificateRef, Gateway Accepted ListenersNotValid and its
     Programmed message); the CDS config leaves the TLS listener out; a kturnd started now, after
     the bad Secret, serves the UDP listener: coturn's turnutils_uclient relays through it to the
     media pod. The Secret is then fixed (a certificate made by the openssl command): the
     listener is programmed, kturn.io/CertificateValid gives its dates, and kturnd completes a TLS
     handshake on it, its UDP allocations untouched.
  2. The bad-object matrix: for each kind the operator reads, one malformed-but-accepted
     variant, applied beside the good Gateway. Each must be named where the user looks (a status
     condition, or the operator's log), and after each the good Gateway still relays (a uclient
     call), the operator and kturnd are the processes started at the beginning (nothing crashed
     or restarted), and kturnd never rejected a config. The table printed at the end is the one
     in issue 39's closing note.

The operator runs with --reference-grants=enforce so that the ReferenceGrant case means
something. The media pods are addresses in a network namespace of the test's own (root; exits 77
without it).
"""

import argparse
import json
import os
import socket
import ssl
import subprocess
import sys
import time
from typing import Callable, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import operator_test as ot  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "support"))
import control_plane as cp  # noqa: E402

GW = ot.GW_NAME
GATEWAYS = "gateways.gateway.networking.k8s.io"


def tls_secret(name: str, crt: str, key: str, ns: str = "media") -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": name, "namespace": ns},
            "stringData": {"tls.crt": crt, "tls.key": key}}


def make_certificate(workdir: str) -> tuple:
    """A self-signed P-256 certificate and key from the openssl command."""
    crt, key = os.path.join(workdir, "tls.crt"), os.path.join(workdir, "tls.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=turn.example.com",
                    "-days", "2", "-keyout", key, "-out", crt], check=True,
                   capture_output=True, timeout=30)
    with open(crt) as c, open(key) as k:
        return c.read(), k.read()


def gateway(name: str, listeners: List[dict], cls: str = "stunner-gatewayclass",
            annotations: Optional[dict] = None) -> dict:
    meta = {"name": name, "namespace": "media"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": meta,
            "spec": {"gatewayClassName": cls, "listeners": listeners}}


def gateway_class(name: str, config: str) -> dict:
    """A GatewayClass of this test's controller (localize() sets it) naming GatewayConfig
    stunner/<config>."""
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
            "metadata": {"name": name},
            "spec": {"controllerName": "x", "parametersRef": {
                "group": "stunner.l7mp.io", "kind": "GatewayConfig", "name": config,
                "namespace": "stunner"}}}


def udp_route(name: str, backends: List[dict], kind: str = "UDPRoute",
              parent: Optional[dict] = None) -> dict:
    return {"apiVersion": "stunner.l7mp.io/v1", "kind": kind,
            "metadata": {"name": name, "namespace": "media"},
            "spec": {"parentRefs": [parent or {"name": GW}],
                     "rules": [{"backendRefs": backends}]}}


def listener_conditions(obj: Optional[dict], listener: str) -> dict:
    for l in ((obj or {}).get("status") or {}).get("listeners") or []:
        if l.get("name") == listener:
            return {c["type"]: c for c in l.get("conditions") or []}
    return {}


def parent_conditions(obj: Optional[dict]) -> dict:
    parents = ((obj or {}).get("status") or {}).get("parents") or []
    return {c["type"]: c for c in (parents[0].get("conditions") or [])} if parents else {}


def said(c: Optional[dict]) -> str:
    return f"{c['type']} {c['status']} {c['reason']}: {c['message']}" if c else ""


def tls_handshake(addr: tuple) -> bool:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection(addr, timeout=2) as s:
            with ctx.wrap_socket(s) as t:
                return t.version() is not None
    except OSError:
        return False


def body(args: argparse.Namespace, workdir: str) -> None:
    pods = h.PodNetwork().create()
    pod_a = pods.pod_ips[0]
    gw_ip = pods.gateway_ip
    turn_port, tls_port = h.free_port(gw_ip), h.free_port(gw_ip)
    turn = (gw_ip, turn_port)
    cds_port = h.free_port()
    scope = cp.Scope()
    h.register_cleanup(scope.delete)
    media = scope.ns("media")

    operator = h.Proc("kturn-operator",
                      [os.path.abspath(args.operator), "--kubeconfig", scope.kubeconfig,
                       "--controller-name", scope.controller_name,
                       "--cds-addr", f"127.0.0.1:{cds_port}", "--reference-grants=enforce",
                       "-l", "all:INFO", *ot.NO_OWN_ENDPOINTS], workdir)
    h.register_log(operator.log_path)
    operator.start()
    h.register_cleanup(operator.stop)
    procs = [operator]

    def wait_for(what: str, fn: Callable[[], object], timeout: float = 30.0):
        return ot.wait_for(what, fn, timeout, procs=procs)

    def get_gateway(name: str = GW) -> Optional[dict]:
        return scope.get(GATEWAYS, name, "media")

    # 1. The good Gateway with a TURN-TLS listener whose Secret holds no certificate.
    docs = ot.manifests(turn_port, pod_a)
    for d in docs:
        if d["kind"] == "Gateway":
            d["metadata"]["annotations"] = {"stunner.l7mp.io/enable-mixed-protocol-lb": "true"}
            d["spec"]["listeners"].append(
                {"name": "turn-tls", "port": tls_port, "protocol": "TURN-TLS",
                 "tls": {"mode": "Terminate", "certificateRefs": [{"name": "turn-cert"}]}})
    real_crt, real_key = make_certificate(workdir)
    bad = tls_secret("turn-cert", "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n"
                     "-----END CERTIFICATE-----\n", real_key)
    scope.apply([bad] + docs)

    def tls_refused():
        c = listener_conditions(get_gateway(), "turn-tls").get("ResolvedRefs")
        return c if c and c["status"] == "False" else None

    refs = wait_for("the TLS listener's ResolvedRefs False", tls_refused)
    gw = get_gateway()
    cond = {c["type"]: c for c in gw["status"]["conditions"]}
    tls_programmed = listener_conditions(gw, "turn-tls").get("Programmed")
    udp_programmed = listener_conditions(gw, "turn-udp").get("Programmed")
    print(f"bad certificate: listener turn-tls {said(refs)}")
    print(f"  listener turn-tls {said(tls_programmed)}")
    print(f"  Gateway {said(cond.get('Accepted'))}")
    print(f"  Gateway {said(cond.get('Programmed'))}")
    h.check(refs["reason"] == "InvalidCertificateRef" and
            f"Secret {media}/turn-cert" in refs["message"] and
            "no PEM certificate" in refs["message"], f"ResolvedRefs should name the Secret: {refs}")
    h.check(tls_programmed and tls_programmed["status"] == "False", "turn-tls programmed")
    h.check(udp_programmed and udp_programmed["status"] == "True", "turn-udp not programmed")
    h.check(cond["Accepted"]["reason"] == "ListenersNotValid" and
            "turn-tls" in cond["Accepted"]["message"], f"Gateway Accepted: {cond['Accepted']}")
    h.check(cond["Programmed"]["status"] == "True" and
            f"turn-tls: listener not rendered: Secret {media}/turn-cert" in
            cond["Programmed"]["message"], f"Gateway Programmed: {cond['Programmed']}")

    cds_url = f"http://127.0.0.1:{cds_port}/api/v1/configs/{media}/{GW}"

    def cds_listeners() -> Optional[List[str]]:
        status, text = ot.http_get(cds_port, f"/api/v1/configs/{media}/{GW}")
        return [l["name"] for l in json.loads(text)["listeners"]] if status == 200 else None

    names = wait_for(f"{cds_url}", cds_listeners)
    print(f"CDS config listeners: {names}")
    h.check(names == [f"{media}/{GW}/turn-udp"], f"CDS listeners {names}")

    # kturnd starts after the bad Secret: the UDP listener serves.
    kturnd = h.Proc("kturnd", [os.path.abspath(args.kturnd), "-w", "-c",
                               f"http://127.0.0.1:{cds_port}", "--id", f"{media}/{GW}"],
                    workdir, env=dict(os.environ, STUNNER_ADDR=gw_ip))
    h.register_log(kturnd.log_path)
    kturnd.start()
    h.register_cleanup(kturnd.stop)
    procs.append(kturnd)
    wait_for("kturnd answering STUN", lambda: h.stun_binding_probe(turn))
    _, peer_port = h.start_udp_echo_peer(workdir, pod_a, netns=pods.ns)
    ot.uclient(workdir, turn, pod_a, peer_port, "after-bad-secret")

    # The Secret fixed: the TLS listener comes, the UDP allocation of a call in progress stays.
    call = ot.start_uclient(workdir, turn, pod_a, peer_port, "across-the-fix", 150, 20)
    time.sleep(0.5)
    scope.apply([tls_secret("turn-cert", real_crt, real_key)])
    valid = wait_for("kturn.io/CertificateValid True", lambda: (lambda c: c if c and c[
        "status"] == "True" else None)(listener_conditions(get_gateway(), "turn-tls").get(
            "kturn.io/CertificateValid")))
    print(f"fixed Secret: listener turn-tls {said(valid)}")
    wait_for("kturnd's TLS listener", lambda: tls_handshake((gw_ip, tls_port)))
    print(f"TLS handshake with kturnd on {gw_ip}:{tls_port}")
    ot.check_uclient(call, f"{pod_a}:{peer_port} across the Secret's fix", 150)
    h.check(listener_conditions(get_gateway(), "turn-tls")["Programmed"]["status"] == "True",
            "turn-tls not programmed after the fix")

    # 2. The matrix: each case applies its objects, then `reported` returns where it is named.
    table = []
    crt_huge = ("-----BEGIN CERTIFICATE-----\n" + "QUFB" * (960 * 1024 // 4) +
                "\n-----END CERTIFICATE-----\n")
    free = [h.free_port(gw_ip) for _ in range(4)]
    certs = scope.ns("certs")

    def status_of(kind: str, name: str, pick: Callable[[Optional[dict]], dict], ctype: str,
                  want: str, ns: str = "media", where: str = "") -> Callable[[], Optional[str]]:
        def check():
            c = pick(scope.get(kind, name, ns)).get(ctype)
            if not c or want not in c["message"]:
                return None
            return f"{kind.split('.')[0]} {name}{where} status: {said(c)}"
        return check

    def log_of(proc: h.Proc, want: str) -> Callable[[], Optional[str]]:
        def check():
            for line in proc.output().splitlines():
                if want in line:
                    return f"{proc.name}'s log: {line.strip()}"
            return None
        return check

    def gw_condition(ctype: str):
        return lambda o: {c["type"]: c for c in ((o or {}).get("status") or {}).get(
            "conditions") or []}

    cases = [
        ("Secret", "1 MiB, a PEM header around 960 KiB of junk, as a listener's certificate",
         [tls_secret("huge", crt_huge, real_key),
          gateway("gw-huge", [{"name": "tls", "port": free[0], "protocol": "TURN-TLS",
                               "tls": {"certificateRefs": [{"name": "huge"}]}}])],
         status_of(GATEWAYS, "gw-huge", lambda o: listener_conditions(o, "tls"), "ResolvedRefs",
                   f"Secret {media}/huge (tls.crt, tls.key)", where=" listener tls")),
        ("GatewayClass", "parametersRef to a GatewayConfig that does not exist",
         [gateway_class("class-dangling", "no-such-config")],
         status_of("gatewayclass", scope.name("class-dangling"), gw_condition("Accepted"),
                   "Accepted", "no-such-config", ns="")),
        ("GatewayConfig", "authType static without userName and password",
         [{"apiVersion": "stunner.l7mp.io/v1", "kind": "GatewayConfig",
           "metadata": {"name": "cfg-nocreds", "namespace": "stunner"},
           "spec": {"authType": "static"}},
          gateway_class("class-nocreds", "cfg-nocreds"),
          gateway("gw-nocreds", [{"name": "udp", "port": free[1], "protocol": "TURN-UDP"}],
                  cls="class-nocreds")],
         status_of(GATEWAYS, "gw-nocreds", gw_condition("Accepted"), "Accepted",
                   "spec.userName and spec.password")),
        ("Dataplane", "replicas: -3 (the CRD takes any int32; the Deployment is refused)",
         [{"apiVersion": "stunner.l7mp.io/v1", "kind": "Dataplane",
           "metadata": {"name": "dp-negative"},
           "spec": {"image": "kturn/kturnd:latest", "replicas": -3,
                    "disableHealthCheck": True}},
          {"apiVersion": "stunner.l7mp.io/v1", "kind": "GatewayConfig",
           "metadata": {"name": "cfg-dp", "namespace": "stunner"},
           "spec": {"authType": "ephemeral", "sharedSecret": "s", "dataplane": "dp-negative"}},
          gateway_class("class-dp", "cfg-dp"),
          gateway("gw-dp", [{"name": "udp", "port": free[2], "protocol": "TURN-UDP"}],
                  cls="class-dp")],
         log_of(operator, f"apply Deployment {media}/gw-dp: 422")),
        # The Gateway API's own CEL rules refuse two listeners of one port and protocol; two
        # protocols of one transport on one port, and a protocol nobody serves, get through.
        ("Gateway", "TURN-UDP and TURN-DTLS on one port, and a TURN-SCTP listener",
         [gateway("gw-clash", [{"name": "a", "port": free[3], "protocol": "TURN-UDP"},
                               {"name": "b", "port": free[3], "protocol": "TURN-DTLS",
                                "tls": {"certificateRefs": [{"name": "turn-cert"}]}},
                               {"name": "c", "port": free[3], "protocol": "TURN-SCTP"}])],
         status_of(GATEWAYS, "gw-clash", gw_condition("Accepted"), "Accepted",
                   "listeners not valid: b, c")),
        ("Gateway", "hostile annotation values (a shell command as alternate addresses, an "
         "unknown service type, a nodeport map that is not JSON)",
         [gateway("gw-annotated", [{"name": "udp", "port": free[3], "protocol": "TURN-UDP"}],
                  annotations={"kturn.io/alternate-addresses": "10.0.0.1,$(reboot)",
                               "stunner.l7mp.io/service-type": "Bogus\nType",
                               "stunner.l7mp.io/nodeport": "{\"udp\": "})],
         status_of(GATEWAYS, "gw-annotated", gw_condition("Accepted"), "Accepted",
                   "kturn.io/alternate-addresses")),
        ("UDPRoute", "a backend Service that does not exist, beside the good one",
         [udp_route("route-ghost", [{"name": "ghost"}, {"name": "media-server"}])],
         status_of("udproutes.stunner.l7mp.io", "route-ghost", parent_conditions, "ResolvedRefs",
                   f"Service {media}/ghost not found")),
        ("TCPRoute", "a parentRef sectionName naming no listener of the Gateway",
         [udp_route("tcp-route", [{"name": "media-server"}], kind="TCPRoute",
                    parent={"name": GW, "sectionName": "no-such-listener"})],
         status_of("tcproutes.stunner.l7mp.io", "tcp-route", parent_conditions, "Accepted",
                   "the Gateway has no listener of that name")),
        ("StaticService", "prefixes 10.0.0.0/99 and not-a-prefix",
         [{"apiVersion": "stunner.l7mp.io/v1", "kind": "StaticService",
           "metadata": {"name": "static-bad", "namespace": "media"},
           "spec": {"prefixes": ["10.0.0.0/99", "not-a-prefix"]}},
          udp_route("route-static", [{"group": "stunner.l7mp.io", "kind": "StaticService",
                                      "name": "static-bad"}])],
         status_of("udproutes.stunner.l7mp.io", "route-static", parent_conditions,
                   "ResolvedRefs", "is not an IP prefix")),
        ("Service", "type ExternalName pointing at the cloud metadata name, as a backend",
         [{"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "metadata", "namespace": "media"},
           "spec": {"type": "ExternalName", "externalName": "metadata.google.internal"}},
          udp_route("route-external", [{"name": "metadata"}])],
         status_of("udproutes.stunner.l7mp.io", "route-external", parent_conditions,
                   "ResolvedRefs", f"Service {media}/metadata has no endpoints")),
        ("EndpointSlice", "addressType FQDN for the good backend Service",
         [{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": "media-server-fqdn", "namespace": "media",
                        "labels": {"kubernetes.io/service-name": "media-server"}},
           "addressType": "FQDN", "endpoints": [{"addresses": ["evil.example.com"]}]}],
         status_of("udproutes.stunner.l7mp.io", "media-server-route", parent_conditions,
                   "ResolvedRefs", "\"evil.example.com\" is not an IP prefix")),
        ("ReferenceGrant", "grants Services, not Secrets, to a Gateway whose certificate is in "
         "its namespace",
         [tls_secret("xns-cert", real_crt, real_key, ns="certs"),
          {"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
           "metadata": {"name": "wrong-kind", "namespace": "certs"},
           "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "Gateway",
                              "namespace": "media"}],
                    "to": [{"group": "", "kind": "Service"}]}},
          gateway("gw-xns", [{"name": "tls", "port": free[0], "protocol": "TURN-TLS",
                              "tls": {"certificateRefs": [{"name": "xns-cert",
                                                           "namespace": "certs"}]}}])],
         status_of(GATEWAYS, "gw-xns", lambda o: listener_conditions(o, "tls"), "ResolvedRefs",
                   f"no ReferenceGrant in namespace {certs}", where=" listener tls")),
        # Not let through: kubectl's strict field validation refuses an unknown field; told to
        # only warn (--validate=warn), the API server prunes it and kubectl names it.
        ("Gateway", "an unknown listener field, applied with kubectl apply --validate=warn",
         [gateway("gw-unknown", [{"name": "udp", "port": free[3], "protocol": "TURN-UDP",
                                  "relayEverything": True}])],
         lambda: pruned_and_programmed()),
    ]
    warnings: List[str] = []

    def pruned_and_programmed() -> Optional[str]:
        """kubectl's warning names the field, and the Gateway, without it, is programmed."""
        warned = [w for w in warnings if "relayEverything" in w]
        c = listener_conditions(scope.get(GATEWAYS, "gw-unknown", "media"), "udp")
        if not warned or (c.get("Programmed") or {}).get("status") != "True":
            return None
        return f"kubectl's warning: {warned[0]}; the API server stored it without the field"
    for kind, variant, objects, reported in cases:
        for o in objects:
            if o["kind"] == "GatewayClass":
                o["spec"]["controllerName"] = scope.controller_name
        huge = any(o.get("metadata", {}).get("name") == "huge" for o in objects)
        if huge:  # too big for kubectl's last-applied annotation: server-side apply
            scope.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(
                {"apiVersion": "v1", "kind": "List",
                 "items": [scope.localize(o) for o in objects]}))
        elif "--validate=warn" in variant:
            out = scope.kubectl("apply", "--validate=warn", "-f", "-", stderr=True,
                                input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
                                    scope.localize(o) for o in objects]}))
            warnings += [line.strip() for line in out.splitlines() if "Warning" in line]
            stored = scope.get(GATEWAYS, "gw-unknown", "media")["spec"]["listeners"][0]
            h.check("relayEverything" not in stored, f"the unknown field was stored: {stored}")
        else:
            scope.apply(objects)
        where = wait_for(f"{kind} ({variant}) reported", reported)
        ot.uclient(workdir, turn, pod_a, peer_port, kind.lower())
        for p in procs:
            h.check(p.running(), f"{p.name} exited after the bad {kind}")
        print(f"{kind}: {variant}\n  reported: {where}\n  the good Gateway relays")
        table.append((kind, variant, where))

    rejected = [l for l in kturnd.output().splitlines() if "rejected" in l]
    h.check(not rejected, f"kturnd rejected a config: {rejected}")
    names = cds_listeners()
    h.check(names == [f"{media}/{GW}/turn-udp", f"{media}/{GW}/turn-tls"],
            f"the good Gateway's CDS listeners at the end: {names}")
    print("\n| object | variant | where it is reported | what kept working |")
    print("|---|---|---|---|")
    for kind, variant, where in table:
        print(f"| {kind} | {variant} | {where} | {GW}: uclient relays to the pod; operator and "
              f"kturnd not restarted |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--operator", required=True, help="kturn-operator binary")
    args, _ = p.parse_known_args()
    h.root_or_skip("the media pods' network namespace")
    h.run_test("bad-objects", body, p, overall_timeout=240)


if __name__ == "__main__":
    main()
