"""Interop test harness for kturnd (and coturn as a stand-in server).

Stdlib only (the aioice test imports aioice itself). Run the scripts with /usr/bin/python3.

Pieces:
  * a small STUN/TURN codec and a synchronous UDP TURN client (long-term credentials,
    MESSAGE-INTEGRITY, FINGERPRINT) used by the readiness probe and the peer-refused test;
  * KturndServer / CoturnServer: context managers that start a server on loopback with the
    same settings, wait until it answers a STUN Binding request, and kill its whole process
    group at the end; logs go to files that are printed when a test fails;
  * Helper processes (turnutils_peer, turnutils_uclient) run through the same machinery;
  * run_test(): the common main() wrapper (argument parsing, temp dir, exit code, log dump).

Network safety: every address used here is 127.0.0.1 (or 127.0.0.2 for the refused peer);
every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import ctypes
import hashlib
import hmac
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from contextlib import contextmanager
from typing import Callable, List, Optional, Sequence, Tuple

LOOPBACK = "127.0.0.1"
LOOPBACK6 = "::1"


def family_of(host: str) -> int:
    """AF_INET6 for an IPv6 literal, AF_INET otherwise."""
    return socket.AF_INET6 if ":" in host else socket.AF_INET
REALM = "kturn.test"
STATIC_USER = "user1"
STATIC_PASS = "pass1"
REST_SECRET = "kturn-interop-secret"
RESERVED_PORTS = {3478, 3479, 5349, 5350, 8080, 8086, 13478}


class TestFailure(Exception):
    """A check failed; the message says what was expected and what was seen."""


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise TestFailure(msg)


# ---------------------------------------------------------------------------------------------
# STUN / TURN codec (RFC 8489, RFC 8656)
# ---------------------------------------------------------------------------------------------

MAGIC_COOKIE = 0x2112A442
FINGERPRINT_XOR = 0x5354554E

# methods
BINDING, ALLOCATE, REFRESH, SEND, DATA, CREATE_PERMISSION, CHANNEL_BIND = 1, 3, 4, 6, 7, 8, 9
# classes
REQUEST, INDICATION, SUCCESS, ERROR = 0x000, 0x010, 0x100, 0x110

# attributes
A_MAPPED_ADDRESS = 0x0001
A_USERNAME = 0x0006
A_MESSAGE_INTEGRITY = 0x0008
A_ERROR_CODE = 0x0009
A_UNKNOWN_ATTRIBUTES = 0x000A
A_CHANNEL_NUMBER = 0x000C
A_LIFETIME = 0x000D
A_XOR_PEER_ADDRESS = 0x0012
A_DATA = 0x0013
A_REALM = 0x0014
A_NONCE = 0x0015
A_XOR_RELAYED_ADDRESS = 0x0016
A_REQUESTED_ADDRESS_FAMILY = 0x0017
A_EVEN_PORT = 0x0018
A_REQUESTED_TRANSPORT = 0x0019
A_DONT_FRAGMENT = 0x001A
A_MESSAGE_INTEGRITY_SHA256 = 0x001C
A_PASSWORD_ALGORITHM = 0x001D
A_USERHASH = 0x001E
A_XOR_MAPPED_ADDRESS = 0x0020
A_RESERVATION_TOKEN = 0x0022
A_PRIORITY = 0x0024
A_USE_CANDIDATE = 0x0025
A_PADDING = 0x0026
A_RESPONSE_PORT = 0x0027
A_CONNECTION_ID = 0x002A
A_ADDITIONAL_ADDRESS_FAMILY = 0x8000
A_ADDRESS_ERROR_CODE = 0x8001
A_PASSWORD_ALGORITHMS = 0x8002
A_ALTERNATE_DOMAIN = 0x8003
A_ICMP = 0x8004
A_SOFTWARE = 0x8022
A_ALTERNATE_SERVER = 0x8023
A_FINGERPRINT = 0x8028
A_ICE_CONTROLLED = 0x8029
A_ICE_CONTROLLING = 0x802A
A_RESPONSE_ORIGIN = 0x802B
A_OTHER_ADDRESS = 0x802C
A_ORIGIN = 0x802F
A_BANDWIDTH = 0x0010  # RFC 5766 draft, coturn still knows it
A_THIRD_PARTY_AUTHORIZATION = 0x802E
A_OAUTH_ACCESS_TOKEN = 0x0031

ATTR_NAMES = {v: k[2:].replace("_", "-") for k, v in globals().items()
              if k.startswith("A_") and isinstance(v, int)}
METHOD_NAMES = {BINDING: "Binding", ALLOCATE: "Allocate", REFRESH: "Refresh", SEND: "Send",
                DATA: "Data", CREATE_PERMISSION: "CreatePermission",
                CHANNEL_BIND: "ChannelBind", 0x00A: "Connect", 0x00B: "ConnectionBind",
                0x00C: "ConnectionAttempt"}
CLASS_NAMES = {REQUEST: "request", INDICATION: "indication", SUCCESS: "success",
               ERROR: "error"}


def _encode_type(method: int, cls: int) -> int:
    return ((method & 0xF80) << 2) | ((method & 0x070) << 1) | (method & 0x00F) | cls


def _decode_type(t: int) -> Tuple[int, int]:
    method = ((t & 0x3E00) >> 2) | ((t & 0x00E0) >> 1) | (t & 0x000F)
    return method, t & 0x0110


def _pad4(n: int) -> int:
    return (4 - n % 4) % 4


def long_term_key(username: str, realm: str, password: str) -> bytes:
    return hashlib.md5(f"{username}:{realm}:{password}".encode()).digest()


def rest_credentials(secret: str, user_id: str, ttl: int = 3600,
                     separator: str = ":") -> Tuple[str, str]:
    """TURN REST API credential: ("<expiry-unix>:<user-id>", base64(HMAC-SHA1(secret, user)))."""
    username = f"{int(time.time()) + ttl}{separator}{user_id}"
    digest = hmac.new(secret.encode(), username.encode(), hashlib.sha1).digest()
    return username, base64.b64encode(digest).decode()


def pack_xor_address(addr: Tuple[str, int], tid: bytes) -> bytes:
    host, port = addr[0], addr[1]
    xport = port ^ (MAGIC_COOKIE >> 16)
    if ":" in host:
        raw = socket.inet_pton(socket.AF_INET6, host)
        key = struct.pack("!I", MAGIC_COOKIE) + tid
        return struct.pack("!BBH", 0, 2, xport) + bytes(a ^ b for a, b in zip(raw, key))
    raw = socket.inet_pton(socket.AF_INET, host)
    key = struct.pack("!I", MAGIC_COOKIE)
    return struct.pack("!BBH", 0, 1, xport) + bytes(a ^ b for a, b in zip(raw, key))


def unpack_xor_address(value: bytes, tid: bytes) -> Tuple[str, int]:
    _, family, xport = struct.unpack("!BBH", value[:4])
    port = xport ^ (MAGIC_COOKIE >> 16)
    if family == 2:
        key = struct.pack("!I", MAGIC_COOKIE) + tid
        raw = bytes(a ^ b for a, b in zip(value[4:20], key))
        return socket.inet_ntop(socket.AF_INET6, raw), port
    key = struct.pack("!I", MAGIC_COOKIE)
    raw = bytes(a ^ b for a, b in zip(value[4:8], key))
    return socket.inet_ntop(socket.AF_INET, raw), port


def unpack_address(value: bytes) -> Tuple[str, int]:
    _, family, port = struct.unpack("!BBH", value[:4])
    if family == 2:
        return socket.inet_ntop(socket.AF_INET6, value[4:20]), port
    return socket.inet_ntop(socket.AF_INET, value[4:8]), port


class StunMessage:
    """A STUN message: method, class, transaction id and an ordered list of raw attributes."""

    def __init__(self, method: int, cls: int, tid: Optional[bytes] = None,
                 attrs: Optional[List[Tuple[int, bytes]]] = None):
        self.method = method
        self.cls = cls
        self.tid = tid if tid is not None else os.urandom(12)
        self.attrs: List[Tuple[int, bytes]] = list(attrs or [])
        self.raw = b""  # the bytes it was decoded from

    # -- building
    def add(self, atype: int, value: bytes) -> "StunMessage":
        self.attrs.append((atype, value))
        return self

    def add_str(self, atype: int, value: str) -> "StunMessage":
        return self.add(atype, value.encode())

    def add_u32(self, atype: int, value: int) -> "StunMessage":
        return self.add(atype, struct.pack("!I", value))

    def add_xor_address(self, atype: int, addr: Tuple[str, int]) -> "StunMessage":
        return self.add(atype, pack_xor_address(addr, self.tid))

    def _header(self, body_len: int) -> bytes:
        return struct.pack("!HHI", _encode_type(self.method, self.cls), body_len,
                           MAGIC_COOKIE) + self.tid

    @staticmethod
    def _attr_bytes(atype: int, value: bytes) -> bytes:
        return struct.pack("!HH", atype, len(value)) + value + b"\x00" * _pad4(len(value))

    def encode(self, key: Optional[bytes] = None, fingerprint: bool = True) -> bytes:
        body = b"".join(self._attr_bytes(t, v) for t, v in self.attrs
                        if t not in (A_MESSAGE_INTEGRITY, A_FINGERPRINT))
        if key is not None:
            mac = hmac.new(key, self._header(len(body) + 24) + body, hashlib.sha1).digest()
            body += self._attr_bytes(A_MESSAGE_INTEGRITY, mac)
        if fingerprint:
            crc = binascii.crc32(self._header(len(body) + 8) + body) ^ FINGERPRINT_XOR
            body += self._attr_bytes(A_FINGERPRINT, struct.pack("!I", crc & 0xFFFFFFFF))
        return self._header(len(body)) + body

    # -- parsing
    @classmethod
    def decode(cls, data: bytes) -> Optional["StunMessage"]:
        """Returns None if data is not a well-formed STUN message."""
        if len(data) < 20 or data[0] & 0xC0:
            return None
        t, length, cookie = struct.unpack("!HHI", data[:8])
        if cookie != MAGIC_COOKIE or length % 4 or len(data) < 20 + length:
            return None
        method, klass = _decode_type(t)
        msg = cls(method, klass, data[8:20])
        msg.raw = data[:20 + length]
        off = 20
        while off + 4 <= 20 + length:
            atype, alen = struct.unpack("!HH", data[off:off + 4])
            if off + 4 + alen > 20 + length:
                return None
            msg.attrs.append((atype, data[off + 4:off + 4 + alen]))
            off += 4 + alen + _pad4(alen)
        return msg

    def get(self, atype: int) -> Optional[bytes]:
        for t, v in self.attrs:
            if t == atype:
                return v
        return None

    def has(self, atype: int) -> bool:
        return self.get(atype) is not None

    def get_str(self, atype: int) -> Optional[str]:
        v = self.get(atype)
        return None if v is None else v.decode(errors="replace")

    def get_u32(self, atype: int) -> Optional[int]:
        v = self.get(atype)
        return None if v is None or len(v) < 4 else struct.unpack("!I", v[:4])[0]

    def get_xor_address(self, atype: int) -> Optional[Tuple[str, int]]:
        v = self.get(atype)
        return None if v is None else unpack_xor_address(v, self.tid)

    def error_code(self) -> Optional[Tuple[int, str]]:
        v = self.get(A_ERROR_CODE)
        if v is None or len(v) < 4:
            return None
        return (v[2] & 0x07) * 100 + v[3], v[4:].decode(errors="replace")

    def check_integrity(self, key: bytes) -> bool:
        """Verifies MESSAGE-INTEGRITY (HMAC-SHA1) of a decoded message."""
        off = 20
        end = len(self.raw)
        while off + 4 <= end:
            atype, alen = struct.unpack("!HH", self.raw[off:off + 4])
            if atype == A_MESSAGE_INTEGRITY:
                hdr = bytearray(self.raw[:20])
                struct.pack_into("!H", hdr, 2, off - 20 + 24)
                mac = hmac.new(key, bytes(hdr) + self.raw[20:off], hashlib.sha1).digest()
                return hmac.compare_digest(mac, self.raw[off + 4:off + 24])
            off += 4 + alen + _pad4(alen)
        return False

    def check_fingerprint(self) -> Optional[bool]:
        """True/False if a FINGERPRINT is present and (in)valid, None if absent."""
        if len(self.raw) < 28:
            return None
        atype, alen = struct.unpack("!HH", self.raw[-8:-4])
        if atype != A_FINGERPRINT or alen != 4:
            return None
        crc = binascii.crc32(self.raw[:-8]) ^ FINGERPRINT_XOR
        return struct.unpack("!I", self.raw[-4:])[0] == crc & 0xFFFFFFFF

    def describe(self) -> str:
        name = METHOD_NAMES.get(self.method, hex(self.method))
        parts = []
        for t, v in self.attrs:
            n = ATTR_NAMES.get(t, f"0x{t:04X}")
            if t == A_ERROR_CODE:
                n += f"={self.error_code()}"
            elif t in (A_USERNAME, A_REALM, A_SOFTWARE):
                n += f"={v.decode(errors='replace')!r}"
            elif t in (A_LIFETIME, A_REQUESTED_TRANSPORT) and len(v) == 4:
                n += f"={struct.unpack('!I', v)[0] if t == A_LIFETIME else v[0]}"
            elif t == A_EVEN_PORT and v:
                n += f"(R={v[0] >> 7})"
            elif t in (A_XOR_PEER_ADDRESS, A_XOR_RELAYED_ADDRESS, A_XOR_MAPPED_ADDRESS):
                a = unpack_xor_address(v, self.tid)
                n += f"={a[0]}:{a[1]}"
            parts.append(n)
        return f"{name} {CLASS_NAMES[self.cls]} [{', '.join(parts)}]"


def is_channel_data(data: bytes) -> bool:
    return len(data) >= 4 and 0x40 <= data[0] <= 0x4F


# ---------------------------------------------------------------------------------------------
# Synchronous UDP TURN client (enough for negative tests; not meant to be fast)
# ---------------------------------------------------------------------------------------------


class TurnClient:
    """A blocking TURN-over-UDP client with long-term credentials.

    Every request is retransmitted at most `tries` times (RTO doubling from `rto`), so each
    transaction is bounded in time. Non-response traffic (Data indications, ChannelData) that
    arrives while waiting is kept in self.received.
    """

    def __init__(self, server: Tuple[str, int], username: str, password: str,
                 local_host: str = LOOPBACK, rto: float = 0.25, tries: int = 5,
                 software: Optional[str] = "kturn-interop"):
        self.server = server
        self.username = username
        self.password = password
        self.realm: Optional[str] = None
        self.nonce: Optional[bytes] = None
        self.key: Optional[bytes] = None
        self.rto = rto
        self.tries = tries
        self.software = software
        self.received: List[bytes] = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((local_host, 0))
        self.relayed: Optional[Tuple[str, int]] = None
        self.mapped: Optional[Tuple[str, int]] = None

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "TurnClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _transact(self, msg: StunMessage, key: Optional[bytes]) -> StunMessage:
        data = msg.encode(key=key)
        rto = self.rto
        for _ in range(self.tries):
            self.sock.sendto(data, self.server)
            deadline = time.monotonic() + rto
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.sock.settimeout(left)
                try:
                    pkt, _ = self.sock.recvfrom(65535)
                except socket.timeout:
                    break
                resp = StunMessage.decode(pkt)
                if resp is not None and resp.tid == msg.tid and resp.cls in (SUCCESS, ERROR):
                    return resp
                self.received.append(pkt)
            rto *= 2
        raise TestFailure(f"no response from {self.server[0]}:{self.server[1]} to "
                          f"{METHOD_NAMES.get(msg.method)} after {self.tries} tries")

    def request(self, method: int, build: Callable[[StunMessage], None]) -> StunMessage:
        """Sends an authenticated request; handles 401 (first contact) and 438 (stale nonce)."""
        for _ in range(3):
            msg = StunMessage(method, REQUEST)
            build(msg)
            if self.software:
                msg.add_str(A_SOFTWARE, self.software)
            if self.key is not None:
                msg.add_str(A_USERNAME, self.username)
                msg.add_str(A_REALM, self.realm or "")
                msg.add(A_NONCE, self.nonce or b"")
            resp = self._transact(msg, self.key)
            if resp.cls == SUCCESS:
                if self.key is not None:
                    check(resp.check_integrity(self.key),
                          f"{resp.describe()}: MESSAGE-INTEGRITY of the response does not "
                          f"verify with the long-term key")
                return resp
            code = (resp.error_code() or (0, ""))[0]
            if code == 401 and self.key is None and resp.has(A_NONCE) and resp.has(A_REALM):
                self.realm = resp.get_str(A_REALM)
                self.nonce = resp.get(A_NONCE)
                self.key = long_term_key(self.username, self.realm or "", self.password)
                continue
            if code == 438 and resp.has(A_NONCE):
                self.nonce = resp.get(A_NONCE)
                if resp.has(A_REALM):
                    self.realm = resp.get_str(A_REALM)
                continue
            return resp
        raise TestFailure(f"{METHOD_NAMES.get(method)}: authentication loop (401/438) did "
                          f"not settle in 3 rounds")

    def allocate(self, lifetime: int = 600) -> Tuple[str, int]:
        def build(m: StunMessage) -> None:
            m.add(A_REQUESTED_TRANSPORT, bytes([17, 0, 0, 0]))
            m.add_u32(A_LIFETIME, lifetime)
        resp = self.request(ALLOCATE, build)
        check(resp.cls == SUCCESS, f"Allocate failed: {resp.describe()}")
        relayed = resp.get_xor_address(A_XOR_RELAYED_ADDRESS)
        check(relayed is not None, f"Allocate success without XOR-RELAYED-ADDRESS: "
                                   f"{resp.describe()}")
        self.relayed = relayed
        self.mapped = resp.get_xor_address(A_XOR_MAPPED_ADDRESS)
        return relayed  # type: ignore[return-value]

    def create_permission(self, *peers: Tuple[str, int]) -> StunMessage:
        def build(m: StunMessage) -> None:
            for p in peers:
                m.add_xor_address(A_XOR_PEER_ADDRESS, p)
        return self.request(CREATE_PERMISSION, build)

    def channel_bind(self, channel: int, peer: Tuple[str, int]) -> StunMessage:
        def build(m: StunMessage) -> None:
            m.add(A_CHANNEL_NUMBER, struct.pack("!HH", channel, 0))
            m.add_xor_address(A_XOR_PEER_ADDRESS, peer)
        return self.request(CHANNEL_BIND, build)

    def refresh(self, lifetime: int) -> StunMessage:
        return self.request(REFRESH, lambda m: m.add_u32(A_LIFETIME, lifetime))

    def send_indication(self, peer: Tuple[str, int], payload: bytes) -> None:
        m = StunMessage(SEND, INDICATION)
        m.add_xor_address(A_XOR_PEER_ADDRESS, peer)
        m.add(A_DATA, payload)
        self.sock.sendto(m.encode(), self.server)

    def send_channel_data(self, channel: int, payload: bytes) -> None:
        data = struct.pack("!HH", channel, len(payload)) + payload
        self.sock.sendto(data + b"\x00" * _pad4(len(data)), self.server)

    def drain(self, duration: float) -> List[bytes]:
        """Collects whatever arrives from the server for `duration` seconds."""
        deadline = time.monotonic() + duration
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.sock.settimeout(left)
            try:
                pkt, _ = self.sock.recvfrom(65535)
            except socket.timeout:
                break
            self.received.append(pkt)
        out, self.received = self.received, []
        return out


def stun_binding_probe(addr: Tuple[str, int], timeout: float = 0.3) -> Optional[Tuple[str, int]]:
    """One Binding request; returns the XOR-MAPPED-ADDRESS (or MAPPED-ADDRESS), None on timeout."""
    family = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        msg = StunMessage(BINDING, REQUEST)
        s.settimeout(timeout)
        try:
            s.sendto(msg.encode(), addr)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                s.settimeout(max(0.01, deadline - time.monotonic()))
                data, _ = s.recvfrom(2048)
                resp = StunMessage.decode(data)
                if resp is None or resp.tid != msg.tid:
                    continue
                if resp.cls == SUCCESS and resp.method == BINDING:
                    return (resp.get_xor_address(A_XOR_MAPPED_ADDRESS)
                            or (unpack_address(resp.get(A_MAPPED_ADDRESS))  # type: ignore
                                if resp.has(A_MAPPED_ADDRESS) else ("?", 0)))
                return None
        except (socket.timeout, ConnectionRefusedError, OSError):
            return None
    return None


# ---------------------------------------------------------------------------------------------
# Ports
# ---------------------------------------------------------------------------------------------

_handed_out: set = set()


def free_port(host: str = LOOPBACK, udp_only: bool = False) -> int:
    """A port free for both UDP and TCP on host (best effort: another process can still race)."""
    for _ in range(50):
        with socket.socket(family_of(host), socket.SOCK_DGRAM) as u:
            u.bind((host, 0))
            port = u.getsockname()[1]
            if port in RESERVED_PORTS or port in _handed_out:
                continue
            if not udp_only:
                try:
                    with socket.socket(family_of(host), socket.SOCK_STREAM) as t:
                        t.bind((host, port))
                except OSError:
                    continue
        _handed_out.add(port)
        return port
    raise TestFailure("could not find a free port in 50 tries")


_RELAY_WINDOWS = "/tmp/kturn-interop-relay-windows"


def _claim_window(w: int) -> bool:
    """Claims 200-port window `w` for this process (an O_EXCL file naming it); a window whose
    process is gone (a killed test) is claimed again."""
    path = os.path.join(_RELAY_WINDOWS, str(w))
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                with open(path) as f:
                    owner = int(f.read().strip() or "0")
                os.kill(owner, 0)
                return False  # held by a live test
            except (OSError, ValueError):
                try:
                    os.unlink(path)  # its test is gone
                except OSError:
                    pass
                continue
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        register_cleanup(lambda path=path: os.path.exists(path) and os.unlink(path))
        return True
    return False


def relay_port_range(size: int = 200) -> Tuple[int, int]:
    """A relay window below the kernel's ephemeral range (so free_port() never hits it), of its
    own among the tests running at once: made of 200-port units, each claimed with an O_EXCL
    file naming the claiming process and released at exit. Random windows used to overlap now
    and then, and a test that fills its window starved its neighbour into 508s. Servers whose
    config has no relay range (STUNner's default, 1-65535) can still land in any window: a test
    that needs most of its ports asks for more than it needs."""
    unit = 200
    units = (size + unit - 1) // unit
    os.makedirs(_RELAY_WINDOWS, exist_ok=True)
    starts = list(range((30000 - 20000) // unit - units + 1))
    random.shuffle(starts)
    for w in starts:
        claimed = []
        for u in range(w, w + units):
            if not _claim_window(u):
                break
            claimed.append(u)
        if len(claimed) == units:
            base = 20000 + w * unit
            return base, base + size - 1
        for u in claimed:  # a partial claim: give it back
            path = os.path.join(_RELAY_WINDOWS, str(u))
            if os.path.exists(path):
                os.unlink(path)
    base = random.randrange(20000, 30000 - size)  # every window claimed: share one
    return base, base + size - 1


# ---------------------------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------------------------


class Proc:
    """A child process in its own process group, output to a log file, killed on stop()."""

    def __init__(self, name: str, argv: Sequence[str], workdir: str, env=None,
                 pass_fds: Sequence[int] = ()):
        self.name = name
        self.argv = list(argv)
        self.workdir = workdir
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.env = env
        self.pass_fds = tuple(pass_fds)  # kept open in the child, at the same numbers
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> "Proc":
        log = open(self.log_path, "ab")
        log.write(("$ " + " ".join(self.argv) + "\n").encode())
        log.flush()
        try:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=self.workdir,
                                         env=self.env, start_new_session=True,
                                         pass_fds=self.pass_fds)
        except OSError as e:
            raise TestFailure(f"cannot start {self.name} ({self.argv[0]}): {e}")
        finally:
            log.close()
        register_cleanup(self.stop)
        return self

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise TestFailure(f"{self.name} did not finish within {timeout:.0f} s "
                              f"(killed); see {self.log_path}")

    def stop(self, grace: float = 3.0) -> Optional[int]:
        p = self.proc
        if p is None:
            return None
        if p.poll() is None:
            for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    p.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        else:  # leader gone; make sure no stragglers in its group survive
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        return p.returncode

    def output(self) -> str:
        try:
            with open(self.log_path, "r", errors="replace") as f:
                return f.read()
        except OSError:
            return ""


_cleanups: List[Callable[[], object]] = []
_logs: List[str] = []


def register_cleanup(fn: Callable[[], object]) -> None:
    _cleanups.append(fn)


def register_log(path: str) -> None:
    if path not in _logs:
        _logs.append(path)


def _run_cleanups() -> None:
    while _cleanups:
        fn = _cleanups.pop()
        try:
            fn()
        except Exception:  # noqa: BLE001 - cleanup must go on
            traceback.print_exc()


def free_udp_port_pair(host: str = LOOPBACK) -> int:
    """A UDP port p with p + 1 free too: turnutils_peer echoes on both (RTP and RTCP), and
    uclient sends its RTCP to p + 1."""
    for _ in range(50):
        port = free_port(host, udp_only=True)
        if port % 2 == 1 or port + 1 in _handed_out:
            continue
        try:
            with socket.socket(family_of(host), socket.SOCK_DGRAM) as u:
                u.bind((host, port + 1))
        except OSError:
            continue
        _handed_out.add(port + 1)
        return port
    raise TestFailure("could not find a free UDP port pair in 50 tries")


def start_udp_echo_peer(workdir: str, host: str = LOOPBACK,
                        port: Optional[int] = None,
                        netns: Optional[str] = None) -> Tuple[Proc, int]:
    """turnutils_peer (a UDP echo server) on host:port and port + 1, in network namespace
    `netns` (None: this one); waits until it echoes."""
    with in_netns(netns):
        port = port or free_udp_port_pair(host)
    prefix = ["ip", "netns", "exec", netns] if netns else []
    peer = Proc(f"turnutils_peer-{host}", prefix + ["turnutils_peer", "-L", host, "-p", str(port)],
                workdir)
    register_log(peer.log_path)
    peer.start()
    with in_netns(netns), socket.socket(family_of(host), socket.SOCK_DGRAM) as s:
        s.bind((host, 0))
        s.settimeout(0.2)
        for _ in range(50):  # ~10 s
            if not peer.running():
                raise TestFailure(f"turnutils_peer exited early (rc={peer.proc.returncode})")
            try:
                s.sendto(b"ping", (host, port))
                data, _ = s.recvfrom(64)
                if data == b"ping":
                    return peer, port
            except (socket.timeout, OSError):
                time.sleep(0.1)
    raise TestFailure(f"turnutils_peer on {host}:{port} never echoed")


# ---------------------------------------------------------------------------------------------
# Network namespaces (the eBPF fast path's end-to-end test and bench/compare's offload scenario)
# ---------------------------------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWNET = 0x40000000


@contextmanager
def in_netns(name: Optional[str]):
    """Runs the block (this thread) in network namespace `name` (None: where it is); sockets
    made there stay there."""
    if name is None:
        yield
        return
    root = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if _libc.setns(target, _CLONE_NEWNET) != 0:
            raise TestFailure(f"setns({name}): {os.strerror(ctypes.get_errno())}")
        yield
    finally:
        _libc.setns(root, _CLONE_NEWNET)
        os.close(root)
        os.close(target)


class ThreeNamespaces:
    """client (c0) <-> (s0) server (s1) <-> (p0) peer: three network namespaces joined by two
    veth pairs, forwarding on in the server's (bpf_fib_lookup() routes only for interfaces that
    forward). Deleted by delete(), which create() also registers as a cleanup."""

    CLIENT_IP, LISTENER_IP = "10.201.1.2", "10.201.1.1"
    RELAY_SIDE_IP, PEER_IP = "10.201.2.1", "10.201.2.2"

    def __init__(self, prefix: str) -> None:
        self.client, self.server, self.peer = (f"{prefix}-{r}-{os.getpid()}" for r in "csp")
        self.made: List[str] = []

    @staticmethod
    def run(*argv: str) -> None:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise TestFailure(f"{' '.join(argv)}: exit {r.returncode}: {r.stdout.strip()}")

    def create(self) -> "ThreeNamespaces":
        run = self.run
        register_cleanup(self.delete)
        for ns in (self.client, self.server, self.peer):
            run("ip", "netns", "add", ns)
            self.made.append(ns)
            run("ip", "-n", ns, "link", "set", "lo", "up")
        run("ip", "link", "add", "c0", "netns", self.client, "type", "veth", "peer", "name", "s0",
            "netns", self.server)
        run("ip", "link", "add", "s1", "netns", self.server, "type", "veth", "peer", "name", "p0",
            "netns", self.peer)
        for ns, dev, cidr in ((self.client, "c0", f"{self.CLIENT_IP}/24"),
                              (self.server, "s0", f"{self.LISTENER_IP}/24"),
                              (self.server, "s1", f"{self.RELAY_SIDE_IP}/24"),
                              (self.peer, "p0", f"{self.PEER_IP}/24")):
            run("ip", "-n", ns, "addr", "add", cidr, "dev", dev)
            run("ip", "-n", ns, "link", "set", dev, "up")
        run("ip", "-n", self.client, "route", "add", "default", "via", self.LISTENER_IP)
        run("ip", "-n", self.peer, "route", "add", "default", "via", self.RELAY_SIDE_IP)
        run("ip", "netns", "exec", self.server, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
        return self

    def ethtool(self, ns: str, dev: str, *settings: str) -> None:
        self.run("ip", "netns", "exec", ns, "ethtool", "-K", dev, *settings)

    def attached_programs(self) -> str:
        """What is attached to s0 and s1: XDP programs (`prog/xdp` in ip's details) and TC
        ingress filters (kturn's is named kturn_tc), a line each; empty when nothing is."""
        found = []
        for dev in ("s0", "s1"):
            link = subprocess.run(["ip", "-n", self.server, "-d", "link", "show", "dev", dev],
                                  stdout=subprocess.PIPE, text=True).stdout
            if "prog/xdp" in link:
                found.append(f"{dev}: XDP ({link.strip().splitlines()[-1].strip()})")
            tc = subprocess.run(["tc", "-n", self.server, "filter", "show", "dev", dev, "ingress"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True).stdout
            if "kturn_tc" in tc:
                found.append(f"{dev}: TC ({tc.strip()})")
        return "\n".join(found)

    def delete(self) -> None:
        for ns in self.made:
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
        self.made = []


class PodNetwork:
    """Media "pods" for a test that puts their addresses in an EndpointSlice (the API server
    refuses loopback ones there): a network namespace of the test's own holding one address per
    pod, joined to the test's namespace by a veth pair whose near end has GATEWAY_IP. kturnd
    listens on the gateway address, so its relay sockets (bound to the address the client
    reached) can send to the pods. Needs root. Deleted by delete(), which create() registers."""

    def __init__(self, pods: int = 2) -> None:
        self.ns = f"kturn-pods-{os.getpid()}"
        self.dev = f"kpod{os.getpid() % 100000}"
        self.subnet = self._free_subnet()
        self.gateway_ip = f"10.204.{self.subnet}.1"
        self.pod_ips = [f"10.204.{self.subnet}.{2 + i}" for i in range(pods)]
        self.made = False

    @staticmethod
    def _free_subnet() -> int:
        """A 10.204.N.0/24 no interface of this namespace has (tests run side by side)."""
        used = subprocess.run(["ip", "-o", "-4", "addr", "show"], stdout=subprocess.PIPE,
                              text=True).stdout
        start = os.getpid() % 250
        for i in range(250):
            n = (start + i) % 250 + 1
            if f" 10.204.{n}." not in used:
                return n
        raise TestFailure("no free 10.204.N.0/24 for the pod network")

    def create(self) -> "PodNetwork":
        run = ThreeNamespaces.run
        register_cleanup(self.delete)
        run("ip", "netns", "add", self.ns)
        self.made = True
        run("ip", "-n", self.ns, "link", "set", "lo", "up")
        run("ip", "link", "add", self.dev, "type", "veth", "peer", "name", "eth0", "netns",
            self.ns)
        run("ip", "addr", "add", f"{self.gateway_ip}/24", "dev", self.dev)
        run("ip", "link", "set", self.dev, "up")
        for ip in self.pod_ips:
            run("ip", "-n", self.ns, "addr", "add", f"{ip}/24", "dev", "eth0")
        run("ip", "-n", self.ns, "link", "set", "eth0", "up")
        return self

    def delete(self) -> None:
        if self.made:  # the veth pair goes with the namespace
            subprocess.run(["ip", "netns", "del", self.ns], stderr=subprocess.DEVNULL)
            self.made = False


def root_or_skip(why: str) -> None:
    """Exits 77 (ctest's skip) with the reason when network namespaces cannot be made here."""
    if os.geteuid() != 0 or not os.path.isdir("/proc/sys/net"):
        print(f"SKIP: needs root for {why}")
        sys.exit(77)


# ---------------------------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------------------------


def to_yaml(value, indent: int = 0) -> str:
    """Minimal block-style YAML emitter for dict/list/str/int/bool/None (strings JSON-quoted,
    which is valid YAML double-quoted style)."""
    pad = "  " * indent

    def scalar(v) -> str:
        if v is None:
            return "null"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return str(v)
        return json.dumps(str(v))

    lines: List[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                lines.append(f"{pad}{k}:")
                lines.append(to_yaml(v, indent + 1))
            elif isinstance(v, (dict, list)):
                lines.append(f"{pad}{k}: {'{}' if isinstance(v, dict) else '[]'}")
            else:
                lines.append(f"{pad}{k}: {scalar(v)}")
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, dict) and v:
                inner = to_yaml(v, indent + 1).split("\n")
                lines.append(f"{pad}- {inner[0].lstrip()}")
                lines.extend(inner[1:])
            elif isinstance(v, list) and v:
                lines.append(f"{pad}-")
                lines.append(to_yaml(v, indent + 1))
            else:
                lines.append(f"{pad}- {scalar(v) if not isinstance(v, (dict, list)) else '{}'}")
    else:
        lines.append(pad + scalar(value))
    return "\n".join(lines)


def self_signed_cert(common_name: str = "localhost") -> Tuple[str, str]:
    """A fresh ECDSA P-256 self-signed certificate and key: (cert.pem path, key.pem path)."""
    d = tempfile.mkdtemp(prefix="kturn-interop-cert-")
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec",
                        "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
                        "-out", cert, "-days", "2", "-subj", f"/CN={common_name}",
                        "-addext", f"subjectAltName=DNS:{common_name},IP:127.0.0.1"],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, f"openssl req failed: {r.stderr.strip()}")
    register_cleanup(lambda: shutil.rmtree(d, ignore_errors=True))
    return cert, key


def base64_file(path: str) -> str:
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


class ServerSettings:
    """What a test wants from the server, independent of which server runs it."""

    def __init__(self, auth: str = "static", realm: str = REALM,
                 username: str = STATIC_USER, password: str = STATIC_PASS,
                 secret: str = REST_SECRET, allowed: Sequence[str] = ("127.0.0.1/32",),
                 denied_for_coturn: Sequence[str] = (), port: Optional[int] = None,
                 relay_range: Optional[Tuple[int, int]] = None, tcp: bool = False,
                 tls: bool = False, host: str = LOOPBACK, tcp_relay: bool = False):
        check(auth in ("static", "rest"), f"unknown auth {auth}")
        self.auth = auth
        self.realm = realm
        self.username = username
        self.password = password
        self.secret = secret
        self.allowed = list(allowed)
        # coturn cannot express "only these peers": tests emulate kturnd's allow-list with an
        # explicit deny-list when running against the stand-in.
        self.denied_for_coturn = list(denied_for_coturn)
        self.host = host  # where the listeners bind: LOOPBACK, or LOOPBACK6 for IPv6 tests
        self.port = port or free_port(host)
        self.relay_range = relay_range or relay_port_range()
        # Also a TURN-TCP listener on the same port number (coturn always listens on both).
        self.tcp = tcp
        # The allowed peers form a `protocol: TCP` cluster: TCP allocations (RFC 6062) may reach
        # them (UDP allocations relay to every cluster either way).
        self.tcp_relay = tcp_relay
        # Also TURN-TLS and TURN-DTLS listeners on a port number of their own (TCP and UDP, as
        # coturn's tls-listening-port), with a fresh self-signed certificate.
        self.tls_port = free_port(host) if tls else None
        self.cert_path, self.key_path = self_signed_cert() if tls else (None, None)

    def credentials(self, user_id: str = "interop") -> Tuple[str, str]:
        """A (username, password) the server accepts."""
        if self.auth == "static":
            return self.username, self.password
        return rest_credentials(self.secret, user_id)


class Server:
    """Common part of KturndServer and CoturnServer: a Proc plus STUN readiness."""

    name = "server"

    def __init__(self, settings: ServerSettings, workdir: Optional[str] = None):
        self.settings = settings
        self.host = settings.host
        self.port = settings.port
        self.workdir = workdir or tempfile.mkdtemp(prefix=f"kturn-interop-{self.name}-")
        self.proc: Optional[Proc] = None

    @property
    def address(self) -> Tuple[str, int]:
        return self.host, self.port

    def argv(self) -> List[str]:
        raise NotImplementedError

    def start(self) -> "Server":
        self.proc = Proc(self.name, self.argv(), self.workdir)
        register_log(self.proc.log_path)
        self.proc.start()
        return self

    def wait_ready(self, timeout: float = 10.0) -> Tuple[str, int]:
        """Until a STUN Binding request to the UDP listener is answered (bounded)."""
        deadline = time.monotonic() + timeout
        attempts = 0
        while time.monotonic() < deadline and attempts < 200:
            attempts += 1
            if self.proc is not None and not self.proc.running():
                raise TestFailure(f"{self.name} exited during startup "
                                  f"(rc={self.proc.proc.returncode}); log: "
                                  f"{self.proc.log_path}")
            mapped = stun_binding_probe(self.address, timeout=0.2)
            if mapped is not None:
                return mapped
            time.sleep(0.05)
        raise TestFailure(f"{self.name} did not answer a STUN Binding request on "
                          f"{self.host}:{self.port}/udp within {timeout:.0f} s "
                          f"({attempts} probes)")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()

    def check_alive(self) -> None:
        check(self.proc is not None and self.proc.running(),
              f"{self.name} is no longer running (rc="
              f"{self.proc.proc.returncode if self.proc and self.proc.proc else '?'})")

    def __enter__(self) -> "Server":
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class KturndServer(Server):
    """kturnd on a generated STUNner v1 dataplane config (YAML in the work dir)."""

    name = "kturnd"

    def __init__(self, binary: str, config: dict, workdir: Optional[str] = None,
                 settings: Optional[ServerSettings] = None, loglevel: str = "all:DEBUG",
                 extra_args: Sequence[str] = ()):
        listener = config["listeners"][0]
        settings = settings or ServerSettings(port=int(listener["port"]))
        settings.port = int(listener["port"])
        super().__init__(settings, workdir)
        self.binary = os.path.abspath(binary)
        self.config = config
        self.loglevel = loglevel
        self.extra_args = list(extra_args)
        self.host = listener.get("address", LOOPBACK)
        self.config_path = os.path.join(self.workdir, "config.yaml")

    @staticmethod
    def config_for(s: ServerSettings) -> dict:
        if s.auth == "static":
            auth = {"type": "static", "realm": s.realm,
                    "credentials": {"username": s.username, "password": s.password}}
        else:
            auth = {"type": "ephemeral", "realm": s.realm,
                    "credentials": {"secret": s.secret}}
        listeners = [{"name": "udp", "protocol": "TURN-UDP", "address": s.host,
                      "port": s.port, "min_relay_port": s.relay_range[0],
                      "max_relay_port": s.relay_range[1], "routes": ["allowed"]}]
        if s.tcp:
            listeners.append(dict(listeners[0], name="tcp", protocol="TURN-TCP"))
        if s.tls_port:
            for name in ("tls", "dtls"):
                listeners.append(dict(listeners[0], name=name, protocol=f"TURN-{name.upper()}",
                                      port=s.tls_port, cert=base64_file(s.cert_path),
                                      key=base64_file(s.key_path)))
        return {
            "version": "v1",
            "admin": {"name": "interop", "loglevel": "all:INFO",
                      # no health/metrics HTTP servers: their default ports would collide
                      # between tests running in parallel
                      "healthcheck_endpoint": "", "metrics_endpoint": ""},
            "auth": auth,
            "listeners": listeners,
            "clusters": [dict({"name": "allowed", "type": "STATIC", "endpoints": s.allowed},
                              **({"protocol": "TCP"} if s.tcp_relay else {}))],
        }

    @classmethod
    def from_settings(cls, binary: str, s: ServerSettings,
                      workdir: Optional[str] = None) -> "KturndServer":
        return cls(binary, cls.config_for(s), workdir=workdir, settings=s)

    def reload(self, config: Optional[dict] = None, applied: int = 1,
               timeout: float = 10.0) -> None:
        """SIGHUP, with `config` first written over the file the way ConfigMap updates and editors
        do (a new file renamed over it); waits until kturnd has logged "config applied" at least
        `applied` times."""
        if config is not None:
            self.config = config
            with open(self.config_path + ".new", "w") as f:
                f.write(to_yaml(config) + "\n")
            os.rename(self.config_path + ".new", self.config_path)
        os.kill(self.proc.proc.pid, signal.SIGHUP)
        deadline = time.monotonic() + timeout
        while self.proc.output().count("config applied") < applied:
            check(time.monotonic() < deadline, f"kturnd did not apply the config within {timeout} s")
            time.sleep(0.05)

    def argv(self) -> List[str]:
        with open(self.config_path, "w") as f:
            f.write(to_yaml(self.config) + "\n")
        register_log(self.config_path)
        argv = [self.binary, "-c", f"file://{self.config_path}"]
        if self.loglevel:
            argv += ["-l", self.loglevel]
        return argv + self.extra_args


class CoturnServer(Server):
    """coturn's turnserver with settings equivalent to KturndServer's (stand-in only)."""

    name = "coturn"

    def __init__(self, settings: ServerSettings, workdir: Optional[str] = None,
                 binary: str = "turnserver", verbose: bool = True,
                 extra_args: Sequence[str] = ()):
        super().__init__(settings, workdir)
        self.binary = binary
        self.verbose = verbose
        self.extra_args = list(extra_args)

    def argv(self) -> List[str]:
        s = self.settings
        tls = ([f"--tls-listening-port={s.tls_port}", f"--cert={s.cert_path}",
                f"--pkey={s.key_path}"] if s.tls_port else ["--no-tls", "--no-dtls"])
        a = [self.binary, "-n", "--no-cli", *tls,
             f"--listening-ip={s.host}", f"--relay-ip={s.host}",
             f"--listening-port={s.port}",
             f"--min-port={s.relay_range[0]}", f"--max-port={s.relay_range[1]}",
             f"--realm={s.realm}", "--allow-loopback-peers", "--fingerprint",
             "--log-file=stdout", "--simple-log", "--no-stdout-log",
             f"--pidfile={os.path.join(self.workdir, 'turnserver.pid')}",
             f"--userdb={os.path.join(self.workdir, 'turndb')}",
             "--relay-threads=1"]
        if s.auth == "static":
            a += ["--lt-cred-mech", f"--user={s.username}:{s.password}"]
        else:
            a += ["--use-auth-secret", f"--static-auth-secret={s.secret}"]
        for ip in s.denied_for_coturn:
            a.append(f"--denied-peer-ip={ip}")
        if self.verbose:
            a.append("--verbose")
        return a + self.extra_args


# ---------------------------------------------------------------------------------------------
# Test scaffolding
# ---------------------------------------------------------------------------------------------


def add_server_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", choices=("kturnd", "coturn"), required=True,
                   help="server under test (coturn is only a stand-in to validate the harness)")
    p.add_argument("--kturnd", metavar="PATH", help="kturnd binary (with --server kturnd)")
    p.add_argument("--keep-logs", action="store_true",
                   help="keep the work dir (configs, logs) even on success")


def make_server(args: argparse.Namespace, settings: ServerSettings, workdir: str) -> Server:
    if args.server == "kturnd":
        check(bool(args.kturnd), "--server kturnd needs --kturnd PATH")
        check(os.access(args.kturnd, os.X_OK), f"kturnd binary not executable: {args.kturnd}")
        return KturndServer.from_settings(args.kturnd, settings, workdir=workdir)
    check(shutil.which("turnserver") is not None, "coturn's turnserver is not installed")
    return CoturnServer(settings, workdir=workdir)


def _dump_logs(max_lines: int = 400) -> None:
    for path in _logs:
        try:
            with open(path, "r", errors="replace") as f:
                lines = f.readlines()
        except OSError:
            continue
        print(f"----- {path} ({len(lines)} lines"
              f"{', last %d' % max_lines if len(lines) > max_lines else ''}) -----")
        sys.stdout.writelines(lines[-max_lines:])
        print(f"----- end of {os.path.basename(path)} -----")


def run_test(name: str, body: Callable[[argparse.Namespace, str], None],
             parser: argparse.ArgumentParser, overall_timeout: int = 110) -> None:
    """Parses args, runs body(args, workdir), cleans up; exits 0 on pass, 1 on failure."""
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix=f"kturn-interop-{name}-")
    ok = False

    def on_alarm(signum, frame):
        raise TestFailure(f"test exceeded its overall time budget of {overall_timeout} s")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(143))  # run finally blocks on ctest kill
    signal.alarm(overall_timeout)
    start = time.monotonic()
    try:
        body(args, workdir)
        ok = True
    except TestFailure as e:
        print(f"FAIL [{name}] ({args.server}): {e}")
    except Exception:  # noqa: BLE001
        print(f"FAIL [{name}] ({args.server}): unexpected error")
        traceback.print_exc(file=sys.stdout)
    finally:
        signal.alarm(0)
        _run_cleanups()
        if not ok:
            _dump_logs()
            print(f"(work dir kept: {workdir})")
        elif args.keep_logs:
            print(f"(work dir kept: {workdir})")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if ok:
        print(f"PASS [{name}] ({args.server}) in {time.monotonic() - start:.1f} s")
    sys.stdout.flush()
    sys.exit(0 if ok else 1)
