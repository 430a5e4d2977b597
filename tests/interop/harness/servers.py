"""The server under test: ServerSettings (what a test wants), KturndServer and CoturnServer
(context managers that start it on loopback, wait for a STUN Binding answer and kill its process
group at the end), the --server arguments, and the YAML and certificate helpers they use."""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Dict, List, Optional, Sequence, Tuple

from .net import LOOPBACK, free_port, relay_port_range
from .procs import Proc
from .runner import TestFailure, check, register_cleanup, register_log
from .stun import rest_credentials
from .turn_client import stun_binding_probe

REALM = "kturn.test"
STATIC_USER = "user1"
STATIC_PASS = "pass1"
REST_SECRET = "kturn-interop-secret"


def to_yaml(value, indent: int = 0) -> str:
    """Minimal block-style YAML emitter for dict/list/str/int/bool/None (strings JSON-quoted,
    which is valid YAML double-quoted style)."""
    pad = "  " * indent

    def scalar(v) -> str:
        if v is None:
            return "null"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return str(v)
        return json.dumps(str(v))

    lines: List[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                lines.append(f"{pad}{k}:")
                lines.append(to_yaml(v, indent + 1))
            elif isinstance(v, (dict, list)):
                lines.append(f"{pad}{k}: {'{}' if isinstance(v, dict) else '[]'}")
            else:
                lines.append(f"{pad}{k}: {scalar(v)}")
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, dict) and v:
                inner = to_yaml(v, indent + 1).split("\n")
                lines.append(f"{pad}- {inner[0].lstrip()}")
                lines.extend(inner[1:])
            elif isinstance(v, list) and v:
                lines.append(f"{pad}-")
                lines.append(to_yaml(v, indent + 1))
            else:
                lines.append(f"{pad}- {scalar(v) if not isinstance(v, (dict, list)) else '{}'}")
    else:
        lines.append(pad + scalar(value))
    return "\n".join(lines)


def self_signed_cert(common_name: str = "localhost") -> Tuple[str, str]:
    """A fresh ECDSA P-256 self-signed certificate and key: (cert.pem path, key.pem path)."""
    d = tempfile.mkdtemp(prefix="kturn-interop-cert-")
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec",
                        "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
                        "-out", cert, "-days", "2", "-subj", f"/CN={common_name}",
                        "-addext", f"subjectAltName=DNS:{common_name},IP:127.0.0.1"],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, f"openssl req failed: {r.stderr.strip()}")
    register_cleanup(lambda: shutil.rmtree(d, ignore_errors=True))
    return cert, key


def ca_signed_certs(names: Sequence[str]) -> Tuple[str, Dict[str, Tuple[str, str]]]:
    """A fresh test CA and an ECDSA P-256 certificate from it for each DNS name in `names` (its
    only subjectAltName): (ca.pem path, {name: (cert.pem path, key.pem path)}). For tests that
    verify certificates by name, as a browser does."""
    d = tempfile.mkdtemp(prefix="kturn-interop-ca-")
    register_cleanup(lambda: shutil.rmtree(d, ignore_errors=True))
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]

    def openssl(*args: str) -> None:
        r = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=30)
        check(r.returncode == 0, f"openssl {args[0]} failed: {r.stderr.strip()}")

    ca, ca_key = os.path.join(d, "ca.pem"), os.path.join(d, "ca.key")
    openssl("req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "2",
            "-subj", "/CN=kturn interop test CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign")
    out = {}
    for i, name in enumerate(names):
        cert, key, csr, ext = (os.path.join(d, f"{i}.{x}") for x in ("pem", "key", "csr", "ext"))
        with open(ext, "w") as f:
            f.write(f"subjectAltName=DNS:{name}\n")
        openssl("req", "-new", *ec, "-keyout", key, "-out", csr, "-subj", f"/CN={name}")
        openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                "-out", cert, "-days", "2", "-extfile", ext)
        out[name] = (cert, key)
    return ca, out


def base64_file(path: str) -> str:
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


class ServerSettings:
    """What a test wants from the server, independent of which server runs it."""

    def __init__(self, auth: str = "static", realm: str = REALM,
                 username: str = STATIC_USER, password: str = STATIC_PASS,
                 secret: str = REST_SECRET, allowed: Sequence[str] = ("127.0.0.1/32",),
                 denied_for_coturn: Sequence[str] = (), port: Optional[int] = None,
                 relay_range: Optional[Tuple[int, int]] = None, tcp: bool = False,
                 tls: bool = False, host: str = LOOPBACK, tcp_relay: bool = False):
        check(auth in ("static", "rest"), f"unknown auth {auth}")
        self.auth = auth
        self.realm = realm
        self.username = username
        self.password = password
        self.secret = secret
        self.allowed = list(allowed)
        # coturn cannot express "only these peers": tests emulate kturnd's allow-list with an
        # explicit deny-list when running against the stand-in.
        self.denied_for_coturn = list(denied_for_coturn)
        self.host = host  # where the listeners bind: LOOPBACK, or LOOPBACK6 for IPv6 tests
        self.port = port or free_port(host)
        self.relay_range = relay_range or relay_port_range()
        # Also a TURN-TCP listener on the same port number (coturn always listens on both).
        self.tcp = tcp
        # The allowed peers form a `protocol: TCP` cluster: TCP allocations (RFC 6062) may reach
        # them (UDP allocations relay to every cluster either way).
        self.tcp_relay = tcp_relay
        # Also TURN-TLS and TURN-DTLS listeners on a port number of their own (TCP and UDP, as
        # coturn's tls-listening-port), with a fresh self-signed certificate.
        self.tls_port = free_port(host) if tls else None
        self.cert_path, self.key_path = self_signed_cert() if tls else (None, None)

    def credentials(self, user_id: str = "interop") -> Tuple[str, str]:
        """A (username, password) the server accepts."""
        if self.auth == "static":
            return self.username, self.password
        return rest_credentials(self.secret, user_id)


class Server:
    """Common part of KturndServer and CoturnServer: a Proc plus STUN readiness."""

    name = "server"

    def __init__(self, settings: ServerSettings, workdir: Optional[str] = None):
        self.settings = settings
        self.host = settings.host
        self.port = settings.port
        self.workdir = workdir or tempfile.mkdtemp(prefix=f"kturn-interop-{self.name}-")
        self.proc: Optional[Proc] = None

    @property
    def address(self) -> Tuple[str, int]:
        return self.host, self.port

    def argv(self) -> List[str]:
        raise NotImplementedError

    def start(self) -> "Server":
        self.proc = Proc(self.name, self.argv(), self.workdir)
        register_log(self.proc.log_path)
        self.proc.start()
        return self

    def wait_ready(self, timeout: float = 10.0) -> Tuple[str, int]:
        """Until a STUN Binding request to the UDP listener is answered (bounded)."""
        deadline = time.monotonic() + timeout
        attempts = 0
        while time.monotonic() < deadline and attempts < 200:
            attempts += 1
            if self.proc is not None and not self.proc.running():
                raise TestFailure(f"{self.name} exited during startup "
                                  f"(rc={self.proc.proc.returncode}); log: "
                                  f"{self.proc.log_path}")
            mapped = stun_binding_probe(self.address, timeout=0.2)
            if mapped is not None:
                return mapped
            time.sleep(0.05)
        raise TestFailure(f"{self.name} did not answer a STUN Binding request on "
                          f"{self.host}:{self.port}/udp within {timeout:.0f} s "
                          f"({attempts} probes)")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()

    def check_alive(self) -> None:
        check(self.proc is not None and self.proc.running(),
              f"{self.name} is no longer running (rc="
              f"{self.proc.proc.returncode if self.proc and self.proc.proc else '?'})")

    def __enter__(self) -> "Server":
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class KturndServer(Server):
    """kturnd on a generated STUNner v1 dataplane config (YAML in the work dir)."""

    name = "kturnd"

    def __init__(self, binary: str, config: dict, workdir: Optional[str] = None,
                 settings: Optional[ServerSettings] = None, loglevel: str = "all:DEBUG",
                 extra_args: Sequence[str] = ()):
        listener = config["listeners"][0]
        settings = settings or ServerSettings(port=int(listener["port"]))
        settings.port = int(listener["port"])
        super().__init__(settings, workdir)
        self.binary = os.path.abspath(binary)
        self.config = config
        self.loglevel = loglevel
        self.extra_args = list(extra_args)
        self.host = listener.get("address", LOOPBACK)
        self.config_path = os.path.join(self.workdir, "config.yaml")

    @staticmethod
    def config_for(s: ServerSettings) -> dict:
        if s.auth == "static":
            auth = {"type": "static", "realm": s.realm,
                    "credentials": {"username": s.username, "password": s.password}}
        else:
            auth = {"type": "ephemeral", "realm": s.realm,
                    "credentials": {"secret": s.secret}}
        listeners = [{"name": "udp", "protocol": "TURN-UDP", "address": s.host,
                      "port": s.port, "min_relay_port": s.relay_range[0],
                      "max_relay_port": s.relay_range[1], "routes": ["allowed"]}]
        if s.tcp:
            listeners.append(dict(listeners[0], name="tcp", protocol="TURN-TCP"))
        if s.tls_port:
            for name in ("tls", "dtls"):
                listeners.append(dict(listeners[0], name=name, protocol=f"TURN-{name.upper()}",
                                      port=s.tls_port, cert=base64_file(s.cert_path),
                                      key=base64_file(s.key_path)))
        return {
            "version": "v1",
            "admin": {"name": "interop", "loglevel": "all:INFO",
                      # no health/metrics HTTP servers: their default ports would collide
                      # between tests running in parallel
                      "healthcheck_endpoint": "", "metrics_endpoint": ""},
            "auth": auth,
            "listeners": listeners,
            "clusters": [dict({"name": "allowed", "type": "STATIC", "endpoints": s.allowed},
                              **({"protocol": "TCP"} if s.tcp_relay else {}))],
        }

    @classmethod
    def from_settings(cls, binary: str, s: ServerSettings,
                      workdir: Optional[str] = None) -> "KturndServer":
        return cls(binary, cls.config_for(s), workdir=workdir, settings=s)

    def reload(self, config: Optional[dict] = None, applied: int = 1,
               timeout: float = 10.0) -> None:
        """SIGHUP, with `config` first written over the file the way ConfigMap updates and editors
        do (a new file renamed over it); waits until kturnd has logged "config applied" at least
        `applied` times."""
        if config is not None:
            self.config = config
            with open(self.config_path + ".new", "w") as f:
                f.write(to_yaml(config) + "\n")
            os.rename(self.config_path + ".new", self.config_path)
        os.kill(self.proc.proc.pid, signal.SIGHUP)
        deadline = time.monotonic() + timeout
        while self.proc.output().count("config applied") < applied:
            check(time.monotonic() < deadline, f"kturnd did not apply the config within {timeout} s")
            time.sleep(0.05)

    def argv(self) -> List[str]:
        with open(self.config_path, "w") as f:
            f.write(to_yaml(self.config) + "\n")
        register_log(self.config_path)
        argv = [self.binary, "-c", f"file://{self.config_path}"]
        if self.loglevel:
            argv += ["-l", self.loglevel]
        return argv + self.extra_args


class CoturnServer(Server):
    """coturn's turnserver with settings equivalent to KturndServer's (stand-in only)."""

    name = "coturn"

    def __init__(self, settings: ServerSettings, workdir: Optional[str] = None,
                 binary: str = "turnserver", verbose: bool = True,
                 extra_args: Sequence[str] = ()):
        super().__init__(settings, workdir)
        self.binary = binary
        self.verbose = verbose
        self.extra_args = list(extra_args)

    def argv(self) -> List[str]:
        s = self.settings
        tls = ([f"--tls-listening-port={s.tls_port}", f"--cert={s.cert_path}",
                f"--pkey={s.key_path}"] if s.tls_port else ["--no-tls", "--no-dtls"])
        a = [self.binary, "-n", "--no-cli", *tls,
             f"--listening-ip={s.host}", f"--relay-ip={s.host}",
             f"--listening-port={s.port}",
             f"--min-port={s.relay_range[0]}", f"--max-port={s.relay_range[1]}",
             f"--realm={s.realm}", "--allow-loopback-peers", "--fingerprint",
             "--log-file=stdout", "--simple-log", "--no-stdout-log",
             f"--pidfile={os.path.join(self.workdir, 'turnserver.pid')}",
             f"--userdb={os.path.join(self.workdir, 'turndb')}",
             "--relay-threads=1"]
        if s.auth == "static":
            a += ["--lt-cred-mech", f"--user={s.username}:{s.password}"]
        else:
            a += ["--use-auth-secret", f"--static-auth-secret={s.secret}"]
        for ip in s.denied_for_coturn:
            a.append(f"--denied-peer-ip={ip}")
        if self.verbose:
            a.append("--verbose")
        return a + self.extra_args


def add_server_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", choices=("kturnd", "coturn"), required=True,
                   help="server under test (coturn is only a stand-in to validate the harness)")
    p.add_argument("--kturnd", metavar="PATH", help="kturnd binary (with --server kturnd)")
    p.add_argument("--keep-logs", action="store_true",
                   help="keep the work dir (configs, logs) even on success")


def make_server(args: argparse.Namespace, settings: ServerSettings, workdir: str) -> Server:
    if args.server == "kturnd":
        check(bool(args.kturnd), "--server kturnd needs --kturnd PATH")
        check(os.access(args.kturnd, os.X_OK), f"kturnd binary not executable: {args.kturnd}")
        return KturndServer.from_settings(args.kturnd, settings, workdir=workdir)
    check(shutil.which("turnserver") is not None, "coturn's turnserver is not installed")
    return CoturnServer(settings, workdir=workdir)
