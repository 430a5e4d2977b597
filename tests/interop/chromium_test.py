#!/usr/bin/python3
"""Headless Debian Chromium (real WebRTC) through kturnd, relay candidates only, driving the
user-facing demo page.

kturnd runs with a listener per transport (TURN-UDP and TURN-TCP on one port number, as a
STUNner Gateway serves them on 3478, and TURN-TLS on its own) and its Prometheus endpoint on. The
demo page of docs/getting-started.md (docs/demo/index.html, with its echo.js and ui.js) is served
from http://127.0.0.1 the way the docs tell a user to (http.server on that directory). The test
uses it as a user does: it types into the form the ICE server entry for the listener of
--transport (turn:127.0.0.1:PORT?transport=udp|tcp or turns:127.0.0.1:PORT?transport=tcp with a
self-signed certificate Chromium is told to accept), written as kturnd prints it, then the
message count (--messages), size (--size) and time limit per step (--page-timeout), clicks
Connect, waits for the page to say done or failed, and reads what the page shows. The page opens
two RTCPeerConnections with iceTransportPolicy 'relay' and that single ICE server; a reliable
data channel opens between them and the messages go out and are echoed back, each checked, in
order.

Passes only if
  * before the run, the page refuses an entry that is not JSON and one without "credential",
    saying so (phase failed, the reason naming the problem, also under the entry), and starts
    no run for them;
  * the page shows phase done and every message echoed (the data channel opened and every
    echo came back intact), and a round-trip time summary min <= median <= max;
  * both connections' selected candidate pairs, as the page shows them, are relay <-> relay on
    127.0.0.1, in kturnd's relay port range, and reached the TURN server over the transport
    under test (relay protocol); what the page shows is what getStats said (the page's result
    object, read too);
  * the browser asked the page server only for files it has (no 404);
  * kturnd's /metrics moved for that listener only: stunner_listener_packets/bytes_total,
    kturn_relayed_packets/bytes_total and kturn_allocations_created_total of the matching
    listener grew by at least the echo traffic (2 x messages packets each way, 2 x messages x
    size bytes relayed each way), those of every other listener did not move at all.

The browser is driven over the DevTools protocol (browser.py: typed text, mouse clicks); its
console and stderr, the page's log and kturnd's log are printed on failure. Chromium only ever
talks to 127.0.0.1.

  /usr/bin/python3 chromium_test.py --server kturnd --kturnd build/kturnd --transport udp
  /usr/bin/python3 chromium_test.py --server kturnd --kturnd build/kturnd --transport tcp
  /usr/bin/python3 chromium_test.py --server kturnd --kturnd build/kturnd --transport tls

A transport is one entry of TRANSPORTS: the listener kturnd gets for it, the ICE server URL the
page uses and what Chromium's stats must say.
"""

import argparse
import dataclasses
import json
import os
import sys
import time
from typing import Callable, Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
import harness as h  # noqa: E402
import ops_test  # noqa: E402

# The demo page of docs/getting-started.md, served as its directory (index.html at "/").
DEMO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "demo")


@dataclasses.dataclass(frozen=True)
class Transport:
    """How the browser reaches kturnd for one case."""
    listener: str            # the kturnd listener's name (the `name` label in /metrics)
    protocol: str            # its STUNner protocol
    url: str                 # the page's ICE server URL; {host} and {port} filled in
    relay_protocol: str      # RTCIceCandidateStats.relayProtocol Chromium must report
    shares_udp_port: bool = True  # listens on the TURN-UDP listener's port number
    # Extra listener fields (e.g. cert/key for TLS) from the work dir; the browser flags it needs.
    listener_extra: Callable[[str], dict] = lambda workdir: {}
    browser_flags: Tuple[str, ...] = ()


TRANSPORTS: Dict[str, Transport] = {
    "udp": Transport(listener="udp", protocol="TURN-UDP",
                     url="turn:{host}:{port}?transport=udp", relay_protocol="udp"),
    "tcp": Transport(listener="tcp", protocol="TURN-TCP",
                     url="turn:{host}:{port}?transport=tcp", relay_protocol="tcp"),
    # A self-signed certificate Chromium is told to accept (the flag is the way; no NSS db).
    "tls": Transport(listener="tls", protocol="TURN-TLS",
                     url="turns:{host}:{port}?transport=tcp", relay_protocol="tls",
                     shares_udp_port=False, listener_extra=lambda workdir: tls_material(),
                     browser_flags=("--ignore-certificate-errors",)),
}


def tls_material() -> dict:
    """The `cert`/`key` fields of a TURN-TLS listener: a fresh self-signed pair, base64 PEM."""
    cert, key = h.self_signed_cert()
    return {"cert": h.base64_file(cert), "key": h.base64_file(key)}

# Counters that must grow on the listener under test and stay put on every other one:
# (series, label naming the listener, extra labels, minimum growth as f(messages, size)).
LISTENER_COUNTERS: List[Tuple[str, str, dict, Callable[[int, int], int]]] = [
    ("stunner_listener_packets_total", "name", {"direction": "rx"}, lambda n, s: 2 * n),
    ("stunner_listener_packets_total", "name", {"direction": "tx"}, lambda n, s: 2 * n),
    ("stunner_listener_bytes_total", "name", {"direction": "rx"}, lambda n, s: 2 * n * s),
    ("stunner_listener_bytes_total", "name", {"direction": "tx"}, lambda n, s: 2 * n * s),
    ("kturn_relayed_packets_total", "listener", {"direction": "rx"}, lambda n, s: 2 * n),
    ("kturn_relayed_packets_total", "listener", {"direction": "tx"}, lambda n, s: 2 * n),
    ("kturn_relayed_bytes_total", "listener", {"direction": "rx"}, lambda n, s: 2 * n * s),
    ("kturn_relayed_bytes_total", "listener", {"direction": "tx"}, lambda n, s: 2 * n * s),
    ("kturn_allocations_created_total", "listener", {}, lambda n, s: 2),
]


def kturnd_config(settings: h.ServerSettings, metrics_port: int, workdir: str) -> dict:
    """The harness config with one listener per transport, the TURN-UDP one first (readiness
    is probed there), and metrics on."""
    config = h.KturndServer.config_for(settings)
    udp = config["listeners"][0]
    listeners = []
    for t in TRANSPORTS.values():
        port = settings.port if t.shares_udp_port else h.free_port()
        listeners.append(dict(udp, name=t.listener, protocol=t.protocol, port=port,
                              **t.listener_extra(workdir)))
    names = [x["name"] for x in listeners]
    h.check(listeners[0]["protocol"] == "TURN-UDP" and len(set(names)) == len(names),
            f"TRANSPORTS must start with TURN-UDP and have distinct names: {names}")
    config["listeners"] = listeners
    config["admin"]["metrics_endpoint"] = f"http://{h.LOOPBACK}:{metrics_port}/metrics"
    return config


class PageServer(browser.PageServer):
    """The demo directory on http://127.0.0.1:PORT/, as `python3 -m http.server --directory
    docs/demo` serves it for a user."""

    def __init__(self, workdir: str):
        super().__init__(workdir, DEMO_DIR)


# What the page shows, by element id (docs/demo/index.html).
PAIR_FIELDS = tuple(f"{side}-{end}-{field}" for side in "ab" for end in ("local", "remote")
                    for field in ("type", "address", "port"))
SHOWN_FIELDS = ("phase", "reason", "echoed", "total", "rtt-min", "rtt-median", "rtt-max",
                "a-local-relay-protocol", "b-local-relay-protocol") + PAIR_FIELDS
STATUS = "document.getElementById('status').dataset"


def submit(page: browser.Page, entry: str, count: int, size: int, time_limit: int,
           timeout: float) -> Dict[str, str]:
    """Fills the form, clicks Connect, waits for done or failed; returns what the page shows."""
    page.fill("#ice-server", entry)
    page.fill("#count", str(count))
    page.fill("#size", str(size))
    page.fill("#timeout", str(time_limit))
    run = int(page.evaluate(f"{STATUS}.run", timeout=5.0)) + 1  # the run this click starts
    page.click("#connect")
    page.wait_for(f"{STATUS}.run === '{run}' && ['done', 'failed'].includes({STATUS}.phase)",
                  timeout=timeout, what="the page to say done or failed")
    return {name: page.text(f"#{name}") for name in SHOWN_FIELDS}


def check_input_errors(page: browser.Page, ice_server: dict) -> None:
    """The page refuses a broken entry and says what is wrong, without starting a run."""
    no_credential = {k: v for k, v in ice_server.items() if k != "credential"}
    cases = [("{" + kturnd_entry(ice_server)[1:-1], "not valid JSON"),  # a brace lost in pasting
             (kturnd_entry(no_credential), 'no "credential" field')]
    for entry, want in cases:
        shown = submit(page, entry, 1, 16, 1, timeout=5.0)
        h.check(shown["phase"] == "failed" and want in shown["reason"],
                f"the page given {entry!r} shows phase {shown['phase']!r}, reason "
                f"{shown['reason']!r}; want failed, {want!r}")
        error = page.text("#ice-server-error")
        h.check(want in error, f"the page given {entry!r} shows {error!r} under the entry, "
                f"want {want!r}")
    result = page.evaluate("window.kturnDemo.result", timeout=5.0)
    h.check(result is None, f"the page ran with a broken entry: {result}")


def kturnd_entry(ice_server: dict) -> str:
    """The entry as kturnd prints it: one line of JSON, keys sorted, no spaces."""
    return json.dumps(ice_server, sort_keys=True, separators=(",", ":"))


def run_page(args: argparse.Namespace, workdir: str, page_url: str, ice_server: dict,
             transport: Transport) -> Tuple[Dict[str, str], dict]:
    """Chromium opens the demo page and runs it through its form; returns what the page shows
    and the page's result object (runEcho's, with getStats' selected pairs)."""
    deadline = time.monotonic() + args.browser_timeout

    def left() -> float:
        remaining = deadline - time.monotonic()
        h.check(remaining > 0, f"the browser session exceeded {args.browser_timeout:.0f} s")
        return remaining

    with browser.Chromium(workdir, binary=args.chromium, extra_flags=transport.browser_flags,
                          startup_timeout=min(30.0, args.browser_timeout)) as chromium:
        print(f"browser: {chromium.version}")
        page = chromium.new_page()
        page.navigate(page_url, timeout=min(10.0, left()))
        page.wait_for("window.kturnDemo", timeout=min(10.0, left()), what="the page's script")
        check_input_errors(page, ice_server)
        # The page bounds each of its two waits (open, echo) by the time limit itself.
        shown = submit(page, kturnd_entry(ice_server), args.messages, args.size,
                       args.page_timeout, timeout=min(2 * args.page_timeout + 5, left()))
        result = page.evaluate("window.kturnDemo.result", timeout=min(5.0, left()))
    h.check(isinstance(result, dict), f"the page's result is {result!r}")
    return shown, result


def check_page_result(shown: Dict[str, str], result: dict, args: argparse.Namespace,
                      transport: Transport, relay_range: Tuple[int, int]) -> None:
    h.check(shown["phase"] == "done" and result.get("ok") is True,
            f"the page shows phase {shown['phase']!r}: {shown['reason']} "
            f"(echoed {shown['echoed']} of {shown['total']}; ICE {result.get('ice')}; "
            f"candidates {result.get('candidates')}; candidate errors "
            f"{result.get('candidateErrors')})")
    h.check(shown["echoed"] == shown["total"] == str(args.messages)
            and result.get("echoed") == args.messages,
            f"the page shows {shown['echoed']} of {shown['total']} messages echoed "
            f"(its result: {result.get('echoed')}), want {args.messages} of {args.messages}")
    try:
        rtt = [float(shown[f"rtt-{x}"]) for x in ("min", "median", "max")]
    except ValueError:
        rtt = []
    h.check(len(rtt) == 3 and 0 <= rtt[0] <= rtt[1] <= rtt[2],
            f"the page shows round-trip times min {shown['rtt-min']}, median "
            f"{shown['rtt-median']}, max {shown['rtt-max']} ms")
    lo, hi = relay_range
    for side in ("a", "b"):
        pair = (result.get("stats") or {}).get(side)
        h.check(pair is not None, f"connection {side}: no selected candidate pair in getStats")
        for end in ("local", "remote"):
            cell = {f: shown[f"{side}-{end}-{f}"] for f in ("type", "address", "port")}
            stats = pair[end]
            h.check(cell == {f: str(stats.get(f)) for f in cell},
                    f"connection {side}: the page shows the {end} candidate as {cell}, "
                    f"getStats says {stats}")
            h.check(cell["type"] == "relay",
                    f"connection {side}: the {end} candidate of the selected pair is "
                    f"{cell['type']}, want relay: {pair}")
            h.check(cell["address"] == h.LOOPBACK and lo <= int(cell["port"]) <= hi,
                    f"connection {side}: relay candidate {cell['address']}:{cell['port']} "
                    f"is not a kturnd relay address (127.0.0.1, ports {lo}-{hi})")
        relay_protocol = shown[f"{side}-local-relay-protocol"]
        h.check(relay_protocol == str(pair["local"].get("relayProtocol")),
                f"connection {side}: the page shows relay protocol {relay_protocol!r}, "
                f"getStats says {pair['local'].get('relayProtocol')!r}")
        h.check(relay_protocol == transport.relay_protocol,
                f"connection {side}: Chromium reached the TURN server over "
                f"{relay_protocol!r}, want {transport.relay_protocol!r}: {pair}")


def counter(samples: dict, series: str, labels: dict) -> float:
    """A counter's value; a series not exported yet has not counted anything (docs/metrics.md)."""
    return samples.get((series, tuple(sorted(labels.items()))), 0.0)


def check_metrics(before: dict, after: dict, args: argparse.Namespace,
                  transport: Transport) -> List[str]:
    """Growth on the listener under test, none on the others; returns one line per counter.
    A failure lists every counter of every listener, so the wrong path shows at a glance."""
    rows, failures = [], []
    for t in TRANSPORTS.values():
        checks = [(series, dict(extra, **{label: t.listener}), minimum)
                  for series, label, extra, minimum in LISTENER_COUNTERS]
        if t is transport and t.protocol != "TURN-UDP":  # one connection per RTCPeerConnection
            checks.append(("stunner_listener_connections_total", {"name": t.listener},
                           lambda n, s: 2))
        for series, labels, minimum in checks:
            grew = counter(after, series, labels) - counter(before, series, labels)
            shown = f"{series}{{{', '.join(f'{k}={v}' for k, v in sorted(labels.items()))}}}"
            rows.append(f"{shown} +{grew:.0f}")
            if t is transport and grew < minimum(args.messages, args.size):
                failures.append(f"{shown} grew by {grew:.0f}, want at least "
                                f"{minimum(args.messages, args.size)}")
            elif t is not transport and grew != 0:
                failures.append(f"{shown} grew by {grew:.0f}, want 0 (not the listener "
                                f"under test)")
    h.check(not failures, f"/metrics during the {transport.listener} run: traffic missing "
            f"from or leaking onto a listener:\n  " + "\n  ".join(failures)
            + "\n  every listener's counters grew by: " + "; ".join(rows))
    return [r for r in rows if not r.endswith(" +0")]


def body(args: argparse.Namespace, workdir: str) -> None:
    h.check(args.server == "kturnd", "this test reads kturnd's /metrics: --server kturnd only")
    transport = TRANSPORTS[args.transport]
    settings = h.ServerSettings(auth=args.auth)
    metrics_port = h.free_port()
    config = kturnd_config(settings, metrics_port, workdir)
    listener = next(x for x in config["listeners"] if x["name"] == transport.listener)
    username, password = settings.credentials("chromium")
    ice_server = {"urls": [transport.url.format(host=h.LOOPBACK, port=listener["port"])],
                  "username": username, "credential": password}
    print(f"ICE server: {json.dumps(ice_server)}")

    server = h.KturndServer(args.kturnd, config, workdir=workdir, settings=settings)
    with server as s, PageServer(workdir) as pages:
        before = ops_test.metric_samples(metrics_port)
        started = time.monotonic()
        shown, result = run_page(args, workdir, pages.url, ice_server, transport)
        elapsed = time.monotonic() - started
        s.check_alive()
        check_page_result(shown, result, args, transport, settings.relay_range)
        h.check(not pages.errors, f"the page server refused requests: {pages.errors}")
        after = ops_test.metric_samples(metrics_port)
        summary = check_metrics(before, after, args, transport)
    print(f"chromium: the page shows {shown['echoed']} of {shown['total']} messages of "
          f"{args.size} B echoed over {transport.url.split(':')[0]}/"
          f"{shown['a-local-relay-protocol']}, round trip min {shown['rtt-min']} / median "
          f"{shown['rtt-median']} / max {shown['rtt-max']} ms; {elapsed:.1f} s in all (browser "
          f"start included); selected pair {shown['a-local-address']}:{shown['a-local-port']} "
          f"<-> {shown['a-remote-address']}:{shown['a-remote-port']}")
    print("metrics: " + "; ".join(summary))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--transport", choices=sorted(TRANSPORTS), required=True,
                   help="the kturnd listener the browser's only ICE server points at")
    p.add_argument("--auth", choices=("static", "rest"), default="rest",
                   help="static long-term user, or ephemeral TURN REST credentials")
    p.add_argument("--messages", type=int, default=50, help="messages echoed")
    p.add_argument("--size", type=int, default=200, help="bytes per message")
    p.add_argument("--chromium", default=None, help="browser binary (default: chromium on PATH)")
    p.add_argument("--page-timeout", type=int, default=25,
                   help="the page's time limit per step: channel open, all echoes (s, whole)")
    p.add_argument("--browser-timeout", type=float, default=60.0,
                   help="bound on the whole browser session: start, load, echo (s)")
    args, _ = p.parse_known_args()
    h.run_test(f"chromium-{args.transport}-{args.auth}", body, p, overall_timeout=100)


if __name__ == "__main__":
    main()
