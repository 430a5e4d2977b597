#!/usr/bin/python3
"""kturn-auth minting credentials that a real kturnd accepts, on the same config file:

  1. kturnd -w and kturn-auth -c file://CONFIG --token-file T start on free loopback ports;
  2. GET /?service=turn and GET /ice?service=turn (with the bearer token) return a TURN REST
     credential and the listener's URI; the harness's TurnClient allocates with each of them,
     and coturn's turnutils_uclient, given the GET / credential as it is, relays through kturnd
     to turnutils_peer with every message echoed;
     no token gives 401, service=stun gives 400 with a JSON body;
  3. rotation: the file is replaced with a new secret and the old one as previous_secret
     (docs/config.md); kturn-auth's next credentials are signed with the new secret, and both
     the credential minted before the rotation and a new one still allocate.

  /usr/bin/python3 auth_test.py --server kturnd --kturnd build/kturnd --kturn-auth build/kturn-auth
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import uclient_test  # noqa: E402

TOKEN = "interop-bearer-token"
OLD_SECRET = "kturn-auth-old-secret"
NEW_SECRET = "kturn-auth-new-secret"


def rest_password(secret: str, username: str) -> str:
    return base64.b64encode(hmac.new(secret.encode(), username.encode(),
                                     hashlib.sha1).digest()).decode()


def http_get(port: int, path: str, token=TOKEN):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def start_auth(binary: str, config_paths, workdir: str, extra=()) -> "tuple[h.Proc, int]":
    """kturn-auth on a free loopback port, following one config file (a path) or several (a
    list: -c once each), with `extra` arguments."""
    token_path = os.path.join(workdir, "token")
    with open(token_path, "w") as f:
        f.write(TOKEN + "\n")
    port = h.free_port()
    paths = [config_paths] if isinstance(config_paths, str) else config_paths
    origins = [arg for path in paths for arg in ("-c", f"file://{path}")]
    proc = h.Proc("kturn-auth", [os.path.abspath(binary), *origins,
                                 "--address", h.LOOPBACK, "--port", str(port),
                                 "--token-file", token_path, "-l", "all:DEBUG", *extra], workdir)
    h.register_log(proc.log_path)
    proc.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        h.check(proc.running(), f"kturn-auth exited during startup; log: {proc.log_path}")
        try:
            status, _ = http_get(port, "/?service=turn")
            if status == 200:
                return proc, port
        except OSError:
            pass
        time.sleep(0.1)
    raise h.TestFailure(f"kturn-auth did not answer on port {port} within 10 s")


def turn_credential(port: int, user: str):
    status, body = http_get(port, f"/?service=turn&username={user}&ttl=600")
    h.check(status == 200, f"GET / answered {status}: {body}")
    j = json.loads(body)
    h.check(set(j) == {"username", "password", "ttl", "uris"}, f"GET / fields: {sorted(j)}")
    h.check(j["ttl"] == 600, f"ttl {j['ttl']}, want 600")
    expiry, _, uid = j["username"].partition(":")
    h.check(uid == user and abs(int(expiry) - (time.time() + 600)) < 30,
            f"username {j['username']!r} is not <now+600>:{user}")
    return j


def uri_address(uri: str):
    h.check(uri.startswith("turn:") and uri.endswith("?transport=udp"), f"URI {uri}")
    host, _, port = uri[len("turn:"):-len("?transport=udp")].rpartition(":")
    return host, int(port)


def allocate(address, username: str, password: str, what: str, tries: int = 1) -> None:
    for attempt in range(tries):
        with h.TurnClient(address, username, password) as client:
            resp = client.request(h.ALLOCATE, lambda m: (
                m.add(h.A_REQUESTED_TRANSPORT, bytes([17, 0, 0, 0])),
                m.add_u32(h.A_LIFETIME, 60)))
            if resp.cls == h.SUCCESS:
                print(f"allocated with {what} ({username})")
                return
            error = resp.error_code()
        time.sleep(0.3)
    raise h.TestFailure(f"Allocate with {what} failed: {error}")


def uclient_with(server, workdir, username: str, password: str) -> None:
    """coturn's turnutils_uclient, given the credential as it is (-u/-w), relays to an echo peer
    through kturnd: every message comes back."""
    _, peer_port = h.start_udp_echo_peer(workdir)
    messages = 20
    uclient = h.Proc("turnutils_uclient", [
        "turnutils_uclient", "-p", str(server.port), "-e", h.LOOPBACK, "-r", str(peer_port),
        "-L", h.LOOPBACK, "-m", "1", "-n", str(messages), "-l", "120", "-z", "5", "-c",
        "-u", username, "-w", password, h.LOOPBACK], workdir)
    h.register_log(uclient.log_path)
    uclient.start()
    rc = uclient.wait(timeout=60)
    out = uclient.output()
    h.check(rc == 0, f"turnutils_uclient with kturn-auth's credential exited with {rc}:\n"
            + "\n".join(out.splitlines()[-8:]))
    summary = uclient_test.parse_summary(out)
    h.check(summary["sent"] == messages and summary["recv"] == messages,
            f"turnutils_uclient with kturn-auth's credential: {summary}")
    print(f"turnutils_uclient allocated with kturn-auth's credential and relayed "
          f"{summary['recv']}/{messages} messages")


def body(args, workdir):
    settings = h.ServerSettings(auth="rest", secret=OLD_SECRET)
    config = h.KturndServer.config_for(settings)
    with h.KturndServer(args.kturnd, config, workdir=workdir, settings=settings,
                        loglevel="all:INFO", extra_args=["-w"]) as server:
        proc, port = start_auth(args.kturn_auth, server.config_path, workdir)

        # Errors: the token is required, only service=turn is served, errors are JSON.
        status, _ = http_get(port, "/?service=turn", token=None)
        h.check(status == 401, f"no bearer token: {status}, want 401")
        status, text = http_get(port, "/?service=stun")
        h.check(status == 400 and json.loads(text)["code"] == 400,
                f"service=stun: {status} {text}, want 400 with a JSON body")

        # GET /: a TURN REST credential and the listener's URI; it allocates on kturnd.
        old = turn_credential(port, "alice")
        h.check(old["password"] == rest_password(OLD_SECRET, old["username"]),
                "the password is not base64(HMAC-SHA1(secret, username))")
        want_uri = f"turn:{h.LOOPBACK}:{server.port}?transport=udp"
        h.check(old["uris"] == [want_uri], f"uris {old['uris']}, want [{want_uri}]")
        allocate(uri_address(old["uris"][0]), old["username"], old["password"], "GET / credential")
        uclient_with(server, workdir, old["username"], old["password"])

        # GET /ice: an RTCConfiguration whose server entry allocates too.
        status, text = http_get(port, "/ice?service=turn&username=bob&iceTransportPolicy=relay")
        h.check(status == 200, f"GET /ice answered {status}: {text}")
        ice = json.loads(text)
        h.check(ice["iceTransportPolicy"] == "relay", f"iceTransportPolicy {ice}")
        entry = ice["iceServers"][0]
        h.check(entry["urls"] == [want_uri], f"/ice urls {entry['urls']}")
        allocate(uri_address(entry["urls"][0]), entry["username"], entry["credential"],
                 "GET /ice credential")

        # Rotation: new secret, the old one kept as previous_secret for an hour.
        rotated = json.loads(json.dumps(config))
        rotated["auth"]["credentials"] = {
            "secret": NEW_SECRET, "previous_secret": OLD_SECRET,
            "previous_secret_expiry": str(int(time.time()) + 3600)}
        tmp = server.config_path + ".new"
        with open(tmp, "w") as f:
            f.write(h.to_yaml(rotated) + "\n")
        os.rename(tmp, server.config_path)

        deadline = time.monotonic() + 10
        while True:
            new = turn_credential(port, "carol")
            if new["password"] == rest_password(NEW_SECRET, new["username"]):
                break
            h.check(time.monotonic() < deadline,
                    "kturn-auth still mints with the old secret 10 s after the rotation")
            time.sleep(0.2)
        print("kturn-auth mints with the new secret")
        # kturnd reloads on its own inotify watch: give it a few tries to pick the secret up.
        allocate(uri_address(new["uris"][0]), new["username"], new["password"],
                 "a credential minted after the rotation", tries=20)
        allocate(uri_address(old["uris"][0]), old["username"], old["password"],
                 "the credential minted before the rotation")
        server.check_alive()
        h.check(proc.running(), "kturn-auth exited")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--kturn-auth", required=True, metavar="PATH", help="kturn-auth binary")
    h.run_test("auth", body, p)


if __name__ == "__main__":
    main()
