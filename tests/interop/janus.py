"""A real WebRTC call with audio and video from headless Chromium, through a TURN server with
relay candidates only, to Janus's EchoTest plugin; and a Janus of the test's own to call.

Used by janus_test.py (kturnd on the host, Janus in a network namespace) and meant for any
other script that wants the same call, e.g. a multi-node Kubernetes test calling a Janus pod
from a client network namespace:

  import janus
  result = janus.janus_call("turn:10.0.0.1:3478?transport=udp", username, credential,
                            "http://10.244.1.7:8088/janus", workdir=workdir,
                            netns="client-ns", seconds=8)
  measured = janus.check_call(result, relay_protocol="udp", janus_ip="10.244.1.7")
  print(janus.describe(measured))

janus_call(turn_url, username, credential, janus_http_url, ...) -> dict
    Starts Chromium (browser.py; fake camera and microphone, --use-fake-device-for-media-stream
    and --use-fake-ui-for-media-stream) in `netns` (None: this namespace), opens
    janus_page/index.html served by a PageServer on 127.0.0.1 in that same namespace, and runs
    the page's janusCall() (janus_page/janus_call.js): getUserMedia({audio, video}), one
    RTCPeerConnection with iceTransportPolicy 'relay' and the single ICE server given, Janus's
    plain HTTP API (create, attach janus.plugin.echotest, the offer with the relay candidates in
    its SDP once ICE gathering is complete or has settled, the answer from the long poll),
    `seconds` of media, getStats() at half-time and at the end, hang up, destroy the session.
    Returns the page's result object (janus_call.js says what is in it). Raises
    harness.TestFailure only when the page cannot be run or does not finish in time; a call
    that failed comes back with ok false, phase and error.
    The page's requests to Janus go to the PageServer's /janus, which forwards them to
    janus_http_url from the namespace of the thread that called janus_call() (the way an
    application server relays signalling): the browser reaches only its own loopback and the
    TURN server, and Janus's HTTP API needs to be reachable from the test process only.
check_call(result, relay_protocol, janus_ip, ...) -> dict
    What a passing call must show, as TestFailures naming the number that is wrong: phase done;
    the selected candidate pair relay (browser side, over relay_protocol) <-> Janus's address;
    video frames decoded > 0 and growing between the two samples; audio and video RTP received
    and sent growing; packet loss at most max_loss; a round-trip time measured; Janus's
    webrtcup event. Returns numbers(result): frames decoded, packets and bytes each way,
    packets lost, round-trip times in ms, the selected pair; describe() makes them one line.
JanusServer(workdir, ip, netns)
    Debian's janus (1.1.2) in network namespace `netns` on its address `ip`: a config dir of its
    own in the work dir (only the EchoTest plugin and the HTTP transport, the other plugins,
    transports and loggers of the package disabled by name; RTP ports in a fixed range; full
    ICE, no STUN server, no 1:1 NAT, candidates on `ip` only). Janus never gathers on
    loopback, so `ip` has to be on a real (e.g. veth) interface of `netns`. A context manager
    that waits until GET /janus/info lists exactly that plugin and transport, and stops Janus
    at the end.

Network safety: the browser talks only to 127.0.0.1 (the page) and the TURN URL given; Janus
and the PageServer's forwarding reach only the addresses the caller gives. Every wait is
bounded (step_timeout per step in the page, timeout for the whole browser session).
"""

from __future__ import annotations

import copy
import glob
import json
import os
import shutil
import time
import urllib.request
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import browser
import harness as h

PAGE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "janus_page")

# Fake capture devices (a test pattern and a beep), no permission prompt.
MEDIA_FLAGS = ("--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
               "--autoplay-policy=no-user-gesture-required")

ECHOTEST = "janus.plugin.echotest"
HTTP_TRANSPORT = "janus.transport.http"


# ---------------------------------------------------------------------------------------------
# Janus
# ---------------------------------------------------------------------------------------------

def janus_binary() -> str:
    """The janus executable; a clear failure when the package is missing (the suite installs
    it: this is no reason to skip)."""
    path = shutil.which("janus") or "/usr/bin/janus"
    h.check(os.access(path, os.X_OK),
            "janus not found (Debian package janus; scripts/install-deps.sh installs it)")
    return path


def janus_lib_dir() -> str:
    """Debian's module directory (…/<multiarch>/janus, with plugins/ and transports/)."""
    found = sorted(glob.glob("/usr/lib/*/janus/plugins/libjanus_echotest.so"))
    h.check(bool(found), "Janus's EchoTest plugin (libjanus_echotest.so) not found under "
                         "/usr/lib/*/janus/plugins (Debian package janus)")
    return os.path.dirname(os.path.dirname(found[0]))


def _modules(folder: str) -> List[str]:
    """The module file names Janus would load from folder (it loads the *.so names)."""
    return sorted(n for n in os.listdir(folder) if n.endswith(".so"))


def _disable(folder: str, keep: Sequence[str]) -> str:
    return ",".join(n for n in _modules(folder) if n not in keep)


class JanusServer:
    """Janus with the EchoTest plugin and the HTTP transport only, in network namespace `netns`
    on address `ip` (see the module docstring)."""

    def __init__(self, workdir: str, ip: str, netns: str, http_port: int = 8088,
                 rtp_range: Tuple[int, int] = (20000, 20199), debug_level: int = 4):
        self.workdir = workdir
        self.ip = ip
        self.netns = netns
        self.http_port = http_port
        self.rtp_range = rtp_range
        self.debug_level = debug_level
        self.confdir = os.path.join(workdir, "janus-conf")
        self.proc: Optional[h.Proc] = None
        self.info: Dict[str, Any] = {}

    @property
    def url(self) -> str:
        """The HTTP API's base URL (janus.transport.http's base_path)."""
        return f"http://{self.ip}:{self.http_port}/janus"

    def write_config(self) -> None:
        lib = janus_lib_dir()
        folders = {k: os.path.join(lib, k)
                   for k in ("plugins", "transports", "events", "loggers")}
        loggers = (_disable(folders["loggers"], ()) if os.path.isdir(folders["loggers"])
                   else "")
        os.makedirs(self.confdir, exist_ok=True)
        files = {
            "janus.jcfg": f"""\
general: {{
  configs_folder = "{self.confdir}"
  plugins_folder = "{folders['plugins']}"
  transports_folder = "{folders['transports']}"
  events_folder = "{folders['events']}"
  loggers_folder = "{folders['loggers']}"
  interface = "{self.ip}"
  debug_level = {self.debug_level}
  debug_timestamps = true
  debug_colors = false
  server_name = "kturn-interop"
  session_timeout = 60
}}
media: {{
  rtp_port_range = "{self.rtp_range[0]}-{self.rtp_range[1]}"
}}
nat: {{
  nice_debug = false
  ice_enforce_list = "{self.ip}"
  ignore_mdns = true
}}
plugins: {{
  disable = "{_disable(folders['plugins'], ('libjanus_echotest.so',))}"
}}
transports: {{
  disable = "{_disable(folders['transports'], ('libjanus_http.so',))}"
}}
loggers: {{
  disable = "{loggers}"
}}
events: {{
  broadcast = false
}}
""",
            "janus.transport.http.jcfg": f"""\
general: {{
  json = "plain"
  base_path = "/janus"
  http = true
  ip = "{self.ip}"
  port = {self.http_port}
  https = false
}}
admin: {{
  admin_http = false
  admin_https = false
}}
""",
            "janus.plugin.echotest.jcfg": "general: {\n}\n",
        }
        for name, text in files.items():
            path = os.path.join(self.confdir, name)
            with open(path, "w") as f:
                f.write(text)
        h.register_log(os.path.join(self.confdir, "janus.jcfg"))

    def start(self, timeout: float = 15.0) -> "JanusServer":
        binary = janus_binary()
        self.write_config()
        argv = ["ip", "netns", "exec", self.netns, binary, "-F", self.confdir,
                "-C", os.path.join(self.confdir, "janus.jcfg")]
        self.proc = h.Proc("janus", argv, self.workdir)
        h.register_log(self.proc.log_path)
        self.proc.start()
        self.info = self._wait_info(timeout)
        plugins, transports = sorted(self.info.get("plugins", {})), sorted(
            self.info.get("transports", {}))
        h.check(plugins == [ECHOTEST] and transports == [HTTP_TRANSPORT],
                f"Janus loaded plugins {plugins} and transports {transports}, want only "
                f"{ECHOTEST} and {HTTP_TRANSPORT} (its config: {self.confdir})")
        return self

    def _wait_info(self, timeout: float) -> Dict[str, Any]:
        """GET /janus/info until it answers (bounded in time and tries)."""
        deadline = time.monotonic() + timeout
        last = ""
        for _ in range(200):
            if self.proc is not None and not self.proc.running():
                raise h.TestFailure(f"janus exited during startup (rc="
                                    f"{self.proc.proc.returncode}); log: {self.proc.log_path}")
            try:
                with urllib.request.urlopen(f"{self.url}/info", timeout=1.0) as r:
                    info = json.loads(r.read().decode())
                if info.get("janus") == "server_info":
                    return info
                last = f"answered {info}"
            except (OSError, ValueError) as e:
                last = str(e)
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        raise h.TestFailure(f"Janus's HTTP API at {self.url}/info did not answer within "
                            f"{timeout:.0f} s (last: {last})")

    def check_alive(self) -> None:
        h.check(self.proc is not None and self.proc.running(),
                f"janus is no longer running (rc="
                f"{self.proc.proc.returncode if self.proc and self.proc.proc else '?'})")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()

    def __enter__(self) -> "JanusServer":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


# ---------------------------------------------------------------------------------------------
# The page and its signalling
# ---------------------------------------------------------------------------------------------

def page_server(workdir: str, janus_http_url: str,
                netns: Optional[str] = None) -> browser.PageServer:
    """janus_page/ on http://127.0.0.1:PORT/ in `netns`, with /janus forwarded to Janus."""
    return browser.PageServer(workdir, PAGE_DIR, "janus-page-http.log", netns,
                              forward=("/janus", janus_http_url))


def _url_host(url: str) -> str:
    """The host of a turn:/turns: URL (RFC 7065: scheme:host[:port][?transport=...])."""
    rest = url.split(":", 1)[1].split("?", 1)[0]
    if rest.startswith("["):
        return rest[1:rest.index("]")]
    return rest.rsplit(":", 1)[0] if rest.count(":") == 1 else rest


def janus_call(turn_url: str, username: str, credential: str, janus_http_url: str, *,
               workdir: str, seconds: float = 8.0, step_timeout: float = 15.0,
               timeout: float = 60.0, chromium: Optional[str] = None,
               browser_flags: Sequence[str] = (), netns: Optional[str] = None,
               restart: Optional[Tuple[float, float]] = None,
               on_phase: Optional[Callable[[str, dict], None]] = None) -> dict:
    """One call (see the module docstring); returns the page's result object, with the
    browser's version under "browser". browser_flags: e.g. --ignore-certificate-errors for a
    turns: URL with a self-signed certificate. restart=(lost_within, recover_within): once
    connected, the call waits up to lost_within s for ICE to report its path lost, then
    recovers by an ICE restart within recover_within s of the loss (janus_call.js,
    restartIce(); check_restart() says what a recovered call shows). on_phase(phase, progress)
    is called, from this thread, with each phase the page is seen in (polled every 0.1 s: a
    phase shorter than that may pass unseen) and its progress object (window.janusProgress)
    then."""
    ice_server = {"urls": [turn_url], "username": username, "credential": credential}
    params = {"iceServer": ice_server, "janusUrl": "/janus", "seconds": seconds,
              "stepTimeoutMs": int(step_timeout * 1000)}
    media = seconds
    if restart is not None:
        params["restart"] = {"lostMs": int(restart[0] * 1000), "recoverMs": int(restart[1] * 1000)}
        media += 1 + sum(restart)
    deadline = time.monotonic() + timeout

    def left() -> float:
        remaining = deadline - time.monotonic()
        h.check(remaining > 0, f"the browser session exceeded {timeout:.0f} s")
        return remaining

    with page_server(workdir, janus_http_url, netns) as pages, \
            browser.Chromium(workdir, binary=chromium, netns=netns,
                             reachable_hosts=(_url_host(turn_url),),
                             extra_flags=tuple(MEDIA_FLAGS) + tuple(browser_flags),
                             startup_timeout=min(30.0, timeout)) as chrome:
        page = chrome.new_page()
        page.navigate(pages.url, timeout=min(10.0, left()))
        page.wait_for("window.janusCall", timeout=min(10.0, left()), what="the page's script")
        page.evaluate(f"void (window.janusResult = null, janusCall({json.dumps(params)})"
                      f".then((r) => {{ window.janusResult = r; }}))", timeout=5.0)
        try:
            # getUserMedia, the requests, gathering, the answer and connecting are each bounded
            # by step_timeout in the page; then the media for `seconds` (and the restart's
            # bounds).
            _wait_for_result(page, min(left(), 5 * step_timeout + media), on_phase)
        except h.TestFailure as e:
            progress = page.evaluate("window.janusProgress", timeout=5.0) or {}
            raise h.TestFailure(f"{e}: the page was in phase {progress.get('phase')!r}; its "
                                f"log ends with {progress.get('log', [])[-8:]}")
        result = page.evaluate("window.janusResult", timeout=min(5.0, left()))
        h.check(isinstance(result, dict), f"the page's result is {result!r}")
        result["browser"] = chrome.version
        result["pageErrors"] = list(pages.errors)
    return result


def _wait_for_result(page: browser.Page, timeout: float,
                     on_phase: Optional[Callable[[str, dict], None]]) -> None:
    """Until the page's call ended (window.janusResult), telling on_phase each phase seen."""
    if on_phase is None:
        page.wait_for("window.janusResult", timeout=timeout, what="the call to end")
        return
    deadline = time.monotonic() + timeout
    seen = None
    while True:
        done, phase = page.evaluate("[Boolean(window.janusResult), "
                                    "(window.janusProgress || {}).phase || null]", timeout=5.0)
        if phase != seen and phase is not None:
            seen = phase
            on_phase(phase, page.evaluate("window.janusProgress", timeout=5.0) or {})
        if done:
            return
        if time.monotonic() >= deadline:
            raise h.TestFailure(f"timed out after {timeout:.0f} s waiting for the call to end "
                                f"in the page")
        time.sleep(0.1)


# ---------------------------------------------------------------------------------------------
# What a passing call shows
# ---------------------------------------------------------------------------------------------

def _get(d: Optional[dict], *path: str, default: Any = None) -> Any:
    for key in path:
        if not isinstance(d, dict) or key not in d:
            return default
        d = d[key]
    return d


def numbers(result: dict) -> Dict[str, Any]:
    """The measured numbers of a call (the last sample unless said otherwise): frames decoded
    at half-time and at the end, RTP packets and bytes each way per kind, packets lost (the
    browser's inbound count, and Janus's RTCP reports of what it lost), round-trip times in ms
    (the candidate pair's STUN RTT, and RTCP's per kind), the selected pair's bytes and
    candidates."""
    samples = result.get("samples") or [{}]
    first, last = samples[0], samples[-1]

    def ms(v):
        return None if v is None else round(1000.0 * v, 2)

    n: Dict[str, Any] = {
        "frames_decoded": (_get(first, "inbound", "video", "framesDecoded", default=0),
                           _get(last, "inbound", "video", "framesDecoded", default=0)),
        "resolution": (_get(last, "inbound", "video", "frameWidth"),
                       _get(last, "inbound", "video", "frameHeight")),
        "pair": _get(last, "pair", default={}),
        "dtls": _get(last, "transport", "dtlsState"),
        "rtt_pair_ms": ms(_get(last, "pair", "currentRoundTripTime")),
    }
    for kind in ("audio", "video"):
        n[f"{kind}_packets_received"] = (_get(first, "inbound", kind, "packetsReceived",
                                              default=0),
                                         _get(last, "inbound", kind, "packetsReceived",
                                              default=0))
        n[f"{kind}_packets_sent"] = (_get(first, "outbound", kind, "packetsSent", default=0),
                                     _get(last, "outbound", kind, "packetsSent", default=0))
        n[f"{kind}_bytes_received"] = _get(last, "inbound", kind, "bytesReceived", default=0)
        n[f"{kind}_bytes_sent"] = _get(last, "outbound", kind, "bytesSent", default=0)
        n[f"{kind}_packets_lost"] = _get(last, "inbound", kind, "packetsLost", default=0)
        n[f"{kind}_remote_lost"] = _get(last, "remoteInbound", kind, "packetsLost")
        n[f"{kind}_rtt_rtcp_ms"] = ms(_get(last, "remoteInbound", kind, "roundTripTime"))
    return n


def check_call(result: dict, relay_protocol: str, janus_ip: str,
               max_loss: float = 0.05, min_frames: int = 10) -> Dict[str, Any]:
    """Fails (TestFailure) unless the call shows media both ways through a relay candidate
    (see the module docstring); returns numbers(result). max_loss: the largest share of the
    RTP packets the browser expected that may be lost, per kind."""
    h.check(result.get("ok") is True and result.get("phase") == "done",
            f"the call failed in phase {result.get('phase')!r}: {result.get('error')} "
            f"(ICE {result.get('ice')}; candidates {result.get('candidates')}; candidate "
            f"errors {result.get('candidateErrors')}; Janus's events {result.get('events')}; "
            f"its answer's candidates {result.get('answerCandidates')})")
    h.check(len(result.get("samples") or []) == 2, f"the page took "
            f"{len(result.get('samples') or [])} getStats() samples, want 2")
    h.check(not result.get("pageErrors"), f"the page server: {result.get('pageErrors')}")
    n = numbers(result)
    pair = n["pair"]
    local, remote = pair.get("local", {}), pair.get("remote", {})
    h.check(bool(pair), f"getStats has no selected candidate pair: {result['samples'][-1]}")
    h.check(local.get("type") == "relay",
            f"the browser's end of the selected pair is a {local.get('type')} candidate, want "
            f"relay: {pair}")
    h.check(local.get("relayProtocol") == relay_protocol,
            f"the browser reached the TURN server over {local.get('relayProtocol')!r}, want "
            f"{relay_protocol!r}: {pair}")
    h.check(remote.get("address") == janus_ip,
            f"the selected pair's remote end is {remote.get('address')}:{remote.get('port')}, "
            f"want Janus's address {janus_ip}: {pair}")
    h.check(n["dtls"] == "connected", f"DTLS state {n['dtls']!r}, want connected")
    h.check("webrtcup" in result.get("events", []),
            f"Janus never said webrtcup (its events: {result.get('events')})")
    f0, f1 = n["frames_decoded"]
    h.check(f0 >= 1 and f1 >= f0 + min_frames,
            f"video frames decoded {f0} at half-time, {f1} at the end: want > 0 and at least "
            f"{min_frames} more (Janus's echo of the browser's video, back through the relay)")
    for kind in ("audio", "video"):
        for what in ("packets_received", "packets_sent"):
            a, b = n[f"{kind}_{what}"]
            h.check(0 < a < b, f"{kind} RTP {what.replace('_', ' ')}: {a} at half-time, {b} at "
                               f"the end; want > 0 and growing")
        received, lost = n[f"{kind}_packets_received"][1], n[f"{kind}_packets_lost"]
        h.check(lost <= max_loss * max(1, received + lost),
                f"{kind}: {lost} packets lost of {received + lost}, more than "
                f"{100 * max_loss:.0f} %")
    h.check(n["rtt_pair_ms"] is not None or n["video_rtt_rtcp_ms"] is not None
            or n["audio_rtt_rtcp_ms"] is not None,
            f"no round-trip time in getStats (candidate pair nor remote-inbound-rtp): "
            f"{result['samples'][-1]}")
    for rtt in ("rtt_pair_ms", "audio_rtt_rtcp_ms", "video_rtt_rtcp_ms"):
        h.check(n[rtt] is None or 0 <= n[rtt] < 1000, f"{rtt} = {n[rtt]}: want 0-1000 ms")
    return n


def describe(n: Dict[str, Any]) -> str:
    """The numbers as printed in a test's output."""
    pair = n["pair"]
    local, remote = pair.get("local", {}), pair.get("remote", {})
    w, hgt = n["resolution"]
    return (f"video frames decoded {n['frames_decoded'][0]} -> {n['frames_decoded'][1]} "
            f"({w}x{hgt}); packets received audio {n['audio_packets_received'][1]} / video "
            f"{n['video_packets_received'][1]}, sent audio {n['audio_packets_sent'][1]} / video "
            f"{n['video_packets_sent'][1]}; packets lost (browser inbound) audio "
            f"{n['audio_packets_lost']} / video {n['video_packets_lost']}, (Janus's RTCP) audio "
            f"{n['audio_remote_lost']} / video {n['video_remote_lost']}; RTT candidate pair "
            f"{n['rtt_pair_ms']} ms, RTCP audio {n['audio_rtt_rtcp_ms']} ms / video "
            f"{n['video_rtt_rtcp_ms']} ms; bytes sent {pair.get('bytesSent')} / received "
            f"{pair.get('bytesReceived')} on the pair (RTP payload+headers: audio "
            f"{n['audio_bytes_sent']} / {n['audio_bytes_received']}, video "
            f"{n['video_bytes_sent']} / {n['video_bytes_received']}); selected pair "
            f"{local.get('type')} {local.get('address')}:{local.get('port')} "
            f"({local.get('relayProtocol')} to the TURN server) <-> {remote.get('type')} "
            f"{remote.get('address')}:{remote.get('port')}")


RESTART_STEPS = ("lostAt", "offerAt", "candidateAt", "answerAt", "connectedAt", "mediaAt")


def check_restart(result: dict, relay_protocol: str, janus_ip: str,
                  max_loss: float = 0.05, min_frames: int = 10) -> Dict[str, Any]:
    """What a call that recovered by an ICE restart (janus_call(restart=...)) must show: every
    step of the restart done, in order; then what check_call() asks of any call, from the
    sample taken when media came back to the end, with the packets lost counted from that
    sample on (the outage's gap is not the new path's loss). Returns check_call()'s numbers,
    with "restart": the steps' wall-clock times in s (time.time()'s clock) and
    "restart_candidates": the fresh relay candidates."""
    r = result.get("restart") or {}
    h.check(all(r.get(k) for k in RESTART_STEPS),
            f"the ICE restart did not finish: {result.get('error')}; its steps "
            f"{ {k: r.get(k) for k in RESTART_STEPS} }, ICE states {r.get('iceStates')}, "
            f"log {result.get('log', [])[-12:]}")
    times = [r[k] for k in RESTART_STEPS if k != "candidateAt"]
    h.check(times == sorted(times), f"the restart's steps out of order: {r}")
    samples = result.get("samples") or []
    h.check(len(samples) == 3, f"the page took {len(samples)} getStats() samples, want 3 "
                               f"(before the loss, media back, the end)")
    back, last = samples[1], copy.deepcopy(samples[2])
    for kind, stats in last.get("inbound", {}).items():
        stats["packetsLost"] = (stats.get("packetsLost", 0) -
                                _get(back, "inbound", kind, "packetsLost", default=0))
    n = check_call(dict(result, samples=[back, last]), relay_protocol, janus_ip, max_loss,
                   min_frames)
    n["restart"] = {k[:-2]: r[k] / 1000.0 for k in RESTART_STEPS}
    n["restart_candidates"] = list(r.get("candidates") or [])
    return n
