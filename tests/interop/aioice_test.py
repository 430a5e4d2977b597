#!/usr/bin/python3
"""aioice (the ICE agent behind aiortc) through the server under test, relay candidates only.

Two aioice.Connection agents (controlling / controlled) both allocate on the server
(transport_policy=RELAY, so only relay candidates are gathered), exchange candidates and ICE
credentials in-process, run connectivity checks relay<->relay, then send data both ways.
Passes only if ICE completes, the nominated pair is relay/relay on both sides (the relayed
addresses the server handed out) and every datagram arrives intact.

Needs Debian's python3-aioice, i.e. /usr/bin/python3:
  /usr/bin/python3 aioice_test.py --server coturn --auth rest
"""

import argparse
import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

try:
    import aioice
    import aioice.ice
except ImportError as e:  # pragma: no cover
    print(f"FAIL [aioice]: cannot import aioice ({e}); run with /usr/bin/python3 "
          f"(Debian python3-aioice)")
    sys.exit(1)

# aioice binds a host socket on every non-127.0.0.1 interface address even with the RELAY
# policy (it only stops advertising them). Keep the test on loopback: no host sockets at all;
# the TURN client socket is created separately and connects to the server on 127.0.0.1.
aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: []

N_MESSAGES = 20


async def run_agents(server: h.Server, settings: h.ServerSettings, timeout: float) -> None:
    def agent(controlling: bool, user_id: str) -> aioice.Connection:
        username, password = settings.credentials(user_id)
        return aioice.Connection(ice_controlling=controlling, components=1,
                                 turn_server=server.address, turn_username=username,
                                 turn_password=password, turn_transport="udp",
                                 use_ipv4=True, use_ipv6=False,
                                 transport_policy=aioice.TransportPolicy.RELAY)

    a = agent(True, "alice")
    b = agent(False, "bob")
    try:
        try:
            await asyncio.wait_for(asyncio.gather(a.gather_candidates(),
                                                  b.gather_candidates()), timeout)
        except asyncio.TimeoutError:
            raise h.TestFailure(f"candidate gathering (TURN Allocate) took over {timeout} s")
        for name, conn in (("controlling", a), ("controlled", b)):
            cands = conn.local_candidates
            print(f"{name} candidates: " + "; ".join(c.to_sdp() for c in cands))
            h.check(len(cands) > 0, f"{name} agent gathered no candidate: the TURN "
                                    f"allocation failed (see aioice's exception above?)")
            h.check(all(c.type == "relay" for c in cands),
                    f"{name} agent has non-relay candidates: "
                    f"{[c.to_sdp() for c in cands]}")
            h.check(all(c.host == h.LOOPBACK for c in cands),
                    f"{name} relay candidates not on {h.LOOPBACK}: "
                    f"{[c.to_sdp() for c in cands]}")
            lo, hi = settings.relay_range
            h.check(all(lo <= c.port <= hi for c in cands),
                    f"{name} relayed port outside the configured relay range {lo}-{hi}: "
                    f"{[c.port for c in cands]}")

        for src, dst in ((a, b), (b, a)):
            for c in src.local_candidates:
                await dst.add_remote_candidate(c)
            await dst.add_remote_candidate(None)  # end-of-candidates
            dst.remote_username = src.local_username
            dst.remote_password = src.local_password

        try:
            await asyncio.wait_for(asyncio.gather(a.connect(), b.connect()), timeout)
        except asyncio.TimeoutError:
            raise h.TestFailure(f"ICE connectivity checks did not complete in {timeout} s")
        except ConnectionError as e:
            raise h.TestFailure(f"ICE failed: {e}")

        for name, conn in (("controlling", a), ("controlled", b)):
            pair = conn._nominated.get(1)  # aioice 0.8 keeps nominated pairs per component
            h.check(pair is not None, f"{name} agent has no nominated pair")
            local, remote = pair.local_candidate, pair.remote_candidate
            print(f"{name} selected pair: local {local.type} {local.host}:{local.port} -> "
                  f"remote {remote.type} {remote.host}:{remote.port}")
            h.check(local.type == "relay" and remote.type == "relay",
                    f"{name} selected pair is {local.type}->{remote.type}, expected "
                    f"relay->relay")
        pa, pb = a._nominated[1], b._nominated[1]
        h.check((pa.remote_candidate.host, pa.remote_candidate.port)
                == (pb.local_candidate.host, pb.local_candidate.port),
                "controlling agent's remote is not the controlled agent's relayed address")

        # data both ways, several datagrams each, in order of arrival
        for direction, src, dst in (("a->b", a, b), ("b->a", b, a)):
            sent = [f"{direction} #{i} ".encode() + os.urandom(64) for i in range(N_MESSAGES)]
            for msg in sent:
                await src.send(msg)
            got = []
            try:
                for _ in range(N_MESSAGES):
                    got.append(await asyncio.wait_for(dst.recv(), 5.0))
            except asyncio.TimeoutError:
                raise h.TestFailure(f"{direction}: received {len(got)} of {N_MESSAGES} "
                                    f"datagrams within 5 s each")
            h.check(sorted(got) == sorted(sent),
                    f"{direction}: received data differs from what was sent")
            print(f"{direction}: {len(got)}/{N_MESSAGES} datagrams received intact")
    finally:
        for conn in (a, b):
            try:
                await asyncio.wait_for(conn.close(), 5.0)  # Refresh(LIFETIME=0)
            except Exception as e:  # noqa: BLE001
                print(f"(close: {e!r})")


def body(args: argparse.Namespace, workdir: str) -> None:
    settings = h.ServerSettings(auth=args.auth)
    with h.make_server(args, settings, workdir) as server:
        asyncio.run(asyncio.wait_for(run_agents(server, settings, args.step_timeout),
                                     args.step_timeout * 4))
        server.check_alive()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--auth", choices=("static", "rest"), default="static")
    p.add_argument("--step-timeout", type=float, default=20.0,
                   help="seconds for gathering and for connecting, each")
    args, _ = p.parse_known_args()
    h.run_test(f"aioice-{args.auth}", body, p)


if __name__ == "__main__":
    main()
