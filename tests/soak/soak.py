#!/usr/bin/python3
"""Soak: allocation churn against a real kturnd, resources must come back.

Starts kturnd (a Release build; its path is an argument) on 127.0.0.1 with ephemeral (TURN REST)
credentials and the health and metrics endpoints on free loopback ports, then runs kturn-bench
(bench/load) for --cycles cycles. Each cycle sets up --allocations allocations (401, Allocate,
CreatePermission, ChannelBind to kturn-bench's echo peer), relays traffic on --active of them,
refreshes every allocation (Refresh, then permission and channel again) every
--refresh-after seconds, and at the end releases --release-fraction of them with Refresh(0) and
abandons the rest (the last cycle: --final-release-fraction), which kturnd must expire on its
own. After the last cycle the script waits until every allocation has expired.

kturnd grants at least its default lifetime, 600 s (RFC 8656 §7.2: a smaller requested LIFETIME
is raised to the default, and kturnd has no setting to lower it), so the expiry wait takes ten
minutes: the whole run takes about 12 minutes. --quick releases everything and skips the wait
(about 2 minutes), which leaves the expiry path out.

Every second it samples kturnd's RSS (VmRSS of /proc/<pid>/status), its open descriptors
(/proc/<pid>/fd) and, from /metrics, stunner_allocations_active and the created/expired
counters. It prints a table (every --print-every seconds and at each phase change), writes every
sample and the summary to <workdir>/soak.json, prints the summary as one JSON line, and exits 1
if any check fails:

  * every cycle set up at least 99 % of its allocations and refreshed each of them at least once;
  * after the churn ends and the allocations expire, stunner_allocations_active is 0 and
    kturn_allocations_expired_total equals what was abandoned;
  * the descriptor count is back to the baseline (before the first cycle) + --fd-slack;
  * RSS is at most the post-first-cycle level (after cycle 1's generator exited) plus
    --rss-slack-percent of it plus --rss-slack-mb (10 % + 4 MiB: 23.7 -> 30.1 MiB on the
    reference run, which ended at 26.6 MiB). Why not the baseline (15.3 MiB): the allocation
    table's slab and hash index and the timer wheel's slots keep the capacity of their
    high-water mark, and glibc keeps freed heap in its arenas, so RSS does not fall back to the
    fresh process's level. The later cycles also peak higher (10,000, 11,000, 12,000 live: the
    earlier cycles' abandoned allocations are still there), and the timer wheel holds the stale
    entries of deleted allocations (about 2 x 16 bytes each) until their old deadline, up to
    600 s later. The bound catches a leak of about 120 bytes or more per allocation (the headroom
    the reference run left, 3.5 MiB, over its 30,000 allocations); smaller retention shows as a
    steady slope of the per-cycle "rss_kb_after" values in a --quick run with many cycles (about
    40 bytes per allocation today, consistent with the stale timer entries: see
    docs/security.md).

Everything stays on loopback: kturnd, its admin endpoints and the echo peer on 127.0.0.1, cycle
N's clients on 127.0.0.(10 + N). kturnd runs in its own process group and is killed on exit, on
Ctrl-C and SIGTERM, and when --timeout runs out; each kturn-bench run has its own timeout.

  /usr/bin/python3 tests/soak/soak.py --kturnd build-soak/kturnd \\
      --bench build-soak/bench/kturn-bench
"""

import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Dict, List, Optional

LOOPBACK = "127.0.0.1"
SECRET = "soak-shared-secret"
REALM = "kturn.soak"


class SoakError(Exception):
    pass


def free_port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


# Every process this script starts (each leads its own process group); killed at the end.
_started: List[subprocess.Popen] = []


def spawn(argv: List[str], out) -> subprocess.Popen:
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    _started.append(proc)
    return proc


def kill_group(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise OSError("no VmRSS")


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def scrape(port: int) -> Dict[str, float]:
    """The unlabelled sums of the series the soak reads, from kturnd's /metrics."""
    req = urllib.request.Request(f"http://{LOOPBACK}:{port}/metrics",
                                 headers={"Connection": "close"})
    with urllib.request.urlopen(req, timeout=3) as r:
        text = r.read().decode()
    wanted = ("stunner_allocations_active", "kturn_allocations_created_total",
              "kturn_allocations_expired_total")
    out = {k: 0.0 for k in wanted}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in out:
            out[name] += float(line.rsplit(" ", 1)[1])
    return out


class Kturnd:
    def __init__(self, binary: str, workdir: str, threads: int):
        self.binary = binary
        self.workdir = workdir
        self.threads = threads
        self.port = free_port(socket.SOCK_DGRAM)
        self.health_port = free_port(socket.SOCK_STREAM)
        self.metrics_port = free_port(socket.SOCK_STREAM)
        self.proc: Optional[subprocess.Popen] = None
        self.log_path = os.path.join(workdir, "kturnd.log")

    def config(self) -> dict:
        return {
            "version": "v1",
            "admin": {"name": "soak", "loglevel": "all:INFO,session:WARN",
                      "healthcheck_endpoint": f"http://{LOOPBACK}:{self.health_port}",
                      "metrics_endpoint": f"http://{LOOPBACK}:{self.metrics_port}/metrics"},
            "auth": {"type": "ephemeral", "realm": REALM, "credentials": {"secret": SECRET}},
            # No relay port range: the kernel's ephemeral range (about 28,000 ports), so the
            # soak never takes the fixed windows the interop tests and bench/compare use.
            "listeners": [{"name": "udp", "protocol": "TURN-UDP", "address": LOOPBACK,
                           "port": self.port, "routes": ["echo"]}],
            "clusters": [{"name": "echo", "type": "STATIC", "endpoints": ["127.0.0.1/32"]}],
        }

    def start(self) -> "Kturnd":
        path = os.path.join(self.workdir, "kturnd.json")
        with open(path, "w") as f:
            json.dump(self.config(), f, indent=2)
        log = open(self.log_path, "w")
        self.proc = spawn([self.binary, "-c", f"file://{path}", "--udp-thread-num",
                           str(self.threads), "-l", "all:INFO,session:WARN"], log)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SoakError(f"kturnd exited at startup:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(
                        f"http://{LOOPBACK}:{self.health_port}/ready", timeout=1) as r:
                    if r.status == 200:
                        scrape(self.metrics_port)
                        return self
            except OSError:
                pass
            time.sleep(0.1)
        raise SoakError(f"kturnd not ready in 15 s:\n{self.log_tail()}")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def exit_status(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "running"
        return f"signal {-code}" if code < 0 else f"exit code {code}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> Optional[int]:
        """SIGINT (kturnd stops at once, no drain); the exit code, None if it had to be killed."""
        if self.proc is None:
            return None
        if self.proc.poll() is not None:
            return self.proc.returncode
        os.kill(self.proc.pid, signal.SIGINT)
        try:
            return self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kill_group(self.proc)
            return None

    def log_tail(self, lines: int = 40) -> str:
        try:
            with open(self.log_path) as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""


class Sampler:
    """One sample per second; phase names label them."""

    def __init__(self, server: Kturnd, print_every: float):
        self.server = server
        self.print_every = print_every
        self.samples: List[dict] = []
        self.phase = "start"
        self.t0 = time.monotonic()
        self._next = self.t0
        self._last_print = -1e9
        self._printed_phase = ""

    def header(self) -> None:
        print(f"{'t s':>7} {'phase':<18} {'allocations':>11} {'RSS MiB':>8} {'fds':>6} "
              f"{'created':>8} {'expired':>8}", flush=True)

    def scrape(self) -> Dict[str, float]:
        """/metrics, with two retries; says how kturnd ended if it did."""
        for attempt in range(3):
            if not self.server.alive():
                raise SoakError(f"kturnd ended ({self.server.exit_status()}):\n"
                                f"{self.server.log_tail()}")
            try:
                return scrape(self.server.metrics_port)
            except OSError as e:
                if attempt == 2:
                    raise SoakError(f"/metrics failed 3 times while kturnd runs: {e}\n"
                                    f"{self.server.log_tail()}")
                time.sleep(0.5)
        raise AssertionError("unreachable")

    def sample(self, force_print: bool = False) -> dict:
        m = self.scrape()
        s = {"t": round(time.monotonic() - self.t0, 2), "phase": self.phase,
             "rss_kb": rss_kb(self.server.pid), "fds": fd_count(self.server.pid),
             "allocations": int(m["stunner_allocations_active"]),
             "created": int(m["kturn_allocations_created_total"]),
             "expired": int(m["kturn_allocations_expired_total"])}
        self.samples.append(s)
        now = time.monotonic()
        if force_print or self.phase != self._printed_phase or \
                now - self._last_print >= self.print_every:
            self._last_print = now
            self._printed_phase = self.phase
            print(f"{s['t']:7.1f} {s['phase']:<18} {s['allocations']:>11} "
                  f"{s['rss_kb'] / 1024:8.1f} {s['fds']:>6} {s['created']:>8} "
                  f"{s['expired']:>8}", flush=True)
        return s

    def tick(self) -> Optional[dict]:
        """Samples if a second has passed since the last sample."""
        if time.monotonic() < self._next:
            return None
        self._next = max(self._next + 1.0, time.monotonic() - 0.5)
        return self.sample()

    def wait(self, seconds: float, until=None) -> dict:
        """Samples every second for up to `seconds`, or until until(sample) is true."""
        end = time.monotonic() + seconds
        last = self.sample()
        while time.monotonic() < end:
            if until is not None and until(last):
                break
            time.sleep(max(0.0, min(self._next - time.monotonic(), end - time.monotonic())))
            last = self.tick() or last
        return last


def run_bench(a: argparse.Namespace, server: Kturnd, sampler: Sampler, release: float,
              workdir: str, cycle: int) -> dict:
    argv = [a.bench, "--mode", "many", "--server", f"{LOOPBACK}:{server.port}",
            "--auth", "rest", "--secret", SECRET,
            "-n", str(a.allocations), "--active", str(a.active), "--rate", str(a.rate),
            "-s", "100", "--warmup", "1", "-d", str(a.traffic_seconds), "--drain", "0.5",
            "--max-packets", str(int(a.rate * (a.traffic_seconds + 2))),
            "--lifetime", "600", "--refresh-after", str(a.refresh_after),
            "--release-fraction", str(release), "--window", "256",
            "--setup-timeout", "120", "--json", "-q",
            # Each cycle's clients from their own loopback address: a new client's 5-tuple
            # never meets an allocation an earlier cycle abandoned (that would be a 441 or 437,
            # and kturnd's per-source auth throttle would then drop the whole cycle's requests).
            "--client-bind", f"127.0.0.{10 + cycle}"]
    out_path = os.path.join(workdir, f"bench-{cycle}.out")
    budget = 120 + a.traffic_seconds + 60 + a.allocations * 0.004
    with open(out_path, "w") as out:
        proc = spawn(argv, out)
        end = time.monotonic() + budget
        try:
            while proc.poll() is None:
                if time.monotonic() > end:
                    raise SoakError(f"kturn-bench cycle {cycle} ran over {budget:.0f} s")
                sampler.tick()
                time.sleep(0.05)
        finally:
            kill_group(proc)
    with open(out_path) as f:
        text = f.read()
    if proc.returncode != 0:
        raise SoakError(f"kturn-bench cycle {cycle} exited {proc.returncode}:\n{text[-2000:]}")
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise SoakError(f"kturn-bench cycle {cycle} printed no JSON:\n{text[-2000:]}")


def soak(a: argparse.Namespace, workdir: str) -> int:
    server = Kturnd(a.kturnd, workdir, a.threads).start()
    sampler = Sampler(server, a.print_every)
    checks: List[dict] = []
    failures: List[str] = []

    def check(ok: bool, what: str) -> None:
        checks.append({"check": what, "ok": bool(ok)})
        print(f"  {'ok  ' if ok else 'FAIL'} {what}", flush=True)
        if not ok:
            failures.append(what)

    print(f"kturnd pid {server.pid}, TURN {LOOPBACK}:{server.port}, metrics :{server.metrics_port}"
          f", work dir {workdir}", flush=True)
    sampler.header()
    sampler.phase = "baseline"
    sampler.wait(a.baseline_seconds)
    base = sampler.samples[-1]
    cycles = []
    lingering = 0  # abandoned allocations that have not expired yet (none expire in a cycle)
    post_first: Optional[dict] = None
    for cycle in range(1, a.cycles + 1):
        release = a.final_release_fraction if cycle == a.cycles else a.release_fraction
        sampler.phase = f"cycle {cycle}"
        t_start = time.monotonic()
        r = run_bench(a, server, sampler, release, workdir, cycle)
        lingering += r["abandoned"]
        # Released allocations are gone once the Refresh(0) answers came back; wait for the
        # count to settle on the abandoned ones.
        sampler.phase = f"after cycle {cycle}"
        s = sampler.wait(10, until=lambda x: x["allocations"] <= lingering)
        peak = max(x["allocations"] for x in sampler.samples if x["phase"] == f"cycle {cycle}")
        cycles.append({"cycle": cycle, "seconds": round(time.monotonic() - t_start, 1),
                       "allocated": r["allocations"], "failed": r["allocation_failures"],
                       "refreshes": r["refreshes"], "released": r["released"],
                       "abandoned": r["abandoned"], "peak_allocations": peak,
                       "delivered_pps": round(r["delivered_pps"]), "loss": r["loss"],
                       "errors": r["errors"], "allocations_after": s["allocations"],
                       "rss_kb_after": s["rss_kb"], "fds_after": s["fds"]})
        c = cycles[-1]
        print(f"  cycle {cycle}: {c['allocated']} allocated ({c['failed']} failed), "
              f"{c['refreshes']} refreshes, {c['released']} released, {c['abandoned']} left to "
              f"expire, peak {peak} live, {c['delivered_pps']} pps delivered "
              f"(loss {100 * r['loss']:.2f} %), errors {r['errors']}", flush=True)
        check(r["allocations"] >= 0.99 * a.allocations,
              f"cycle {cycle}: at least 99 % of {a.allocations} allocations set up "
              f"({r['allocations']})")
        check(r["refreshes"] >= r["allocations"],
              f"cycle {cycle}: every allocation refreshed at least once "
              f"({r['refreshes']} refreshes)")
        check(s["allocations"] <= lingering,
              f"cycle {cycle}: after release, live allocations {s['allocations']} <= "
              f"abandoned so far {lingering}")
        if cycle == 1:
            post_first = s

    sampler.phase = "expiry"
    # The last abandoned allocation was refreshed at most --traffic-seconds before its cycle
    # ended; kturnd grants 600 s and expires it on the next 1-second tick.
    expiry_budget = 600 + a.traffic_seconds + 60
    end = sampler.wait(expiry_budget, until=lambda x: x["allocations"] == 0)
    sampler.phase = "settled"
    final = sampler.wait(a.settle_seconds)
    final = sampler.samples[-1]
    peak_rss = max(x["rss_kb"] for x in sampler.samples)
    peak_fds = max(x["fds"] for x in sampler.samples)
    peak_alloc = max(x["allocations"] for x in sampler.samples)

    check(end["allocations"] == 0 and final["allocations"] == 0,
          f"allocations back to 0 (after the expiry wait: {final['allocations']})")
    abandoned = sum(c["abandoned"] for c in cycles)
    expired = final["expired"] - base["expired"]
    check(expired >= abandoned,
          f"kturn_allocations_expired_total grew by {expired} >= {abandoned} abandoned")
    check(final["fds"] <= base["fds"] + a.fd_slack,
          f"fds back to baseline: {final['fds']} <= {base['fds']} + {a.fd_slack}")
    rss_bound = post_first["rss_kb"] * (1 + a.rss_slack_percent / 100) + a.rss_slack_mb * 1024
    check(final["rss_kb"] <= rss_bound,
          f"RSS {final['rss_kb'] / 1024:.1f} MiB <= post-first-cycle "
          f"{post_first['rss_kb'] / 1024:.1f} MiB + {a.rss_slack_percent:g} % + "
          f"{a.rss_slack_mb:g} MiB = {rss_bound / 1024:.1f} MiB")
    check(server.alive(), "kturnd still running after the churn")

    summary = {
        "ok": not failures,
        "duration_s": round(time.monotonic() - sampler.t0, 1),
        "allocations_per_cycle": a.allocations, "cycles": a.cycles, "active": a.active,
        "rate_pps": a.rate, "refresh_after_s": a.refresh_after,
        "baseline": {"rss_kb": base["rss_kb"], "fds": base["fds"]},
        "post_first_cycle": {"rss_kb": post_first["rss_kb"], "fds": post_first["fds"],
                             "allocations": post_first["allocations"]},
        "peak": {"rss_kb": peak_rss, "fds": peak_fds, "allocations": peak_alloc},
        "final": {"rss_kb": final["rss_kb"], "fds": final["fds"],
                  "allocations": final["allocations"]},
        # Informational: RSS gained after the first cycle per allocation created since.
        "rss_growth_bytes_per_allocation_after_first_cycle": round(
            (final["rss_kb"] - post_first["rss_kb"]) * 1024 /
            max(1, final["created"] - base["created"] - cycles[0]["allocated"]), 1),
        "created_total": final["created"] - base["created"], "expired_total": expired,
        "abandoned_total": abandoned,
        "released_total": sum(c["released"] for c in cycles),
        "refreshes_total": sum(c["refreshes"] for c in cycles),
        "per_cycle": cycles, "checks": checks,
    }
    code = server.stop()
    check(code == 0, f"kturnd exits 0 on SIGINT (exit code {code})")
    summary["ok"] = not failures
    with open(os.path.join(workdir, "soak.json"), "w") as f:
        json.dump({"summary": summary, "samples": sampler.samples}, f, indent=1)
    print(json.dumps(summary), flush=True)
    print(("PASS" if not failures else "FAIL") + f" soak ({summary['duration_s']} s); samples "
          f"in {os.path.join(workdir, 'soak.json')}", flush=True)
    if failures:
        print("kturnd log tail:\n" + server.log_tail(), flush=True)
    return 0 if not failures else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kturnd", required=True, help="kturnd binary (Release build)")
    p.add_argument("--bench", required=True, help="kturn-bench binary")
    p.add_argument("--allocations", type=int, default=10000, help="allocations per cycle")
    p.add_argument("--cycles", type=int, default=3)
    p.add_argument("--active", type=int, default=200, help="allocations that carry traffic")
    p.add_argument("--rate", type=float, default=2000, help="offered pps over the active ones")
    p.add_argument("--traffic-seconds", type=float, default=15)
    p.add_argument("--refresh-after", type=float, default=6,
                   help="seconds between refreshes of each allocation")
    p.add_argument("--release-fraction", type=float, default=0.9,
                   help="share released with Refresh(0) at the end of each cycle but the last")
    p.add_argument("--final-release-fraction", type=float, default=0.0,
                   help="the same for the last cycle (the rest expire)")
    p.add_argument("--threads", type=int, default=1, help="kturnd --udp-thread-num")
    p.add_argument("--baseline-seconds", type=float, default=5)
    p.add_argument("--settle-seconds", type=float, default=5)
    p.add_argument("--fd-slack", type=int, default=4)
    p.add_argument("--rss-slack-percent", type=float, default=10)
    p.add_argument("--rss-slack-mb", type=float, default=4)
    p.add_argument("--print-every", type=float, default=10, help="table row period, s")
    p.add_argument("--timeout", type=float, default=1500, help="hard bound on the whole run, s")
    p.add_argument("--quick", action="store_true",
                   help="release everything with Refresh(0), no 600 s expiry wait")
    p.add_argument("--keep-logs", action="store_true", help="keep the work dir on success")
    a = p.parse_args()
    if a.quick:
        a.release_fraction = a.final_release_fraction = 1.0
    for path in (a.kturnd, a.bench):
        if not os.access(path, os.X_OK):
            print(f"soak: not an executable: {path}", file=sys.stderr)
            return 2
    a.kturnd, a.bench = os.path.abspath(a.kturnd), os.path.abspath(a.bench)

    # Both processes need a descriptor per allocation; raise the soft limit to the hard one.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    need = int(a.allocations * (1 + (a.cycles - 1) * (1 - a.release_fraction))) + 256
    if need > hard:
        print(f"soak: kturnd needs about {need} descriptors, RLIMIT_NOFILE hard limit is {hard}",
              file=sys.stderr)
        return 2

    workdir = tempfile.mkdtemp(prefix="kturn-soak-")

    def on_alarm(signum, frame):
        raise SoakError(f"overall --timeout of {a.timeout:.0f} s reached")

    def on_term(signum, frame):
        raise SoakError(f"signal {signum}")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, on_term)
    signal.alarm(int(a.timeout))
    rc = 1
    try:
        rc = soak(a, workdir)
    except (SoakError, OSError, KeyboardInterrupt) as e:
        print(f"FAIL soak: {e}", flush=True)
        rc = 1
    finally:
        signal.alarm(0)
        for proc in _started:
            kill_group(proc)
    if rc == 0 and not a.keep_logs:
        for name in os.listdir(workdir):
            if name != "soak.json":
                os.remove(os.path.join(workdir, name))
    return rc


if __name__ == "__main__":
    sys.exit(main())
