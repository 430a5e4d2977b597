#!/usr/bin/python3
"""kturnctl's TURN client commands, turncat and icetest, through a real TURN server.

The server is kturnd (or, with --server coturn, coturn's turnserver, which checks the client
against a TURN implementation we did not write), with TURN-UDP and TURN-TCP on one port and
TURN-TLS and TURN-DTLS on another (self-signed certificate with IP:127.0.0.1). The peer is
coturn's turnutils_peer, a UDP echo server.

--case turncat: `kturnctl turncat udp://127.0.0.1:L <server URI> udp://127.0.0.1:PEER`. Two local
  UDP clients each send --messages datagrams of distinct content to L; passes only if every
  datagram comes back to the client that sent it, from L, unchanged; turncat reported one
  allocation per client, with a relayed address in the server's relay port range; SIGTERM ends
  turncat with status 0. Then `-` mode: a line on turncat's standard input comes back on its
  standard output, and the end of input ends it with status 0; piped input that ends at once
  still gets its reply printed.
--case icetest: `kturnctl icetest <server URI> -o json --progress always` with its built-in echo
  peer, in channel and send mode. Passes only if the report says every packet was sent and came
  back (0 lost), the RTT percentiles are ordered and positive, the relayed address is in the
  relay range and the transport is the one asked for (plus a TLS version for tls and dtls), and
  stderr shows the progress line. Refusals exit 1 with the reason: a wrong password (401), a
  peer outside the allowed cluster (403; kturnd only, coturn has no such allow-list), and for
  tls/dtls a certificate that is not trusted (no --insecure, no --ca-file).

--transport picks the server URI: udp, tcp, tls (turns:...?transport=tcp, verified with
--ca-file) or dtls (turns:...?transport=udp, --insecure).

  /usr/bin/python3 kturnctl_test.py --server kturnd --kturnd build/kturnd \\
      --kturnctl build/kturnctl --case icetest --transport tls
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402


def server_uri(settings: h.ServerSettings, transport: str) -> str:
    host = h.LOOPBACK
    return {
        "udp": f"turn:{host}:{settings.port}?transport=udp",
        "tcp": f"turn:{host}:{settings.port}?transport=tcp",
        "tls": f"turns:{host}:{settings.tls_port}?transport=tcp",
        "dtls": f"turns:{host}:{settings.tls_port}?transport=udp",
    }[transport]


def tls_flags(settings: h.ServerSettings, transport: str):
    if transport == "tls":
        return ["--ca-file", settings.cert_path]  # verification on, trusting the test's CA
    if transport == "dtls":
        return ["--insecure"]
    return []


def in_relay_range(settings: h.ServerSettings, address: str) -> bool:
    host, _, port = address.rpartition(":")
    return host == h.LOOPBACK and settings.relay_range[0] <= int(port) <= settings.relay_range[1]


def turncat_case(args, settings, server, workdir) -> None:
    _, peer_port = h.start_udp_echo_peer(workdir)
    user, password = settings.credentials("turncat")
    local_port = h.free_port(udp_only=True)
    argv = [args.kturnctl, "turncat", f"udp://{h.LOOPBACK}:{local_port}",
            server_uri(settings, args.transport), f"udp://{h.LOOPBACK}:{peer_port}",
            "-u", user, "-p", password] + tls_flags(settings, args.transport)
    stderr_path = os.path.join(workdir, "turncat.stderr")
    h.register_log(stderr_path)
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(argv, stderr=err, stdout=subprocess.DEVNULL)
    h.register_cleanup(lambda: proc.poll() is None and proc.kill())

    def stderr_text() -> str:
        with open(stderr_path) as f:
            return f.read()

    deadline = time.monotonic() + 10
    while "listening on" not in stderr_text():
        h.check(proc.poll() is None, f"turncat exited early ({proc.returncode}): {stderr_text()}")
        h.check(time.monotonic() < deadline, "turncat did not start listening within 10 s")
        time.sleep(0.05)

    clients = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
    for c in clients:
        c.bind((h.LOOPBACK, 0))
        c.settimeout(5)
    for i in range(args.messages):
        for k, c in enumerate(clients):
            payload = f"client {k} message {i} ".encode() + bytes([i % 256]) * (i % 300)
            c.sendto(payload, (h.LOOPBACK, local_port))
            data, source = c.recvfrom(2048)
            h.check(source == (h.LOOPBACK, local_port),
                    f"client {k}: echo came from {source}, not turncat's {local_port}")
            h.check(data == payload, f"client {k} message {i}: echoed {data[:40]!r}...")
    print(f"turncat: 2 clients x {args.messages} datagrams echoed through "
          f"{server_uri(settings, args.transport)}")

    lines = [line for line in stderr_text().splitlines() if "allocated via" in line]
    h.check(len(lines) == 2, f"want one allocation per client, turncat said: {lines}")
    for line, c in zip(lines, clients):
        client = f"{h.LOOPBACK}:{c.getsockname()[1]}"
        h.check(f"client {client} (relay " in line, f"no allocation line for {client}: {lines}")
        relay = line.split("(relay ", 1)[1].split(")", 1)[0]
        h.check(in_relay_range(settings, relay), f"relayed address {relay} not in relay range")
    for c in clients:
        c.close()

    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=10)
    h.check(rc == 0, f"turncat exited {rc} on SIGTERM: {stderr_text()}")
    server.check_alive()

    # Standard input and output as the local side.
    proc = subprocess.Popen(argv[:2] + ["-"] + argv[3:], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    h.register_cleanup(lambda: proc.poll() is None and proc.kill())
    proc.stdin.write(b"hello through the relay\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    h.check(line == b"hello through the relay\n", f"stdin mode echoed {line!r}")
    proc.stdin.close()
    rc = proc.wait(timeout=10)
    h.check(rc == 0, f"turncat - exited {rc} at the end of input: {proc.stderr.read()!r}")
    # Input that ends at once (`echo query | turncat - ...`): the reply still comes out.
    piped = subprocess.run(argv[:2] + ["-"] + argv[3:], input=b"query\n", capture_output=True,
                           timeout=20)
    h.check(piped.returncode == 0 and piped.stdout == b"query\n",
            f"piped input: exit {piped.returncode}, stdout {piped.stdout!r}, "
            f"stderr {piped.stderr!r}")
    print("turncat -: lines on stdin came back on stdout, also after the input ended")


def run_icetest(args, settings, extra, expect_rc: int, password=None):
    user, right_password = settings.credentials("icetest")
    password = password or right_password
    argv = [args.kturnctl, "icetest", server_uri(settings, args.transport), "-u", user,
            "-p", password] + extra
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    h.check(r.returncode == expect_rc,
            f"{' '.join(argv[1:])}: exit {r.returncode}, want {expect_rc}\n"
            f"stdout: {r.stdout}\nstderr: {r.stderr}")
    return r


def icetest_case(args, settings, server, workdir) -> None:
    count = args.messages
    for mode in ("channel", "send"):
        r = run_icetest(args, settings, tls_flags(settings, args.transport) + [
            "-n", str(count), "--rate", "500", "--size", "160", "--mode", mode,
            "-o", "json", "--progress", "always"], 0)
        report = json.loads(r.stdout)
        packets, rtt = report["packets"], report["rttMs"]
        h.check(packets == {"sent": count, "received": count, "lost": 0, "duplicates": 0,
                            "lossPercent": 0.0}, f"{mode}: packets {packets}")
        h.check(0 < rtt["min"] <= rtt["p50"] <= rtt["p90"] <= rtt["p99"] <= rtt["max"],
                f"{mode}: RTT percentiles out of order: {rtt}")
        h.check(rtt["min"] <= rtt["mean"] <= rtt["max"], f"{mode}: mean {rtt}")
        h.check(report["transport"] == args.transport and report["mode"] == mode,
                f"report says {report['transport']}/{report['mode']}")
        h.check(in_relay_range(settings, report["relayedAddress"]),
                f"relayed address {report['relayedAddress']} not in the relay range")
        h.check(report["builtinPeer"] and report["peer"].startswith(h.LOOPBACK + ":"),
                f"peer {report['peer']}")
        if args.transport in ("tls", "dtls"):
            h.check(report.get("security", "").startswith(("TLSv1", "DTLSv1")),
                    f"no TLS version in the report: {report.get('security')}")
        h.check(f"sent {count}/{count}" in r.stderr, f"no final progress line: {r.stderr!r}")
        print(f"icetest {mode}: {count}/{count} back, rtt p50 {rtt['p50']:.3f} ms "
              f"p99 {rtt['p99']:.3f} ms")

    # The human report.
    r = run_icetest(args, settings, tls_flags(settings, args.transport) + ["-n", "20",
                                                                           "--rate", "200"], 0)
    h.check("20 sent, 20 received, 0 lost (0.0%)" in r.stdout, f"text report: {r.stdout}")

    # Refusals.
    r = run_icetest(args, settings, tls_flags(settings, args.transport) + ["-n", "5"], 1,
                    password="not-the-password")
    h.check("401" in r.stderr, f"wrong password: {r.stderr!r}")
    if args.server == "kturnd":
        r = run_icetest(args, settings, tls_flags(settings, args.transport) + [
            "--peer", "udp://127.0.0.2:9", "-n", "5"], 1)
        h.check("403" in r.stderr, f"peer outside the cluster: {r.stderr!r}")
    if args.transport in ("tls", "dtls"):
        r = run_icetest(args, settings, ["-n", "5"], 1)
        h.check("certificate" in r.stderr, f"untrusted certificate: {r.stderr!r}")
    print("icetest refusals: exit 1 with the reason")
    server.check_alive()


def body(args, workdir) -> None:
    settings = h.ServerSettings(auth=args.auth, tcp=True, tls=True)
    with h.make_server(args, settings, workdir) as server:
        if args.case == "turncat":
            turncat_case(args, settings, server, workdir)
        else:
            icetest_case(args, settings, server, workdir)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--kturnctl", required=True, metavar="PATH", help="kturnctl binary")
    p.add_argument("--case", choices=("turncat", "icetest"), required=True)
    p.add_argument("--transport", choices=("udp", "tcp", "tls", "dtls"), default="udp")
    p.add_argument("--auth", choices=("static", "rest"), default="static")
    p.add_argument("--messages", type=int, default=100)
    h.run_test(f"kturnctl-{p.parse_known_args()[0].case}", body, p)


if __name__ == "__main__":
    main()
