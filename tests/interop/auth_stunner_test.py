#!/usr/bin/python3
"""kturn-auth against STUNner's own auth service (stunner-auth-service v1.1.0, a test tool that
scripts/build-test-tools.sh builds from the released source), both following the same config
discovery server: the real kturn-operator on the real control plane of the test run (tests/
support/control_plane.py, manifests applied with kubectl in namespaces of this test's own), with
a real kturnd per Gateway on its config.

Gateways (each listener on its own free port on 127.0.0.1):
  media/gw-a  ephemeral auth (class-a's shared secret), public address 127.0.0.1 (the Gateway's
              spec.addresses), listeners udp (TURN-UDP), tcp (TURN-TCP), tls (TURN-TLS);
  media/gw-c  the same class, no public address (the operator renders `$STUNNER_ADDR`), udp;
  team/gw-b   static auth (class-b's username and password), public address 127.0.0.1,
              listeners udp (TURN-UDP), dtls (TURN-DTLS).
STUNner's service runs as its manifest runs it, with --cds-server-address/--cds-server-port,
kturn-auth with `-c http://<cds>` as auth_cds_test.py runs it. STUNner's binds every address
(`:<port>`), so it runs in a network namespace of the test's own, which reaches the CDS server
through a relay of this script's (a socket in each namespace); the test reaches its HTTP port
with a socket made in that namespace. Root, then: exits 77 (skipped) without it, and also when
the stunner-auth-server binary is absent.

Every query of STUNner's API (its README and api/stunner.yaml: `service`, `username`, `ttl`,
`key`, `namespace`, `gateway`, `listener`, `public-addr`, `iceTransportPolicy`, on `/` and
`/ice`), their combinations, and the error cases (no config yet, no or another service, bad and
repeated parameters, filters selecting nothing, other paths and methods, every Gateway deleted)
go to both; a few again to a second pair of services with STUNNER_PUBLIC_ADDR in their
environment (the host of every URI unless `public-addr` names one). Each answer is checked
against what the documented behaviour makes of the configs the CDS server serves (status,
content type, JSON field names and their order, the URIs of the selected listeners in config
order, the username `<expiry>:<user>` with the expiry now + ttl, the password as the TURN REST
API signs it with the Gateway's own secret, or the static pair, `ttl`, `iceTransportPolicy`),
and each credential is used: an Allocate on the kturnd of its Gateway, over UDP and over the TCP
and TLS listeners its URIs name (DTLS ones over the Gateway's UDP listener). kturn-auth's
answers are held to the same model except where docs/auth.md and docs/migration-from-stunner.md
say kturn-auth differs on purpose; each such case names the difference. Then the two answers are
compared field by field (what depends on the time or on Go's map order by shape) and a
side-by-side table is printed.

  /usr/bin/python3 auth_stunner_test.py --server kturnd --kturnd build/kturnd \\
      --kturn-auth build/kturn-auth --operator build/kturn-operator \\
      --stunner-auth build/test-tools/bin/stunner-auth-server
"""

import argparse
import base64
import collections
import hashlib
import hmac
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import stunner_inputs  # noqa: E402  (gateway_class)
import operator_test as op  # noqa: E402  (its waits)
from operator_test import cp  # noqa: E402  (tests/support/control_plane.py)

SECRET_A = "secret-of-class-a"
USER_B, PASS_B = "user-of-b", "pass-of-b"
PUBLIC = h.LOOPBACK          # gw-a's and gw-b's spec.addresses
OVERRIDE = "192.0.2.10"      # a public-addr of the queries (TEST-NET-1: only ever a string here)
ENV_PUBLIC = "198.51.100.20"  # STUNNER_PUBLIC_ADDR of the second pair of services (TEST-NET-2)
JSON_TYPE = "application/json; charset=UTF-8"  # STUNner's (Go's json.Encoder and its header)
DEFAULT_TTL = 86400

# The differences docs/auth.md and docs/migration-from-stunner.md give, by key.
DOCUMENTED = {
    "error-body": "error bodies: STUNner plain text, kturn-auth JSON {code,message}",
    "ice-order": "/ice entries: kturn-auth in id order, STUNner in Go's map order",
    "first-gateway": "/ with several Gateways: kturn-auth the first in id order, STUNner the "
                     "first of its map, in no set order",
    "negative-ttl": "ttl < 0: STUNner mints an expired credential, kturn-auth 400",
    "malformed-pair": "a malformed %-escape or a ';' in a pair: STUNner drops the pair (and "
                      "answers as if that parameter were not given), kturn-auth 400",
    "policy": "/ice iceTransportPolicy not all/relay/public: STUNner echoes it, kturn-auth 400",
    "empty-public-addr": "public-addr= (empty): STUNner drops the listeners' public addresses "
                         "and STUNNER_PUBLIC_ADDR (0.0.0.0 in the URIs), kturn-auth reads it as "
                         "not given",
    "unclean-path": "a path that is not clean (`//`, `/./ice`): STUNner's router redirects "
                    "(301) to the clean one, kturn-auth 404",
    "head": "HEAD: STUNner 405, kturn-auth answers as GET without the body",
    "client": "client= (kturn's own parameter) not an IP address: kturn-auth 400, STUNner "
              "ignores it",
    "deleted": "every Gateway deleted: STUNner keeps the deletions as empty configs (404), "
               "kturn-auth holds no config (500)",
}


# ---------------------------------------------------------------------------------------------
# The cluster: Gateways, manifests
# ---------------------------------------------------------------------------------------------

@dataclass
class Gateway:
    ns: str            # base namespace (the Scope localizes it)
    name: str
    cls: str
    public: Optional[str]
    listeners: List[Tuple[str, str]]   # (name, protocol)
    ports: Dict[str, int] = field(default_factory=dict)
    id: str = ""       # "<localized ns>/<name>", once known

    @property
    def ephemeral(self) -> bool:
        return self.cls == "class-a"

    def udp_port(self) -> int:
        return next(self.ports[n] for n, p in self.listeners if p == "TURN-UDP")


GATEWAYS = [
    Gateway("media", "gw-a", "class-a", PUBLIC,
            [("udp", "TURN-UDP"), ("tcp", "TURN-TCP"), ("tls", "TURN-TLS")]),
    Gateway("media", "gw-c", "class-a", None, [("udp", "TURN-UDP")]),
    Gateway("team", "gw-b", "class-b", PUBLIC, [("udp", "TURN-UDP"), ("dtls", "TURN-DTLS")]),
]


def manifests(cert: str, key: str) -> list:
    docs = []
    for cls, spec in (("class-a", {"realm": "a.kturn.test",
                                   "authRef": {"name": "class-a", "namespace": "stunner"}}),
                      ("class-b", {"realm": "b.kturn.test", "authType": "static",
                                   "userName": USER_B, "password": PASS_B})):
        docs += [
            stunner_inputs.gateway_class(cls, cls),
            {"apiVersion": "stunner.l7mp.io/v1", "kind": "GatewayConfig",
             "metadata": {"name": cls, "namespace": "stunner"}, "spec": spec}]
    docs.append({"apiVersion": "v1", "kind": "Secret",
                 "metadata": {"name": "class-a", "namespace": "stunner"}, "type": "Opaque",
                 "stringData": {"type": "ephemeral", "secret": SECRET_A}})
    for ns in ("media", "team"):
        docs.append({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                     "metadata": {"name": "turn-cert", "namespace": ns},
                     "stringData": {"tls.crt": cert, "tls.key": key}})
    for gw in GATEWAYS:
        listeners = []
        for name, proto in gw.listeners:
            listener = {"name": name, "port": gw.ports[name], "protocol": proto}
            if proto in ("TURN-TLS", "TURN-DTLS"):
                listener["tls"] = {"mode": "Terminate",
                                   "certificateRefs": [{"name": "turn-cert"}]}
            listeners.append(listener)
        spec = {"gatewayClassName": gw.cls, "listeners": listeners}
        if gw.public:
            spec["addresses"] = [{"type": "IPAddress", "value": gw.public}]
        docs.append({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                     "metadata": {"name": gw.name, "namespace": gw.ns, "annotations": {
                         "stunner.l7mp.io/enable-mixed-protocol-lb": "true"}},
                     "spec": spec})
    return op.with_test_dataplane(docs)


# ---------------------------------------------------------------------------------------------
# STUNner's service in a network namespace: the CDS relay and HTTP through a socket made there
# ---------------------------------------------------------------------------------------------

class NetnsRelay:
    """Listens on 127.0.0.1:port inside network namespace `ns` and relays every connection to
    127.0.0.1:target in this script's own namespace (the listening socket is made in `ns`, the
    outgoing ones here: a socket stays in the namespace it was made in)."""

    def __init__(self, ns: str, port: int, target: int) -> None:
        with h.in_netns(ns):
            self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.listener.bind((h.LOOPBACK, port))
            self.listener.listen(16)
        self.target = target
        self.closed = False
        self.sockets: List[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                inner, _ = self.listener.accept()
            except OSError:
                return
            try:
                outer = socket.create_connection((h.LOOPBACK, self.target), timeout=3)
                outer.settimeout(None)
            except OSError:
                inner.close()
                continue
            self.sockets += [inner, outer]
            for a, b in ((inner, outer), (outer, inner)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.closed = True
        for s in [self.listener] + self.sockets:
            try:
                s.close()
            except OSError:
                pass


@dataclass
class Answer:
    status: Optional[int]
    content_type: str = ""
    location: str = ""
    body: bytes = b""
    t0: float = 0.0      # the time before the request and after the answer: an expiry lies
    t1: float = 0.0      # between t0 + ttl and t1 + ttl

    def json(self):
        return json.loads(self.body)

    def keys(self):
        """The JSON document's object keys in the order written, nested objects' after."""
        out = []

        def hook(pairs):
            out.append([k for k, _ in pairs])
            return dict(pairs)
        json.loads(self.body, object_pairs_hook=hook)
        return out


def http_request(port: int, target: str, method: str = "GET", ns: Optional[str] = None) -> Answer:
    t0 = time.time()
    try:
        with h.in_netns(ns):
            sock = socket.create_connection((h.LOOPBACK, port), timeout=3)
        conn = http.client.HTTPConnection(h.LOOPBACK, port, timeout=3)
        conn.sock = sock
        conn.request(method, target)
        r = conn.getresponse()
        body = r.read()
        conn.close()
        return Answer(r.status, r.getheader("Content-Type") or "", r.getheader("Location") or "",
                      body, t0, time.time())
    except (OSError, http.client.HTTPException):
        return Answer(None, t0=t0, t1=time.time())


# ---------------------------------------------------------------------------------------------
# Credentials on kturnd
# ---------------------------------------------------------------------------------------------

_allocations: Dict[tuple, Optional[tuple]] = {}


def allocate(port: int, transport: str, username: str, password: str):
    """None when an Allocate with the credential succeeds on 127.0.0.1:port over `transport`
    (udp, tcp, tls), else the error (code, reason). The allocation is released at once."""
    key = (port, transport, username, password)
    if key in _allocations:
        return _allocations[key]
    server = (h.LOOPBACK, port)
    client = (h.TurnClient(server, username, password) if transport == "udp" else
              h.StreamTurnClient(server, username, password,
                                 tls=h.insecure_tls() if transport == "tls" else None))
    with client:
        resp = client.request(h.ALLOCATE, lambda m: (
            m.add(h.A_REQUESTED_TRANSPORT, bytes([17, 0, 0, 0])),
            m.add_u32(h.A_LIFETIME, 60)))
        result = None if resp.cls == h.SUCCESS else (resp.error_code() or (-1, ""))
        if result is None:
            client.refresh(0)
    _allocations[key] = result
    return result


def rest_password(secret: str, username: bytes) -> str:
    return base64.b64encode(hmac.new(secret.encode(), username, hashlib.sha1).digest()).decode()


# ---------------------------------------------------------------------------------------------
# The model: what the documented behaviour makes of the CDS configs and a query
# ---------------------------------------------------------------------------------------------

URI_FORMS = {"TURN-UDP": ("turn", "udp"), "TURN-TCP": ("turn", "tcp"),
             "TURN-TLS": ("turns", "tcp"), "TURN-DTLS": ("turns", "udp")}
URI = re.compile(r"^(turns?):(.+):(\d+)\?transport=(udp|tcp)$")


@dataclass
class Query:
    """A query as a service reads it (decoded, one value per parameter)."""
    namespace: Optional[str] = None
    gateway: Optional[str] = None
    listener: Optional[str] = None
    public_addr: Optional[str] = None
    user: bytes = b""
    ttl: int = DEFAULT_TTL
    policy: str = "all"


def read_query(raw: str) -> Query:
    """The decoded parameters of a well-formed query (the cases' 200s)."""
    q = Query()
    for k, v in urllib.parse.parse_qsl(raw, keep_blank_values=True, encoding="latin-1"):
        if k == "namespace":
            q.namespace = v
        elif k == "gateway":
            q.gateway = v
        elif k == "listener":
            q.listener = v
        elif k == "public-addr":
            q.public_addr = v
        elif k == "username":
            q.user = v.encode("latin-1")  # the bytes as sent
        elif k == "ttl":
            q.ttl = int(v)
        elif k == "iceTransportPolicy":
            q.policy = v
    return q


def expected_servers(impl: str, configs: Dict[str, dict], q: Query,
                     env_public: str = "") -> Dict[str, List[str]]:
    """{gateway id: its URIs in config order} for the Gateways with a selected listener, from
    services whose STUNNER_PUBLIC_ADDR is `env_public`."""
    out = {}
    for gid in sorted(configs):
        uris = []
        for l in configs[gid]["listeners"]:
            ns, gw, name = l["name"].split("/")
            if q.namespace is not None and (
                    q.namespace != ns or
                    q.gateway is not None and (q.gateway != gw or
                                               q.listener is not None and q.listener != name)):
                continue
            public, address = l.get("public_address", ""), l.get("address", "")
            if impl == "stunner":
                # Its config client expands environment variables in the config, and its own has
                # no STUNNER_ADDR: the operator's `$STUNNER_ADDR` reads as empty. A given
                # public-addr, even empty, replaces the listener's public address, else
                # STUNNER_PUBLIC_ADDR does if set; an empty one then falls back to the bind
                # address, and an empty host is 0.0.0.0.
                public, address = (re.sub(r"\$\{?\w+\}?", "", a) for a in (public, address))
                if q.public_addr is not None:
                    public = q.public_addr
                elif env_public:
                    public = env_public
                host = public or address or "0.0.0.0"
            else:
                host = q.public_addr or env_public or public or address
                if not host or host in ("0.0.0.0", "::") or host.startswith("$"):
                    host = "0.0.0.0"
            scheme, transport = URI_FORMS[l["protocol"]]
            port = l.get("public_port") or l["port"]
            uris.append(f"{scheme}:{host}:{port}?transport={transport}")
        if uris:
            out[gid] = uris
    return out


# ---------------------------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------------------------

@dataclass
class Case:
    path: str                       # with its query: "/?service=turn"
    status: int                     # what STUNner answers (and kturn-auth, unless `kturn`)
    kturn: Optional[int] = None     # kturn-auth's status where it differs on purpose
    why: str = ""                   # that difference (a DOCUMENTED key)
    method: str = "GET"
    stunner_reads: Optional[str] = None  # the query as STUNner reads it, if not as written
    alloc: str = "ok"               # ok: each credential allocates; refused: an ephemeral one
    #                                 gets 401 (a static one still allocates); skip: not used
    note: str = ""

    @property
    def kturn_status(self) -> int:
        return self.status if self.kturn is None else self.kturn


def both(query: str, status: int = 200, **kw) -> List[Case]:
    return [Case("/?" + query if query else "/", status, **kw),
            Case("/ice?" + query if query else "/ice", status, **kw)]


def cases(ns: Dict[str, str]) -> List[Case]:
    m, t = ns["media"], ns["team"]
    out: List[Case] = []
    out += both("", 400, note="no service")
    out += both("service=turn")
    out += both("service=turn&username=alice")
    out += both("service=turn&username=alice&ttl=3600")
    out += both("service=turn&username=alice&ttl=60&key=some-api-key", note="key ignored")
    out += both("service=turn&ttl=0", alloc="skip", note="expires now")
    out += both(f"service=turn&namespace={m}&ttl=-5", 200, kturn=400, why="negative-ttl",
                alloc="refused")
    for bad in ("abc", "", "1.5", "86400s", "99999999999999999999"):
        out += both(f"service=turn&ttl={bad}", 400, note=f"ttl={bad or '(empty)'}")
    out += both("service=turn&ttl=%2B60", note="ttl=+60")
    out += both("service=turn&ttl=007", note="ttl=007")
    for service in ("stun", "", "TURN"):
        out += both(f"service={service}", 400, note=f"service={service or '(empty)'}")
    out += both(f"service=turn&namespace={m}")
    out += both(f"service=turn&namespace={t}")
    out += both("service=turn&namespace=nowhere", 404)
    out += both(f"service=turn&namespace={m}&gateway=gw-a")
    out += both(f"service=turn&namespace={m}&gateway=gw-c")
    out += both(f"service=turn&namespace={m}&gateway=gw-b", 404, note="gw-b is in team")
    out += both("service=turn&gateway=gw-b", note="gateway without namespace: ignored")
    out += both(f"service=turn&namespace={m}&gateway=gw-a&listener=tcp")
    out += both(f"service=turn&namespace={m}&gateway=gw-a&listener=tls")
    out += both(f"service=turn&namespace={t}&gateway=gw-b&listener=dtls")
    out += both(f"service=turn&namespace={m}&gateway=gw-a&listener=dtls", 404)
    out += both("service=turn&listener=udp", note="listener alone: ignored")
    out += both(f"service=turn&namespace={m}&listener=tls", note="listener without gateway")
    out += both(f"service=turn&public-addr={OVERRIDE}")
    out += both(f"service=turn&namespace={t}&gateway=gw-b&listener=udp&public-addr={OVERRIDE}"
                "&username=bob&ttl=120")
    out += both("service=turn&public-addr=", why="empty-public-addr")
    out += both("service=turn&username=al%20ice+bob", note="escaped space and +")
    out += both("service=turn&username=a%3Ab%2Fc", note="':' and '/' in username")
    out += both("service=turn&username=%3Cb%3E%26%22", note="HTML characters in username")
    out += both("service=turn&username=%C3%A9l%C3%A8ve", note="UTF-8 username")
    out += both(f"service=turn&namespace={m}&username=%FF", alloc="refused",
                note="invalid UTF-8: U+FFFD in JSON, the raw byte signed")
    for dup in ("username=a&username=b", f"namespace={m}&namespace={t}", "ttl=60&ttl=60",
                "service=turn"):
        out += both(f"service=turn&{dup}", 400, note="repeated parameter")
    out += both("service=turn&username=%zz", 200, kturn=400, why="malformed-pair",
                stunner_reads="service=turn")
    out += both("service=turn&username=a;b", 200, kturn=400, why="malformed-pair",
                stunner_reads="service=turn", note="';' in a pair")
    out += both(f"service=turn&namespace={m}%zz", 200, kturn=400, why="malformed-pair",
                stunner_reads="service=turn", note="the filter dropped: every Gateway")
    for policy in ("relay", "public", "all"):
        out += both(f"service=turn&iceTransportPolicy={policy}")
    out.append(Case("/ice?service=turn&iceTransportPolicy=bogus", 200, kturn=400, why="policy"))
    out.append(Case("/?service=turn&iceTransportPolicy=bogus", 200, note="/ has no policy"))
    out.append(Case("/ice?service=turn&iceTransportPolicy=relay&iceTransportPolicy=all", 400,
                    note="repeated parameter"))
    out.append(Case("/?service=turn&iceTransportPolicy=relay&iceTransportPolicy=all", 200,
                    note="/ has no policy"))
    out.append(Case("/ice?username=alice&ttl=60", 400, note="no service"))
    out += both("service=turn&region=eu-central&client=203.0.113.9", note="kturn's own params")
    out += both("service=turn&client=not-an-ip", 200, kturn=400, why="client")
    out += [Case("/ice/?service=turn", 404), Case("/foo?service=turn", 404),
            Case("/ice/x?service=turn", 404),
            Case("//?service=turn", 301, kturn=404, why="unclean-path"),
            Case("/./ice?service=turn", 301, kturn=404, why="unclean-path"),
            Case("/x/../ice?service=turn", 301, kturn=404, why="unclean-path")]
    out += [Case("/?service=turn", 405, method="POST"), Case("/ice?service=turn", 405,
                                                             method="PUT"),
            Case("/?service=turn", 405, kturn=200, method="HEAD", why="head"),
            Case("/ice?service=turn", 405, kturn=200, method="HEAD", why="head")]
    return out


# ---------------------------------------------------------------------------------------------
# Checking an answer against the model, and the two answers against each other
# ---------------------------------------------------------------------------------------------

def summary(a: Answer) -> str:
    """An answer in a few words, for the table when it did not pass the checks."""
    if a.status is None:
        return "(no answer)"
    return f"{a.status} {a.body[:44].decode(errors='replace')}"


class Checker:
    def __init__(self, configs: Dict[str, dict], gateways: Dict[str, Gateway]):
        self.configs = configs
        self.gateways = gateways   # by id
        self.env_public = ""       # the services' STUNNER_PUBLIC_ADDR
        self.rows: List[Tuple[str, str, str, str]] = []
        self.differences: Dict[str, List[str]] = collections.defaultdict(list)
        self.failures: List[str] = []

    def gateway_of(self, uris: List[str]) -> Gateway:
        ports = {int(URI.match(u).group(3)) for u in uris}
        owners = {g.id for g in self.gateways.values() for p in ports if p in g.ports.values()}
        h.check(len(owners) == 1, f"URIs {uris} belong to {sorted(owners)}, want one Gateway")
        return self.gateways[owners.pop()]

    def check_credential(self, tag: str, gw: Gateway, q: Query, ans: Answer, username: str,
                         password: str, uris: List[str], alloc: str) -> str:
        """Checks one credential and uses it; returns its summary."""
        if not gw.ephemeral:
            h.check(username == USER_B and password == PASS_B,
                    f"{tag}: static credential {username!r}/{password!r}, want {USER_B!r}")
            signed = True
            shape = "static"
        else:
            m = re.fullmatch(r"(-?\d+):(.*)", username, re.S)
            h.check(m is not None, f"{tag}: username {username!r} is not <expiry>:<user>")
            expiry = int(m.group(1))
            lo, hi = int(ans.t0) + q.ttl, int(ans.t1) + q.ttl
            h.check(lo - 1 <= expiry <= hi + 1,
                    f"{tag}: expiry {expiry} not in [{lo}, {hi}] (now + ttl {q.ttl})")
            want_user = q.user.decode("utf-8", errors="replace")
            h.check(m.group(2) == want_user, f"{tag}: user part {m.group(2)!r}, want "
                                             f"{want_user!r}")
            raw = m.group(1).encode() + b":" + q.user
            h.check(password == rest_password(SECRET_A, raw),
                    f"{tag}: password is not base64(HMAC-SHA1(secret, {raw!r}))")
            signed = raw == username.encode()
            shape = f"<now{q.ttl:+d}>:{want_user}"
        if alloc == "skip":
            return shape
        # Static credentials always work; an ephemeral one when it is good (asked as "ok") and
        # its username is the string that was signed.
        want_ok = not gw.ephemeral or (alloc == "ok" and signed)
        targets = [("udp", gw.udp_port())]
        for u in uris:
            scheme, _, port, transport = URI.match(u).groups()
            if transport == "tcp":
                targets.append(("tls" if scheme == "turns" else "tcp", int(port)))
            elif scheme == "turn":
                targets.append(("udp", int(port)))
        for transport, port in dict.fromkeys(targets):
            h.check(port in gw.ports.values(), f"{tag}: port {port} is not {gw.id}'s")
            result = allocate(port, transport, username, password)
            if want_ok:
                h.check(result is None, f"{tag}: Allocate on {gw.id}'s kturnd over {transport} "
                                        f"{port} with {username!r}: {result}")
            else:
                h.check(result is not None and result[0] == 401,
                        f"{tag}: Allocate with an invalid credential on {gw.id}'s kturnd over "
                        f"{transport}: {result}, want 401")
        return shape + (" alloc ok" if want_ok else " alloc 401")

    def check_answer(self, impl: str, case: Case, ans: Answer, want: int):
        """Checks one service's answer against the model; returns (summary, comparable)."""
        tag = f"{impl} {case.method} {case.path}"
        h.check(ans.status == want, f"{tag}: status {ans.status}, want {want} "
                                    f"({ans.body[:200]!r})")
        if want != 200 or case.method == "HEAD":
            if case.method == "HEAD":
                h.check(ans.body == b"", f"{tag}: a body in the answer to HEAD")
                return f"{ans.status} (no body)", (ans.status,)
            if want == 405:  # the routers' own answer, not the API's
                return f"405 {ans.content_type or '(no type)'}", (ans.status,)
            if want == 301:  # STUNner's router: to the clean path, the query kept
                clean = "/" + "/".join(
                    p for p in os.path.normpath(case.path.partition("?")[0]).split("/") if p)
                want_location = clean + "?" + case.path.partition("?")[2]
                h.check(ans.location == want_location,
                        f"{tag}: redirected to {ans.location!r}, want {want_location!r}")
                return f"301 to {ans.location}", (ans.status,)
            if impl == "stunner":
                h.check(ans.content_type.startswith("text/plain"),
                        f"{tag}: error content type {ans.content_type!r}")
                msg = ans.body.decode(errors="replace").strip()
            else:
                h.check(ans.content_type == JSON_TYPE,
                        f"{tag}: error content type {ans.content_type!r}, want {JSON_TYPE!r}")
                doc = ans.json()
                h.check(set(doc) == {"code", "message"} and doc["code"] == want,
                        f"{tag}: error body {doc}")
                msg = doc["message"]
            return f"{ans.status} {msg[:52]}", (ans.status,)
        h.check(ans.content_type == JSON_TYPE,
                f"{tag}: content type {ans.content_type!r}, want {JSON_TYPE!r}")
        reads = case.stunner_reads if impl == "stunner" and case.stunner_reads else \
            case.path.partition("?")[2]
        q = read_query(reads)
        servers = expected_servers(impl, self.configs, q, self.env_public)
        h.check(bool(servers), f"{tag}: the model selects nothing but the answer is 200")
        doc = ans.json()
        keys = ans.keys()
        if case.path.startswith("/ice"):
            h.check(keys[-1] == ["iceServers", "iceTransportPolicy"],
                    f"{tag}: fields {keys[-1]}")
            entries = doc["iceServers"]
            h.check(all(k == ["credential", "urls", "username"] for k in keys[:-1]),
                    f"{tag}: iceServers fields {keys[:-1]}")
            h.check(doc["iceTransportPolicy"] == q.policy,
                    f"{tag}: iceTransportPolicy {doc['iceTransportPolicy']!r}, want {q.policy!r}")
            got = {}
            for e in entries:
                gw = self.gateway_of(e["urls"])
                h.check(gw.id not in got, f"{tag}: two entries for {gw.id}")
                got[gw.id] = e
            h.check(sorted(got) == sorted(servers),
                    f"{tag}: entries for {sorted(got)}, want {sorted(servers)}")
            order = [self.gateway_of(e["urls"]).id for e in entries]
            if impl == "kturn":
                h.check(order == sorted(servers), f"{tag}: entries in {order}, want id order")
            shapes = []
            for gid, e in got.items():
                h.check(e["urls"] == servers[gid],
                        f"{tag}: {gid}'s urls {e['urls']}, want {servers[gid]}")
                shapes.append(self.check_credential(f"{tag} [{gid}]", self.gateways[gid], q,
                                                    ans, e["username"], e["credential"],
                                                    e["urls"], case.alloc))
            short = " ".join(f"{self.gateways[g].name}:{len(got[g]['urls'])}@"
                             f"{URI.match(got[g]['urls'][0]).group(2)}" for g in order)
            summary = f"200 [{short}] {doc['iceTransportPolicy']}"
            comparable = (200, doc["iceTransportPolicy"], keys[-1],
                          tuple(sorted((g, tuple(got[g]["urls"]), s)
                                       for g, s in zip(got, shapes))))
            return summary, comparable
        h.check(keys == [["password", "ttl", "uris", "username"]], f"{tag}: fields {keys}")
        h.check(doc["ttl"] == q.ttl, f"{tag}: ttl {doc['ttl']}, want {q.ttl}")
        gw = self.gateway_of(doc["uris"])
        h.check(gw.id in servers, f"{tag}: answered for {gw.id}, not selected ({list(servers)})")
        if impl == "kturn":
            h.check(gw.id == min(servers), f"{tag}: answered for {gw.id}, want the first in id "
                                           f"order, {min(servers)}")
        h.check(doc["uris"] == servers[gw.id],
                f"{tag}: uris {doc['uris']}, want {servers[gw.id]}")
        shape = self.check_credential(tag, gw, q, ans, doc["username"], doc["password"],
                                      doc["uris"], case.alloc)
        summary = (f"200 {gw.name}:{len(doc['uris'])}@{URI.match(doc['uris'][0]).group(2)} "
                   f"ttl={doc['ttl']} {shape}")
        return summary, (200, doc["ttl"], gw.id, tuple(doc["uris"]), shape,
                         len(servers) > 1)

    def run(self, case: Case, stunner: Answer, kturn: Answer) -> None:
        label = f"{case.method} {case.path}" if case.method != "GET" else case.path
        if case.note:
            label += f"  [{case.note}]"
        try:
            self._run(case, label, stunner, kturn)
        except h.TestFailure as e:
            self.failures.append(f"{label}: {e}")
            self.rows.append((label, summary(stunner), summary(kturn), f"FAIL: {e}"))

    def _run(self, case: Case, label: str, stunner: Answer, kturn: Answer) -> None:
        s_sum, s_cmp = self.check_answer("stunner", case, stunner, case.status)
        k_sum, k_cmp = self.check_answer("kturn", case, kturn, case.kturn_status)
        whys: List[str] = []
        if s_cmp == k_cmp:
            verdict = "equal"
        elif (len(s_cmp) == 6 and s_cmp[:2] == k_cmp[:2] and s_cmp[5] and
              s_cmp[2] != k_cmp[2] and not case.why):
            whys.append("first-gateway")  # / for one of several Gateways
            verdict = "differs: first-gateway"
        else:
            h.check(bool(case.why),
                    f"STUNner and kturn-auth differ without a documented reason:\n"
                    f"  STUNner: {s_sum}\n  kturn:   {k_sum}")
            whys.append(case.why)
            verdict = "differs: " + case.why
        if stunner.status not in (200, 301, 405) and kturn.status not in (200, 405) and \
                case.method == "GET":
            whys.append("error-body")
            verdict += " (error body)" if verdict == "equal" else ""
        if case.path.startswith("/ice") and 200 == stunner.status == kturn.status:
            if len(json.loads(stunner.body)["iceServers"]) > 1:
                s_order = [self.gateway_of(e["urls"]).id for e in stunner.json()["iceServers"]]
                if s_order != sorted(s_order):
                    whys.append("ice-order")
                    verdict += " (order)"
        for w in dict.fromkeys(whys):
            self.differences[w].append(label)
        self.rows.append((label, s_sum, k_sum, verdict))

    def table(self) -> str:
        w0 = min(max(len(r[0]) for r in self.rows), 86)
        lines = [f"{'query':<{w0}} | {'STUNner stunner-auth-service v1.1.0':<58} | "
                 f"{'kturn-auth':<58} | verdict", "-" * (w0 + 146)]
        for q, s, k, v in self.rows:
            lines.append(f"{q[:w0]:<{w0}} | {s[:58]:<58} | {k[:58]:<58} | {v}")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The test
# ---------------------------------------------------------------------------------------------

def body(args: argparse.Namespace, workdir: str) -> None:
    if not os.path.exists(args.stunner_auth):
        print(f"SKIP: no STUNner auth service at {args.stunner_auth} "
              "(scripts/build-test-tools.sh builds it from ../shared/reference/)")
        sys.exit(77)
    h.root_or_skip("the network namespace STUNner's auth service (which binds every address) "
                   "runs in")
    for gw in GATEWAYS:
        for name, _ in gw.listeners:
            gw.ports[name] = h.free_port()
    cds_port, kturn_auth_port, ns_cds_port, stunner_port = (h.free_port() for _ in range(4))
    scope = cp.Scope()
    h.register_cleanup(scope.delete)
    kubeconfig = scope.service_account_kubeconfig("kturn-operator")
    namespaces = {base: scope.ns(base) for base in ("media", "team")}
    for gw in GATEWAYS:
        gw.id = f"{namespaces[gw.ns]}/{gw.name}"
    by_id = {gw.id: gw for gw in GATEWAYS}
    env = {k: v for k, v in os.environ.items()
           if k not in ("STUNNER_ADDR", "STUNNER_PUBLIC_ADDR", "CDS_SERVER_ADDR",
                        "CDS_SERVER_PORT", "CDS_SERVER_NAMESPACE", "KUBECONFIG")}

    def start(name: str, argv: list, extra_env=None) -> h.Proc:
        p = h.Proc(name, argv, workdir, env=dict(env, **(extra_env or {})))
        h.register_log(p.log_path)
        p.start()
        h.register_cleanup(p.stop)
        return p

    netns = f"kturn-sauth-{os.getpid()}"
    h.ThreeNamespaces.run("ip", "netns", "add", netns)
    h.register_cleanup(lambda: subprocess.run(["ip", "netns", "del", netns],
                                              stderr=subprocess.DEVNULL))
    h.ThreeNamespaces.run("ip", "-n", netns, "link", "set", "lo", "up")

    operator = start("kturn-operator",
                     [os.path.abspath(args.operator), "--kubeconfig", kubeconfig,
                      "--controller-name", scope.controller_name,
                      "--cds-addr", f"{h.LOOPBACK}:{cds_port}", "-l", "all:DEBUG",
                      *op.NO_OWN_ENDPOINTS])
    procs = [operator]
    cds = f"http://{h.LOOPBACK}:{cds_port}"

    def cds_configs():
        try:
            with urllib.request.urlopen(cds + "/api/v1/configs", timeout=2) as r:
                return {c["admin"]["name"]: c for c in json.loads(r.read())["items"]}
        except (urllib.error.URLError, OSError, ValueError):
            return None
    op.wait_for("the CDS server", lambda: cds_configs() is not None, procs=procs)

    relay = NetnsRelay(netns, ns_cds_port, cds_port)
    h.register_cleanup(relay.close)
    stunner = start("stunner-auth-server",
                    ["ip", "netns", "exec", netns, os.path.abspath(args.stunner_auth),
                     "--cds-server-address", h.LOOPBACK, "--cds-server-port", str(ns_cds_port),
                     "--port", str(stunner_port), "-l", "all:DEBUG"])
    kturn = start("kturn-auth", [os.path.abspath(args.kturn_auth), "-c", cds,
                                 "--address", h.LOOPBACK, "--port", str(kturn_auth_port),
                                 "-l", "all:DEBUG"])
    procs += [stunner, kturn]

    def ask_stunner(path: str, method: str = "GET") -> Answer:
        return http_request(stunner_port, path, method, ns=netns)

    def ask_kturn(path: str, method: str = "GET") -> Answer:
        return http_request(kturn_auth_port, path, method)

    # 1. No config on the CDS server yet: both answer 500 (STUNner checks for a config before
    #    the service of /ice and before the value of /'s service; a missing / service is 400).
    op.wait_for("both auth services answering HTTP",
                lambda: ask_stunner("/").status and ask_kturn("/").status, procs=procs)
    early = [Case("/?service=turn", 500), Case("/ice?service=turn", 500), Case("/ice", 500),
             Case("/?service=stun", 500), Case("/", 400), Case("/?service=turn&ttl=x", 400)]
    checker = Checker({}, by_id)
    for case in early:
        checker.run(case, ask_stunner(case.path), ask_kturn(case.path))
    print("before any config: both answer 500 (400 for a malformed query)")

    # 2. The Gateways; their configs over CDS; a kturnd per Gateway on its config.
    cert_path, key_path = h.self_signed_cert("turn.kturn.test")
    with open(cert_path) as c, open(key_path) as k:
        scope.apply(manifests(c.read(), k.read()))
    configs = op.wait_for("the three configs over CDS", lambda: (
        lambda c: c if c and sorted(c) == sorted(by_id) else None)(cds_configs()),
        timeout=30, procs=procs)
    for gid, config in sorted(configs.items()):
        print(f"CDS {gid}: auth {config['auth']['type']}, listeners " + ", ".join(
            f"{l['name'].rsplit('/', 1)[1]} {l['protocol']} {l.get('address')}:{l['port']} "
            f"public {l.get('public_address') or '-'}:{l.get('public_port') or '-'}"
            for l in config["listeners"]))
        gw = by_id[gid]
        h.check([(l["name"], l["protocol"], l["port"]) for l in config["listeners"]] ==
                [(f"{gid}/{n}", p, gw.ports[n]) for n, p in gw.listeners],
                f"{gid}'s listeners over CDS differ from its Gateway's")
        h.check((config["listeners"][0].get("public_address") or None) == gw.public,
                f"{gid}'s public address {config['listeners'][0].get('public_address')!r}, "
                f"want {gw.public!r}")
    for gw in GATEWAYS:
        procs.append(start(f"kturnd-{gw.name}",
                           [os.path.abspath(args.kturnd), "-w", "-c", cds, "--id", gw.id,
                            "-l", "all:INFO"], {"STUNNER_ADDR": h.LOOPBACK}))
        op.wait_for(f"kturnd {gw.id} answering STUN",
                    lambda: h.stun_binding_probe((h.LOOPBACK, gw.udp_port())), procs=procs)

    def three(ask):
        a = ask("/ice?service=turn")
        return a.status == 200 and len(a.json()["iceServers"]) == 3
    op.wait_for("both auth services with the three configs",
                lambda: three(ask_stunner) and three(ask_kturn), procs=procs)

    # 3. Every case on both.
    checker.configs = configs
    for case in cases(namespaces):
        checker.run(case, ask_stunner(case.path, case.method), ask_kturn(case.path, case.method))
    # STUNner's / picks one of several Gateways in Go's map order: ask until it has named two
    # (kturn-auth: always the first in id order, checked in each answer).
    picked = set()
    for _ in range(40):
        a = ask_stunner("/?service=turn")
        picked.add(checker.gateway_of(a.json()["uris"]).id)
        if len(picked) > 1:
            break
    print(f"STUNner's GET /?service=turn, asked up to 40 times, answered for {sorted(picked)}")

    # 4. A second pair of services with STUNNER_PUBLIC_ADDR in their environment: the host of
    #    every URI unless the query names one.
    env_stunner_port, env_kturn_port = h.free_port(), h.free_port()
    public_env = {"STUNNER_PUBLIC_ADDR": ENV_PUBLIC}
    procs.append(start("stunner-auth-server-env",
                       ["ip", "netns", "exec", netns, os.path.abspath(args.stunner_auth),
                        "--cds-server-address", h.LOOPBACK, "--cds-server-port",
                        str(ns_cds_port), "--port", str(env_stunner_port), "-l", "all:DEBUG"],
                       public_env))
    procs.append(start("kturn-auth-env", [os.path.abspath(args.kturn_auth), "-c", cds,
                                          "--address", h.LOOPBACK, "--port",
                                          str(env_kturn_port), "-l", "all:DEBUG"], public_env))

    def ask_env_stunner(path: str) -> Answer:
        return http_request(env_stunner_port, path, ns=netns)

    def ask_env_kturn(path: str) -> Answer:
        return http_request(env_kturn_port, path)
    op.wait_for("the services with STUNNER_PUBLIC_ADDR with the three configs",
                lambda: three(ask_env_stunner) and three(ask_env_kturn), procs=procs)
    checker.env_public = ENV_PUBLIC
    note = f"STUNNER_PUBLIC_ADDR={ENV_PUBLIC}"
    t = namespaces["team"]
    for case in (both("service=turn&username=carol", note=note) +
                 both(f"service=turn&public-addr={OVERRIDE}", note=note) +
                 both("service=turn&public-addr=", why="empty-public-addr", note=note) +
                 both(f"service=turn&namespace={t}&gateway=gw-b&listener=dtls", note=note)):
        checker.run(case, ask_env_stunner(case.path), ask_env_kturn(case.path))
    checker.env_public = ""

    # 5. Every Gateway deleted.
    for gw in GATEWAYS:
        scope.kubectl("delete", "gateways.gateway.networking.k8s.io", gw.name, "-n",
                      namespaces[gw.ns])
    op.wait_for("no config over CDS", lambda: cds_configs() == {}, procs=procs)
    op.wait_for("both auth services without a listener",
                lambda: ask_stunner("/ice?service=turn").status != 200 and
                ask_kturn("/ice?service=turn").status != 200, procs=procs)
    checker.configs = {}
    for case in (Case("/?service=turn", 404, kturn=500, why="deleted"),
                 Case("/ice?service=turn", 404, kturn=500, why="deleted")):
        checker.run(case, ask_stunner(case.path), ask_kturn(case.path))

    print(checker.table())
    print("\nDifferences (each documented in docs/auth.md or docs/migration-from-stunner.md):")
    for key, labels in checker.differences.items():
        print(f"  {key}: {DOCUMENTED[key]}\n      {len(labels)} queries, e.g. {labels[0]}")
    for p in procs:
        h.check(p.running(), f"{p.name} exited")
    h.check(not checker.failures, f"{len(checker.failures)} of {len(checker.rows)} queries "
                                  "failed:\n" + "\n".join(checker.failures))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--kturn-auth", required=True, help="kturn-auth binary")
    p.add_argument("--operator", required=True, help="kturn-operator binary")
    p.add_argument("--stunner-auth", required=True,
                   help="STUNner's stunner-auth-server (${KTURN_TEST_TOOLS_DIR}/bin/...)")
    args, _ = p.parse_known_args()
    h.run_test("auth-stunner", body, p, overall_timeout=110)


if __name__ == "__main__":
    main()
