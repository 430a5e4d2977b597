#!/usr/bin/python3
"""The server relays only to peers in the route's clusters (here 127.0.0.1/32).

A stdlib TURN client (harness.TurnClient: long-term credentials, MESSAGE-INTEGRITY,
FINGERPRINT) allocates on the server, then:
  * positive control, peer 127.0.0.1 (allowed): CreatePermission and ChannelBind succeed;
    a Send indication and ChannelData reach the peer socket, and the peer's replies come back
    as a Data indication and ChannelData (so "nothing arrived" below means something);
  * refused peer 127.0.0.2 (a UDP socket this test binds): CreatePermission -> 403,
    ChannelBind -> 403, a CreatePermission naming both peers -> 403; Send indications and
    ChannelData on the refused channel never reach 127.0.0.2, and what 127.0.0.2 sends to
    the relayed address never reaches the client;
  * the allowed peer still works afterwards.

Against coturn the allow-list is emulated with --denied-peer-ip=127.0.0.2.
"""

import argparse
import os
import socket
import struct
import sys
import time
from typing import List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

REFUSED_IP = "127.0.0.2"
QUIET_WINDOW = 1.5  # seconds to wait for datagrams that must not arrive


def udp_socket(host: str) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind((host, 0))
    except OSError as e:
        s.close()
        raise h.TestFailure(f"cannot bind a UDP socket on {host}: {e}")
    return s


def recv_all(sock: socket.socket, duration: float, limit: int = 100) -> List[Tuple[bytes, tuple]]:
    out = []
    deadline = time.monotonic() + duration
    while len(out) < limit:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            out.append(sock.recvfrom(65535))
        except socket.timeout:
            break
    return out


def recv_one(sock: socket.socket, timeout: float, what: str) -> Tuple[bytes, tuple]:
    got = recv_all(sock, timeout, limit=1)
    h.check(bool(got), f"{what}: nothing arrived within {timeout} s")
    return got[0]


def expect_error(resp: h.StunMessage, code: int, what: str) -> None:
    h.check(resp.cls == h.ERROR,
            f"{what}: expected error {code}, got {h.CLASS_NAMES[resp.cls]} "
            f"({resp.describe()})")
    err = resp.error_code()
    h.check(err is not None and err[0] == code,
            f"{what}: expected error {code}, got {err} ({resp.describe()})")
    print(f"{what}: error {err[0]} {err[1]!r} as expected")


def client_payloads(pkts: List[bytes]) -> List[Tuple[str, bytes]]:
    """(source, payload) for Data indications and ChannelData among packets from the server."""
    out = []
    for p in pkts:
        if h.is_channel_data(p):
            ch, ln = struct.unpack("!HH", p[:4])
            out.append((f"channel 0x{ch:04X}", p[4:4 + ln]))
            continue
        m = h.StunMessage.decode(p)
        if m is not None and m.method == h.DATA and m.cls == h.INDICATION:
            peer = m.get_xor_address(h.A_XOR_PEER_ADDRESS)
            out.append((f"data indication from {peer}", m.get(h.A_DATA) or b""))
    return out


def body(args: argparse.Namespace, workdir: str) -> None:
    settings = h.ServerSettings(auth=args.auth, allowed=["127.0.0.1/32"],
                                denied_for_coturn=[REFUSED_IP])
    allowed_sock = udp_socket(h.LOOPBACK)
    refused_sock = udp_socket(REFUSED_IP)
    h.register_cleanup(allowed_sock.close)
    h.register_cleanup(refused_sock.close)
    allowed = allowed_sock.getsockname()
    refused = refused_sock.getsockname()
    print(f"allowed peer {allowed[0]}:{allowed[1]}, refused peer {refused[0]}:{refused[1]}")

    with h.make_server(args, settings, workdir) as server:
        username, password = settings.credentials("refused-peer-test")
        client = h.TurnClient(server.address, username, password)
        h.register_cleanup(client.close)
        relayed = client.allocate()
        print(f"allocated {relayed[0]}:{relayed[1]} (mapped {client.mapped})")

        # -- positive control: the allowed peer
        resp = client.create_permission(allowed)
        h.check(resp.cls == h.SUCCESS, f"CreatePermission to allowed peer {allowed} failed: "
                                       f"{resp.describe()}")
        client.send_indication(allowed, b"send-to-allowed")
        data, src = recv_one(allowed_sock, 3.0, "Send indication to the allowed peer")
        h.check(data == b"send-to-allowed", f"allowed peer got {data!r}")
        h.check(src == relayed, f"allowed peer got data from {src}, expected the relayed "
                                f"address {relayed}")
        allowed_sock.sendto(b"reply-from-allowed", relayed)
        got = client_payloads(client.drain(1.0))
        h.check(any(p == b"reply-from-allowed" for _, p in got),
                f"the allowed peer's reply did not come back as a Data indication: {got}")

        resp = client.channel_bind(0x4001, allowed)
        h.check(resp.cls == h.SUCCESS, f"ChannelBind to allowed peer failed: "
                                       f"{resp.describe()}")
        client.send_channel_data(0x4001, b"channel-to-allowed")
        data, src = recv_one(allowed_sock, 3.0, "ChannelData to the allowed peer")
        h.check(data == b"channel-to-allowed" and src == relayed,
                f"allowed peer got {data!r} from {src}")
        allowed_sock.sendto(b"channel-reply", relayed)
        got = client_payloads(client.drain(1.0))
        h.check(("channel 0x4001", b"channel-reply") in got,
                f"the allowed peer's reply did not come back as ChannelData 0x4001: {got}")
        print("allowed peer: permission, Send/Data indication, channel both ways OK")

        # -- the refused peer
        expect_error(client.create_permission(refused), 403,
                     f"CreatePermission to {refused[0]}")
        expect_error(client.create_permission(allowed, refused), 403,
                     f"CreatePermission naming {allowed[0]} and {refused[0]}")
        expect_error(client.channel_bind(0x4002, refused), 403,
                     f"ChannelBind 0x4002 to {refused[0]}")
        for i in range(3):
            client.send_indication(refused, b"send-to-refused-%d" % i)
            client.send_channel_data(0x4002, b"channel-to-refused-%d" % i)
            refused_sock.sendto(b"from-refused-%d" % i, relayed)  # inbound direction
        leaked = recv_all(refused_sock, QUIET_WINDOW)
        h.check(not leaked, f"{len(leaked)} datagram(s) reached the refused peer "
                            f"{refused[0]}: {leaked[:3]}")
        got = [(s, p) for s, p in client_payloads(client.drain(0.2))]
        h.check(not got, f"traffic from the refused peer reached the client: {got}")
        stray = recv_all(allowed_sock, 0.2)
        h.check(not stray, f"unexpected datagrams at the allowed peer: {stray}")
        print(f"refused peer: nothing arrived within {QUIET_WINDOW} s either way")

        # -- the allowed peer still works
        client.send_channel_data(0x4001, b"still-works")
        data, src = recv_one(allowed_sock, 3.0, "ChannelData to the allowed peer afterwards")
        h.check(data == b"still-works", f"allowed peer got {data!r}")
        resp = client.refresh(0)
        h.check(resp.cls == h.SUCCESS, f"Refresh(0) failed: {resp.describe()}")
        server.check_alive()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--auth", choices=("static", "rest"), default="static")
    args, _ = p.parse_known_args()
    h.run_test(f"peer-refused-{args.auth}", body, p)


if __name__ == "__main__":
    main()
