"""A synchronous UDP TURN client (enough for negative tests; not meant to be fast), the same
over a TCP or TLS connection, and the STUN Binding probe that tells when a server is ready."""

from __future__ import annotations

import socket
import ssl
import struct
import time
from typing import Callable, List, Optional, Tuple

from .net import LOOPBACK
from .runner import TestFailure, check
from .stun import (A_CHANNEL_NUMBER, A_DATA, A_LIFETIME, A_MAPPED_ADDRESS, A_NONCE, A_REALM,
                   A_REQUESTED_TRANSPORT, A_SOFTWARE, A_USERNAME, A_XOR_MAPPED_ADDRESS,
                   A_XOR_PEER_ADDRESS, A_XOR_RELAYED_ADDRESS, ALLOCATE, BINDING, CHANNEL_BIND,
                   CREATE_PERMISSION, ERROR, INDICATION, METHOD_NAMES, REFRESH, REQUEST, SEND,
                   SUCCESS, StunMessage, _pad4, long_term_key, unpack_address)


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



class StreamTurnClient(TurnClient):
    """TurnClient over a TCP connection, or TLS with `tls` (an ssl.SSLContext; server_hostname
    the name its certificate is verified against when the context checks host names): STUN
    messages back to back on the stream (RFC 8489 section 6.2.2). A handshake that fails
    raises ssl.SSLError, for the test to tell apart."""

    def __init__(self, server: Tuple[str, int], username: str, password: str,
                 tls: Optional[ssl.SSLContext] = None, server_hostname: Optional[str] = None,
                 timeout: float = 3.0):
        super().__init__(server, username, password)
        self.sock.close()
        sock = socket.create_connection(server, timeout=timeout)
        if tls is not None:
            try:
                sock = tls.wrap_socket(sock, server_hostname=server_hostname)
            except BaseException:
                sock.close()
                raise
        self.sock = sock
        self.buf = b""

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            data = self.sock.recv(65536)
            if not data:
                raise TestFailure(f"{self.server}: connection closed")
            self.buf += data
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _transact(self, msg: StunMessage, key: Optional[bytes]) -> StunMessage:
        self.sock.sendall(msg.encode(key=key))
        for _ in range(8):
            header = self._read(20)
            length = struct.unpack("!H", header[2:4])[0]
            resp = StunMessage.decode(header + self._read(length))
            if resp is not None and resp.tid == msg.tid and resp.cls in (SUCCESS, ERROR):
                return resp
        raise TestFailure(f"no answer to {METHOD_NAMES.get(msg.method)} on {self.server}")


def insecure_tls() -> ssl.SSLContext:
    """A TLS client context that accepts any certificate (the tests' self-signed ones)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


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
