#!/usr/bin/python3
"""Capacity-aware readiness and redirect when full (docs/operations.md), against real clients.

  --case readiness  admin.capacity.allocations 8, resume_percent 60: uclient holds a call while
                    allocations are added up to the mark; /ready and /capacity turn 503 (the
                    time from the mark to 503 is printed), stay 503 at 6 allocations (under the
                    mark, over the resume point 4.8), turn 200 at 4; a new Allocate is served
                    meanwhile, and the call loses nothing.
  --case bandwidth  admin.capacity.relay_kbps 2000: a client relaying about 8 Mbit/s through a
                    channel turns /ready 503; once it stops /ready turns 200 again (printed).
  --case redirect   kturnd A at admin.limits.max_allocations 1, its listener's alternate_servers
                    naming kturnd B: with A full, coturn's turnutils_uclient follows the 300 Try
                    Alternate to B and relays through it with no loss, and an aioice TURN client
                    that is handed the redirect allocates on B and relays; A counts the redirects.
  --case redirect-over-mark
                    kturnd A at admin.capacity.allocations 4 with --force-ready-status (no
                    max_allocations), alternate_servers naming kturnd B: 4 clients hold
                    allocations on A; once /capacity reports over (and /ready stays 200), a new
                    Allocate is answered 300 naming B, coturn's turnutils_uclient follows it and
                    relays through B with no loss, and the 4 on A keep refreshing and relaying;
                    once one leaves (under the resume point) A grants again.
  --case redirect-tls
                    The same over TURN-TLS, with certificates from a CA of the test's for two
                    names, A's turn-a.kturn.test and B's turn-b.kturn.test, and A's TLS listener
                    naming B's TLS address and alternate_domain turn-b.kturn.test: with A over
                    its mark, coturn's turnutils_uclient over TLS follows the 300 to B and relays
                    with no loss; a client that verifies certificates (Python's ssl, OpenSSL)
                    gets from A, over a connection verified as turn-a.kturn.test, the 300 with
                    ALTERNATE-SERVER B, ALTERNATE-DOMAIN turn-b.kturn.test and its
                    MESSAGE-INTEGRITY; B's certificate is refused as turn-a.kturn.test (the
                    original name: where a redirect breaks without the attribute, coturn's issue
                    358) and accepted as the ALTERNATE-DOMAIN, and B grants the allocation.

  /usr/bin/python3 capacity_test.py --server kturnd --kturnd build/kturnd --case readiness
"""

import argparse
import asyncio
import json
import os
import ssl
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import ops_test  # noqa: E402
import uclient_test  # noqa: E402


def start_kturnd(args, workdir, admin, listener=None, extra_args=()):
    """kturnd with static credentials, its health and metrics endpoint on a free port."""
    health = h.free_port()
    settings = h.ServerSettings(auth="static")
    config = h.KturndServer.config_for(settings)
    config["admin"].update(admin)
    config["admin"]["healthcheck_endpoint"] = f"http://127.0.0.1:{health}"
    config["admin"]["metrics_endpoint"] = f"http://127.0.0.1:{health}/metrics"
    config["listeners"][0].update(listener or {})
    server = h.KturndServer(args.kturnd, config, workdir=workdir, settings=settings,
                            loglevel="all:INFO", extra_args=list(extra_args))
    server.health = health
    return server


def ready(server) -> int:
    return ops_test.http_get(server.health, "/ready")[0]


def capacity(server):
    status, body = ops_test.http_get(server.health, "/capacity")
    return status, json.loads(body)


def wait_ready(server, want: int, timeout: float) -> float:
    """Seconds until /ready answers `want` (bounded by `timeout`)."""
    start = time.monotonic()
    ops_test.wait_for(lambda: ready(server) == want, timeout, f"/ready to answer {want}")
    return time.monotonic() - start


def stays(server, want: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status = ready(server)
        h.check(status == want, f"/ready answered {status}, want {want} throughout")
        time.sleep(0.1)


def case_readiness(args, workdir):
    with start_kturnd(args, workdir, {"capacity": {"allocations": 8, "resume_percent": 60}}) as s:
        _, peer_port = h.start_udp_echo_peer(workdir)
        h.check(ready(s) == 200, "/ready is not 200 before any load")
        status, body = capacity(s)
        h.check(status == 200 and body["allocations"]["mark"] == 8 and
                abs(body["allocations"]["resume"] - 4.8) < 1e-9,
                f"/capacity before any load: {status} {body}")
        # A call: 2 clients (4 allocations, uclient makes two per client) x 400 messages every
        # 20 ms, about 8 s of traffic across the whole test.
        call = h.Proc("turnutils_uclient", ops_test.uclient_argv(s, peer_port, 2, 400, 20),
                      workdir)
        h.register_log(call.log_path)
        call.start()
        ops_test.wait_for(lambda: ops_test.allocation_count(s.health) >= 4, 10,
                          "uclient's 4 allocations")
        user, password = s.settings.credentials()
        extra = [h.TurnClient(s.address, user, password) for _ in range(4)]
        try:
            for c in extra:
                c.allocate()
            reached = time.monotonic()
            h.check(ops_test.allocation_count(s.health) == 8, "not 8 allocations")
            wait_ready(s, 503, 5)
            withdraw = time.monotonic() - reached
            status, body = capacity(s)
            h.check(status == 503 and body["over_capacity"] and
                    body["allocations"]["headroom"] == 0, f"/capacity at the mark: {status} {body}")
            status, text = ops_test.http_get(s.health, "/status")
            h.check(json.loads(text).get("status") == "READY",
                    f"/status left READY while over capacity: {text}")
            samples = ops_test.metric_samples(s.health)
            h.check(samples.get(("kturn_capacity_over", ()), -1) == 1 and
                    samples.get(("kturn_capacity_headroom", (("measure", "allocations"),)),
                                -1) == 0,
                    "kturn_capacity_over is not 1 or the allocations headroom not 0")
            # Over capacity is a signal to load balancers, not a refusal: a new client is served.
            with h.TurnClient(s.address, user, password) as late:
                late.allocate()
                h.check(late.create_permission((h.LOOPBACK, peer_port)).error_code() is None,
                        "CreatePermission refused while over capacity")
                h.check(late.refresh(0).error_code() is None, "Refresh(0) failed")
            # Under the mark, over the resume point: 503 holds (hysteresis).
            for c in extra[:2]:
                h.check(c.refresh(0).error_code() is None, "Refresh(0) failed")
            stays(s, 503, 2.5)
            # Under the resume point: 200 again.
            for c in extra[2:]:
                h.check(c.refresh(0).error_code() is None, "Refresh(0) failed")
            resume = wait_ready(s, 200, 5)
            status, body = capacity(s)
            h.check(status == 200 and not body["over_capacity"] and body["transitions"] == 2,
                    f"/capacity after the load fell: {status} {body}")
            h.check(ops_test.metric_samples(s.health).get(("kturn_capacity_over", ()), -1) == 0,
                    "kturn_capacity_over is not 0 once under the resume point")
        finally:
            for c in extra:
                c.close()
        rc = call.wait(timeout=60)
        h.check(rc == 0, f"uclient failed (rc={rc})")
        summary = uclient_test.parse_summary(call.output())
        h.check(summary["sent"] == 800 and summary["recv"] == 800 and summary["lost"] == 0,
                f"the call lost packets while readiness flipped: {summary}")
        s.check_alive()
        print(f"readiness: /ready 503 {withdraw:.2f} s after the 8th allocation, 200 again "
              f"{resume:.2f} s after falling to 4 (resume point 4.8); the call echoed "
              f"{summary['recv']}/{summary['sent']}")


def case_bandwidth(args, workdir):
    with start_kturnd(args, workdir, {"capacity": {"relay_kbps": 2000,
                                                   "resume_percent": 50}}) as s:
        _, peer_port = h.start_udp_echo_peer(workdir)
        user, password = s.settings.credentials()
        with h.TurnClient(s.address, user, password) as c:
            c.allocate()
            h.check(c.channel_bind(0x4001, (h.LOOPBACK, peer_port)).error_code() is None,
                    "ChannelBind refused")
            stop = threading.Event()
            sent = [0]

            def load():
                # 1,000-byte payloads at about 500 a second each way: some 8 Mbit/s relayed.
                payload = b"b" * 1000
                deadline = time.monotonic() + 20
                while not stop.is_set() and time.monotonic() < deadline and sent[0] < 10000:
                    c.send_channel_data(0x4001, payload)
                    sent[0] += 1
                    time.sleep(0.002)

            thread = threading.Thread(target=load, daemon=True)
            thread.start()
            try:
                withdraw = wait_ready(s, 503, 10)
                status, body = capacity(s)
                h.check(status == 503 and body["relay_kbps"]["value"] >= 2000,
                        f"/capacity under load: {status} {body}")
                load_kbps = body["relay_kbps"]["value"]
            finally:
                stop.set()
                thread.join()
            resume = wait_ready(s, 200, 10)
            status, body = capacity(s)
            h.check(status == 200 and body["relay_kbps"]["value"] < 1000,
                    f"/capacity once idle: {status} {body}")
        s.check_alive()
        print(f"bandwidth: {load_kbps:.0f} kbit/s relayed, /ready 503 {withdraw:.2f} s after the "
              f"load started, 200 {resume:.2f} s after it stopped")


def redirects(server) -> float:
    samples = ops_test.metric_samples(server.health)
    return samples.get(("kturn_allocations_rejected_total",
                        (("listener", "udp"), ("reason", "try_alternate"))), 0)


async def aioice_redirected(full, sibling, peer_port: int, user: str, password: str) -> str:
    import aioice.stun
    import aioice.turn
    # aioice 0.8's codec has no entry for RFC 8489's ALTERNATE-SERVER; an application that
    # follows redirects teaches it the attribute (MAPPED-ADDRESS's layout, which it has).
    aioice.stun.ATTRIBUTES_BY_TYPE.setdefault(
        0x8023, (0x8023, "ALTERNATE-SERVER", aioice.stun.pack_address,
                 aioice.stun.unpack_address))

    class Echoes(asyncio.DatagramProtocol):
        def __init__(self):
            self.received = asyncio.Queue()

        def datagram_received(self, data, addr):
            self.received.put_nowait(data)

    try:
        await aioice.turn.create_turn_endpoint(Echoes, full.address, user, password)
        raise h.TestFailure("aioice allocated on the full server")
    except aioice.stun.TransactionFailed as e:
        code = e.response.attributes["ERROR-CODE"][0]
        h.check(code == 300, f"aioice's Allocate on the full server got {code}, want 300")
        alternate = e.response.attributes.get("ALTERNATE-SERVER")
    h.check(tuple(alternate) == sibling.address,
            f"ALTERNATE-SERVER {alternate}, want the sibling {sibling.address}")
    transport, protocol = await aioice.turn.create_turn_endpoint(
        Echoes, tuple(alternate), user, password)
    try:
        relayed = transport.get_extra_info("sockname")
        for i in range(5):
            transport.sendto(f"redirected {i}".encode(), (h.LOOPBACK, peer_port))
        got = [await asyncio.wait_for(protocol.received.get(), 5) for _ in range(5)]
        h.check(sorted(got) == sorted(f"redirected {i}".encode() for i in range(5)),
                f"aioice's echoes through the sibling: {got}")
        return f"{relayed[0]}:{relayed[1]}"
    finally:
        transport.close()


def uclient_through_sibling(workdir, full, peer_port, sibling):
    """A uclient call (1 client, 50 messages) to `full`, which redirects it: every message
    echoed, and the sibling created the allocation and relayed it (uclient deletes its
    allocations at the end, so the sibling's counters say so). The call's summary, and how
    many allocations the sibling created."""
    summary = ops_test.run_uclient(workdir, ops_test.uclient_argv(full, peer_port, 1, 50, 10))
    h.check(summary["sent"] == 50 and summary["recv"] == 50 and summary["lost"] == 0,
            f"uclient through the sibling: {summary}")
    samples = ops_test.metric_samples(sibling.health)
    on_sibling = samples.get(("kturn_allocations_created_total", (("listener", "udp"),)), 0)
    relayed = sum(v for (name, labels), v in samples.items()
                  if name == "kturn_relayed_packets_total")
    h.check(on_sibling >= 1 and relayed >= 100,
            f"uclient's call did not go through the sibling: {on_sibling} allocations created "
            f"there, {relayed} packets relayed")
    return summary, on_sibling


def case_redirect(args, workdir):
    sibling = start_kturnd(args, os.path.join(workdir, "b"), {})
    os.makedirs(sibling.workdir, exist_ok=True)
    with sibling:
        full = start_kturnd(
            args, os.path.join(workdir, "a"), {"limits": {"max_allocations": 1}},
            listener={"alternate_servers": [f"{sibling.host}:{sibling.port}"]},
            # One worker: the process-wide cap is shared among workers, so with one it is exact.
            extra_args=["--udp-thread-num", "1"])
        os.makedirs(full.workdir, exist_ok=True)
        with full:
            _, peer_port = h.start_udp_echo_peer(workdir)
            user, password = full.settings.credentials()
            with h.TurnClient(full.address, user, password) as holder:
                holder.allocate()  # A is full now
                resp = h.TurnClient(full.address, user, password)
                try:
                    reply = resp.request(h.ALLOCATE, lambda m: m.add(h.A_REQUESTED_TRANSPORT,
                                                                     bytes([17, 0, 0, 0])))
                finally:
                    resp.close()
                h.check((reply.error_code() or (0,))[0] == 300,
                        f"the full server did not answer 300: {reply.describe()}")
                # uclient: 1 client, 50 messages; its first Allocate meets the full server.
                summary, on_sibling = uclient_through_sibling(workdir, full, peer_port, sibling)
                relayed_at = asyncio.run(
                    aioice_redirected(full, sibling, peer_port, user, password))
                count = redirects(full)
                h.check(count >= 3, f"the full server counted {count} redirects, want >= 3 "
                                    "(ours, uclient's, aioice's)")
                h.check(ops_test.allocation_count(full.health) == 1,
                        "the full server holds more than its one allocation")
            full.check_alive()
        sibling.check_alive()
    print(f"redirect: uclient followed 300 to the sibling ({summary['recv']}/{summary['sent']} "
          f"echoed, {on_sibling:.0f} allocations there), aioice relayed from {relayed_at} on it; "
          f"{count:.0f} redirects counted")


def echoed(client, channel: int, count: int) -> int:
    """Sends `count` ChannelData messages on `channel` and counts the echoes that come back."""
    for i in range(count):
        client.send_channel_data(channel, f"held {i}".encode())
    got, deadline = 0, time.monotonic() + 3
    while got < count and time.monotonic() < deadline:
        got += sum(1 for p in client.drain(0.2) if len(p) >= 4 and
                   int.from_bytes(p[:2], "big") == channel)
    return got


def case_redirect_over_mark(args, workdir):
    # What multi-region operators run (docs/operations.md#capacity-aware-readiness): readiness
    # never withdraws the route (--force-ready-status), and the marks redirect only new users.
    mark = 4
    sibling = start_kturnd(args, os.path.join(workdir, "b"), {})
    os.makedirs(sibling.workdir, exist_ok=True)
    with sibling:
        full = start_kturnd(
            args, os.path.join(workdir, "a"), {"capacity": {"allocations": mark}},
            listener={"alternate_servers": [f"{sibling.host}:{sibling.port}"]},
            extra_args=["--force-ready-status"])
        os.makedirs(full.workdir, exist_ok=True)
        with full:
            _, peer_port = h.start_udp_echo_peer(workdir)
            peer = (h.LOOPBACK, peer_port)
            user, password = full.settings.credentials()
            holders = [h.TurnClient(full.address, user, password) for _ in range(mark)]
            try:
                for c in holders:
                    c.allocate()
                    h.check(c.channel_bind(0x4001, peer).error_code() is None,
                            "ChannelBind refused under the mark")
                reached = time.monotonic()
                # The capacity thread samples once a second.
                ops_test.wait_for(lambda: capacity(full)[1]["over_capacity"], 5,
                                  "/capacity to report over the allocations mark")
                over_after = time.monotonic() - reached
                h.check(capacity(full)[0] == 503, "/capacity over the mark did not answer 503")
                h.check(ready(full) == 200, "/ready left 200 despite --force-ready-status")

                probe = h.TurnClient(full.address, user, password)
                try:
                    reply = probe.request(h.ALLOCATE, lambda m: m.add(h.A_REQUESTED_TRANSPORT,
                                                                      bytes([17, 0, 0, 0])))
                    h.check((reply.error_code() or (0,))[0] == 300,
                            f"a new Allocate over the mark got {reply.describe()}, want 300")
                    alternate = h.unpack_address(reply.get(h.A_ALTERNATE_SERVER) or b"")
                    h.check(tuple(alternate) == sibling.address,
                            f"ALTERNATE-SERVER {alternate}, want the sibling {sibling.address}")
                    h.check(reply.check_integrity(probe.key),
                            "the 300 does not carry the client's MESSAGE-INTEGRITY")
                finally:
                    probe.close()

                # uclient: 1 client, 50 messages; its Allocate meets A over the mark.
                summary, on_sibling = uclient_through_sibling(workdir, full, peer_port, sibling)

                # The allocations held on A are untouched: they refresh and relay.
                for i, c in enumerate(holders):
                    h.check(c.refresh(600).error_code() is None,
                            f"holder {i}'s Refresh failed over the mark")
                    got = echoed(c, 0x4001, 5)
                    h.check(got == 5, f"holder {i} got {got}/5 echoes over the mark")
                count = redirects(full)
                h.check(count >= 2, f"A counted {count} redirects, want >= 2 (ours, uclient's)")
                h.check(ops_test.allocation_count(full.health) == mark,
                        f"A holds other than its {mark} allocations")

                # Under the resume point (90 % of 4: 3.6) A grants new Allocates again.
                h.check(holders[0].refresh(0).error_code() is None, "Refresh(0) failed")
                ops_test.wait_for(lambda: not capacity(full)[1]["over_capacity"], 5,
                                  "/capacity to report under the resume point")
                with h.TurnClient(full.address, user, password) as late:
                    late.allocate()
            finally:
                for c in holders:
                    c.close()
            full.check_alive()
        sibling.check_alive()
    print(f"redirect over the mark: /capacity over {over_after:.2f} s after the {mark}th "
          f"allocation (/ready 200 throughout), uclient followed 300 to the sibling "
          f"({summary['recv']}/{summary['sent']} echoed, {on_sibling:.0f} allocations there), "
          f"the {mark} allocations held refreshed and echoed 5/5 each; {count:.0f} redirects")


def add_tls_listener(server, cert: str, key: str, **extra) -> None:
    """A TURN-TLS listener beside the server's TURN-UDP one (same relay ports and routes), on a
    port of its own, with `cert`/`key`; its address in server.tls_address."""
    port = h.free_port()
    udp = server.config["listeners"][0]
    server.config["listeners"].append(dict(udp, name="tls", protocol="TURN-TLS", port=port,
                                           cert=h.base64_file(cert), key=h.base64_file(key),
                                           **extra))
    server.tls_address = (server.host, port)


def case_redirect_tls(args, workdir):
    names = ("turn-a.kturn.test", "turn-b.kturn.test")
    ca, certs = h.ca_signed_certs(names)
    sibling = start_kturnd(args, os.path.join(workdir, "b"), {})
    add_tls_listener(sibling, *certs[names[1]])
    os.makedirs(sibling.workdir, exist_ok=True)
    with sibling:
        full = start_kturnd(args, os.path.join(workdir, "a"), {"capacity": {"allocations": 1}},
                            extra_args=["--force-ready-status"])
        add_tls_listener(full, *certs[names[0]],
                         alternate_servers=["{}:{}".format(*sibling.tls_address)],
                         alternate_domain=names[1])
        os.makedirs(full.workdir, exist_ok=True)
        with full:
            _, peer_port = h.start_udp_echo_peer(workdir)
            user, password = full.settings.credentials()
            with h.TurnClient(full.address, user, password) as holder:
                holder.allocate()  # A over its mark of 1
                ops_test.wait_for(lambda: capacity(full)[1]["over_capacity"], 5,
                                  "/capacity to report over the allocations mark")

                # coturn's client over TLS (it verifies no certificate): follows the redirect.
                argv = ["turnutils_uclient", "-t", "-S", "-p", str(full.tls_address[1]),
                        "-e", h.LOOPBACK, "-r", str(peer_port), "-L", h.LOOPBACK, "-m", "1",
                        "-n", "50", "-l", "100", "-z", "10", "-c", "-u", user, "-w", password,
                        h.LOOPBACK]
                summary = ops_test.run_uclient(workdir, argv)
                h.check(summary["sent"] == 50 and summary["recv"] == 50 and summary["lost"] == 0,
                        f"uclient over TLS through the redirect: {summary}")
                samples = ops_test.metric_samples(sibling.health)
                on_sibling = samples.get(("kturn_allocations_created_total",
                                          (("listener", "tls"),)), 0)
                h.check(on_sibling >= 1, f"uclient's TLS call created {on_sibling} allocations "
                                         f"on B's TLS listener")

                # A client that verifies certificates by name.
                verify = ssl.create_default_context(cafile=ca)
                with h.StreamTurnClient(full.tls_address, user, password, tls=verify,
                                        server_hostname=names[0]) as c:
                    reply = c.request(h.ALLOCATE, lambda m: m.add(h.A_REQUESTED_TRANSPORT,
                                                                  bytes([17, 0, 0, 0])))
                    h.check((reply.error_code() or (0,))[0] == 300,
                            f"an Allocate over TLS to A over its mark got {reply.describe()}")
                    alternate = tuple(h.unpack_address(reply.get(h.A_ALTERNATE_SERVER) or b""))
                    domain = (reply.get(h.A_ALTERNATE_DOMAIN) or b"").decode()
                    h.check(alternate == sibling.tls_address and domain == names[1],
                            f"ALTERNATE-SERVER {alternate} ALTERNATE-DOMAIN {domain!r}, want "
                            f"{sibling.tls_address} and {names[1]!r}")
                    h.check(reply.check_integrity(c.key),
                            "the 300 does not carry the client's MESSAGE-INTEGRITY")
                try:
                    h.StreamTurnClient(alternate, user, password, tls=verify,
                                       server_hostname=names[0]).close()
                    h.check(False, f"B's certificate was accepted as {names[0]}")
                except ssl.SSLCertVerificationError as e:
                    refused = e.verify_message
                with h.StreamTurnClient(alternate, user, password, tls=verify,
                                        server_hostname=domain) as c:
                    relayed = c.allocate()
                    h.check(c.refresh(0).error_code() is None, "Refresh(0) at B failed")
            full.check_alive()
        sibling.check_alive()
    print(f"redirect over TLS: uclient -t -S followed 300 from A to B "
          f"({summary['recv']}/{summary['sent']} echoed, {on_sibling:.0f} TLS allocations on B); "
          f"a verifying client got ALTERNATE-SERVER {alternate[0]}:{alternate[1]} and "
          f"ALTERNATE-DOMAIN {domain}, B's certificate refused as {names[0]} ({refused}) and "
          f"accepted as {domain}, where B granted relayed address {relayed[0]}:{relayed[1]}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--case", required=True,
                   choices=("readiness", "bandwidth", "redirect", "redirect-over-mark",
                            "redirect-tls"))
    args, _ = p.parse_known_args()
    cases = {"readiness": case_readiness, "bandwidth": case_bandwidth, "redirect": case_redirect,
             "redirect-over-mark": case_redirect_over_mark, "redirect-tls": case_redirect_tls}
    h.run_test(f"capacity-{args.case}", lambda a, w: cases[a.case](a, w), p)


if __name__ == "__main__":
    main()
