#!/usr/bin/python3
"""Third-party authorization (RFC 7635) with coturn's turnutils_uclient -J.

kturnd runs static auth plus `auth.oauth_keys` holding coturn's three test keys (north
A256GCM, union A128GCM, oldempire A256GCM, as uclient's mainuclient.c defines them) and
`auth.oauth_server_name`. uclient -J learns the server name from THIRD-PARTY-AUTHORIZATION in
the 401, then sends every Allocate and Refresh with an ACCESS-TOKEN it encrypts with one of the
keys at random, signed with the token's mac-key. The test checks:

  * uclient relays through kturnd with every message echoed;
  * the allocations were made with tokens: the session records name the kids as users;
  * static credentials keep working beside it (uclient without -J);
  * with the keys taken out of the config (SIGHUP), kturnd names no server in its 401 and -J
    falls back to the static credentials it was given (the sessions are user1's).

  /usr/bin/python3 oauth_test.py --server kturnd --kturnd build/kturnd
"""

import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import ops_test  # noqa: E402

# coturn's test keys (kid, algorithm, base64 key): public test data of its client, not secrets.
COTURN_TEST_KEYS = [
    "north:A256GCM:MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDEK",
    "union:A128GCM:MTIzNDU2Nzg5MDEyMzQ1Ngo=",
    "oldempire:A256GCM:MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIK",
]


def uclient(server, peer_port: int, oauth: bool, messages: int = 40):
    argv = ops_test.uclient_argv(server, peer_port, 2, messages, 10)
    if oauth:
        argv.insert(1, "-J")
    return argv


def body(args, workdir):
    settings = h.ServerSettings(auth="static")
    config = h.KturndServer.config_for(settings)
    config["auth"]["oauth_server_name"] = "kturn.test"
    config["auth"]["oauth_keys"] = COTURN_TEST_KEYS
    with h.KturndServer(args.kturnd, config, workdir=workdir, settings=settings,
                        loglevel="all:INFO,session:INFO") as s:
        _, peer_port = h.start_udp_echo_peer(workdir)
        summary = ops_test.run_uclient(workdir, uclient(s, peer_port, oauth=True))
        h.check(summary["sent"] == 80 and summary["recv"] == 80 and summary["lost"] == 0,
                f"uclient -J: {summary}")
        deadline = time.monotonic() + 5
        users = set()
        while time.monotonic() < deadline and not users:
            users = set(re.findall(r'"user":"(north|union|oldempire)"', s.proc.output()))
            time.sleep(0.2)
        h.check(users, "no session record names a key id: the allocations were not made with "
                       "access tokens")
        static = ops_test.run_uclient(workdir, uclient(s, peer_port, oauth=False))
        h.check(static["recv"] == 80 and static["lost"] == 0, f"static credentials: {static}")

        # Without the keys kturnd names no server in its 401, and -J falls back to the static
        # credentials it was also given: the new sessions are user1's.
        del config["auth"]["oauth_keys"]
        s.reload(config)
        before = s.proc.output().count('"user":"user1"')
        fallback = ops_test.run_uclient(workdir, uclient(s, peer_port, oauth=True, messages=5))
        h.check(fallback["recv"] == 10, f"uclient -J without OAuth offered: {fallback}")
        ops_test.wait_for(lambda: s.proc.output().count('"user":"user1"') > before, 5,
                          "a session record of user1 after the keys were removed")
        s.check_alive()
        print(f"oauth: uclient -J relayed {summary['recv']}/{summary['sent']} with tokens of "
              f"{sorted(users)}; static credentials {static['recv']}/{static['sent']}; with the "
              f"keys removed -J fell back to them ({fallback['recv']}/{fallback['sent']})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    args, _ = p.parse_known_args()
    h.run_test("oauth", body, p)


if __name__ == "__main__":
    main()
