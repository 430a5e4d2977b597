"""A test's life: run_test() parses the arguments, makes the work dir, runs the body under a time
budget and exits 0 or 1; TestFailure and check() are how any part fails it; the cleanups and the
logs registered along the way are run, and printed on failure, at its end."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from typing import Callable, List


class TestFailure(Exception):
    """A check failed; the message says what was expected and what was seen."""


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise TestFailure(msg)


_cleanups: List[Callable[[], object]] = []
_logs: List[str] = []


def register_cleanup(fn: Callable[[], object]) -> None:
    _cleanups.append(fn)


def register_log(path: str) -> None:
    if path not in _logs:
        _logs.append(path)


def _run_cleanups() -> None:
    while _cleanups:
        fn = _cleanups.pop()
        try:
            fn()
        except Exception:  # noqa: BLE001 - cleanup must go on
            traceback.print_exc()


def _dump_logs(max_lines: int = 400) -> None:
    for path in _logs:
        try:
            with open(path, "r", errors="replace") as f:
                lines = f.readlines()
        except OSError:
            continue
        print(f"----- {path} ({len(lines)} lines"
              f"{', last %d' % max_lines if len(lines) > max_lines else ''}) -----")
        sys.stdout.writelines(lines[-max_lines:])
        print(f"----- end of {os.path.basename(path)} -----")


def run_test(name: str, body: Callable[[argparse.Namespace, str], None],
             parser: argparse.ArgumentParser, overall_timeout: int = 110) -> None:
    """Parses args, runs body(args, workdir), cleans up; exits 0 on pass, 1 on failure."""
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix=f"kturn-interop-{name}-")
    ok = False

    def on_alarm(signum, frame):
        raise TestFailure(f"test exceeded its overall time budget of {overall_timeout} s")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(143))  # run finally blocks on ctest kill
    signal.alarm(overall_timeout)
    start = time.monotonic()
    try:
        body(args, workdir)
        ok = True
    except TestFailure as e:
        print(f"FAIL [{name}] ({args.server}): {e}")
    except Exception:  # noqa: BLE001
        print(f"FAIL [{name}] ({args.server}): unexpected error")
        traceback.print_exc(file=sys.stdout)
    finally:
        signal.alarm(0)
        _run_cleanups()
        if not ok:
            _dump_logs()
            print(f"(work dir kept: {workdir})")
        elif args.keep_logs:
            print(f"(work dir kept: {workdir})")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if ok:
        print(f"PASS [{name}] ({args.server}) in {time.monotonic() - start:.1f} s")
    sys.stdout.flush()
    sys.exit(0 if ok else 1)
