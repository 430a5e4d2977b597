#!/usr/bin/python3
"""RFC 8016 mobility: a client that changes address takes its allocation along.

kturnd runs `admin.mobility: true` with two workers, so that a client's new address usually
reaches the other worker than the one holding its allocation (SO_REUSEPORT hashes the 4-tuple).

  1. coturn's turnutils_uclient -M: every client asks for mobility at Allocate, then opens a new
     socket (a new address), sends its Refresh with the MOBILITY-TICKET from there (twice, and
     reads the second answer), binds channels and sends its messages from the new address. Every
     message must come back: zero loss after the move. kturnd's log must show moves between
     workers, and kturn_mobility_total{outcome="moved"} count every client's moves.
  2. The RFC's errors, with the harness's own client: a forged ticket is 400 (Bad Request), the
     ticket of before a move is stale, 437 (Allocation Mismatch), the old address has no
     allocation left (437), the ticket alone moves nothing (401 with the wrong password), and the
     peer's data reaches the new address only.
  3. Mobility off (SIGHUP with `admin.mobility` removed): an Allocate asking for it is 405
     (Mobility Forbidden), as in coturn without --mobility.

  /usr/bin/python3 mobility_test.py --server kturnd --kturnd build/kturnd
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import ops_test  # noqa: E402

A_MOBILITY_TICKET = 0x8030
CLIENTS, MESSAGES = 10, 50


def allocate_mobile(client: h.TurnClient):
    def build(m: h.StunMessage) -> None:
        m.add(h.A_REQUESTED_TRANSPORT, bytes([17, 0, 0, 0]))
        m.add(A_MOBILITY_TICKET, b"")
    return client.request(h.ALLOCATE, build)


def refresh_with(client: h.TurnClient, ticket: bytes) -> h.StunMessage:
    def build(m: h.StunMessage) -> None:
        m.add_u32(h.A_LIFETIME, 600)
        m.add(A_MOBILITY_TICKET, ticket)
    return client.request(h.REFRESH, build)


def moved_client(server, first: h.TurnClient, password: str = h.STATIC_PASS) -> h.TurnClient:
    """A client on a new socket (a new address) with `first`'s credentials and nonce."""
    c = h.TurnClient(server, h.STATIC_USER, password)
    c.realm, c.nonce = first.realm, first.nonce
    c.key = h.long_term_key(h.STATIC_USER, c.realm or "", password)
    return c


def code(resp: h.StunMessage) -> int:
    return (resp.error_code() or (0, ""))[0]


def echoed(client: h.TurnClient, peer, payload: bytes) -> bool:
    """Sends `payload` to the echo peer through the client's allocation; True if it comes back
    to this client's address as a Data indication."""
    client.send_indication(peer, payload)
    for pkt in client.drain(1.0):
        m = h.StunMessage.decode(pkt)
        if m is not None and m.method == h.DATA and m.get(h.A_DATA) == payload:
            return True
    return False


def body(args, workdir):
    metrics_port = h.free_port()
    settings = h.ServerSettings(auth="static", relay_range=h.relay_port_range(size=200))
    config = h.KturndServer.config_for(settings)
    config["admin"]["mobility"] = True
    config["admin"]["metrics_endpoint"] = f"http://127.0.0.1:{metrics_port}/metrics"
    with h.KturndServer(args.kturnd, config, workdir=workdir, settings=settings,
                        loglevel="all:INFO", extra_args=["--workers", "2"]) as s:
        _, peer_port = h.start_udp_echo_peer(workdir)
        peer = (h.LOOPBACK, peer_port)

        # 1. uclient -M.
        argv = ops_test.uclient_argv(s, peer_port, CLIENTS, MESSAGES, 10)
        argv.insert(1, "-M")
        summary = ops_test.run_uclient(workdir, argv)
        h.check(summary["sent"] == CLIENTS * MESSAGES and summary["recv"] == summary["sent"] and
                summary["lost"] == 0, f"uclient -M: {summary}")
        across = re.findall(r"worker (\d): a MOBILITY-TICKET from \S+ names worker (\d)",
                            s.proc.output())
        samples = ops_test.metric_samples(metrics_port)
        moved = samples[("kturn_mobility_total", (("listener", "udp"), ("outcome", "moved")))]
        h.check(moved >= CLIENTS, f"kturn_mobility_total moved={moved}, want >= {CLIENTS}")
        h.check(across and all(a != b for a, b in across),
                f"no move between workers in {moved:.0f} moves: {across}")
        print(f"uclient -M: {CLIENTS} clients moved to new addresses ({moved:.0f} moves, "
              f"{len(across)} of them between the two workers), {summary['recv']}/"
              f"{summary['sent']} echoed after the move, lost {summary['lost']}")

        # 2. The RFC's errors.
        with h.TurnClient(s.address, h.STATIC_USER, h.STATIC_PASS) as first:
            resp = allocate_mobile(first)
            h.check(resp.cls == h.SUCCESS, f"Allocate asking for mobility: {resp.describe()}")
            ticket = resp.get(A_MOBILITY_TICKET)
            h.check(ticket is not None and len(ticket) == 32 and b"\0" not in ticket,
                    f"the Allocate answer's MOBILITY-TICKET: {ticket!r}")
            relayed = resp.get_xor_address(h.A_XOR_RELAYED_ADDRESS)
            h.check(first.create_permission(peer).cls == h.SUCCESS, "CreatePermission")
            h.check(echoed(first, peer, b"before"), "no echo before the move")

            with moved_client(s.address, first) as intruder:
                forged = bytes([ticket[0] ^ 0x01]) + ticket[1:]
                got = code(refresh_with(intruder, forged))
                h.check(got == 400, f"a forged ticket: {got}, want 400")
            with moved_client(s.address, first, password="wrong") as thief:
                got = code(refresh_with(thief, ticket))
                h.check(got == 401, f"the ticket with the wrong password: {got}, want 401")
            h.check(echoed(first, peer, b"still"), "the allocation moved without credentials")

            with moved_client(s.address, first) as second:
                resp = refresh_with(second, ticket)
                h.check(resp.cls == h.SUCCESS, f"the moving Refresh: {resp.describe()}")
                next_ticket = resp.get(A_MOBILITY_TICKET)
                h.check(next_ticket and next_ticket != ticket, "no new ticket after the move")
                h.check(echoed(second, peer, b"after"), "no echo at the new address")
                h.check(not echoed(first, peer, b"old"), "the old address still relays")
                got = code(first.refresh(600))
                h.check(got == 437, f"a Refresh from the old address: {got}, want 437")
                with moved_client(s.address, first) as third:
                    got = code(refresh_with(third, ticket))
                    h.check(got == 437, f"the ticket of before the move: {got}, want 437")
                h.check(echoed(second, peer, b"kept"), "the stale ticket moved the allocation")
        samples = ops_test.metric_samples(metrics_port)
        refused = samples[("kturn_mobility_total", (("listener", "udp"), ("outcome", "refused")))]
        h.check(refused >= 2, f"kturn_mobility_total refused={refused}, want >= 2")
        print(f"relayed {relayed[0]}:{relayed[1]} kept across the move; forged ticket 400, "
              f"wrong password 401, old address 437, stale ticket 437 "
              f"(kturn_mobility_total refused={refused:.0f})")

        # 3. Mobility off.
        del config["admin"]["mobility"]
        s.reload(config)
        with h.TurnClient(s.address, h.STATIC_USER, h.STATIC_PASS) as late:
            got = code(allocate_mobile(late))
            h.check(got == 405, f"Allocate asking for mobility with it off: {got}, want 405")
        s.check_alive()
        print("mobility off: an Allocate asking for it is 405 Mobility Forbidden")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    args, _ = p.parse_known_args()
    h.run_test("mobility", body, p)


if __name__ == "__main__":
    main()
