#!/usr/bin/python3
"""kturn-auth following every gateway of a CDS server, as STUNner's auth service does, with the
real kturn-operator as that server (against the real control plane of the test run, tests/
support/control_plane.py; manifests applied with kubectl in namespaces of this test's own) and
one real kturnd per gateway fed over CDS:

  1. Two GatewayClasses, each with its own GatewayConfig (realm) and Secret (shared secret), and
     one Gateway of each: media/gw-a and team/gw-b, on their own free UDP ports at 127.0.0.1.
     The operator serves both configs over CDS; a kturnd per gateway runs its config
     (`-c http://<cds> --id <ns>/<gw>`); kturn-auth runs with the CDS origin and no --id.
  2. GET /ice?service=turn has one entry per gateway, in id order, each with that gateway's URI;
     each entry's credential allocates on its own gateway's kturnd and is refused (401) by the
     other one. GET / answers for the first gateway, or for the one the namespace/gateway
     filters select; filters that select nothing give 404.
  3. Gateway A's Secret is rotated through the API: kturn-auth's next credential for A is signed
     with the new secret and allocates on A's kturnd; no process is restarted.
  4. Gateway B is deleted through the API: /ice then has A's entry only, and GET / for B is 404.

  /usr/bin/python3 auth_cds_test.py --server kturnd --kturnd build/kturnd \\
      --kturn-auth build/kturn-auth --operator build/kturn-operator
"""

import argparse
import base64
import json
import os
import sys
import urllib.error
import urllib.request


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import stunner_inputs  # noqa: E402  (gateway_class)
import operator_test as op  # noqa: E402  (its waits)
from operator_test import cp  # noqa: E402  (tests/support/control_plane.py)
from auth_test import rest_password  # noqa: E402

NS_A, GW_A, REALM_A, SECRET_A = "media", "gw-a", "a.kturn.test", "secret-of-gateway-a"
NS_B, GW_B, REALM_B, SECRET_B = "team", "gw-b", "b.kturn.test", "secret-of-gateway-b"
SECRET_A_ROTATED = "rotated-secret-of-gateway-a"


def gateway_manifests(cls: str, ns: str, gw: str, realm: str, secret: str, port: int) -> list:
    """A GatewayClass with its own GatewayConfig and Secret, and one Gateway of that class."""
    return [
        stunner_inputs.gateway_class(cls, cls),
        {"apiVersion": "stunner.l7mp.io/v1", "kind": "GatewayConfig",
         "metadata": {"name": cls, "namespace": "stunner"},
         "spec": {"realm": realm, "authRef": {"name": cls, "namespace": "stunner"}}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": cls, "namespace": "stunner"},
         "type": "Opaque", "stringData": {"type": "ephemeral", "secret": secret}},
        {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
         "metadata": {"name": gw, "namespace": ns},
         "spec": {"gatewayClassName": cls,
                  "addresses": [{"type": "IPAddress", "value": h.LOOPBACK}],
                  "listeners": [{"name": "udp", "port": port, "protocol": "TURN-UDP"}]}},
    ]


def manifests(port_a: int, port_b: int) -> list:
    return op.with_test_dataplane(
        gateway_manifests("class-a", NS_A, GW_A, REALM_A, SECRET_A, port_a) +
        gateway_manifests("class-b", NS_B, GW_B, REALM_B, SECRET_B, port_b))


def http_get(port: int, path: str):
    try:
        with urllib.request.urlopen(f"http://{h.LOOPBACK}:{port}{path}", timeout=2) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")
    except (urllib.error.URLError, OSError):
        return None, None


def uri_address(uri: str):
    h.check(uri.startswith("turn:") and uri.endswith("?transport=udp"), f"URI {uri}")
    host, _, port = uri[len("turn:"):-len("?transport=udp")].rpartition(":")
    return host, int(port)


def allocate(port: int, username: str, password: str):
    """None when an Allocate with the credential succeeds on 127.0.0.1:port, else the error."""
    with h.TurnClient((h.LOOPBACK, port), username, password) as client:
        resp = client.request(h.ALLOCATE, lambda m: (
            m.add(h.A_REQUESTED_TRANSPORT, bytes([17, 0, 0, 0])),
            m.add_u32(h.A_LIFETIME, 60)))
        if resp.cls == h.SUCCESS:
            return None
        return resp.error_code() or (-1, "")


def signed_with(entry: dict) -> str:
    for secret in (SECRET_A, SECRET_B, SECRET_A_ROTATED):
        if entry["credential"] == rest_password(secret, entry["username"]):
            return secret
    return ""


def body(args: argparse.Namespace, workdir: str) -> None:
    port_a, port_b = h.free_port(udp_only=True), h.free_port(udp_only=True)
    cds_port = h.free_port()
    scope = cp.Scope()
    h.register_cleanup(scope.delete)
    kubeconfig = scope.service_account_kubeconfig("kturn-operator")
    ns_a, ns_b = scope.ns(NS_A), scope.ns(NS_B)

    def start(name: str, argv: list, env=None) -> h.Proc:
        p = h.Proc(name, argv, workdir, env=env)
        h.register_log(p.log_path)
        p.start()
        h.register_cleanup(p.stop)
        return p

    operator = start("kturn-operator",
                     [os.path.abspath(args.operator), "--kubeconfig", kubeconfig,
                      "--controller-name", scope.controller_name,
                      "--cds-addr", f"{h.LOOPBACK}:{cds_port}", "-l", "all:DEBUG",
                      *op.NO_OWN_ENDPOINTS])
    procs = [operator]
    scope.apply(manifests(port_a, port_b))
    cds = f"http://{h.LOOPBACK}:{cds_port}"

    # 1. Both configs over CDS, a kturnd per gateway, kturn-auth on every config.
    def cds_ids():
        try:
            with urllib.request.urlopen(cds + "/api/v1/configs", timeout=2) as r:
                return sorted(c["admin"]["name"] for c in json.loads(r.read())["items"])
        except (urllib.error.URLError, OSError):
            return None
    ids = op.wait_for("both configs over CDS",
                      lambda: (lambda i: i if i == [f"{ns_a}/{GW_A}", f"{ns_b}/{GW_B}"] else None)(
                          cds_ids()), procs=procs)
    print(f"CDS serves {ids}")
    for ns, gw, port in ((ns_a, GW_A, port_a), (ns_b, GW_B, port_b)):
        procs.append(start(f"kturnd-{gw}",
                           [os.path.abspath(args.kturnd), "-w", "-c", cds, "--id", f"{ns}/{gw}",
                            "-l", "all:DEBUG"], env=dict(os.environ, STUNNER_ADDR=h.LOOPBACK)))
        op.wait_for(f"kturnd {ns}/{gw} answering STUN",
                    lambda: h.stun_binding_probe((h.LOOPBACK, port)), procs=procs)
    auth_port = h.free_port()
    procs.append(start("kturn-auth", [os.path.abspath(args.kturn_auth), "-c", cds,
                                      "--address", h.LOOPBACK, "--port", str(auth_port),
                                      "-l", "all:DEBUG"]))

    def ice(query: str = ""):
        status, doc = http_get(auth_port, "/ice?service=turn&username=alice" + query)
        return doc if status == 200 else None

    # 2. One entry per gateway, each credential good on its own kturnd only.
    doc = op.wait_for("/ice with both gateways",
                      lambda: (lambda d: d if d and len(d["iceServers"]) == 2 else None)(ice()),
                      procs=procs)
    entry_a, entry_b = doc["iceServers"]
    print(f"/ice: {json.dumps(doc)}")
    h.check(entry_a["urls"] == [f"turn:{h.LOOPBACK}:{port_a}?transport=udp"] and
            entry_b["urls"] == [f"turn:{h.LOOPBACK}:{port_b}?transport=udp"],
            f"URIs {entry_a['urls']} {entry_b['urls']}, want gateway A's then B's")
    h.check(signed_with(entry_a) == SECRET_A and signed_with(entry_b) == SECRET_B,
            "each entry must be signed with its own gateway's secret")
    for entry, own, other, tag in ((entry_a, port_a, port_b, "A"), (entry_b, port_b, port_a, "B")):
        _, port = uri_address(entry["urls"][0])
        h.check(port == own, f"gateway {tag}'s URI port {port}, want {own}")
        error = allocate(port, entry["username"], entry["credential"])
        h.check(error is None, f"gateway {tag}'s credential on its own kturnd: {error}")
        refused = allocate(other, entry["username"], entry["credential"])
        h.check(refused is not None and refused[0] == 401,
                f"gateway {tag}'s credential on the other kturnd: {refused}, want 401")
        print(f"gateway {tag}: its credential allocates on {own} and gets 401 on {other}")

    status, first = http_get(auth_port, "/?service=turn&username=bob")
    h.check(status == 200 and first["uris"] == entry_a["urls"] and
            first["password"] == rest_password(SECRET_A, first["username"]),
            f"GET / without filters: {status} {first}, want gateway A's")
    status, only_b = http_get(auth_port, f"/?service=turn&namespace={ns_b}&gateway={GW_B}")
    h.check(status == 200 and only_b["uris"] == entry_b["urls"],
            f"GET / for {ns_b}/{GW_B}: {status} {only_b}")
    h.check(allocate(port_b, only_b["username"], only_b["password"]) is None,
            "GET / credential for gateway B does not allocate on B")
    status, doc = http_get(auth_port, f"/ice?service=turn&namespace={ns_a}&gateway={GW_B}")
    h.check(status == 404 and doc["code"] == 404, f"filters selecting nothing: {status} {doc}")
    print("GET / answers for the first or the selected gateway; no match is 404")

    # 3. Gateway A's secret rotated through the API: followed without a restart.
    scope.kubectl("patch", "secret", "class-a", "-n", scope.ns("stunner"), "--type", "merge",
                  "-p", json.dumps({"data": {"secret": base64.b64encode(
                      SECRET_A_ROTATED.encode()).decode()}}))
    rotated = op.wait_for("a credential for A signed with the rotated secret",
                          lambda: (lambda d: d if d and signed_with(d["iceServers"][0]) ==
                                   SECRET_A_ROTATED else None)(ice()), procs=procs)
    new_a = rotated["iceServers"][0]
    h.check(signed_with(rotated["iceServers"][1]) == SECRET_B, "gateway B's secret changed too")
    # kturnd A takes the new config from the same CDS push; give it a moment.
    op.wait_for("kturnd A accepting the rotated credential",
                lambda: allocate(port_a, new_a["username"], new_a["credential"]) is None, 10, procs)
    print("gateway A's rotated secret: kturn-auth mints with it, kturnd A accepts it")

    # 4. Gateway B deleted: its entry goes away.
    scope.kubectl("delete", "gateways.gateway.networking.k8s.io", GW_B, "-n", ns_b)
    doc = op.wait_for("/ice without gateway B",
                      lambda: (lambda d: d if d and len(d["iceServers"]) == 1 else None)(ice()),
                      procs=procs)
    h.check(doc["iceServers"][0]["urls"] == entry_a["urls"], f"/ice after the deletion: {doc}")
    status, _ = http_get(auth_port, f"/?service=turn&namespace={ns_b}")
    h.check(status == 404, f"GET / for the deleted gateway: {status}, want 404")
    print("gateway B deleted: /ice lists gateway A only")
    for p in procs:
        h.check(p.running(), f"{p.name} exited")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--kturn-auth", required=True, help="kturn-auth binary")
    p.add_argument("--operator", required=True, help="kturn-operator binary")
    args, _ = p.parse_known_args()
    h.run_test("auth-cds", body, p, overall_timeout=110)


if __name__ == "__main__":
    main()
