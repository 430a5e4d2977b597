#!/usr/bin/python3
"""Region-aware ICE servers (docs/operations.md#region-aware-ice-servers): one kturn-auth
following two kturnd, each the only gateway of its region.

  1. kturnd "fra" (admin.region eu-central, secret A) and kturnd "sin" (ap-southeast, secret
     B) on free loopback ports; kturn-auth -c file://fra -c file://sin with
     --region-network 127.0.0.0/8=ap-southeast --region-order ap-southeast;
  2. /ice?region=eu-central names fra first and sin second, each entry with a credential its
     own kturnd accepts (an Allocate on each), and coturn's turnutils_uclient relays through
     the first entry with every message echoed;
  3. /ice?client=127.0.0.9 (the client's address, from the signalling server) maps to
     ap-southeast: sin first; without either, the preference (not the id order): sin first;
  4. GET / (the TURN REST API, room for one server) with region=ap-southeast answers sin's.

  /usr/bin/python3 auth_regions_test.py --server kturnd --kturnd build/kturnd \
      --kturn-auth build/kturn-auth
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import auth_test  # noqa: E402
import harness as h  # noqa: E402


def gateway(args, workdir, name: str, region: str, secret: str) -> h.KturndServer:
    settings = h.ServerSettings(auth="rest", secret=secret)
    config = h.KturndServer.config_for(settings)
    config["admin"]["name"] = f"media/{name}"
    config["admin"]["region"] = region
    os.makedirs(os.path.join(workdir, name), exist_ok=True)
    return h.KturndServer(args.kturnd, config, workdir=os.path.join(workdir, name),
                          settings=settings, loglevel="all:INFO")


def ice(port: int, query: str):
    status, body = auth_test.http_get(port, f"/ice?service=turn&username=alice&{query}")
    h.check(status == 200, f"/ice?{query} answered {status}: {body}")
    return json.loads(body)["iceServers"]


def body(args, workdir):
    with gateway(args, workdir, "fra", "eu-central", "secret-a") as fra, \
         gateway(args, workdir, "sin", "ap-southeast", "secret-b") as sin:
        proc, port = auth_test.start_auth(
            args.kturn_auth, [fra.config_path, sin.config_path], workdir,
            extra=["--region-network", "127.0.0.0/8=ap-southeast",
                   "--region-order", "ap-southeast"])
        address = {fra.port: "fra", sin.port: "sin"}

        def order(servers):
            return [address[auth_test.uri_address(s["urls"][0])[1]] for s in servers]

        servers = ice(port, "region=eu-central")
        h.check(order(servers) == ["fra", "sin"], f"region=eu-central: {order(servers)}")
        for s in servers:
            where = auth_test.uri_address(s["urls"][0])
            auth_test.allocate(where, s["username"], s["credential"],
                               f"the {address[where[1]]} entry's credential")
        first = servers[0]
        auth_test.uclient_with(fra, workdir, first["username"], first["credential"])

        by_client = order(ice(port, "client=127.0.0.9"))
        h.check(by_client == ["sin", "fra"], f"client=127.0.0.9: {by_client}")
        neither = order(ice(port, ""))
        h.check(neither == ["sin", "fra"], f"no region, no client: {neither}")

        status, text = auth_test.http_get(port, "/?service=turn&username=bob&region=ap-southeast")
        rest = json.loads(text)
        h.check(status == 200 and order([{"urls": rest["uris"]}]) == ["sin"],
                f"GET / region=ap-southeast: {status} {text}")
        auth_test.allocate(auth_test.uri_address(rest["uris"][0]), rest["username"],
                           rest["password"], "the TURN REST credential of ap-southeast")
        h.check(proc.running(), "kturn-auth exited")
        print(f"regions: eu-central -> {order(servers)}, client 127.0.0.9 -> {by_client}, "
              f"none -> {neither}; every credential allocated on its own region's kturnd")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--kturn-auth", required=True)
    args, _ = p.parse_known_args()
    h.run_test("auth-regions", body, p)


if __name__ == "__main__":
    main()
