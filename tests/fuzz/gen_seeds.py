#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/.

Run from anywhere: python3 tests/fuzz/gen_seeds.py. Files are named seed-*, so libFuzzer's own
additions (named by their SHA-1) stay apart; re-running overwrites only the seeds.

  stun_message_fuzz  RFC 5769 vectors (read from tests/stun/rfc5769_test.cc) and TURN messages
                     built here: authenticated Allocate/CreatePermission/ChannelBind/Refresh, Send
                     and Data indications, error responses, MESSAGE-INTEGRITY-SHA256.
  channel_data_fuzz  ChannelData frames, padded and not, and a stream of frames and STUN.
  turn_server_fuzz   step programs in the format turn_server_fuzz.cc decodes: full sessions
                     (allocate, permission, channel, relay both ways, refresh, expiry) under each
                     config, and RFC 6062 sessions (TCP allocation, Connect, a peer connecting,
                     ConnectionBind, bytes, caps, closes).
  config_fuzz        the example of docs/config.md and configs shaped like tests/config's.
  cds_message_fuzz   one byte picking the decoder (cds_message_fuzz.cc), then a list document, a
                     config id, an origin, a request target, a string to percent-encode or a
                     pushed config (including the zero config that marks a deletion).
  k8s_manifest_fuzz  each golden case's input manifests (tests/golden/*/input) as one stream.
"""
import base64
import os
import re
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
from harness import stun  # noqa: E402 - the interop tests' STUN codec encodes the seeds too


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


# --- STUN -----------------------------------------------------------------------------------

def rfc5769_vectors():
    text = open(os.path.join(ROOT, "tests", "stun", "rfc5769_test.cc")).read()
    out = {}
    for name, body in re.findall(r"const Bytes (k\w+) = \{(.*?)\};", text, re.S):
        body = re.sub(r"//[^\n]*", "", body)
        out[name] = bytes(int(x, 16) for x in re.findall(r"0x[0-9a-fA-F]{2}", body))
    return out


def stun_seeds():
    for name, data in rfc5769_vectors().items():
        write("stun_message_fuzz", "rfc5769-" + name[1:], data)
    key = stun.long_term_key("user1", "kturn.test", "pass1")
    tx = bytes(range(1, 13))
    udp = bytes([17, 0, 0, 0])
    nonce = b"0123456789abcdef0123456789abcdef"
    peer4, peer6 = ("10.2.0.9", 5000), ("2001:db8:2::5", 7000)

    def msg(method, cls):
        return stun.StunMessage(method, cls, tx)

    def auth(m, fingerprint=True, sha256=False):
        m.add(stun.A_USERNAME, b"user1").add(stun.A_REALM, b"kturn.test").add(stun.A_NONCE, nonce)
        if sha256:
            m.add(stun.A_PASSWORD_ALGORITHM, bytes([0, 2, 0, 0]))
        return m.encode(stun.long_term_key("user1", "kturn.test", "pass1", sha256), fingerprint,
                        sha256)

    write("stun_message_fuzz", "allocate",
          auth(msg(stun.ALLOCATE, stun.REQUEST).add(stun.A_REQUESTED_TRANSPORT, udp)
               .add_u32(stun.A_LIFETIME, 600).add(stun.A_EVEN_PORT, b"\x80")))
    write("stun_message_fuzz", "allocate-sha256",
          auth(msg(stun.ALLOCATE, stun.REQUEST).add(stun.A_REQUESTED_TRANSPORT, udp)
               .add(stun.A_REQUESTED_ADDRESS_FAMILY, bytes([2, 0, 0, 0])),
               fingerprint=False, sha256=True))
    write("stun_message_fuzz", "create-permission",
          auth(msg(stun.CREATE_PERMISSION, stun.REQUEST)
               .add_xor_address(stun.A_XOR_PEER_ADDRESS, peer4)
               .add_xor_address(stun.A_XOR_PEER_ADDRESS, peer6)))
    write("stun_message_fuzz", "channel-bind",
          auth(msg(stun.CHANNEL_BIND, stun.REQUEST)
               .add(stun.A_CHANNEL_NUMBER, bytes([0x40, 0x01, 0, 0]))
               .add_xor_address(stun.A_XOR_PEER_ADDRESS, peer4), fingerprint=False))
    write("stun_message_fuzz", "refresh",
          auth(msg(stun.REFRESH, stun.REQUEST).add(stun.A_LIFETIME, bytes(4))
               .add(stun.A_RESERVATION_TOKEN, bytes(8)), fingerprint=False))
    write("stun_message_fuzz", "send-indication",
          msg(stun.SEND, stun.INDICATION).add_xor_address(stun.A_XOR_PEER_ADDRESS, peer4)
          .add(stun.A_DATA, b"hello").add(stun.A_DONT_FRAGMENT, b"").encode())
    write("stun_message_fuzz", "data-indication",
          msg(stun.DATA, stun.INDICATION).add_xor_address(stun.A_XOR_PEER_ADDRESS, peer6)
          .add(stun.A_DATA, b"payload!").encode(fingerprint=False))
    write("stun_message_fuzz", "error-401",
          msg(stun.ALLOCATE, stun.ERROR)
          .add(stun.A_ERROR_CODE, bytes([0, 0, 4, 1]) + b"Unauthorized")
          .add(stun.A_REALM, b"kturn.test").add(stun.A_NONCE, nonce).add(stun.A_SOFTWARE, b"kturn")
          .encode())
    write("stun_message_fuzz", "error-420",
          msg(stun.BINDING, stun.ERROR)
          .add(stun.A_ERROR_CODE, bytes([0, 0, 4, 20]) + b"Unknown Attribute")
          .add(stun.A_UNKNOWN_ATTRIBUTES, struct.pack(">HHH", 0x7777, 0x0031, 0x0002))
          .encode(fingerprint=False))
    write("stun_message_fuzz", "allocate-success",
          msg(stun.ALLOCATE, stun.SUCCESS)
          .add_xor_address(stun.A_XOR_RELAYED_ADDRESS, ("10.1.0.1", 49152))
          .add_u32(stun.A_LIFETIME, 600).add(stun.A_RESERVATION_TOKEN, struct.pack(">Q", 0xABCD))
          .add_xor_address(stun.A_XOR_MAPPED_ADDRESS, ("192.0.2.10", 40000))
          .add(stun.A_MAPPED_ADDRESS, bytes([0, 1, 0x9c, 0x40, 192, 0, 2, 10]))
          .add(stun.A_ADDRESS_ERROR_CODE, bytes([2, 0, 4, 40]) + b"Address Family not Supported")
          .encode(key))
    write("stun_message_fuzz", "password-algorithms",
          msg(stun.BINDING, stun.REQUEST)
          .add(stun.A_PASSWORD_ALGORITHMS, struct.pack(">HHHH", 1, 0, 2, 0))
          .add(stun.A_PASSWORD_ALGORITHM, struct.pack(">HH", 2, 4) + b"abcd")
          .add(stun.A_USERHASH, bytes(32)).add(stun.A_ICE_CONTROLLED, bytes(8))
          .add(stun.A_PRIORITY, bytes(4)).add(stun.A_USE_CANDIDATE, b"").encode(fingerprint=False))


def binding():
    """A Binding request with an all-zero transaction id and no attribute but FINGERPRINT."""
    return stun.StunMessage(stun.BINDING, stun.REQUEST, bytes(12)).encode()


# --- ChannelData ----------------------------------------------------------------------------

def channel_seeds():
    def cd(ch, payload, pad=False):
        out = struct.pack(">HH", ch, len(payload)) + payload
        return out + b"\0" * (-len(out) % 4) if pad else out

    write("channel_data_fuzz", "min-channel", cd(0x4000, b"hello"))
    write("channel_data_fuzz", "max-channel-padded", cd(0x7FFF, b"abcde", pad=True))
    write("channel_data_fuzz", "rfc8656-range-end", cd(0x4FFF, bytes(64)))
    write("channel_data_fuzz", "empty", cd(0x4001, b""))
    write("channel_data_fuzz", "stream",
          cd(0x4001, b"one", True) + cd(0x4002, b"four", True)
          + binding() + cd(0x4003, b"x" * 9, True))
    write("channel_data_fuzz", "length-beyond", struct.pack(">HH", 0x4000, 100) + b"short")


# --- turn_server_fuzz programs --------------------------------------------------------------
# The byte format is turn_server_fuzz.cc's; the helpers name its fields.

ALLOCATE, CREATE_PERMISSION, CHANNEL_BIND, REFRESH, BINDING, CONNECTION_BIND = 0, 2, 3, 4, 5, 6
CONNECT = 8
PEER_ROUTED, PEER_ROUTED_2, PEER_RANGE, PEER_RANGE_BAD_PORT, PEER_DENIED = 0, 1, 2, 3, 4
PEER_V6, PEER_V6_DENIED = 6, 7
# RFC 6062 on the TURN-TCP listener, where 10.2.0.0/16 (PEER_ROUTED, PEER_ROUTED_2) is a TCP
# cluster; PEER_ROUTED_2's port 6000 refuses connections.
CONTROL, DATA = 3, 4


def u16(v):
    return struct.pack(">H", v)


def req(client, method, flags=0, defaults=b"", attrs=()):
    """A request step: defaults are the bytes addDefaults() reads, attrs addAttribute()'s."""
    return bytes([2, client, method, flags]) + defaults + bytes([len(attrs)]) + b"".join(attrs)


def a_lifetime(sel):
    return bytes([1, sel])


def a_peer(p):
    return bytes([2, p])


def a_channel(sel):
    return bytes([3, sel])


def a_even_port(v):
    return bytes([4, v])


def a_token():
    return bytes([5, 0])


def a_family(f, additional=False):
    return bytes([6, f, 1 if additional else 0])


def a_dont_fragment():
    return bytes([8])


def a_raw(t, v):
    return bytes([10]) + u16(t) + bytes([len(v)]) + v


def allocate(client, attrs=(), flags=0, tcp=None):
    # The first try draws 438 (empty nonce) and teaches the client its nonce; the second succeeds.
    # From a TCP client (CONTROL, DATA) the defaults ask for a TCP relay or a UDP one.
    defaults = b"" if tcp is None else bytes([1 if tcp else 0])
    return req(client, ALLOCATE, flags, defaults, attrs) * 2


def connect(client, peer, flags=0):
    return req(client, CONNECT, flags, bytes([peer]))


def connection_bind(client, sel, flags=0, twice=True):
    # sel picks one of the connections the server offered (in id order); the first try from a new
    # data connection draws 438 and teaches it the nonce.
    return req(client, CONNECTION_BIND, flags, bytes([sel])) * (2 if twice else 1)


def connect_outcome(sel, up):
    return bytes([15, 0, sel, 1 if up else 0])


def peer_connects(alloc, peer):
    return bytes([15, 1, alloc, peer])


def connection_closes(sel):
    return bytes([15, 2, sel])


def relay_bytes(sel, to_peer, to_client, count_now=True):
    return bytes([15, 3, sel]) + u16(to_peer) + u16(to_client) + bytes([1 if count_now else 0])


def allowance(alloc, to_peer):
    return bytes([15, 4, alloc, 1 if to_peer else 0])


def control_closes():
    return bytes([15, 5, 0])


def create_permission(client, peer, flags=0):
    return req(client, CREATE_PERMISSION, flags, bytes([peer]))


def channel_bind(client, channel, peer, flags=0):
    return req(client, CHANNEL_BIND, flags, bytes([channel, peer]))


def refresh(client, lifetime_sel, flags=0):
    return req(client, REFRESH, flags, b"", [a_lifetime(lifetime_sel)])


def channel_data(client, channel, payload, pad=0):
    return bytes([8, client, channel]) + u16(len(payload)) + payload + bytes([pad])


def send_indication(client, peer, payload, flags=0):
    return bytes([10, client, flags, peer]) + u16(len(payload)) + payload


def from_peer(alloc, peer, payload, layout=0):
    return bytes([11, alloc, peer, layout]) + u16(len(payload)) + payload


def tick(seconds_sel, flags=0, ms=None):
    return bytes([13, seconds_sel, flags]) + (bytes([ms]) if ms is not None else b"")


def apply_config(i):
    return bytes([14, i])


def raw(client, data):
    return bytes([0, client]) + u16(len(data)) + data


def turn_seeds():
    w = lambda name, *steps: write("turn_server_fuzz", name, b"".join(steps))
    w("static-session",
      allocate(0, [a_lifetime(3)]),
      create_permission(0, PEER_ROUTED), create_permission(0, PEER_RANGE),
      channel_bind(0, 0, PEER_ROUTED),
      send_indication(0, PEER_ROUTED, b"to peer by Send"),
      send_indication(0, PEER_RANGE, b"to ranged peer"),
      channel_data(0, 0, b"to peer by channel", 2),
      from_peer(0, PEER_ROUTED, b"back by channel"),
      from_peer(0, PEER_RANGE, b"back by Data indication", 3),
      from_peer(0, PEER_RANGE_BAD_PORT, b"dropped: port outside the range"),
      from_peer(0, PEER_DENIED, b"dropped: no permission"),
      tick(5), req(0, BINDING, 0x08), refresh(0, 3), refresh(0, 0))
    w("ephemeral-expiry",
      apply_config(1), allocate(0), allocate(1), allocate(2, [a_family(150)]),
      create_permission(0, PEER_ROUTED_2), channel_bind(0, 1, PEER_ROUTED_2),
      from_peer(0, PEER_ROUTED_2, b"x" * 40), tick(15), tick(15), tick(12),
      channel_data(0, 1, b"after permission expiry"), tick(210), from_peer(0, PEER_ROUTED_2, b"y"))
    w("ipv6-client",
      allocate(2, [a_family(150)]), create_permission(2, PEER_V6),
      create_permission(2, PEER_V6_DENIED), create_permission(2, PEER_ROUTED),
      send_indication(2, PEER_V6, b"v6 payload"), from_peer(0, PEER_V6, b"v6 back"),
      channel_bind(2, 2, PEER_V6), from_peer(0, PEER_V6, b"v6 back by channel"),
      channel_data(2, 2, b"v6 by channel"))
    w("config-swap",
      allocate(0), allocate(1), create_permission(0, PEER_ROUTED_2),
      channel_bind(0, 0, PEER_ROUTED_2), channel_bind(1, 1, PEER_ROUTED),
      apply_config(2), channel_data(0, 0, b"withdrawn route"), channel_data(1, 1, b"still routed"),
      from_peer(0, PEER_ROUTED_2, b"withdrawn"), from_peer(1, PEER_ROUTED, b"still routed"),
      apply_config(3), req(0, REFRESH), req(0, BINDING), apply_config(0),
      channel_data(0, 0, b"routed again"))
    w("even-port-reservation",
      allocate(0, [a_even_port(0x80), a_dont_fragment()]),
      allocate(1, [a_token()]), allocate(2, [a_token(), a_even_port(0)]),
      req(0, ALLOCATE, 0x20), req(0, ALLOCATE), tick(200, 0))
    w("errors",
      req(0, CREATE_PERMISSION, 0x02, bytes([0])),
      req(0, ALLOCATE, 0x01), req(0, ALLOCATE, 0x10),
      req(0, ALLOCATE, 0x40), req(0, CONNECTION_BIND, 0, bytes([0]) + bytes(4)), req(0, 7),
      req(0, ALLOCATE, 0, b"", [a_raw(0x7777, b"??"), a_raw(0x0019, bytes([6, 0, 0, 0]))]),
      allocate(0, [a_family(150, True)]),
      req(0, CHANNEL_BIND, 0, bytes([0, PEER_DENIED])),
      req(0, CHANNEL_BIND, 0, bytes([0, PEER_V6])),
      req(0, ALLOCATE, 0x80, b"", []) + u16(30) + bytes([0x40]),
      req(0, REFRESH, 0x04 | 0x01), req(0, ALLOCATE, 0x0C))
    w("raw-datagrams",
      raw(0, binding()),
      raw(1, stun.StunMessage(stun.ALLOCATE, stun.REQUEST, bytes(12))
          .add(stun.A_REQUESTED_TRANSPORT, bytes([17, 0, 0, 0])).encode(fingerprint=False)),
      raw(0, stun.StunMessage(stun.ALLOCATE, stun.REQUEST, bytes(12)).encode(fingerprint=False)[:-1]
          + b"\x01"),
      raw(2, bytes([0x40, 0x00, 0x00, 0x10]) + b"short"),
      raw(0, bytes([0x17, 0xFE, 0xFD]) + bytes(10)),
      raw(0, rfc5769_vectors()["kSampleRequest"]))
    w("peer-buffer-layouts",
      allocate(0), create_permission(0, PEER_ROUTED),
      from_peer(0, PEER_ROUTED, b"a", 0x07), from_peer(0, PEER_ROUTED, b"ab", 0x18),
      from_peer(0, PEER_ROUTED, b"abc", 0xFF), from_peer(0, PEER_ROUTED, b"abcd", 0xFE),
      from_peer(0, PEER_ROUTED, b""), from_peer(250, PEER_ROUTED, b"unknown allocation"))
    w("clock-between-ticks",
      allocate(0, [a_lifetime(2)]), create_permission(0, PEER_ROUTED),
      tick(3, 3, 200), tick(9, 3, 250), create_permission(0, PEER_ROUTED),
      tick(0, 1, 100), from_peer(0, PEER_ROUTED, b"late"), tick(255, 1, 255), tick(255),
      allocate(0))
    w("rfc6062-connect",
      allocate(CONTROL, tcp=True), create_permission(CONTROL, PEER_ROUTED),
      connect(CONTROL, PEER_ROUTED), connect(CONTROL, PEER_ROUTED),  # the second: 446
      connect_outcome(0, True), connection_bind(DATA, 0),
      relay_bytes(0, 1000, 2000), relay_bytes(0, 5, 6, count_now=False), connection_closes(0),
      connect(CONTROL, PEER_ROUTED_2),  # refused at once: 447
      connect(CONTROL, PEER_RANGE),     # not a TCP cluster: 403
      connect(CONTROL, PEER_DENIED), connect(CONTROL, PEER_ROUTED), connect_outcome(0, False),
      connect(CONTROL, PEER_ROUTED), connect_outcome(0, True),
      tick(15), tick(15), tick(3),  # never bound: closed after 30 s
      control_closes(), connect(CONTROL, PEER_ROUTED))
    w("rfc6062-accept",
      allocate(CONTROL, tcp=True), peer_connects(0, PEER_ROUTED),  # no permission yet
      create_permission(CONTROL, PEER_ROUTED), create_permission(CONTROL, PEER_RANGE),
      peer_connects(0, PEER_ROUTED), peer_connects(0, PEER_RANGE),  # the second: not TCP
      connection_bind(DATA, 0), connection_bind(DATA, 0, twice=False),  # bound: now 400
      relay_bytes(0, 300, 400, count_now=False), refresh(CONTROL, 0),
      allocate(CONTROL, tcp=False), peer_connects(0, PEER_ROUTED), connect(CONTROL, PEER_ROUTED),
      allocate(0), connect(0, PEER_ROUTED), req(0, CONNECTION_BIND, 0, bytes([0]) + bytes(4)))
    w("rfc6062-caps",
      apply_config(1), allocate(CONTROL, tcp=True), create_permission(CONTROL, PEER_ROUTED),
      allowance(0, True), allowance(0, False), allowance(0, True), tick(0, 3, 100),
      allowance(0, True), connect(CONTROL, PEER_ROUTED), connect_outcome(0, True),
      connection_bind(DATA, 0), relay_bytes(0, 65535, 65535), allowance(250, True),
      apply_config(2), connect(CONTROL, PEER_ROUTED_2), apply_config(0), allowance(0, False))


# --- config_fuzz ----------------------------------------------------------------------------

def config_seeds():
    doc = open(os.path.join(ROOT, "docs", "config.md")).read()
    blocks = re.findall(r"```(yaml|json)\n(.*?)```", doc, re.S)
    for i, (_, text) in enumerate(blocks):
        write("config_fuzz", f"docs-config-{i}.yaml", text)
        # The same with real base64 for the TLS material, so it validates.
        write("config_fuzz", f"docs-config-{i}-valid.yaml",
              text.replace("LS0tLS1CRUdJTi...", base64.b64encode(b"-----BEGIN X-----\n").decode()))
    cert = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    key = base64.b64encode(b"-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n")
    write("config_fuzz", "stunnerd-readme.yaml", f"""version: v1
admin:
  name: my-stunnerd
  logLevel: all:DEBUG
  realm: "my-realm.example.com"
auth:
  type: ephemeral
  credentials:
    secret: $STUNNER_SHARED_SECRET
listeners:
  - name: stunnerd-udp
    address: "$STUNNER_ADDR"
    protocol: turn-udp
    port: 3478
    routes:
      - default/media-plane
  - name: stunnerd-dtls
    address: "${{STUNNER_ADDR}}"
    protocol: turn-dtls
    port: $STUNNER_PORT
    cert: "{cert.decode()}"
    key: "{key.decode()}"
    routes:
      - default/media-plane
clusters:
  - name: default/media-plane
    protocol: UDP
    type: STATIC
    endpoints:
      - 127.0.0.1
      - 10.0.0.0/8:<1000-2000>
""")
    write("config_fuzz", "operator.json", """{
  "version": "v1",
  "admin": {"name": "stunner-daemon", "loglevel": "all:INFO",
            "healthcheck_endpoint": "http://:8086", "metrics_endpoint": ""},
  "auth": {"type": "static", "realm": "stunner.l7mp.io",
           "credentials": {"password": "pass-1", "username": "user-1"}},
  "listeners": [
    {"name": "stunner/udp-gateway/udp-listener", "protocol": "TURN-UDP",
     "public_address": "35.205.10.190", "public_port": 3478, "address": "127.0.0.1",
     "port": 3478, "min_relay_port": 10000, "max_relay_port": 20000,
     "routes": ["stunner/iperf-server", "stunner/dns"]},
    {"name": "stunner/tcp-gateway/tcp-listener", "protocol": "TURN-TCP",
     "address": "127.0.0.1", "port": 3478, "routes": ["stunner/iperf-server"]}
  ],
  "clusters": [
    {"name": "stunner/iperf-server", "type": "STATIC", "protocol": "UDP",
     "endpoints": ["0.0.0.0/0", "::/0", "fd00::1:<1-65535>"]},
    {"name": "stunner/dns", "type": "STRICT_DNS", "protocol": "udp",
     "endpoints": ["media.default.svc.cluster.local"]}
  ]
}
""")
    write("config_fuzz", "minimal.yaml", """version: v1
auth:
  credentials:
    username: user
    password: pass
""")
    write("config_fuzz", "legacy-aliases.yaml", """version: v1
admin: {name: legacy, loglevel: "all:WARN,turn:DEBUG", offload_engine: none}
auth:
  type: longterm
  credentials: {secret: "p$ss$$word"}
listeners:
  - {name: l1, protocol: udp, port: 3478, routes: [c1]}
  - {name: l2, protocol: TURN-TCP, port: 3479, routes: [c1, missing]}
clusters:
  - {name: c1, type: static, endpoints: ["192.168.0.1/32:<5000-5010>", "fd00::/8"]}
""")


# --- cds_message_fuzz -----------------------------------------------------------------------

def cds_seeds():
    config = ('{"version":"v1","admin":{"name":"stunner/udp-gateway","loglevel":"all:INFO"},'
              '"auth":{"type":"ephemeral","realm":"stunner.l7mp.io",'
              '"credentials":{"secret":"s3cret"}},'
              '"listeners":[{"name":"stunner/udp-gateway/udp-listener","protocol":"TURN-UDP",'
              '"address":"$STUNNER_ADDR","port":3478,"routes":["stunner/media"]}],'
              '"clusters":[{"name":"stunner/media","type":"STATIC","protocol":"UDP",'
              '"endpoints":["10.0.0.0/8","fd00::/8"]}]}')
    zero = ('{"version":"v1","admin":{"name":"stunner/udp-gateway"},"auth":{"type":"static",'
            '"credentials":{"username":"dummy-username","password":"dummy-password"}},'
            '"listeners":[],"clusters":[]}')
    seeds = [
        (0, "list-empty", '{"version":"v1","items":[]}'),
        (0, "list-one", '{"version":"v1","items":[' + config + "]}"),
        (0, "list-two", '{"version":"v1","items":[' + config + "," + zero + "]}"),
        (1, "id", "stunner/udp-gateway"),
        (1, "id-escaped", "name space/gate%way"),
        (2, "origin-http", "http://10.0.0.1:13478"),
        (2, "origin-wss", "WSS://[fd00::1]:443/api/v1/configs"),
        (2, "origin-bare", ":13478"),
        (3, "target-config", "/api/v1/configs/stunner/udp-gateway?watch=true&node=node-1"),
        (3, "target-namespace", "/api/v1/configs/stunner"),
        (3, "target-all", "/api/v1/configs?watch=T"),
        (3, "target-escaped", "/api/v1/configs/a%2Fb/c%20d?watch=maybe"),
        (3, "target-license", "/api/v1/license"),
        (4, "percent", "stunner/udp gateway+%zz\x00\xff"),
        (5, "pushed", config),
        (5, "pushed-zero", zero),
    ]
    for selector, name, text in seeds:
        write("cds_message_fuzz", name, bytes([selector]) + text.encode())


# --- k8s_manifest_fuzz ----------------------------------------------------------------------

def k8s_seeds():
    golden = os.path.join(ROOT, "tests", "golden")
    for case in sorted(os.listdir(golden)):
        inputs = os.path.join(golden, case, "input")
        if not os.path.isdir(inputs):
            continue
        docs = [open(os.path.join(inputs, f)).read() for f in sorted(os.listdir(inputs))
                if f.endswith((".yaml", ".yml", ".json"))]
        write("k8s_manifest_fuzz", case + ".yaml", "\n---\n".join(docs))


if __name__ == "__main__":
    stun_seeds()
    channel_seeds()
    turn_seeds()
    config_seeds()
    cds_seeds()
    k8s_seeds()
