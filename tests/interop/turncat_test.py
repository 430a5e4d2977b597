#!/usr/bin/python3
"""STUNner's own turncat (v1.2.1, built by scripts/build-test-tools.sh) through the server under
test: a TURN client we did not write, pion/turn's, driven the way STUNner's users drive it.

`turncat udp://127.0.0.1:L turn://USER:PASS@127.0.0.1:PORT udp://PEER` listens on L and, for
every client that sends to it, allocates on the server, sends the client's datagrams to PEER
through the relay (CreatePermission, then Send indications until its ChannelBind is answered,
then ChannelData) and the peer's back to the client.

--case relay: PEER is coturn's turnutils_peer (UDP echo) on 127.0.0.1. Two local clients each
  send --messages datagrams of distinct content and size, one at a time; passes only if every
  one comes back to the client that sent it, from L, unchanged; turncat logged one allocation
  per client, its relayed address in the server's relay range; kturnd's /metrics counted those
  datagrams relayed each way, no more; SIGINT ends turncat with status 0 and its allocations
  deleted.
--case refused: PEER is 127.0.0.2, outside the route's cluster (127.0.0.1/32), a socket of the
  test's own. Each datagram makes turncat allocate and ask for a permission, which is answered
  403: turncat logs the refusal; nothing reaches 127.0.0.2 nor comes back to the client; kturnd
  counts one 403 per datagram (kturn_allocations_rejected_total{reason="forbidden"}) and relays
  nothing.

--auth static puts user1:pass1 in the URI; --auth rest a TURN REST credential
(`<expiry>:<user-id>`, base64 HMAC-SHA1), percent-encoded: turncat makes ephemeral credentials
itself only from a config it reads over CDS (a k8s:// URI).

Against coturn (the stand-in) the allow-list is emulated with --denied-peer-ip=127.0.0.2, and
kturnd's counters are not checked.

  /usr/bin/python3 turncat_test.py --server kturnd --kturnd build/kturnd \\
      --turncat build/test-tools/bin/turncat --case relay --auth rest
"""

import argparse
import os
import re
import signal
import socket
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import ops_test  # noqa: E402  (metric_samples: /metrics through Prometheus' parser)

REFUSED_IP = "127.0.0.2"
QUIET_WINDOW = 1.5  # seconds to wait for datagrams that must not arrive
# turncat at all:INFO, as pion/turn and STUNner word it (v1.2.1):
#   turncat INFO: Client listening on udp://127.0.0.1:L, TURN server: ..., peer: udp:...
#   turncat INFO: New connection: client-address=127.0.0.1:C, relayed-address=127.0.0.1:R
#   turncat WARNING: Cannot write initial packet to TURN relay connection for client
#     udp:127.0.0.1:C: CreatePermission error response (error 403: Forbidden)
RE_ALLOCATED = re.compile(r"New connection: client-address=(\S+), relayed-address=(\S+):(\d+)")
RE_REFUSED = re.compile(r"Cannot write initial packet to TURN relay connection for client "
                        r"\S+: CreatePermission error response \(error 403")


def server_uri(settings: h.ServerSettings, user: str, password: str) -> str:
    # Go's url.Parse unescapes the user info; a REST username has a ':' of its own and its
    # password may hold '/', '+' and '='.
    user, password = (urllib.parse.quote(x, safe="") for x in (user, password))
    return f"turn://{user}:{password}@{h.LOOPBACK}:{settings.port}?transport=udp"


class Turncat:
    """turncat between a local UDP socket and `peer`, its log in the work dir."""

    def __init__(self, args, settings: h.ServerSettings, peer, workdir: str):
        self.port = h.free_port(udp_only=True)
        user, password = settings.credentials("turncat")
        self.proc = h.Proc("turncat", [
            os.path.abspath(args.turncat), "-l", "all:INFO", f"udp://{h.LOOPBACK}:{self.port}",
            server_uri(settings, user, password), f"udp://{peer[0]}:{peer[1]}"], workdir)
        h.register_log(self.proc.log_path)
        self.proc.start()
        deadline = time.monotonic() + 10
        while "Client listening on" not in self.proc.output():
            h.check(self.proc.running(), f"turncat exited early (rc={self.proc.proc.returncode})")
            h.check(time.monotonic() < deadline, "turncat did not start listening within 10 s")
            time.sleep(0.05)

    def allocations(self):
        """[(client, (relay host, relay port))] as turncat logged them."""
        return [(c, (host, int(port)))
                for c, host, port in RE_ALLOCATED.findall(self.proc.output())]

    def interrupt(self) -> int:
        """SIGINT, which turncat takes as the end (SIGTERM kills it without closing)."""
        self.proc.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=10)


def client_socket() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    h.register_cleanup(s.close)
    s.bind((h.LOOPBACK, 0))
    return s


def recv_within(sock: socket.socket, timeout: float):
    """One datagram and its source, or None after `timeout` seconds."""
    sock.settimeout(timeout)
    try:
        return sock.recvfrom(65535)
    except socket.timeout:
        return None


def start_server(args, settings: h.ServerSettings, workdir: str):
    """The server, and kturnd's /metrics port (None for coturn)."""
    if args.server != "kturnd":
        return h.make_server(args, settings, workdir), None
    port = h.free_port()
    config = h.KturndServer.config_for(settings)
    config["admin"]["metrics_endpoint"] = f"http://{h.LOOPBACK}:{port}/metrics"
    return h.KturndServer(args.kturnd, config, workdir=workdir, settings=settings), port


def counter(samples, series: str, **labels) -> float:
    key = (series, tuple(sorted(labels.items())))
    h.check(key in samples, f"/metrics lacks {series}{labels}")
    return samples[key]


def relay_case(args, settings, metrics, workdir) -> None:
    _, peer_port = h.start_udp_echo_peer(workdir)
    turncat = Turncat(args, settings, (h.LOOPBACK, peer_port), workdir)
    clients = [client_socket() for _ in range(2)]
    local = (h.LOOPBACK, turncat.port)
    sent_bytes = 0
    for i in range(args.messages):
        for k, c in enumerate(clients):
            payload = f"client {k} message {i} ".encode() + bytes([i % 256]) * (i * 23 % 1100)
            c.sendto(payload, local)
            sent_bytes += len(payload)
            got = recv_within(c, 5.0)
            h.check(got is not None, f"client {k} message {i}: no echo within 5 s")
            data, source = got
            h.check(source == local, f"client {k}: echo came from {source}, not turncat's {local}")
            h.check(data == payload, f"client {k} message {i}: {len(payload)} B sent, "
                                     f"{len(data)} B back: {data[:40]!r}...")
    sent = 2 * args.messages
    print(f"turncat: 2 clients x {args.messages} datagrams ({sent_bytes} B) echoed unchanged")

    allocations = turncat.allocations()
    h.check(sorted(c for c, _ in allocations) ==
            sorted(f"{h.LOOPBACK}:{c.getsockname()[1]}" for c in clients),
            f"want one allocation per client, turncat logged {allocations}")
    for client, relay in allocations:
        h.check(relay[0] == h.LOOPBACK and
                settings.relay_range[0] <= relay[1] <= settings.relay_range[1],
                f"client {client}: relayed address {relay} not in {settings.relay_range}")
    print(f"turncat: allocations {allocations}")

    if metrics is not None:
        samples = ops_test.metric_samples(metrics)
        for direction in ("rx", "tx"):
            packets = counter(samples, "kturn_relayed_packets_total", listener="udp",
                              direction=direction)
            relayed = counter(samples, "kturn_relayed_bytes_total", listener="udp",
                              direction=direction)
            h.check(packets == sent and relayed == sent_bytes,
                    f"kturnd relayed {packets} packets / {relayed} B ({direction}), the clients "
                    f"sent {sent} / {sent_bytes} B")
        created = counter(samples, "kturn_allocations_created_total", listener="udp")
        h.check(created == 2, f"kturn_allocations_created_total is {created}, want 2")
        print(f"kturnd: {sent} packets, {sent_bytes} B relayed each way; 2 allocations")

    rc = turncat.interrupt()
    h.check(rc == 0, f"turncat exited {rc} on SIGINT")
    if metrics is not None:  # turncat closed its allocations before exiting (Refresh 0)
        deleted = counter(ops_test.metric_samples(metrics), "kturn_allocations_ended_total",
                          listener="udp", reason="deleted")
        h.check(deleted == 2, f"kturn_allocations_ended_total{{reason=deleted}} is {deleted}, "
                              f"want 2 after turncat's SIGINT")
        print("turncat: SIGINT, exit 0, both allocations deleted")


def refused_case(args, settings, metrics, workdir) -> None:
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # must hear nothing
    h.register_cleanup(peer.close)
    peer.bind((REFUSED_IP, 0))
    turncat = Turncat(args, settings, peer.getsockname(), workdir)
    client = client_socket()
    for i in range(args.refusals):
        client.sendto(b"to-the-refused-peer-%d" % i, (h.LOOPBACK, turncat.port))
        # One datagram at a time: each is a new allocation and permission request once turncat
        # has given up the previous one.
        deadline = time.monotonic() + 5
        while len(RE_REFUSED.findall(turncat.proc.output())) <= i:
            h.check(turncat.proc.running(), f"turncat exited (rc={turncat.proc.proc.returncode})")
            h.check(time.monotonic() < deadline,
                    f"datagram {i}: turncat logged no 403 for its permission within 5 s")
            time.sleep(0.05)
    print(f"turncat: {args.refusals} permissions to {REFUSED_IP} refused with 403")
    leaked = recv_within(peer, QUIET_WINDOW)
    h.check(leaked is None, f"a datagram reached the refused peer {REFUSED_IP}: {leaked}")
    back = recv_within(client, 0.2)
    h.check(back is None, f"the client got a datagram back: {back}")
    print(f"refused peer: nothing arrived within {QUIET_WINDOW} s, nothing came back")

    if metrics is not None:
        samples = ops_test.metric_samples(metrics)
        forbidden = counter(samples, "kturn_allocations_rejected_total", listener="udp",
                            reason="forbidden")
        h.check(forbidden == args.refusals,
                f"kturnd counted {forbidden} 403s, turncat was refused {args.refusals} times")
        relayed = counter(samples, "kturn_relayed_packets_total", listener="udp", direction="rx")
        h.check(relayed == 0, f"kturnd relayed {relayed} packets to the refused peer")
        print(f"kturnd: {forbidden:.0f} 403s counted, nothing relayed")


def body(args: argparse.Namespace, workdir: str) -> None:
    h.check(os.access(args.turncat, os.X_OK),
            f"turncat not found at {args.turncat}: `make test-tools` (scripts/build-test-tools.sh "
            f"--link BUILD/test-tools) builds it")
    settings = h.ServerSettings(auth=args.auth, allowed=["127.0.0.1/32"],
                                denied_for_coturn=[REFUSED_IP])
    server, metrics = start_server(args, settings, workdir)
    with server:
        (relay_case if args.case == "relay" else refused_case)(args, settings, metrics, workdir)
        server.check_alive()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--turncat", required=True, metavar="PATH", help="STUNner's turncat binary")
    p.add_argument("--case", choices=("relay", "refused"), required=True)
    p.add_argument("--auth", choices=("static", "rest"), default="static")
    p.add_argument("--messages", type=int, default=50, help="datagrams per client (relay)")
    p.add_argument("--refusals", type=int, default=3, help="datagrams to the refused peer")
    args, _ = p.parse_known_args()
    h.run_test(f"turncat-{args.case}-{args.auth}", body, p)


if __name__ == "__main__":
    main()
