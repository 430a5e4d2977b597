"""Headless Debian Chromium driven over the Chrome DevTools Protocol, stdlib only.

The browser is started with --remote-debugging-pipe: DevTools messages are JSON texts, each
ended by a NUL byte, that Chromium reads on its fd 3 and writes on its fd 4. No debugging port is
opened (nothing to collide with tests running in parallel, nothing reachable from outside), no
WebDriver or websocket library is needed, and if the browser dies the pipe reaches EOF at once
instead of a connection timing out.

  with Chromium(workdir) as browser:
      page = browser.new_page()                     # a tab, attached in flat session mode
      page.navigate("http://127.0.0.1:PORT/")
      page.wait_for("window.kturnDemo", timeout=10)  # the page's script ran
      page.fill("#count", "50")                      # typed into the field
      page.click("#connect")                         # a mouse click in the middle of it
      page.wait_for("...dataset.phase === 'done'", timeout=40)
      page.text("#echoed")                           # "50", as shown
      page.evaluate("kturnDemo.result", timeout=5)   # a value (a promise is awaited)

Every console message, uncaught exception and browser log entry of the page is written as it
arrives to chromium-console.log in the work dir, which harness.run_test() prints on failure next
to chromium.log (the browser's own stderr).

Network safety: Chromium runs with the flags that keep it off the network when nothing asks
(no background networking, component updates, sync, QUIC, crash uploads), and host name
resolution is mapped to NOTFOUND except for localhost, so only what a test page does itself
(loopback addresses) can leave the browser. The mapping covers IP literals too where Chromium
resolves them (a TURN-TCP/TLS server's address): a test whose page reaches another address
names it in `reachable_hosts`. `netns` runs the browser in a network namespace of the test's.
"""

from __future__ import annotations

import fcntl
import functools
import http.server
import ipaddress
import json
import os
import select
import shutil
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Dict, List, Optional, Sequence, Tuple

import harness as h

# As the machine notes say Debian's chromium runs headless here (root, no GPU), plus flags that
# keep an automated, offline browser quiet and deterministic.
BASE_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-default-browser-check", "--disable-default-apps", "--disable-extensions",
    "--disable-breakpad", "--disable-crash-reporter", "--disable-domain-reliability",
    "--disable-client-side-phishing-detection", "--disable-dev-shm-usage",
    "--disable-features=Translate,MediaRouter,OptimizationHints,DialMediaRouteProvider,"
    "AutofillServerCommunication,CertificateTransparencyComponentUpdater",
    "--metrics-recording-only", "--password-store=basic", "--mute-audio",
    "--no-proxy-server",
    "--enable-logging=stderr", "--log-level=1",
)


def host_resolver_rules(reachable_hosts: Sequence[str] = ()) -> str:
    """Every host name (and IP literal Chromium resolves) NOTFOUND but localhost, 127.0.0.1 and
    reachable_hosts. A name is excluded in its rooted form too: WebRTC asks the resolver for
    "turn.example." (with the final dot), which a rule for "turn.example" does not match."""
    hosts = ["localhost", "127.0.0.1"]
    for x in reachable_hosts:
        rooted = [] if _is_ip(x) or x.endswith(".") else [x + "."]
        hosts += [name for name in [x, *rooted] if name not in hosts]
    return "--host-resolver-rules=MAP * ~NOTFOUND" + "".join(f", EXCLUDE {x}" for x in hosts)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


class DevToolsPipe:
    """The parent's end of --remote-debugging-pipe: numbered commands, responses and events."""

    def __init__(self, read_fd: int, write_fd: int, console_log: str):
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.buffer = b""
        self.next_id = 1
        self.events: List[Dict[str, Any]] = []
        self.console_lines: List[str] = []
        self.console_log = console_log
        self.closed = False

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.closed = True

    def send(self, method: str, params: Optional[dict] = None,
             session: Optional[str] = None) -> int:
        msg: Dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.next_id += 1
        data = json.dumps(msg).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self.write_fd, data):]
        except OSError as e:
            raise h.TestFailure(f"DevTools pipe: cannot send {method} ({e}): did the browser "
                                f"exit?")
        return msg["id"]

    def _read_messages(self, deadline: float) -> List[Dict[str, Any]]:
        """Blocks until at least one message is complete or the deadline passes."""
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return []
            ready, _, _ = select.select([self.read_fd], [], [], min(left, 0.5))
            if not ready:
                continue
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise h.TestFailure("DevTools pipe closed: the browser exited (see chromium.log)")
            self.buffer += chunk
        *complete, self.buffer = self.buffer.split(b"\0")
        return [json.loads(m) for m in complete if m]

    def call(self, method: str, params: Optional[dict] = None, session: Optional[str] = None,
             timeout: float = 10.0) -> Dict[str, Any]:
        """Sends a command and waits for its response; events that arrive meanwhile are kept."""
        msg_id = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for msg in self._read_messages(deadline):
                if msg.get("id") == msg_id:
                    if "error" in msg:
                        raise h.TestFailure(f"DevTools {method} failed: {msg['error']}")
                    return msg.get("result", {})
                if "method" in msg:
                    self._on_event(msg)
        raise h.TestFailure(f"DevTools {method}: no response within {timeout:.0f} s")

    def _on_event(self, event: Dict[str, Any]) -> None:
        self.events.append(event)
        line = _console_line(event)
        if line is not None:
            self.console_lines.append(line)
            with open(self.console_log, "a") as f:
                f.write(line + "\n")


def _remote_object_text(obj: Dict[str, Any]) -> str:
    if "value" in obj:
        v = obj["value"]
        return v if isinstance(v, str) else json.dumps(v)
    return str(obj.get("description", obj.get("type", "?")))


def _console_line(event: Dict[str, Any]) -> Optional[str]:
    """One readable line for a console message, an uncaught exception or a log entry."""
    method, p = event.get("method"), event.get("params", {})
    if method == "Runtime.consoleAPICalled":
        text = " ".join(_remote_object_text(a) for a in p.get("args", []))
        return f"console.{p.get('type', 'log')}: {text}"
    if method == "Runtime.exceptionThrown":
        d = p.get("exceptionDetails", {})
        exc = d.get("exception", {})
        return (f"uncaught exception: {d.get('text', '')} "
                f"{exc.get('description', '')} at {d.get('url', '')}:{d.get('lineNumber', '')}")
    if method == "Log.entryAdded":
        e = p.get("entry", {})
        return f"log.{e.get('level', '?')} [{e.get('source', '?')}]: {e.get('text', '')} " \
               f"{e.get('url', '')}".rstrip()
    return None


class Page:
    """One tab, reached through a flat-mode session on the browser's pipe."""

    def __init__(self, pipe: DevToolsPipe, session: str):
        self.pipe = pipe
        self.session = session

    def call(self, method: str, params: Optional[dict] = None, timeout: float = 10.0):
        return self.pipe.call(method, params, self.session, timeout)

    def navigate(self, url: str, timeout: float = 10.0) -> None:
        result = self.call("Page.navigate", {"url": url}, timeout)
        if result.get("errorText"):
            raise h.TestFailure(f"navigation to {url} failed: {result['errorText']}")

    def evaluate(self, expression: str, timeout: float) -> Any:
        """Evaluates expression in the page, awaiting a returned promise; returns the value
        (JSON-serialisable). A thrown exception or a rejected promise is a TestFailure."""
        result = self.call("Runtime.evaluate",
                           {"expression": expression, "awaitPromise": True,
                            "returnByValue": True, "userGesture": True}, timeout)
        if "exceptionDetails" in result:
            d = result["exceptionDetails"]
            raise h.TestFailure(f"page threw while evaluating {expression[:60]!r}: "
                                f"{d.get('exception', {}).get('description', d.get('text'))}")
        return result.get("result", {}).get("value")

    def wait_for(self, condition: str, timeout: float, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.evaluate(f"Boolean({condition})", timeout=max(1.0, timeout)):
                return
            if time.monotonic() >= deadline:
                raise h.TestFailure(f"timed out after {timeout:.0f} s waiting for "
                                    f"{what or condition} in the page")
            time.sleep(0.1)

    # A form driven as a user drives it: the browser types the text and clicks with the mouse
    # (DevTools Input domain), so the page gets real input and click events, and a control that
    # is hidden, covered or disabled fails the test as it would fail a user.

    def _on_element(self, selector: str, body: str, timeout: float) -> Any:
        """Evaluates body (a function body with `el` bound to the element selector names) and
        returns its value; no such element is a TestFailure."""
        return self.evaluate(
            f"(() => {{ const el = document.querySelector({json.dumps(selector)}); "
            f"if (!el) throw new Error('no element matches ' + {json.dumps(selector)}); "
            f"{body} }})()", timeout)

    def fill(self, selector: str, text: str, timeout: float = 5.0) -> None:
        """Replaces the value of an input or textarea by typing text into it."""
        self._on_element(selector, "el.focus(); el.value = '';", timeout)
        self.call("Input.insertText", {"text": text}, timeout)

    def click(self, selector: str, timeout: float = 5.0) -> None:
        """A left click with the mouse in the middle of the element, scrolled into view first."""
        box = self._on_element(selector, """
            el.scrollIntoView({block: 'center'});
            const r = el.getBoundingClientRect();
            const x = r.left + r.width / 2, y = r.top + r.height / 2;
            const hit = document.elementFromPoint(x, y);
            return {x, y, width: r.width, height: r.height, disabled: Boolean(el.disabled),
                    reaches: Boolean(hit) && (hit === el || el.contains(hit))};""", timeout)
        h.check(box["width"] > 0 and box["height"] > 0, f"{selector} is not visible: {box}")
        h.check(not box["disabled"], f"{selector} is disabled")
        h.check(box["reaches"], f"a click in the middle of {selector} lands on another element")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": box["x"], "y": box["y"],
                                                   "button": "left", "clickCount": 1}, timeout)

    def text(self, selector: str, timeout: float = 5.0) -> str:
        """The element's text as the page shows it (innerText, trimmed)."""
        return self._on_element(selector, "return el.innerText.trim();", timeout)


def _high_fd(fd: int) -> int:
    """A duplicate of fd numbered 10 or above (so `3<&N 4>&M` in the child never clobbers N or M)
    and inheritable; the original is closed."""
    dup = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    os.set_inheritable(dup, True)
    return dup


class Chromium:
    """A headless Chromium process with a fresh profile in the work dir, killed on exit."""

    def __init__(self, workdir: str, binary: Optional[str] = None,
                 extra_flags: Sequence[str] = (), startup_timeout: float = 20.0,
                 netns: Optional[str] = None, reachable_hosts: Sequence[str] = ()):
        self.workdir = workdir
        self.netns = netns  # run in this network namespace (`ip netns exec`); None: here
        self.reachable_hosts = list(reachable_hosts)  # resolved as themselves (IP literals)
        self.binary = binary or shutil.which("chromium") or "/usr/bin/chromium"
        self.extra_flags = list(extra_flags)
        self.startup_timeout = startup_timeout
        self.proc: Optional[h.Proc] = None
        self.pipe: Optional[DevToolsPipe] = None
        self.console_log = os.path.join(workdir, "chromium-console.log")
        self.version = ""

    def start(self) -> "Chromium":
        h.check(os.access(self.binary, os.X_OK),
                f"chromium not found at {self.binary} (Debian package chromium; "
                f"scripts/install-deps.sh installs it)")
        profile = os.path.join(self.workdir, "chromium-profile")
        os.makedirs(profile, exist_ok=True)
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        child_in, child_out = _high_fd(to_browser_r), _high_fd(from_browser_w)
        flags = list(BASE_FLAGS) + [host_resolver_rules(self.reachable_hosts),
                                    f"--user-data-dir={profile}", "--remote-debugging-pipe"]
        flags += self.extra_flags + ["about:blank"]
        # bash (dash takes single-digit fds only) puts the pipe ends at the numbers Chromium
        # expects, then execs the browser.
        argv = ["/bin/bash", "-c",
                f'exec "$0" "$@" 3<&{child_in} 4>&{child_out} {child_in}<&- {child_out}>&-',
                self.binary] + flags
        if self.netns:
            argv = ["ip", "netns", "exec", self.netns] + argv
        open(self.console_log, "a").close()
        h.register_log(self.console_log)
        self.proc = h.Proc("chromium", argv, self.workdir, pass_fds=(child_in, child_out))
        h.register_log(self.proc.log_path)
        try:
            self.proc.start()
        finally:
            os.close(child_in)
            os.close(child_out)
        self.pipe = DevToolsPipe(from_browser_r, to_browser_w, self.console_log)
        version = self.pipe.call("Browser.getVersion", timeout=self.startup_timeout)
        self.version = version.get("product", "?")
        return self

    def new_page(self) -> Page:
        assert self.pipe is not None
        target = self.pipe.call("Target.createTarget", {"url": "about:blank"})
        attached = self.pipe.call("Target.attachToTarget",
                                  {"targetId": target["targetId"], "flatten": True})
        page = Page(self.pipe, attached["sessionId"])
        for domain in ("Runtime", "Log", "Page"):
            page.call(f"{domain}.enable")
        return page

    def stop(self) -> None:
        if self.pipe is not None and not self.pipe.closed:
            try:  # a clean exit first: no crash dialogs or half-written profile
                self.pipe.send("Browser.close")
            except h.TestFailure:
                pass
        if self.proc is not None and self.proc.running():
            try:
                self.proc.proc.wait(timeout=3)  # type: ignore[union-attr]
            except Exception:  # noqa: BLE001 - stop() below kills the group
                pass
        if self.proc is not None:
            self.proc.stop()
        if self.pipe is not None:
            self.pipe.close()

    def __enter__(self) -> "Chromium":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class PageServer:
    """http://127.0.0.1:PORT/ serving `directory` on a background thread, as
    `python3 -m http.server --directory DIR` does for a user, its listening socket made in
    network namespace `netns` (None: this one). Requests under `forward` = (PREFIX, URL), GET
    and POST with their query strings, are relayed to URL from the namespace of the thread that
    serves them, as an application server relays signalling. Every request that failed is in
    `errors`; the access log is WORKDIR/LOG_NAME."""

    def __init__(self, workdir: str, directory: str, log_name: str = "http.log",
                 netns: Optional[str] = None, forward: Optional[Tuple[str, str]] = None):
        access_log = os.path.join(workdir, log_name)
        h.register_log(access_log)
        self.errors: List[str] = []
        errors = self.errors
        prefix, upstream = forward if forward else ("", "")
        upstream = upstream.rstrip("/")

        class Handler(http.server.SimpleHTTPRequestHandler):
            def _forwarded(self) -> bool:
                return bool(prefix) and (self.path == prefix or
                                         self.path.startswith((prefix + "/", prefix + "?")))

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else None
                request = urllib.request.Request(upstream + self.path[len(prefix):], data=data,
                                                 method=self.command)
                try:
                    # Long polls (Janus holds one for up to 30 s).
                    with urllib.request.urlopen(request, timeout=40) as r:
                        status, body = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, body = e.code, e.read()
                except OSError as e:
                    errors.append(f"{self.command} {self.path}: {upstream} unreachable: {e}")
                    status, body = 502, json.dumps({"error": str(e)}).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the page went away during a long poll

            def do_GET(self):
                if self._forwarded():
                    self._forward()
                else:
                    super().do_GET()

            def do_POST(self):
                if self._forwarded():
                    self._forward()
                else:
                    self.send_error(405)

            def send_error(self, code, message=None, explain=None):
                errors.append(f"{self.command} {self.path}: {code}")
                super().send_error(code, message, explain)

            def end_headers(self):
                self.send_header("Cache-Control", "no-store")
                super().end_headers()

            def log_message(self, fmt, *args):
                with open(access_log, "a") as f:
                    f.write("%s %s\n" % (self.log_date_time_string(), fmt % args))

        handler = functools.partial(Handler, directory=os.path.abspath(directory))
        with h.in_netns(netns):
            self.httpd = http.server.ThreadingHTTPServer((h.LOOPBACK, 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://{h.LOOPBACK}:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "PageServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
