#!/usr/bin/python3
"""kturnd under faults, with real traffic (coturn's turnutils_uclient, turnutils_peer):

  --case corrupt-config  while uclient relays, kturnd -w sees its config file truncated, then
                         replaced by garbage, then restored: the running config is kept (the
                         error names the problem), zero packets lost.
  --case port-exhaustion a relay port range of 4 ports: four allocations succeed, the fifth
                         gets 508 (counted in /metrics), and succeeds once a port is freed.
  --case allocation-cap  admin.limits.max_allocations 3 in a running kturnd: three allocations
                         succeed, the fourth gets 508 (counted in /metrics), and succeeds once
                         one is released.
  --case stalled-peer    a peer that never reads (its receive buffer full) is flooded through
                         one allocation while uclient relays through others: zero loss for them.
  --case restart         kturnd SIGKILLed and started again on the same config: the old
                         allocation is gone (437), the client allocates again and relays.

  /usr/bin/python3 fault_test.py --server kturnd --kturnd build/kturnd --case restart
"""

import argparse
import os
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import ops_test  # noqa: E402
import uclient_test  # noqa: E402


def case_corrupt_config(args, workdir):
    with ops_test.start_kturnd(args, workdir, {}, ["-w"]) as s:
        _, peer_port = h.start_udp_echo_peer(workdir)
        good = open(s.config_path).read()
        # 10 clients x 300 messages every 20 ms: 6 s of traffic.
        proc = h.Proc("turnutils_uclient", ops_test.uclient_argv(s, peer_port, 10, 300, 20),
                      workdir)
        h.register_log(proc.log_path)
        proc.start()
        time.sleep(1.5)
        rejected = 0
        for name, text in (("truncated", good[: len(good) // 2]),
                           ("garbage", "\x00\xff{[: not a config ]]\n" * 20),
                           ("empty", "")):
            before = s.proc.output().count("config rejected")
            with open(s.config_path, "w") as f:  # in place, as a crashing writer leaves it
                f.write(text)
            ops_test.wait_for(lambda: s.proc.output().count("config rejected") > before, 5,
                              f"kturnd to reject the {name} config")
            rejected += 1
            s.check_alive()
            time.sleep(0.5)
        ops_test.replace_config(s.config_path, good)
        rc = proc.wait(timeout=60)
        h.check(rc == 0, f"uclient failed (rc={rc})")
        summary = uclient_test.parse_summary(proc.output())
        h.check(summary["sent"] == 3000 and summary["recv"] == 3000 and summary["lost"] == 0,
                f"packets lost while the config file was corrupt: {summary}")
        # The kept config still admits the peer for new allocations.
        user, password = s.settings.credentials()
        with h.TurnClient(s.address, user, password) as c:
            c.allocate()
            h.check(c.create_permission((h.LOOPBACK, peer_port)).error_code() is None,
                    "the running config was lost")
        print(f"corrupt-config: {rejected} bad files rejected, "
              f"{summary['recv']}/{summary['sent']} echoed")


def case_port_exhaustion(args, workdir):
    metrics = h.free_port()
    settings = h.ServerSettings(auth="static", relay_range=h.relay_port_range(size=4))
    config = h.KturndServer.config_for(settings)
    config["admin"]["metrics_endpoint"] = f"http://127.0.0.1:{metrics}/metrics"
    with h.KturndServer(args.kturnd, config, workdir=workdir, settings=settings,
                        loglevel="all:INFO") as s:
        user, password = s.settings.credentials()
        clients = [h.TurnClient(s.address, user, password) for _ in range(5)]
        try:
            relays = [c.allocate() for c in clients[:4]]
            h.check(len(set(relays)) == 4, f"relay addresses not distinct: {relays}")
            low, high = settings.relay_range
            h.check(all(low <= port <= high for _, port in relays),
                    f"relay ports {relays} outside {low}-{high}")
            resp = clients[4].request(h.ALLOCATE, lambda m: m.add(h.A_REQUESTED_TRANSPORT,
                                                                   bytes([17, 0, 0, 0])))
            h.check((resp.error_code() or (0,))[0] == 508,
                    f"the fifth allocation was not refused with 508: {resp.describe()}")
            samples = ops_test.metric_samples(metrics)
            refused = samples.get(("kturn_allocations_rejected_total",
                                   (("listener", "udp"), ("reason", "insufficient_capacity"))), 0)
            h.check(refused == 1, f"508 not counted: insufficient_capacity={refused}")
            h.check(clients[0].refresh(0).error_code() is None, "Refresh(0) failed")
            freed = clients[4].allocate()
            h.check(freed == relays[0], f"the freed port {relays[0]} was not reused ({freed})")
            s.check_alive()
            print(f"port-exhaustion: 4 ports, 5th refused with 508, granted {freed} once freed")
        finally:
            for c in clients:
                c.close()


def case_allocation_cap(args, workdir):
    metrics = h.free_port()
    settings = h.ServerSettings(auth="static")
    config = h.KturndServer.config_for(settings)
    config["admin"]["metrics_endpoint"] = f"http://127.0.0.1:{metrics}/metrics"
    config["admin"]["limits"] = {"max_allocations": 3}
    # One worker: the process-wide cap is shared among workers, so with one it is exact.
    with h.KturndServer(args.kturnd, config, workdir=workdir, settings=settings,
                        loglevel="all:INFO", extra_args=["--udp-thread-num", "1"]) as s:
        user, password = s.settings.credentials()
        clients = [h.TurnClient(s.address, user, password) for _ in range(4)]
        try:
            relays = [c.allocate() for c in clients[:3]]
            resp = clients[3].request(h.ALLOCATE, lambda m: m.add(h.A_REQUESTED_TRANSPORT,
                                                                   bytes([17, 0, 0, 0])))
            h.check((resp.error_code() or (0,))[0] == 508,
                    f"the fourth allocation was not refused with 508: {resp.describe()}")
            samples = ops_test.metric_samples(metrics)
            refused = samples.get(("kturn_allocations_rejected_total",
                                   (("listener", "udp"), ("reason", "insufficient_capacity"))), 0)
            h.check(refused == 1, f"508 not counted: insufficient_capacity={refused}")
            h.check(clients[0].refresh(0).error_code() is None, "Refresh(0) failed")
            granted = clients[3].allocate()
            s.check_alive()
            print(f"allocation-cap: {len(relays)} allocations, the 4th refused with 508, "
                  f"granted {granted} once one was released")
        finally:
            for c in clients:
                c.close()


def case_stalled_peer(args, workdir):
    with ops_test.start_kturnd(args, workdir, {}) as s:
        _, peer_port = h.start_udp_echo_peer(workdir)
        # A peer that never reads: its receive buffer fills after a few datagrams.
        stalled = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.bind((h.LOOPBACK, 0))
        user, password = s.settings.credentials()
        flooder = h.TurnClient(s.address, user, password)
        flooder.allocate()
        h.check(flooder.channel_bind(0x4001, stalled.getsockname()).error_code() is None,
                "ChannelBind to the stalled peer refused")
        stop = threading.Event()
        sent = [0]

        def flood():
            payload = b"x" * 1000
            deadline = time.monotonic() + 8
            while not stop.is_set() and time.monotonic() < deadline and sent[0] < 60000:
                flooder.send_channel_data(0x4001, payload)
                sent[0] += 1
                if sent[0] % 50 == 0:
                    time.sleep(0.005)  # about 10k datagrams/s

        thread = threading.Thread(target=flood, daemon=True)
        thread.start()
        try:
            proc = h.Proc("turnutils_uclient", ops_test.uclient_argv(s, peer_port, 10, 150, 20),
                          workdir)
            h.register_log(proc.log_path)
            proc.start()
            rc = proc.wait(timeout=60)
        finally:
            stop.set()
            thread.join(timeout=10)
            flooder.close()
            stalled.close()
        h.check(rc == 0, f"uclient failed (rc={rc})")
        summary = uclient_test.parse_summary(proc.output())
        h.check(summary["sent"] == 1500 and summary["recv"] == 1500 and summary["lost"] == 0,
                f"other allocations suffered from the stalled peer: {summary}")
        h.check(sent[0] >= 5000, f"the flood sent only {sent[0]} datagrams")
        s.check_alive()
        print(f"stalled-peer: {sent[0]} datagrams into a full peer; others "
              f"{summary['recv']}/{summary['sent']} echoed")


def case_restart(args, workdir):
    settings = h.ServerSettings(auth="static")
    config = h.KturndServer.config_for(settings)
    server = h.KturndServer(args.kturnd, config, workdir=workdir, settings=settings,
                            loglevel="all:INFO")
    with server as s:
        _, peer_port = h.start_udp_echo_peer(workdir)
        peer = (h.LOOPBACK, peer_port)
        user, password = s.settings.credentials()
        with h.TurnClient(s.address, user, password) as c:
            c.allocate()
            h.check(c.channel_bind(0x4001, peer).error_code() is None, "ChannelBind refused")
            c.send_channel_data(0x4001, b"before")
            h.check(any(b"before" in d for d in c.drain(1.0)), "no echo before the restart")

            os.killpg(s.proc.proc.pid, signal.SIGKILL)
            s.proc.proc.wait(timeout=5)
            s.start()  # same config, same ports
            s.wait_ready()

            err = c.refresh(600).error_code()
            h.check(err is not None and err[0] == 437,
                    f"a refresh after the restart should find no allocation (437), got {err}")
        # The application's answer to 437: a fresh allocation; it relays at once.
        with h.TurnClient(s.address, user, password) as c:
            c.allocate()
            h.check(c.channel_bind(0x4001, peer).error_code() is None,
                    "ChannelBind refused after the restart")
            c.send_channel_data(0x4001, b"after")
            h.check(any(b"after" in d for d in c.drain(1.0)), "no echo after the restart")
        print("restart: old allocation gone (437), a new one relays")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    cases = {"corrupt-config": case_corrupt_config, "port-exhaustion": case_port_exhaustion,
             "stalled-peer": case_stalled_peer,
             "allocation-cap": case_allocation_cap, "restart": case_restart}
    p.add_argument("--case", required=True, choices=sorted(cases))
    args, _ = p.parse_known_args()
    h.run_test(f"fault-{args.case}", lambda a, w: cases[a.case](a, w), p)


if __name__ == "__main__":
    main()
