"""Child processes: Proc (own process group, output to a log file, killed at the end) and the
turnutils_peer UDP echo peer run through it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from typing import Optional, Sequence, Tuple

from .net import LOOPBACK, family_of, free_udp_port_pair, in_netns
from .runner import TestFailure, register_cleanup, register_log


class Proc:
    """A child process in its own process group, output to a log file, killed on stop()."""

    def __init__(self, name: str, argv: Sequence[str], workdir: str, env=None,
                 pass_fds: Sequence[int] = ()):
        self.name = name
        self.argv = list(argv)
        self.workdir = workdir
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.env = env
        self.pass_fds = tuple(pass_fds)  # kept open in the child, at the same numbers
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> "Proc":
        log = open(self.log_path, "ab")
        log.write(("$ " + " ".join(self.argv) + "\n").encode())
        log.flush()
        try:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=self.workdir,
                                         env=self.env, start_new_session=True,
                                         pass_fds=self.pass_fds)
        except OSError as e:
            raise TestFailure(f"cannot start {self.name} ({self.argv[0]}): {e}")
        finally:
            log.close()
        register_cleanup(self.stop)
        return self

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise TestFailure(f"{self.name} did not finish within {timeout:.0f} s "
                              f"(killed); see {self.log_path}")

    def stop(self, grace: float = 3.0) -> Optional[int]:
        p = self.proc
        if p is None:
            return None
        if p.poll() is None:
            for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    p.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        else:  # leader gone; make sure no stragglers in its group survive
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        return p.returncode

    def output(self) -> str:
        try:
            with open(self.log_path, "r", errors="replace") as f:
                return f.read()
        except OSError:
            return ""


def start_udp_echo_peer(workdir: str, host: str = LOOPBACK,
                        port: Optional[int] = None,
                        netns: Optional[str] = None) -> Tuple[Proc, int]:
    """turnutils_peer (a UDP echo server) on host:port and port + 1, in network namespace
    `netns` (None: this one); waits until it echoes."""
    with in_netns(netns):
        port = port or free_udp_port_pair(host)
    prefix = ["ip", "netns", "exec", netns] if netns else []
    peer = Proc(f"turnutils_peer-{host}", prefix + ["turnutils_peer", "-L", host, "-p", str(port)],
                workdir)
    register_log(peer.log_path)
    peer.start()
    with in_netns(netns), socket.socket(family_of(host), socket.SOCK_DGRAM) as s:
        s.bind((host, 0))
        s.settimeout(0.2)
        for _ in range(50):  # ~10 s
            if not peer.running():
                raise TestFailure(f"turnutils_peer exited early (rc={peer.proc.returncode})")
            try:
                s.sendto(b"ping", (host, port))
                data, _ = s.recvfrom(64)
                if data == b"ping":
                    return peer, port
            except (socket.timeout, OSError):
                time.sleep(0.1)
    raise TestFailure(f"turnutils_peer on {host}:{port} never echoed")
