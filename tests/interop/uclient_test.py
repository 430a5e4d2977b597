#!/usr/bin/python3
"""coturn's turnutils_uclient (a real TURN client) against the server under test.

turnutils_peer (UDP echo) listens on 127.0.0.1; uclient allocates, installs permissions or
channels, sends -n messages per client to the peer through the relay and counts the echoes.
Passes only if uclient exits 0, every message came back (received == sent == clients * n > 0,
same for bytes) and uclient reports zero lost and zero send-dropped packets.

  /usr/bin/python3 uclient_test.py --server coturn --auth rest --mode send
  /usr/bin/python3 uclient_test.py --server kturnd --kturnd build/kturnd --auth static
  /usr/bin/python3 uclient_test.py --server kturnd --kturnd build/kturnd --transport tcp
  /usr/bin/python3 uclient_test.py --server kturnd --kturnd build/kturnd --transport tls
  /usr/bin/python3 uclient_test.py --server kturnd --kturnd build/kturnd --transport dtls
  /usr/bin/python3 uclient_test.py --server kturnd --kturnd build/kturnd --family v6
  /usr/bin/python3 uclient_test.py --server kturnd --kturnd build/kturnd --transport tcp \
      --tcp-relay

With --tcp-relay (uclient -T, RFC 6062) there is no turnutils_peer: every client allocates a TCP
relay, Connects to every other client's relayed address (full mesh, each connection offered to
its target with a ConnectionAttempt), binds data connections and sends its messages over them.
"""

import argparse
import os
import re
import sys
from typing import Dict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

# The summary uclient prints at the end (coturn 4.6.1), e.g.
#   4: : start_mclient: tot_send_msgs=500, tot_recv_msgs=500
#   4: : start_mclient: tot_send_bytes ~ 60000, tot_recv_bytes ~ 60000
#   4: : Total transmit time is 4
#   4: : Total lost packets 0 (0.000000%), total send dropped 0 (0.000000%)
# (the progress lines also say "tot_send_msgs=" but carry "msz=" first; they are skipped).
RE_MSGS = re.compile(r"start_mclient: tot_send_msgs=(\d+), tot_recv_msgs=(\d+)\s*$", re.M)
RE_BYTES = re.compile(r"start_mclient: tot_send_bytes ~ (\d+), tot_recv_bytes ~ (\d+)\s*$",
                      re.M)
RE_LOST = re.compile(r"Total lost packets (\d+) \(([\d.]+)%\), total send dropped (\d+) "
                     r"\(([\d.]+)%\)")
RE_CONNECT = re.compile(r"Total connect time is (\d+)")
# uclient -T, after binding the data connections (or giving up waiting for them):
#   0: : 12 connections are completed
#   35: : WARNING: 8 connections are completed, not enough
RE_TCP_COMPLETED = re.compile(r"(WARNING: )?(\d+) connections are completed")
RE_TRANSMIT = re.compile(r"Total transmit time is (\d+)")


def parse_summary(out: str) -> Dict[str, int]:
    def last(rx, what):
        found = rx.findall(out)
        h.check(bool(found), f"uclient output has no '{what}' summary line (did it run?)")
        return found[-1]

    sent, recv = map(int, last(RE_MSGS, "tot_send_msgs=N, tot_recv_msgs=N"))
    sent_b, recv_b = map(int, last(RE_BYTES, "tot_send_bytes ~ N, tot_recv_bytes ~ N"))
    lost, _, dropped, _ = last(RE_LOST, "Total lost packets")
    connect = RE_CONNECT.findall(out)
    transmit = RE_TRANSMIT.findall(out)
    return {"sent": sent, "recv": recv, "sent_bytes": sent_b, "recv_bytes": recv_b,
            "lost": int(lost), "dropped": int(dropped),
            "connect_s": int(connect[-1]) if connect else -1,
            "transmit_s": int(transmit[-1]) if transmit else -1}


def body(args: argparse.Namespace, workdir: str) -> None:
    host = h.LOOPBACK6 if args.family == "v6" else h.LOOPBACK
    settings = h.ServerSettings(auth=args.auth, tcp=args.transport == "tcp",
                                tls=args.transport in ("tls", "dtls"), host=host,
                                allowed=[f"{host}/{128 if args.family == 'v6' else 32}"],
                                tcp_relay=args.tcp_relay)
    with h.make_server(args, settings, workdir) as server:
        # uclient -T relays between its own clients; otherwise a UDP echo peer answers.
        peer_port = 3480 if args.tcp_relay else h.start_udp_echo_peer(workdir, host=host)[1]
        port = settings.tls_port if args.transport in ("tls", "dtls") else server.port
        argv = ["turnutils_uclient", "-p", str(port),
                "-e", host, "-r", str(peer_port), "-L", host,
                "-m", str(args.clients), "-n", str(args.messages),
                "-l", str(args.length), "-z", str(args.interval)]
        if args.auth == "static":
            argv += ["-u", settings.username, "-w", settings.password]
        else:  # uclient derives "<now+86400>:<user>" and base64(HMAC-SHA1) itself
            argv += ["-W", settings.secret, "-u", "someuser"]
        if args.mode == "send":
            argv.append("-s")
        if args.no_rtcp:
            argv.append("-c")
        if args.transport == "tcp":
            argv.append("-t")  # TURN over TCP to the server; the relay leg stays UDP
        if args.transport == "tls":
            argv += ["-t", "-S"]  # TURN over TLS (uclient does not verify the certificate)
        if args.transport == "dtls":
            argv.append("-S")  # TURN over DTLS
        if args.family == "v6":
            argv.append("-x")  # REQUESTED-ADDRESS-FAMILY IPv6: an IPv6 relay to the IPv6 peer
        if args.tcp_relay:
            argv.append("-T")  # TCP relays between the clients (implies -t, -y and -c)
        argv.append(host)

        uclient = h.Proc("turnutils_uclient", argv, workdir)
        h.register_log(uclient.log_path)
        uclient.start()
        rc = uclient.wait(timeout=args.uclient_timeout)
        out = uclient.output()
        h.check(rc == 0, f"turnutils_uclient exited with {rc} (255 = it gave up, e.g. "
                         f"'Cannot complete Allocation'); last lines:\n"
                + "\n".join(out.splitlines()[-8:]))
        server.check_alive()

        s = parse_summary(out)
        expected = args.clients * args.messages
        print(f"uclient summary: {s} (expected {expected} messages of {args.length} B)")
        h.check(s["sent"] > 0 and s["recv"] > 0,
                f"nothing was relayed: sent={s['sent']} received={s['recv']}")
        h.check(s["sent"] == expected,
                f"uclient sent {s['sent']} messages, expected clients*n = {expected}")
        h.check(s["recv"] == s["sent"],
                f"uclient received {s['recv']} of {s['sent']} messages")
        h.check(s["sent_bytes"] == s["recv_bytes"] == expected * args.length,
                f"bytes sent/received {s['sent_bytes']}/{s['recv_bytes']}, expected "
                f"{expected * args.length} both ways")
        if args.tcp_relay:
            # A full mesh: each client's relay connected to every other client's, both ends
            # bound to a data connection.
            completed = RE_TCP_COMPLETED.findall(out)
            h.check(bool(completed), "uclient -T printed no 'connections are completed' line")
            warning, count = completed[-1]
            wanted = args.clients * (args.clients - 1)
            h.check(not warning and int(count) == wanted,
                    f"uclient bound {count} data connections, expected {wanted}")
            print(f"uclient -T: {count} data connections bound")
        h.check(s["lost"] == 0, f"uclient reports {s['lost']} lost packets")
        h.check(s["dropped"] == 0, f"uclient reports {s['dropped']} send-dropped packets")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--auth", choices=("static", "rest"), default="static",
                   help="static long-term user, or TURN REST API shared secret (-W)")
    p.add_argument("--mode", choices=("channel", "send"), default="channel",
                   help="ChannelData (uclient default) or Send/Data indications (-s)")
    p.add_argument("--no-rtcp", action="store_true",
                   help="uclient -c: no RTCP allocations (no EVEN-PORT R=1 / "
                        "RESERVATION-TOKEN pairs)")
    p.add_argument("--family", choices=("v4", "v6"), default="v4",
                   help="v6: server, relay (uclient -x) and peer on ::1")
    p.add_argument("--transport", choices=("udp", "tcp", "tls", "dtls"), default="udp",
                   help="client-to-server transport (uclient -t for tcp, -t -S for tls, -S for "
                        "dtls)")
    p.add_argument("--tcp-relay", action="store_true",
                   help="uclient -T: RFC 6062 TCP allocations between the clients (needs "
                        "--transport tcp or tls)")
    p.add_argument("--clients", type=int, default=10, help="uclient -m")
    p.add_argument("--messages", type=int, default=50, help="uclient -n, per client")
    p.add_argument("--length", type=int, default=120, help="uclient -l, bytes")
    p.add_argument("--interval", type=int, default=5, help="uclient -z, ms")
    p.add_argument("--uclient-timeout", type=float, default=60.0)
    args, _ = p.parse_known_args()
    family = "6" if args.family == "v6" else ""
    name = (f"uclient-{args.transport}{family}-{args.auth}-{args.mode}"
            f"{'-nortcp' if args.no_rtcp else ''}{'-tcprelay' if args.tcp_relay else ''}")
    h.run_test(name, body, p)


if __name__ == "__main__":
    main()
