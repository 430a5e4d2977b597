#!/usr/bin/python3
"""kturnd with `--relay-sockets shared`: every relay port of a worker served from one socket (the
sk_lookup program bpf/kturn_relay_lookup.bpf.c) and sent from through a raw socket, so that an
allocation holds no descriptor of its own. In a network namespace this test makes, on
loopback, to coturn's turnutils_peer:

  * turnutils_uclient with its RTCP allocations (EVEN-PORT with the R bit, then
    RESERVATION-TOKEN: the reserved port of one allocation taken by the next), channels: every
    message echoed;
  * turnutils_uclient with Send indications (Data indications back): every message echoed;
  * kturn-bench holding 2,000 allocations (traffic on 100 of them): no loss, and kturnd's open
    descriptors grow by no more than a handful while they are held, where a socket per
    allocation would add 2,000; /status counts the 2,000 shared relayed addresses, and after the
    generator releases them (Refresh 0) none is left;
  * with `offload_engine: TC` too, the kernel relays at least 99 % of a uclient call each way
    (the fast path and the shared relay ports together);
  * a relay port range of 10 that holds the listener's port: kturn-bench's 9 allocations take
    the 9 other ports and the listener still answers.

Needs root (network namespaces, BPF, a raw socket): exits 77 (skipped) without it.
Network safety: all traffic stays in the namespace this test makes and deletes.
"""

import argparse
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import offload_clients_test as oc  # noqa: E402

SKIP = 77
SHARED = ["--relay-sockets", "shared"]
RELAY_PORTS = (20000, 29999)
HELD = 2000


def status(layout: oc.Layout) -> dict:
    with h.in_netns(layout.server_ns):
        with urllib.request.urlopen(f"http://{layout.listener_ip}:9086/status", timeout=5) as r:
            return json.loads(r.read())


def open_fds(kturnd: h.Proc) -> int:
    # `ip netns exec` execs kturnd: the child's pid is kturnd's.
    return len(os.listdir(f"/proc/{kturnd.proc.pid}/fd"))


def shared_addresses(layout: oc.Layout) -> int:
    relay = status(layout)["admin"].get("relay_sockets", {})
    h.check(relay.get("mode") == "shared", f"/status admin.relay_sockets: {relay}")
    return relay["shared_addresses"]


def body(args: argparse.Namespace, workdir: str) -> None:
    layout = oc.Layout("loopback")
    h.start_udp_echo_peer(workdir, host=layout.peer_ip, port=oc.PEER_PORT, netns=layout.peer_ns)

    kturnd = oc.start_kturnd(layout, "None", args.kturnd, workdir, args=SHARED,
                             relay_ports=RELAY_PORTS)
    h.check("relay sockets: shared" in kturnd.output(),
            f"kturnd did not serve its relay ports from shared sockets:\n{kturnd.output()}")
    idle_fds = open_fds(kturnd)

    before, after, sent = oc.uclient_call(layout, workdir, "-rtcp", options=())
    rtcp, allocations = shared_addresses(layout), status(layout)["allocationCount"]
    # Each allocation holds one; a port reserved by the R bit and not taken (yet) holds one too.
    h.check(0 < allocations <= rtcp <= 2 * allocations,
            f"{rtcp} shared relayed addresses for {allocations} allocations")
    print(f"uclient with RTCP allocations (EVEN-PORT, RESERVATION-TOKEN): {sent} messages "
          f"echoed; {allocations} allocations and their reservations on {rtcp} shared relayed "
          f"addresses")

    oc.uclient_call(layout, workdir, "-send", options=("-c", "-s"))
    print(f"uclient with Send indications: {sent} messages echoed")
    left = shared_addresses(layout)  # uclient leaves its allocations to expire

    result = oc.run_bench_json(layout, args.bench, workdir, [
        "--mode", "many", "-n", str(HELD), "--active", "100", "-r", "5000", "-d", "2",
        "--warmup", "0.5", "--max-packets", "20000"], during=lambda: (
            shared_addresses(layout), open_fds(kturnd)),
        # Not uclient's address: its allocations outlive it (it never releases them), and a
        # client port of the generator's that met one would get 437.
        client_ip="127.0.0.2")
    (held, fds) = result["during"]
    h.check(result["allocations"] == HELD and result["loss"] == 0,
            f"kturn-bench: {result['allocations']} allocations, loss {result['loss']}")
    h.check(held - left == HELD, f"/status shows {held - left} shared relayed addresses for "
                                 f"kturn-bench's {HELD} allocations")
    h.check(fds - idle_fds <= 8, f"kturnd's descriptors grew from {idle_fds} to {fds} while it "
                                 f"held {HELD} allocations")
    after_release = shared_addresses(layout)
    h.check(after_release == left, f"{after_release - left} shared relayed addresses left after "
                                   f"kturn-bench released its allocations")
    print(f"kturn-bench: {HELD} allocations held with {fds} descriptors open (idle: {idle_fds}), "
          f"traffic on 100 without loss; all released")
    oc.stop(kturnd)

    kturnd = oc.start_kturnd(layout, "TC", args.kturnd, workdir, tag="-tc", args=SHARED,
                             relay_ports=RELAY_PORTS)
    h.check(oc.FALLBACK not in kturnd.output(), f"kturnd fell back:\n{kturnd.output()}")
    shares = oc.check_kernel_share("uclient, TC and shared relay ports",
                                   *oc.uclient_call(layout, workdir, "-tc"))
    print(f"with TC: the kernel relayed {shares}")
    oc.stop(kturnd)

    # A relay port range that holds the listener's own port: every other port of it is relayed,
    # and the listener keeps its datagrams (the lookup, which runs before the kernel's own,
    # would otherwise hand them to the relay socket).
    # 10 ports, the listener's among them (and not the echo peer's: 3480, 3481).
    narrow = (oc.PORT - 8, oc.PORT + 1)
    kturnd = oc.start_kturnd(layout, "None", args.kturnd, workdir, tag="-narrow", args=SHARED,
                             relay_ports=narrow)
    result = oc.run_bench_json(layout, args.bench, workdir, [
        "--mode", "many", "-n", "9", "--active", "9", "-r", "1000", "-d", "1",
        "--warmup", "0.2"], client_ip="127.0.0.3")
    h.check(result["allocations"] == 9 and result["loss"] == 0,
            f"relay ports {narrow[0]}-{narrow[1]} around the listener's {oc.PORT}: "
            f"{result['allocations']} of 9 allocations, loss {result['loss']}")
    with h.in_netns(layout.client_ns):
        h.check(h.stun_binding_probe((layout.listener_ip, oc.PORT), timeout=1) is not None,
                "the listener stopped answering once the range's other ports were relayed")
    print(f"relay ports {narrow[0]}-{narrow[1]}: 9 allocations on the 9 that are not the "
          f"listener's, which still answers")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--bench", required=True, help="the kturn-bench binary")
    args, _ = p.parse_known_args()
    if os.geteuid() != 0 or not os.path.isdir("/proc/sys/net"):
        print("SKIP: needs root for network namespaces, BPF and a raw socket")
        sys.exit(SKIP)
    h.run_test("shared-relays", body, p)


if __name__ == "__main__":
    main()
