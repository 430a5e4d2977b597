"""A small STUN/TURN codec (RFC 8489, RFC 8656): constants, StunMessage (with MESSAGE-INTEGRITY,
MESSAGE-INTEGRITY-SHA256 and FINGERPRINT), long-term and TURN REST credentials, XOR addresses.
Stdlib only, no I/O: tests/fuzz/gen_seeds.py builds its STUN seeds with it too."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import socket
import struct
import time
from typing import List, Optional, Tuple


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


def long_term_key(username: str, realm: str, password: str, sha256: bool = False) -> bytes:
    """RFC 8489 section 9.2.2: MD5, or SHA-256 (PASSWORD-ALGORITHM 2), of user:realm:password."""
    text = f"{username}:{realm}:{password}".encode()
    return (hashlib.sha256 if sha256 else hashlib.md5)(text).digest()


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

    def encode(self, key: Optional[bytes] = None, fingerprint: bool = True,
               sha256: bool = False) -> bytes:
        """The attributes in order, then with a key MESSAGE-INTEGRITY (HMAC-SHA1) or, with sha256,
        MESSAGE-INTEGRITY-SHA256, then FINGERPRINT (RFC 8489 sections 14.5, 14.6, 14.7)."""
        body = b"".join(self._attr_bytes(t, v) for t, v in self.attrs
                        if t not in (A_MESSAGE_INTEGRITY, A_MESSAGE_INTEGRITY_SHA256,
                                     A_FINGERPRINT))
        if key is not None:
            atype, digest = ((A_MESSAGE_INTEGRITY_SHA256, hashlib.sha256) if sha256
                             else (A_MESSAGE_INTEGRITY, hashlib.sha1))
            size = 4 + digest().digest_size
            mac = hmac.new(key, self._header(len(body) + size) + body, digest).digest()
            body += self._attr_bytes(atype, mac)
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
