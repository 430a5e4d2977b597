#!/usr/bin/python3
"""Without the privileges for BPF, `offload_engine: TC` falls back to user-space relaying.

kturnd starts with CAP_BPF, CAP_SYS_ADMIN, CAP_NET_ADMIN and CAP_PERFMON dropped (capsh), on a
config asking for the TC fast path on loopback. The test checks that it says so once in its log
("... relaying in user space"), still relays a channel to coturn's turnutils_peer both ways, and
does not repeat the warning when the same config is applied again (SIGHUP).

Needs root to drop capabilities from (exits 77, skipped, otherwise). Loopback only.
"""

import argparse
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

WARNING = "relaying in user space"
DROPPED = "cap_bpf,cap_sys_admin,cap_net_admin,cap_perfmon"


class UnprivilegedKturnd(h.KturndServer):
    def argv(self):
        inner = super().argv()
        return ["capsh", f"--drop={DROPPED}", "--", "-c", 'exec "$0" "$@"', *inner]


def body(args: argparse.Namespace, workdir: str) -> None:
    peer, peer_port = h.start_udp_echo_peer(workdir)
    settings = h.ServerSettings()
    config = h.KturndServer.config_for(settings)
    config["admin"]["offload_engine"] = "TC"
    config["admin"]["offload_interfaces"] = ["lo"]
    with UnprivilegedKturnd(args.kturnd, config, workdir=workdir, settings=settings,
                            loglevel="all:INFO") as server:
        deadline = time.monotonic() + 10
        while WARNING not in server.proc.output():
            h.check(time.monotonic() < deadline, f"kturnd never logged '{WARNING}'")
            time.sleep(0.1)
        with h.TurnClient(server.address, *settings.credentials()) as client:
            client.allocate()
            resp = client.channel_bind(0x4000, (h.LOOPBACK, peer_port))
            h.check(resp.cls == h.SUCCESS, f"ChannelBind: {resp.describe()}")
            echoed = 0
            for i in range(20):
                client.sock.sendto(struct.pack("!HH", 0x4000, 8) + struct.pack("!Q", i),
                                   server.address)
                for pkt in client.drain(0.1):
                    echoed += h.is_channel_data(pkt)
            echoed += sum(h.is_channel_data(p) for p in client.drain(0.5))
            h.check(echoed == 20, f"{echoed}/20 ChannelData echoed through user space")
        server.reload()
        server.check_alive()
        count = server.proc.output().count(WARNING)
        h.check(count == 1, f"the fallback was logged {count} times, expected once")
    peer.stop()
    print("fallback: logged once, relayed in user space")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    args, _ = p.parse_known_args()
    if os.geteuid() != 0:
        print("SKIP: needs root to drop capabilities from")
        sys.exit(77)
    h.run_test("offload-fallback", body, p)


if __name__ == "__main__":
    main()
