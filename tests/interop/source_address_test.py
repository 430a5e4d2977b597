#!/usr/bin/python3
"""A listener on every address answers from the address the client reached, in three network
namespaces this test creates (harness.ThreeNamespaces):

    client ns  c0 10.201.1.2, default route via 10.201.1.1
    kturnd ns  s0 10.201.1.1 (relay address), lo 10.201.9.9/32 (an Anycast address, as a
               BGP-announced VIP is held), s1 10.201.2.1
    peer ns    p0 10.201.2.2 (turnutils_peer :3480)

kturnd's TURN-UDP and TURN-DTLS listeners bind every address (no bind_address, as stunnerd
does), so the kernel would choose an answer's source by route: 10.201.1.1, the address of the
interface towards the client. A client that sent to 10.201.9.9 and hears back from 10.201.1.1
drops the answer (a connected socket never sees it; Chromium ignores it). The test checks:

  * a STUN Binding request to each address is answered from that address (over an unconnected
    socket, so that a wrong source is seen, not just a missing answer);
  * coturn's turnutils_uclient relays a call through each address over UDP and over DTLS
    (uclient connects its socket to the server): all echoes back, none lost. With --engine TC
    the UDP calls' channels are relayed by the kernel fast path, which must answer from the
    address too.

Needs root (network namespaces): exits 77 (skipped, with the reason) without it.
Network safety: all traffic stays inside the three namespaces, which are deleted at the end.
"""

import argparse
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import offload_test  # noqa: E402
import uclient_test  # noqa: E402

Namespaces = h.ThreeNamespaces
in_netns = h.in_netns
CLIENT_IP, LISTENER_IP = Namespaces.CLIENT_IP, Namespaces.LISTENER_IP
PEER_IP = Namespaces.PEER_IP
ANYCAST_IP = "10.201.9.9"
UDP_PORT, DTLS_PORT, PEER_PORT = 3478, 5349, 3480


def config(engine: str, cert: str, key: str) -> dict:
    c = offload_test.namespace_config("source-address", engine)
    udp = c["listeners"][0]
    c["listeners"].append(dict(udp, name="dtls", protocol="TURN-DTLS", port=DTLS_PORT,
                               cert=h.base64_file(cert), key=h.base64_file(key)))
    return c


def binding_source(server: str) -> str:
    """The address a Binding request to server:UDP_PORT is answered from ("" for no answer)."""
    msg = h.StunMessage(h.BINDING, h.REQUEST)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((CLIENT_IP, 0))
        s.settimeout(2.0)
        s.sendto(msg.encode(), (server, UDP_PORT))
        try:
            while True:
                data, source = s.recvfrom(2048)
                resp = h.StunMessage.decode(data)
                if resp is not None and resp.tid == msg.tid:
                    return source[0]
        except socket.timeout:
            return ""


def call(ns: Namespaces, server: str, dtls: bool, workdir: str) -> dict:
    argv = ["ip", "netns", "exec", ns.client, "turnutils_uclient",
            "-p", str(DTLS_PORT if dtls else UDP_PORT), "-e", PEER_IP, "-r", str(PEER_PORT),
            "-L", CLIENT_IP, "-m", "2", "-n", "50", "-l", "120", "-z", "10", "-c",
            "-u", h.STATIC_USER, "-w", h.STATIC_PASS]
    argv += ["-S"] if dtls else []
    proc = h.Proc(f"uclient-{'dtls' if dtls else 'udp'}-{server}", argv + [server], workdir)
    h.register_log(proc.log_path)
    proc.start()
    rc = proc.wait(timeout=60)
    summary = uclient_test.parse_summary(proc.output())
    what = f"uclient over {'DTLS' if dtls else 'UDP'} to {server}"
    h.check(rc == 0 and summary["sent"] == 100 and summary["recv"] == 100 and
            summary["lost"] == 0, f"{what} (rc={rc}): {summary}")
    return summary


def body(args: argparse.Namespace, workdir: str) -> None:
    h.root_or_skip("network namespaces")
    ns = Namespaces("ksa").create()
    ns.run("ip", "-n", ns.server, "addr", "add", f"{ANYCAST_IP}/32", "dev", "lo")
    peer = h.Proc("turnutils_peer", ["ip", "netns", "exec", ns.peer, "turnutils_peer", "-L",
                                     PEER_IP, "-p", str(PEER_PORT)], workdir)
    h.register_log(peer.log_path)
    peer.start()
    cert, key = h.self_signed_cert()
    config_path = os.path.join(workdir, "config.yaml")
    with open(config_path, "w") as f:
        f.write(h.to_yaml(config(args.engine, cert, key)) + "\n")
    h.register_log(config_path)
    kturnd = h.Proc("kturnd", ["ip", "netns", "exec", ns.server, os.path.abspath(args.kturnd),
                               "-c", f"file://{config_path}"], workdir)
    h.register_log(kturnd.log_path)
    kturnd.start()
    offload_test.wait_for_listener(ns, kturnd)
    listening = offload_test.wait_for_log(kturnd, r"listener udp: TURN-UDP on \S+")
    h.check("10.201.1.1:" not in listening,
            f"kturnd bound the relay address, not every address: '{listening}'")

    results = []
    for server in (LISTENER_IP, ANYCAST_IP):
        with in_netns(ns.client):
            source = binding_source(server)
        h.check(source == server, f"a Binding request to {server} was answered from "
                f"'{source or 'nowhere'}', not from {server}")
        for dtls in (False, True):
            s = call(ns, server, dtls, workdir)
            results.append(f"{'DTLS' if dtls else 'UDP'} via {server} {s['recv']}/{s['sent']}")
    h.check(kturnd.running(), "kturnd exited")
    if args.engine == "TC":
        counts = offload_test.Counts(ns.server)
        h.check(all(counts.offloaded[d] > 0 for d in ("rx", "tx")),
                f"the kernel relayed none of the UDP calls' channels: {counts.offloaded}")
        results.append(f"kernel relayed {counts.offloaded}")
    print("source address: Binding answered from the address asked; " + ", ".join(results))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--engine", default="None", choices=("None", "TC"),
                   help="admin.offload_engine: with TC the kernel relays the bound channels")
    args, _ = p.parse_known_args()
    h.run_test("source-address", body, p)


if __name__ == "__main__":
    main()
