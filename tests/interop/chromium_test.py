#!/usr/bin/python3
"""Headless Debian Chromium (real WebRTC) through kturnd, relay candidates only.

kturnd runs with a listener per transport (TURN-UDP and TURN-TCP on one port number, as a
STUNner Gateway serves them on 3478, and TURN-TLS on its own) and its Prometheus endpoint on. A
page served from http://127.0.0.1 (a secure context) opens two RTCPeerConnections with
iceTransportPolicy 'relay' and a single ICE server, the listener of --transport
(turn:127.0.0.1:PORT?transport=udp|tcp or turns:127.0.0.1:PORT?transport=tcp with a
self-signed certificate Chromium is told to accept); a reliable data channel opens between them and
--messages messages of --size bytes go out and are echoed back, each checked, in order.

Passes only if
  * the data channel opens and every echo comes back intact;
  * both connections' selected candidate pairs are relay <-> relay on 127.0.0.1, in kturnd's
    relay port range, and reached the TURN server over the transport under test
    (getStats: local candidate relayProtocol);
  * kturnd's /metrics moved for that listener only: stunner_listener_packets/bytes_total,
    kturn_relayed_packets/bytes_total and kturn_allocations_created_total of the matching
    listener grew by at least the echo traffic (2 x messages packets each way, 2 x messages x
    size bytes relayed each way), those of every other listener did not move at all.

The browser is driven over the DevTools protocol (browser.py); its console and stderr and
kturnd's log are printed on failure. Chromium only ever talks to 127.0.0.1.

  /usr/bin/python3 chromium_test.py --server kturnd --kturnd build/kturnd --transport udp
  /usr/bin/python3 chromium_test.py --server kturnd --kturnd build/kturnd --transport tcp
  /usr/bin/python3 chromium_test.py --server kturnd --kturnd build/kturnd --transport tls

A transport is one entry of TRANSPORTS: the listener kturnd gets for it, the ICE server URL the
page uses and what Chromium's stats must say.
"""

import argparse
import dataclasses
import http.server
import json
import os
import sys
import threading
import time
from typing import Callable, Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
import harness as h  # noqa: E402
import ops_test  # noqa: E402

PAGE = "webrtc_echo.html"
PAGE_DIR = os.path.dirname(os.path.abspath(__file__))


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


class PageServer:
    """http://127.0.0.1:PORT/ serving only the test page, on a background thread."""

    def __init__(self, workdir: str):
        page_path = os.path.join(PAGE_DIR, PAGE)
        access_log = os.path.join(workdir, "http.log")
        h.register_log(access_log)

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's naming
                if self.path.split("?")[0] != "/" + PAGE:
                    self.send_error(404)
                    return
                with open(page_path, "rb") as f:
                    body = f.read()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, fmt, *args):
                with open(access_log, "a") as f:
                    f.write("%s %s\n" % (self.log_date_time_string(), fmt % args))

        self.httpd = http.server.ThreadingHTTPServer((h.LOOPBACK, 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://{h.LOOPBACK}:{self.httpd.server_address[1]}/{PAGE}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "PageServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def run_page(args: argparse.Namespace, workdir: str, page_url: str, ice_server: dict,
             transport: Transport) -> dict:
    """Chromium loads the page and runs the echo; returns the page's result object."""
    deadline = time.monotonic() + args.browser_timeout

    def left() -> float:
        remaining = deadline - time.monotonic()
        h.check(remaining > 0, f"the browser session exceeded {args.browser_timeout:.0f} s")
        return remaining

    params = {"iceServer": ice_server, "count": args.messages, "size": args.size,
              "timeoutMs": int(args.page_timeout * 1000)}
    with browser.Chromium(workdir, binary=args.chromium, extra_flags=transport.browser_flags,
                          startup_timeout=min(30.0, args.browser_timeout)) as chromium:
        print(f"browser: {chromium.version}")
        page = chromium.new_page()
        page.navigate(page_url, timeout=min(10.0, left()))
        page.wait_for("typeof window.runEcho === 'function'", timeout=min(10.0, left()),
                      what="the page's script")
        # The page bounds each of its two phases (open, echo) by timeoutMs itself.
        result = page.evaluate(f"runEcho({json.dumps(params)})",
                               timeout=min(2 * args.page_timeout + 5, left()))
    h.check(isinstance(result, dict), f"runEcho returned {result!r}")
    return result


def check_page_result(result: dict, args: argparse.Namespace, transport: Transport,
                      relay_range: Tuple[int, int]) -> None:
    h.check(result.get("ok") is True,
            f"the page failed in phase '{result.get('phase')}': {result.get('error')} "
            f"(echoed {result.get('echoed')}/{args.messages}; ICE {result.get('ice')}; "
            f"candidates {result.get('candidates')}; candidate errors "
            f"{result.get('candidateErrors')})")
    h.check(result.get("echoed") == args.messages,
            f"{result.get('echoed')}/{args.messages} messages echoed")
    lo, hi = relay_range
    for side in ("a", "b"):
        pair = (result.get("stats") or {}).get(side)
        h.check(pair is not None, f"connection {side}: no selected candidate pair in getStats")
        local, remote = pair["local"], pair["remote"]
        h.check(local.get("type") == "relay" and remote.get("type") == "relay",
                f"connection {side}: selected pair is {local.get('type')} <-> "
                f"{remote.get('type')}, want relay <-> relay: {pair}")
        for end in (local, remote):
            h.check(end.get("address") == h.LOOPBACK and lo <= int(end.get("port", 0)) <= hi,
                    f"connection {side}: relay candidate {end.get('address')}:{end.get('port')} "
                    f"is not a kturnd relay address (127.0.0.1, ports {lo}-{hi})")
        h.check(local.get("relayProtocol") == transport.relay_protocol,
                f"connection {side}: Chromium reached the TURN server over "
                f"{local.get('relayProtocol')!r}, want {transport.relay_protocol!r}: {pair}")


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
        result = run_page(args, workdir, pages.url, ice_server, transport)
        elapsed = time.monotonic() - started
        s.check_alive()
        check_page_result(result, args, transport, settings.relay_range)
        after = ops_test.metric_samples(metrics_port)
        summary = check_metrics(before, after, args, transport)
    a = result["stats"]["a"]
    print(f"chromium: {args.messages}/{args.messages} messages of {args.size} B echoed over "
          f"{transport.url.split(':')[0]}/{a['local']['relayProtocol']} in {elapsed:.1f} s "
          f"(browser start included); selected pair {a['local']['address']}:"
          f"{a['local']['port']} <-> {a['remote']['address']}:{a['remote']['port']}")
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
    p.add_argument("--page-timeout", type=float, default=25.0,
                   help="the page's bound on each phase: channel open, all echoes (s)")
    p.add_argument("--browser-timeout", type=float, default=60.0,
                   help="bound on the whole browser session: start, load, echo (s)")
    args, _ = p.parse_known_args()
    h.run_test(f"chromium-{args.transport}-{args.auth}", body, p, overall_timeout=100)


if __name__ == "__main__":
    main()
