#!/usr/bin/python3
"""Headless Debian Chromium makes a real WebRTC call with audio and video through kturnd,
relay candidates only, to a real Janus media server (Debian's janus, its EchoTest plugin).

Janus gathers candidates on every interface but loopback, so it runs in a network namespace of
the test's own (harness.PodNetwork: a veth pair, Janus's "pod" address on the far end, the
gateway address on this end). kturnd listens on the gateway address (its relay sockets are bound
to the address the client reached, which can reach Janus) with a listener per transport, as
chromium_test.py has them, its Prometheus endpoint on, and one cluster that admits Janus's /32
and nothing else. Chromium (fake camera and microphone) gets one ICE server, the listener of
--transport (turn:GATEWAY:PORT?transport=udp|tcp, turns:GATEWAY:PORT?transport=tcp with a
self-signed certificate it is told to accept), iceTransportPolicy 'relay', and signals to Janus
over its plain HTTP API (janus.py: create, attach janus.plugin.echotest, non-trickle offer,
answer from the long poll). The call lasts --seconds; getStats() is read at half-time and at
the end.

Passes only if
  * Janus loaded only the EchoTest plugin and the HTTP transport;
  * the call reached "done": Janus answered, the connection and DTLS are connected, Janus said
    webrtcup;
  * getStats: the selected candidate pair is relay on the browser side, reached over the
    transport under test, with its relay address on kturnd (the gateway address, in kturnd's
    relay port range) and Janus's address at the other end; video frames decoded > 0 and
    growing between the two samples; audio and video RTP received and sent growing; at most
    5 % of the packets of each kind lost; a round-trip time measured (candidate pair or RTCP);
  * kturnd's /metrics: the cluster that holds only Janus's address counted packets both ways,
    at least as many from Janus as the browser's RTP received (everything the browser got
    came from Janus through kturnd) and to Janus at least 90 % of the RTP the browser sent;
    the listener under test relayed both ways, every other listener nothing;
  * kturnd's session record of the allocation (written when the browser hangs up) names
    Janus's address as a peer, with packets to it and from it.
The numbers (frames decoded, packets lost, RTT, bytes) are printed.

--restart: the server is lost mid-call and the browser recovers by an ICE restart, what a client
does when an Anycast route moves it to another region (docs/operations.md#many-regions). Two
seconds into the call kturnd is killed (SIGKILL) and a fresh kturnd takes the same address and
config at once: the address answers, but not for the call's allocation. The page waits for ICE to
report the path lost, restarts ICE (a new offer with fresh credentials, a fresh allocation at the
new kturnd, its relay candidate trickled to Janus), and runs --seconds more. Passes only if every
step of the restart happened, in order, within 30 s of the loss, and from the media's return on
the call shows what a call must (above, loss counted from the return); the new kturnd relayed the
call both ways (its /metrics) and logged its allocation with Janus among the peers. Prints each
step's time after the kill.

  /usr/bin/python3 janus_test.py --server kturnd --kturnd build/kturnd --transport udp
  /usr/bin/python3 janus_test.py --server kturnd --kturnd build/kturnd --transport tcp
  /usr/bin/python3 janus_test.py --server kturnd --kturnd build/kturnd --transport tls
  /usr/bin/python3 janus_test.py --server kturnd --kturnd build/kturnd --transport udp --restart

Needs root (network namespaces; exits 77, skipped, otherwise), chromium and janus (a missing
janus fails the test: the suite installs it).
"""

import argparse
import json
import os
import re
import signal
import sys
import time
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chromium_test  # noqa: E402
import harness as h  # noqa: E402
import janus  # noqa: E402
import ops_test  # noqa: E402

CLUSTER = "allowed"  # the harness config's one cluster: here Janus's /32 only


def check_kturnd_metrics(before: dict, after: dict, transport: chromium_test.Transport,
                         n: Dict) -> List[str]:
    """The cluster of Janus's address carried the call both ways; the listener under test
    relayed it and no other listener moved. Returns the counters that grew."""
    def grew(series: str, **labels) -> float:
        return (chromium_test.counter(after, series, labels)
                - chromium_test.counter(before, series, labels))

    to_janus = grew("stunner_cluster_packets_total", name=CLUSTER, direction="tx")
    from_janus = grew("stunner_cluster_packets_total", name=CLUSTER, direction="rx")
    rtp_received = n["audio_packets_received"][1] + n["video_packets_received"][1]
    rtp_sent = n["audio_packets_sent"][1] + n["video_packets_sent"][1]
    h.check(from_janus >= rtp_received > 0,
            f"kturnd relayed {from_janus:.0f} packets from Janus's address, but the browser "
            f"received {rtp_received} RTP packets: not all of them came through kturnd")
    h.check(to_janus >= 0.9 * rtp_sent > 0,
            f"kturnd relayed {to_janus:.0f} packets to Janus's address, the browser sent "
            f"{rtp_sent} RTP packets: want at least 90 % of them")
    rows = [f"stunner_cluster_packets_total{{name={CLUSTER}}} tx +{to_janus:.0f} rx "
            f"+{from_janus:.0f}",
            f"stunner_cluster_bytes_total{{name={CLUSTER}}} tx "
            f"+{grew('stunner_cluster_bytes_total', name=CLUSTER, direction='tx'):.0f} rx "
            f"+{grew('stunner_cluster_bytes_total', name=CLUSTER, direction='rx'):.0f}"]
    failures = []
    for t in chromium_test.TRANSPORTS.values():
        for series in ("kturn_relayed_packets_total", "kturn_relayed_bytes_total"):
            for direction in ("rx", "tx"):
                g = grew(series, listener=t.listener, direction=direction)
                if t is transport:
                    rows.append(f"{series}{{listener={t.listener},direction={direction}}} "
                                f"+{g:.0f}")
                    if g <= 0:
                        failures.append(f"{series} {t.listener} {direction} did not grow")
                elif g != 0:
                    failures.append(f"{series} {t.listener} {direction} grew by {g:.0f}, "
                                    f"want 0 (not the listener under test)")
    h.check(not failures, "/metrics: " + "; ".join(failures) + " (" + "; ".join(rows) + ")")
    return rows


def session_record(server: h.KturndServer, listener: str, janus_ip: str,
                   timeout: float = 5.0) -> Optional[dict]:
    """The session record of an allocation on `listener` that has Janus's address among its
    peers (bounded wait: it is written when the allocation ends)."""
    deadline = time.monotonic() + timeout
    while True:
        for line in server.proc.output().splitlines():
            m = re.search(r"\[session\] (\{.*\})\s*$", line)
            if not m:
                continue
            try:
                record = json.loads(m.group(1))
            except ValueError:
                continue
            if record.get("listener") == listener and any(
                    p.split(":")[0] == janus_ip for p in record.get("peers", [])):
                return record
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.2)


def body(args: argparse.Namespace, workdir: str) -> None:
    h.check(args.server == "kturnd", "this test reads kturnd's /metrics: --server kturnd only")
    janus.janus_binary()  # missing: a clear failure (before the root check: never a skip)
    h.root_or_skip("the network namespace Janus runs in")
    transport = chromium_test.TRANSPORTS[args.transport]

    pods = h.PodNetwork(pods=1).create()
    janus_ip, gateway = pods.pod_ips[0], pods.gateway_ip
    print(f"network: Janus at {janus_ip} in namespace {pods.ns}, kturnd on {gateway} "
          f"({pods.dev})")

    settings = h.ServerSettings(auth=args.auth, host=gateway, allowed=(f"{janus_ip}/32",))
    metrics_port = h.free_port()
    config = chromium_test.kturnd_config(settings, metrics_port, workdir)
    listener = next(x for x in config["listeners"] if x["name"] == transport.listener)
    turn_url = transport.url.format(host=gateway, port=listener["port"])
    username, password = settings.credentials("janus")
    print(f"ICE server: {turn_url} ({args.auth} credentials)")

    server = h.KturndServer(args.kturnd, config, workdir=workdir, settings=settings,
                            loglevel="all:INFO")
    replaced: Dict[str, object] = {}

    def replace_server(phase: str, progress: dict) -> None:
        """--restart: two seconds into the call, kturnd killed and a fresh one in its place."""
        if phase != "call" or replaced:
            return
        time.sleep(2.0)
        os.killpg(server.proc.proc.pid, signal.SIGKILL)
        server.proc.proc.wait(timeout=5)
        replaced["at"] = time.time()
        fresh = h.KturndServer(args.kturnd, config, workdir=os.path.join(workdir, "replacement"),
                               settings=settings, loglevel="all:INFO")
        os.makedirs(fresh.workdir, exist_ok=True)
        replaced["server"] = fresh.start()
        fresh.wait_ready()
        print(f"kturnd killed 2 s into the call; a fresh kturnd answers on {gateway} "
              f"{time.time() - replaced['at']:.2f} s later")

    with janus.JanusServer(workdir, janus_ip, pods.ns) as jan, server as s:
        print(f"janus: {jan.info.get('version_string')} at {jan.url}, plugins "
              f"{sorted(jan.info.get('plugins', {}))}")
        before = ops_test.metric_samples(metrics_port)
        started = time.monotonic()
        result = janus.janus_call(turn_url, username, password, jan.url, workdir=workdir,
                                  seconds=args.seconds, chromium=args.chromium,
                                  browser_flags=transport.browser_flags,
                                  timeout=args.browser_timeout + (60 if args.restart else 0),
                                  restart=(20.0, 30.0) if args.restart else None,
                                  on_phase=replace_server if args.restart else None)
        elapsed = time.monotonic() - started
        print(f"browser: {result.get('browser')}; the call took {result.get('seconds', 0):.1f} s "
              f"in the page, {elapsed:.1f} s with the browser's start")
        jan.check_alive()
        if args.restart:
            h.check(bool(replaced), f"the call never reached phase call: {result.get('error')}")
            restarted(result, replaced, jan, transport, settings, janus_ip, metrics_port)
            return
        s.check_alive()
        n = janus.check_call(result, transport.relay_protocol, janus_ip)
        pair = n["pair"]
        lo, hi = settings.relay_range
        h.check(pair["local"].get("address") == gateway and lo <= pair["local"]["port"] <= hi,
                f"the browser's relay candidate {pair['local'].get('address')}:"
                f"{pair['local'].get('port')} is not a kturnd relay address ({gateway}, ports "
                f"{lo}-{hi})")
        print("call: " + janus.describe(n))
        after = ops_test.metric_samples(metrics_port)
        rows = check_kturnd_metrics(before, after, transport, n)
        print("metrics: " + "; ".join(rows))
        record = session_record(s, transport.listener, janus_ip)
        h.check(record is not None,
                f"no session record of an allocation on listener {transport.listener} with "
                f"Janus's address {janus_ip} among its peers within 5 s of the hang-up")
        h.check(record["packets_to_peers"] > 0 and record["packets_to_client"] > 0,
                f"the session record shows no traffic both ways: {record}")
        print(f"session: {json.dumps(record, sort_keys=True)}")


def restarted(result: dict, replaced: dict, jan: janus.JanusServer,
              transport: chromium_test.Transport, settings: h.ServerSettings, janus_ip: str,
              metrics_port: int) -> None:
    """--restart: what the recovered call and the kturnd that replaced the lost one show."""
    fresh = replaced["server"]
    fresh.check_alive()
    n = janus.check_restart(result, transport.relay_protocol, janus_ip)
    pair = n["pair"]
    lo, hi = settings.relay_range
    h.check(pair["local"].get("address") == settings.host and lo <= pair["local"]["port"] <= hi,
            f"the browser's relay candidate after the restart {pair['local'].get('address')}:"
            f"{pair['local'].get('port')} is not a kturnd relay address")
    killed = replaced["at"]
    print("ICE restart after kturnd was killed: " + ", ".join(
        f"{step} +{at - killed:.2f} s" for step, at in n["restart"].items()))
    print("call from the media's return: " + janus.describe(n))
    after = ops_test.metric_samples(metrics_port)
    to_janus = chromium_test.counter(after, "stunner_cluster_packets_total",
                                     {"name": CLUSTER, "direction": "tx"})
    from_janus = chromium_test.counter(after, "stunner_cluster_packets_total",
                                       {"name": CLUSTER, "direction": "rx"})
    h.check(to_janus > 0 and from_janus > 0,
            f"the fresh kturnd relayed {to_janus:.0f} packets to Janus and {from_janus:.0f} "
            f"from it: the call did not recover through it")
    print(f"fresh kturnd's /metrics: stunner_cluster_packets_total{{name={CLUSTER}}} tx "
          f"{to_janus:.0f} rx {from_janus:.0f}")
    record = session_record(fresh, transport.listener, janus_ip)
    h.check(record is not None and record["packets_to_peers"] > 0
            and record["packets_to_client"] > 0,
            f"the fresh kturnd's session record of the call: {record}")
    print(f"session (fresh kturnd): {json.dumps(record, sort_keys=True)}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--transport", choices=sorted(chromium_test.TRANSPORTS), required=True,
                   help="the kturnd listener the browser's only ICE server points at")
    p.add_argument("--auth", choices=("static", "rest"), default="rest",
                   help="static long-term user, or ephemeral TURN REST credentials")
    p.add_argument("--seconds", type=float, default=8.0, help="media time of the call")
    p.add_argument("--chromium", default=None, help="browser binary (default: chromium on PATH)")
    p.add_argument("--restart", action="store_true",
                   help="kill kturnd mid-call, start a fresh one in its place, and require the "
                        "call to recover by an ICE restart")
    p.add_argument("--browser-timeout", type=float, default=60.0,
                   help="bound on the whole browser session: start, signalling, call (s)")
    args, _ = p.parse_known_args()
    h.run_test(f"janus-{args.transport}-{args.auth}{'-restart' if args.restart else ''}", body,
               p, overall_timeout=160 if args.restart else 100)


if __name__ == "__main__":
    main()
