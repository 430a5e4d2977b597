#!/usr/bin/python3
"""Authenticated config discovery end to end (issue 25; docs/cds.md#authentication): the real
kturn-operator with --cds-auth and a managed TLS CA on the test run's real control plane
(tests/support/control_plane.py), the seed 000 manifests, real kturnd and STUNner's real stunnerd.
The Deployment controller makes the Gateway's pod (there is no kubelet: it stays Pending) and the
test mints the token the kubelet would project into it (TokenRequest, bound to that pod, audience
kturn-cds). Media pods live in a network namespace of the test's own (root; exits 77 without it).

  1. The operator makes its CA Secret and renders the Deployment with the projected token volume,
     KTURN_CDS_TOKEN_FILE, KTURN_CDS_CA and an https:// STUNNER_CONFIG_ORIGIN, and the Gateway's
     NetworkPolicy (--dataplane-network-policy), which the API server accepts.
  2. kturnd, given exactly what the Deployment gives its pod (the pod's token, the rendered CA and
     origin), gets its config over TLS and relays turnutils_uclient to the media pod.
  3. Attacks, each refused and counted: no token; a token bound to a pod of another namespace;
     the Gateway's own token for another config, and over plain HTTP; a token for the API
     server's audience; a client that does not trust the CA gets nothing.
  4. stunnerd, which sends no token, is refused (the Gateway is not open) and never serves.
  5. The Gateway annotated kturn.io/config-discovery-auth: none: the same stunnerd, still
     retrying, gets its config over plain HTTP and relays; the Deployment is re-rendered
     without the token (a stunnerd Dataplane needs none).
  6. CDS flooded: 300 idle connections from one address (128 are kept, the rest closed at once)
     and a watch sending a 1 MiB frame (closed); meanwhile the EndpointSlice moves to pod B and
     stunnerd's watch still gets the change: it admits pod B.

  /usr/bin/python3 cds_auth_test.py --server kturnd --kturnd build/kturnd \\
      --operator build/kturn-operator --stunnerd build/test-tools/bin/stunnerd
"""

import argparse
import base64
import json
import os
import socket
import ssl
import struct
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import operator_test as op  # noqa: E402  (the seed manifests, uclient, waits)
from operator_test import cp  # noqa: E402

AUDIENCE = "kturn-cds"
OPEN = "kturn.io/config-discovery-auth"


def cds_get(url: str, token: str = "", ca: str = "") -> int:
    """The HTTP status of a GET (0: no answer, e.g. the TLS handshake failed)."""
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    context = ssl.create_default_context(cadata=ca) if ca else None
    if context:
        context.check_hostname = False  # the certificate names 127.0.0.1 as an IP SAN
    try:
        with urllib.request.urlopen(req, timeout=5, context=context) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return 0


def env_of(deployment: dict) -> dict:
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def body(args: argparse.Namespace, workdir: str) -> None:
    h.check(os.access(args.stunnerd, os.X_OK),
            f"no stunnerd at {args.stunnerd} (scripts/build-test-tools.sh builds it)")
    pods = h.PodNetwork().create()
    pod_a = pods.pod_ips[0]
    turn_port = h.free_port(pods.gateway_ip, udp_only=True)
    turn = (pods.gateway_ip, turn_port)
    cds_port, metrics_port = h.free_port(), h.free_port()
    scope = cp.Scope()
    h.register_cleanup(scope.delete)
    system_ns = scope.ns("kturn-system")
    # A certificate Secret left over from another CA: the operator must put its own in.
    scope.kubectl("create", "secret", "generic", "kturn-cds-ca-cert", "-n", system_ns,
                  "--from-literal=ca.crt=another CA", "--from-literal=ca.key=not for kturn-auth")
    operator = h.Proc("kturn-operator", [
        os.path.abspath(args.operator), "--kubeconfig",
        scope.service_account_kubeconfig("kturn-operator"), "--controller-name",
        scope.controller_name, "--cds-addr", f"{h.LOOPBACK}:{cds_port}",
        "--cds-server-address", f"{h.LOOPBACK}:{cds_port}", "--cds-auth",
        "--cds-tls-secret", "kturn-cds-ca", "--cds-tls-secret-namespace", system_ns,
        "--dataplane-network-policy", "--dataplane-monitoring-namespace", "monitoring",
        "--metrics-bind-address", f"{h.LOOPBACK}:{metrics_port}",
        "--health-probe-bind-address", "0", "-l", "all:INFO"], workdir)
    h.register_log(operator.log_path)
    operator.start()
    h.register_cleanup(operator.stop)
    procs = [operator]
    scope.apply(op.manifests(turn_port, pod_a))
    gw_ns = scope.ns("media")
    gateway = f"{gw_ns}/{op.GW_NAME}"
    https = f"https://{h.LOOPBACK}:{cds_port}"
    http = f"http://{h.LOOPBACK}:{cds_port}"
    config_path = f"/api/v1/configs/{gw_ns}/{op.GW_NAME}"

    # 1. The CA Secret and the rendered Deployment.
    secret = op.wait_for("the CDS CA Secret", lambda: scope.get("secret", "kturn-cds-ca",
                                                                "kturn-system"), procs=procs)
    h.check(set(secret["data"]) == {"ca.crt", "ca.key"}, f"CA Secret keys: {sorted(secret['data'])}")
    # The certificate alone, for kturn-auth to mount: the stale one replaced, with no key in it.
    cert = op.wait_for("the CDS CA certificate Secret", lambda: (lambda s: s if s and s.get(
        "data", {}).get("ca.crt") == secret["data"]["ca.crt"] else None)(
            scope.get("secret", "kturn-cds-ca-cert", "kturn-system")), procs=procs)
    h.check(set(cert["data"]) == {"ca.crt"}, f"CA certificate Secret keys: {sorted(cert['data'])}")
    print("CDS CA: kturn-cds-ca (ca.crt, ca.key); kturn-cds-ca-cert (ca.crt, the same, replaced "
          "the stale one)")
    dep = op.wait_for("the Gateway's Deployment",
                      lambda: scope.get("deployment", op.GW_NAME, "media"), procs=procs)
    env = env_of(dep)
    spec = dep["spec"]["template"]["spec"]
    sources = spec["volumes"][0]["projected"]["sources"]
    h.check(sources == [{"serviceAccountToken": {"audience": AUDIENCE,
                                                 "expirationSeconds": 3600, "path": "token"}}],
            f"token volume: {sources}")
    mount = spec["containers"][0]["volumeMounts"][0]["mountPath"]
    h.check(env["KTURN_CDS_TOKEN_FILE"] == f"{mount}/token", f"env: {env}")
    h.check(env["STUNNER_CONFIG_ORIGIN"] == https, f"origin {env['STUNNER_CONFIG_ORIGIN']}")
    ca = env["KTURN_CDS_CA"]
    h.check(ca.startswith("-----BEGIN CERTIFICATE-----"), "KTURN_CDS_CA is not a certificate")
    print(f"Deployment: token volume for audience {AUDIENCE} at {mount}, origin {https}, "
          "the CA in KTURN_CDS_CA")
    # The Gateway's NetworkPolicy, applied by the operator and accepted by the API server.
    policy = op.wait_for("the Gateway's NetworkPolicy", lambda: scope.get(
        "networkpolicy", op.GW_NAME, "media"), procs=procs)
    selected = policy["spec"]["podSelector"]["matchLabels"]
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    h.check(all(pod_labels.get(k) == v for k, v in selected.items()),
            f"the policy selects {selected}, the pods carry {pod_labels}")
    admin = policy["spec"]["ingress"][1]
    h.check({p["port"] for p in admin["ports"]} == {8080, 8086} and admin["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
        f"the admin rule: {admin}")
    print("NetworkPolicy: the Gateway's pods, TURN and relay ports open, 8080 and 8086 only "
          "from namespace monitoring")

    # 2. kturnd as the Gateway's pod: its token, the rendered CA and origin.
    pod = op.wait_for("the Deployment's pod", lambda: json.loads(scope.kubectl(
        "get", "pods", "-n", gw_ns, "-l", f"stunner.l7mp.io/related-gateway-name={op.GW_NAME}",
        "-o", "json"))["items"], procs=procs)[0]["metadata"]["name"]

    def pod_token(ns: str, name: str, audience: str = AUDIENCE) -> str:
        """A token bound to pod ns/name; "" until the ServiceAccount controller has made the
        namespace's `default` account."""
        out = scope.kubectl("create", "token", "default", "-n", ns, "--audience", audience,
                            "--bound-object-kind", "Pod", "--bound-object-name", name,
                            "--duration", "10m", check=False).strip()
        return out if out.startswith("ey") else ""
    token = op.wait_for("the pod's token", lambda: pod_token(gw_ns, pod), procs=procs)
    token_file = os.path.join(workdir, "cds-token")
    with open(token_file, "w") as f:
        f.write(token)
    kturnd = h.Proc("kturnd", [os.path.abspath(args.kturnd), "-w", "--id", gateway,
                               "-l", "all:INFO"], workdir,
                    env=dict(os.environ, STUNNER_ADDR=pods.gateway_ip,
                             STUNNER_CONFIG_ORIGIN=env["STUNNER_CONFIG_ORIGIN"],
                             KTURN_CDS_TOKEN_FILE=token_file, KTURN_CDS_CA=ca))
    h.register_log(kturnd.log_path)
    kturnd.start()
    procs.append(kturnd)
    op.wait_for("kturnd answering STUN", lambda: h.stun_binding_probe(turn), procs=procs)
    _, port_a = h.start_udp_echo_peer(workdir, pod_a, netns=pods.ns)
    op.uclient(workdir, turn, pod_a, port_a, "kturnd")
    print(f"kturnd with pod {pod}'s token: config over TLS, relays to pod {pod_a}")
    kturnd.stop()
    procs.remove(kturnd)

    # 3. Attacks.
    intruder_ns = scope.ns("intruder")
    op.wait_for("the intruder's pod", lambda: "created" in scope.kubectl(
        "run", "intruder", "-n", intruder_ns, "--image", "kturn/kturnd:test", "--restart",
        "Never", check=False, stderr=True) or scope.get("pod", "intruder", "intruder"),
        procs=procs)
    intruder = op.wait_for("the intruder's token",
                           lambda: pod_token(intruder_ns, "intruder"), procs=procs)
    attacks = [
        ("no token", https + config_path, "", ca, 401),
        ("a pod of another namespace", https + config_path, intruder, ca, 403),
        ("the Gateway's pod, another config", https + f"/api/v1/configs/{gw_ns}/other", token,
         ca, 403),
        ("the Gateway's pod, every config", https + "/api/v1/configs", token, ca, 403),
        ("the Gateway's pod over plain HTTP", http + config_path, token, "", 401),
        ("a token for the API server's audience", https + config_path,
         pod_token(gw_ns, pod, "https://kubernetes.default.svc.cluster.local"), ca, 401),
        ("a client that does not trust the CA", https + config_path, token, "", 0),
        ("the Gateway's pod, its own config (allowed)", https + config_path, token, ca, 200),
    ]
    for what, url, tok, trust, want in attacks:
        got = cds_get(url, tok, trust)
        h.check(got == want, f"{what}: HTTP {got}, want {want}")
        print(f"  {what}: {got or 'TLS handshake refused'}")
    refused = {o: op.metric(metrics_port,
                            f'kturn_operator_cds_requests_total{{outcome="{o}"}}')
               for o in ("unauthenticated", "forbidden", "allowed")}
    h.check(refused["unauthenticated"] >= 3 and refused["forbidden"] >= 3,
            f"kturn_operator_cds_requests_total: {refused}")
    print(f"kturn_operator_cds_requests_total: {refused}")
    h.check("CDS: refused get" in operator.output() and intruder_ns in operator.output(),
            "the operator did not log the refusals with who asked")

    # 4. stunnerd sends no token: refused, it never gets a config.
    stunnerd = h.Proc("stunnerd", [
        os.path.abspath(args.stunnerd), "-w", "-c", http, "--id", gateway, "-l", "all:INFO"],
        workdir, env=dict(os.environ, STUNNER_ADDR=pods.gateway_ip))
    h.register_log(stunnerd.log_path)
    stunnerd.start()
    h.register_cleanup(stunnerd.stop)
    procs.append(stunnerd)
    time.sleep(4)
    h.check(h.stun_binding_probe(turn) is None, "stunnerd got a config without a token")
    h.check(f"CDS: refused watch {gateway}" in operator.output(),
            "the operator did not log stunnerd's refused watch")
    print("stunnerd without a token: refused, no listener after 4 s")

    # 5. The Gateway opts out: stunnerd gets its config over plain HTTP and relays.
    scope.kubectl("annotate", "gateways.gateway.networking.k8s.io", op.GW_NAME, "-n", gw_ns,
                  f"{OPEN}=none")
    t0 = time.monotonic()
    op.wait_for("stunnerd answering STUN after the opt-in", lambda: h.stun_binding_probe(turn),
                20, procs)
    print(f"Gateway annotated {OPEN}: none: stunnerd serves {time.monotonic() - t0:.1f} s later")
    op.uclient(workdir, turn, pod_a, port_a, "stunnerd")
    dep = op.wait_for("the Deployment re-rendered without the token",
                      lambda: (lambda d: d if d and "KTURN_CDS_TOKEN_FILE" not in env_of(d)
                               else None)(scope.get("deployment", op.GW_NAME, "media")),
                      procs=procs)
    h.check(env_of(dep)["STUNNER_CONFIG_ORIGIN"] == http and
            "volumes" not in dep["spec"]["template"]["spec"],
            f"opted-out Deployment: {env_of(dep)}")
    print(f"the opted-out Deployment: origin {http}, no token volume")
    # Open means this Gateway only: the lists, and other Gateways, stay closed.
    h.check(cds_get(http + "/api/v1/configs") == 401, "the list of every config opened too")

    # 6. The flood, and the legitimate watch.
    idle = []
    for _ in range(300):
        s = socket.create_connection((h.LOOPBACK, cds_port), timeout=5)
        idle.append(s)
    h.register_cleanup(lambda: [s.close() for s in idle])
    big = socket.create_connection((h.LOOPBACK, cds_port), timeout=5)
    key = base64.b64encode(os.urandom(16)).decode()
    big.sendall((f"GET {config_path}?watch=true HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                 f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                 "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    payload = b"x" * (1 << 20)
    mask = os.urandom(4)
    frame = bytes([0x81, 0xFF]) + struct.pack("!Q", len(payload)) + mask + bytes(
        b ^ mask[i % 4] for i, b in enumerate(payload))
    closed = False
    try:
        big.sendall(frame)
        big.settimeout(5)
        while big.recv(65536):
            pass
        closed = True
    except (ConnectionResetError, BrokenPipeError):
        closed = True
    except socket.timeout:
        pass
    h.check(closed, "a watch that sent a 1 MiB frame was not closed")
    refused = op.metric(metrics_port, "kturn_operator_cds_connections_refused_total")
    h.check(refused >= 300 - 128, f"connections refused: {refused}")
    pod_b = pods.pod_ips[1]
    es = scope.get("endpointslice", "media-server-x7k2p", "media")
    es["endpoints"] = [{"addresses": [pod_b], "conditions": {"ready": True, "serving": True}}]
    scope.kubectl("replace", "-f", "-", input=json.dumps(es))
    op.wait_for("stunnerd admitting pod B during the flood",
                lambda: op.permission(turn, pod_b) is None, 20, procs)
    print(f"CDS flood: {len(idle)} idle connections ({refused:.0f} closed at once), a 1 MiB "
          "frame closed its watch; stunnerd's watch got the EndpointSlice change: pod B admitted")
    for sock in idle:
        sock.close()
    for p in procs:
        h.check(p.running(), f"{p.name} exited")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--operator", required=True, help="kturn-operator binary")
    p.add_argument("--stunnerd", required=True, help="STUNner's stunnerd (test tool)")
    args, _ = p.parse_known_args()
    h.root_or_skip("the media pods live in a network namespace of the test's own")
    h.run_test("cds-auth", body, p, overall_timeout=110)


if __name__ == "__main__":
    main()
