#!/usr/bin/python3
"""Connection floods against kturnd's stream listeners while a real client relays over UDP.

coturn's turnutils_uclient relays through kturnd's TURN-UDP listener to turnutils_peer for the
whole run; kturnd runs one worker (--udp-thread-num 1), so the flood and the relayed traffic
share one event loop. Every flood is bounded in count and time and stays on 127.0.0.1.

  --case tls-handshake  a few thousand connections to the TURN-TLS listener that send nothing
                        or one ClientHello and never finish the handshake, and some that
                        complete a handshake (a Binding over TLS) and close. Most flood
                        connections are then closed by the client; the rest must be closed by
                        kturnd's 10 s handshake timeout (EOF seen by the client, counted as
                        handshake_timeout in /metrics).
  --case half-open      connections to the TURN-TCP listener past the per-worker cap (8192),
                        idle or holding a partial STUN/ChannelData frame. The cap holds (the
                        open-connections gauge stops at 8192, the surplus is closed at once and
                        counted as connection_limit), a new client at the cap is refused, and
                        after the flood's sockets close a new client is served again.

Both cases pass only if uclient's relayed traffic completes with zero loss while the flood runs
(uclient is still running when the flood ends), kturnd is alive, /metrics counts the flood
exactly, and afterwards the listener's open connections and kturnd's descriptors are back to
their level before the flood.

  /usr/bin/python3 flood_test.py --server kturnd --kturnd build/kturnd --case tls-handshake
"""

import argparse
import os
import resource
import select
import socket
import ssl
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import ops_test  # noqa: E402
import uclient_test  # noqa: E402

CONNECTION_CAP = 8192  # StreamListener::Limits::max_connections, per worker
HANDSHAKE_TIMEOUT = 10.0  # StreamListener::Limits::handshake_timeout


def raise_fd_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    h.check(hard >= needed,
            f"RLIMIT_NOFILE hard limit is {hard}; this test needs {needed} descriptors (for "
            f"itself and for kturnd, which inherits the limit): raise it (ulimit -Hn) as root")
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def reset_close(sock: socket.socket) -> None:
    """Close with RST (SO_LINGER 0): no TIME_WAIT left behind for thousands of sockets."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


def open_raw(addr, payload: bytes = b"") -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(addr)
    if payload:
        s.sendall(payload)
    s.setblocking(False)
    return s


def closed_by_server(sock: socket.socket) -> bool:
    """True if the server closed the connection (EOF or reset); reads and drops any data."""
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True


def wait_closed_by_server(socks, timeout: float):
    """Waits (bounded) until the server closed every socket; returns the ones still open."""
    pending = {s.fileno(): s for s in socks}
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        poller = select.poll()
        for fd in pending:
            poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        for fd, _ in poller.poll(200):
            if fd in pending and closed_by_server(pending[fd]):
                del pending[fd]
    return list(pending.values())


def client_hello() -> bytes:
    """A real TLS ClientHello (Python's ssl over memory BIOs), sent verbatim by flood sockets."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = outgoing.read()
    h.check(len(hello) > 100 and hello[0] == 0x16, "could not build a ClientHello")
    return hello


def tls_binding(addr) -> None:
    """A complete TLS handshake and a Binding request answered over it, then a clean close."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(addr, timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
            request = h.StunMessage(h.BINDING, h.REQUEST)
            tls.sendall(request.encode())
            answer = h.StunMessage.decode(tls.recv(2048))
            h.check(answer is not None and answer.cls == h.SUCCESS and answer.tid == request.tid,
                    "no Binding success over TLS during the flood")


def tcp_binding(addr) -> bool:
    """A Binding request over a fresh TCP connection: True if answered, False if the server
    closed the connection instead."""
    with socket.create_connection(addr, timeout=5) as conn:
        request = h.StunMessage(h.BINDING, h.REQUEST)
        try:
            conn.sendall(request.encode())
            data = conn.recv(2048)
        except (ConnectionResetError, BrokenPipeError):
            return False
        if not data:
            return False
        answer = h.StunMessage.decode(data)
        h.check(answer is not None and answer.cls == h.SUCCESS and answer.tid == request.tid,
                f"unexpected answer to a Binding over TCP: {data[:40]!r}")
        return True


class Fixture:
    """kturnd (one worker; UDP, TCP and TLS listeners; /metrics) with uclient relaying over UDP."""

    def __init__(self, args, workdir, uclient_messages: int):
        self.args = args
        self.workdir = workdir
        self.metrics_port = h.free_port()
        self.settings = h.ServerSettings(auth="static", tcp=True, tls=True)
        config = h.KturndServer.config_for(self.settings)
        config["admin"]["metrics_endpoint"] = f"http://127.0.0.1:{self.metrics_port}/metrics"
        # all:INFO: no log line per connection (the flood is thousands).
        self.server = h.KturndServer(args.kturnd, config, workdir=workdir,
                                     settings=self.settings, loglevel="all:INFO",
                                     extra_args=["--udp-thread-num", "1"])
        self.uclient_messages = uclient_messages
        self.uclient = None

    def __enter__(self):
        self.server.__enter__()
        _, peer_port = h.start_udp_echo_peer(self.workdir)
        # 10 clients x uclient_messages x 100 B over TURN-UDP, no RTCP allocations (-z 20: uclient
        # paces 25-40 messages a second per client here, so 600 messages last about 20 s).
        argv = ops_test.uclient_argv(self.server, peer_port, 10, self.uclient_messages, 20)
        self.uclient = h.Proc("turnutils_uclient", argv, self.workdir)
        h.register_log(self.uclient.log_path)
        self.uclient.start()
        # The flood starts once the relayed traffic flows.
        ops_test.wait_for(lambda: self.relayed() > 0, 15, "uclient's traffic to be relayed")
        self.fds_before = self.fd_count()
        return self

    def __exit__(self, *exc):
        self.server.__exit__(*exc)

    def samples(self):
        return ops_test.metric_samples(self.metrics_port)

    def value(self, series, **labels):
        return self.samples().get((series, tuple(sorted(labels.items()))))

    def relayed(self) -> float:
        return self.value("kturn_relayed_packets_total", listener="udp", direction="rx") or 0

    def connections(self, listener: str):
        return self.value("stunner_listener_connections", name=listener)

    def closed(self, listener: str, reason: str):
        return self.value("kturn_connections_closed_total", listener=listener, reason=reason)

    def fd_count(self) -> int:
        return len(os.listdir(f"/proc/{self.server.proc.proc.pid}/fd"))

    def rss_mb(self) -> float:
        with open(f"/proc/{self.server.proc.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
        return 0.0

    def finish_uclient(self, flood_end: float) -> None:
        """The flood must have ended while uclient was still relaying; then zero loss."""
        h.check(self.uclient.running(),
                f"uclient finished before the flood ended ({flood_end:.1f} s into the test): "
                f"the flood did not overlap the relayed traffic; give uclient more messages")
        rc = self.uclient.wait(timeout=60)
        out = self.uclient.output()
        h.check(rc == 0, f"turnutils_uclient exited with {rc}:\n"
                + "\n".join(out.splitlines()[-6:]))
        s = uclient_test.parse_summary(out)
        expected = 10 * self.uclient_messages
        print(f"uclient over UDP during the flood: {s}")
        h.check(s["sent"] == expected and s["recv"] == expected,
                f"uclient sent {s['sent']} and received {s['recv']} of {expected} messages")
        h.check(s["lost"] == 0 and s["dropped"] == 0,
                f"uclient lost {s['lost']} and send-dropped {s['dropped']} packets")
        self.server.check_alive()

    def check_fds(self) -> None:
        # The flood's sockets are all closed: kturnd's descriptors are back where they were
        # (uclient is still running: its allocations and relay sockets are still held).
        ops_test.wait_for(lambda: self.fd_count() <= self.fds_before, 5,
                          f"kturnd's descriptors to return to {self.fds_before}")
        print(f"kturnd descriptors: {self.fds_before} before the flood, {self.fd_count()} after")


def case_tls_handshake(args, workdir):
    silent_n, hello_n, keep_each, complete_n = 1500, 1500, 300, 100
    raise_fd_limit(silent_n + hello_n + 1024)
    start = time.monotonic()
    with Fixture(args, workdir, uclient_messages=600) as f:
        tls_addr = (h.LOOPBACK, f.settings.tls_port)
        hello = client_hello()
        silent, hellos = [], []
        rss_before = f.rss_mb()
        flood_start = time.monotonic()
        for i in range(max(silent_n, hello_n)):
            if i < silent_n:
                silent.append(open_raw(tls_addr))
            if i < hello_n:
                hellos.append(open_raw(tls_addr, hello))
            if i % 100 == 0:
                tls_binding(tls_addr)  # a real TLS client is served in the middle of it
        for _ in range(complete_n):
            tls_binding(tls_addr)
        opened = time.monotonic()
        total = silent_n + hello_n + complete_n + (max(silent_n, hello_n) + 99) // 100
        ops_test.wait_for(lambda: f.value("stunner_listener_connections_total", name="tls")
                          == total, 10, f"kturnd to accept all {total} TLS connections")
        # The complete handshakes closed; the unfinished ones are all open.
        ops_test.wait_for(lambda: f.connections("tls") == silent_n + hello_n, 5,
                          f"kturnd to hold the {silent_n + hello_n} unfinished handshakes")
        print(f"TLS flood: {silent_n} silent + {hello_n} ClientHello-only connections and "
              f"{total - silent_n - hello_n} complete handshakes in "
              f"{opened - flood_start:.1f} s; {silent_n + hello_n} open on kturnd; "
              f"RSS {rss_before:.1f} -> {f.rss_mb():.1f} MB")

        # The client closes most of them; the rest wait for kturnd's handshake timeout.
        kept = silent[:keep_each] + hellos[:keep_each]
        for s in silent[keep_each:] + hellos[keep_each:]:
            reset_close(s)
        ops_test.wait_for(lambda: f.connections("tls") == len(kept), 5,
                          f"kturnd's TLS connections to drop to the {len(kept)} still open")
        # Unless the machine was too slow to get here within the timeout, nothing has timed out
        # yet, and exactly the kept connections will.
        early = time.monotonic() - flood_start < HANDSHAKE_TIMEOUT - 1
        if early:
            h.check(f.closed("tls", "handshake_timeout") == 0,
                    "handshake timeouts before 10 s had passed")
        left = wait_closed_by_server(kept, opened + HANDSHAKE_TIMEOUT + 5 - time.monotonic())
        flood_end = time.monotonic() - start
        h.check(not left, f"{len(left)} of {len(kept)} unfinished handshakes still open "
                          f"{time.monotonic() - opened:.1f} s after the flood")
        waited = time.monotonic() - opened
        for s in kept:
            s.close()
        timeouts = f.closed("tls", "handshake_timeout")
        print(f"kturnd closed the {len(kept)} unfinished handshakes left {waited:.1f} s after "
              f"the flood; handshake_timeout={timeouts:.0f}, "
              f"tls_error={f.closed('tls', 'tls_error'):.0f}")
        h.check(timeouts == len(kept) if early else timeouts >= len(kept),
                f"kturn_connections_closed_total{{reason=handshake_timeout}} is {timeouts}, "
                f"want {'' if early else 'at least '}{len(kept)}")
        h.check(f.connections("tls") == 0, f"{f.connections('tls')} TLS connections still open")
        tls_binding(tls_addr)
        f.check_fds()
        f.finish_uclient(flood_end)


def partial_frame(i: int) -> bytes:
    """Nothing, or the start of a frame that never completes."""
    kind = i % 4
    if kind == 0:
        return b""
    if kind == 1:  # a STUN header announcing 400 bytes of attributes, and 10 of them
        return struct.pack("!HHI", 0x0003, 400, h.MAGIC_COOKIE) + os.urandom(12) + b"\0" * 10
    if kind == 2:  # a ChannelData header announcing 1200 bytes, and 100 of them
        return struct.pack("!HH", 0x4000, 1200) + b"\xa5" * 100
    return b"\x00"  # one byte


def case_half_open(args, workdir):
    extra = 300
    flood_n = CONNECTION_CAP + extra
    raise_fd_limit(2 * flood_n + 1024)  # this process, and kturnd (which inherits the limit)
    start = time.monotonic()
    with Fixture(args, workdir, uclient_messages=600) as f:
        tcp_addr = (h.LOOPBACK, f.settings.port)
        rss_before = f.rss_mb()
        socks = [open_raw(tcp_addr, partial_frame(i)) for i in range(flood_n)]
        opened = time.monotonic()
        ops_test.wait_for(
            lambda: (f.closed("tcp", "connection_limit") or 0) >= extra, 10,
            f"kturnd to refuse the {extra} connections over its cap")
        peak, refused = f.connections("tcp"), f.closed("tcp", "connection_limit")
        accepted = f.value("stunner_listener_connections_total", name="tcp")
        rss_peak = f.rss_mb()
        print(f"half-open flood: {flood_n} connections in {opened - start:.1f} s; kturnd holds "
              f"{peak:.0f}, accepted {accepted:.0f}, refused {refused:.0f}; RSS "
              f"{rss_before:.1f} -> {rss_peak:.1f} MB")
        h.check(peak == CONNECTION_CAP, f"{peak} TCP connections open, want the cap "
                                        f"{CONNECTION_CAP}")
        h.check(accepted == CONNECTION_CAP and refused == extra,
                f"accepted {accepted} and refused {refused}, want {CONNECTION_CAP} and {extra}")
        # The refused ones see their connection closed by kturnd at once.
        refused_socks = [s for s in socks if closed_by_server(s)]
        h.check(len(refused_socks) == extra,
                f"{len(refused_socks)} flood connections closed by kturnd, want the {extra} "
                f"over the cap")
        # At the cap a new client is refused too (closed without an answer).
        h.check(not tcp_binding(tcp_addr), "a Binding over a new TCP connection was answered "
                                           "while the listener was at its cap")
        h.check(rss_peak - rss_before < 256,
                f"kturnd's RSS grew by {rss_peak - rss_before:.0f} MB holding {CONNECTION_CAP} "
                f"half-open connections")
        for s in socks:
            reset_close(s)
        closed_at = time.monotonic()
        flood_end = closed_at - start
        ops_test.wait_for(lambda: f.connections("tcp") == 0, 10,
                          "kturnd's TCP connections to drop to 0 once the clients closed")
        print(f"after the clients closed: 0 TCP connections open on kturnd "
              f"{time.monotonic() - closed_at:.2f} s later; idle_timeout="
              f"{f.closed('tcp', 'idle_timeout'):.0f}, framing_error="
              f"{f.closed('tcp', 'framing_error'):.0f}")
        h.check(f.closed("tcp", "framing_error") == 0,
                "partial frames were taken for framing errors")
        h.check(tcp_binding(tcp_addr), "a Binding over TCP was not answered after the flood")
        f.check_fds()
        f.finish_uclient(flood_end)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--case", choices=("tls-handshake", "half-open"), required=True)
    args, _ = p.parse_known_args()
    cases = {"tls-handshake": case_tls_handshake, "half-open": case_half_open}

    def run(a, w):
        h.check(a.server == "kturnd", "the flood tests read kturnd's /metrics: --server kturnd")
        cases[a.case](a, w)

    h.run_test(f"flood-{args.case}", run, p)


if __name__ == "__main__":
    main()
