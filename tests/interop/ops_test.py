#!/usr/bin/python3
"""kturnd in operation, with real TURN traffic from coturn's turnutils_uclient:

  --case metrics  /metrics parsed by Prometheus' own text parser (python3-prometheus-client);
                  relayed packet counters equal what uclient sent and received.
  --case reload   SIGHUP with a broken config keeps the running one (error names the field);
                  SIGHUP with a config that withdraws the peer's route refuses that peer (403)
                  while the allocation made before lives on.
  --case watch    the same, kturnd -w noticing the file replaced (inotify), no signal.
  --case drain    SIGTERM during traffic: /ready answers 503 at once, the running uclient
                  session completes with zero loss, kturnd exits 0 once its allocations end.
  --case reconfig while uclient relays, kturnd -w applies one change after another — routes,
                  cluster endpoints, credentials, realm, log level, a listener added and
                  removed — each checked to be in force; zero packets lost.
  --case tcp      a TURN-TCP listener: a Binding request over a raw TCP connection is answered
                  on it; /metrics counts the open connection and the accepted total.
  --case authflood one loopback address floods Allocates with a wrong password while
                  well-behaved clients allocate and relay: none of them fails, the flood is
                  throttled (counted in /metrics, few answers drawn).

  /usr/bin/python3 ops_test.py --server kturnd --kturnd build/kturnd --case drain
"""

import argparse
import copy
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import uclient_test  # noqa: E402


def http_get(port: int, path: str):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def uclient_argv(server, peer_port: int, clients: int, messages: int, interval_ms: int):
    return ["turnutils_uclient", "-p", str(server.port), "-e", h.LOOPBACK, "-r", str(peer_port),
            "-L", h.LOOPBACK, "-m", str(clients), "-n", str(messages), "-l", "100",
            "-z", str(interval_ms), "-c", "-u", h.STATIC_USER, "-w", h.STATIC_PASS, h.LOOPBACK]


def start_kturnd(args, workdir, extra_admin, extra_args=(), loglevel="all:INFO",
                 relay_ports=200):
    settings = h.ServerSettings(auth="static", relay_range=h.relay_port_range(size=relay_ports))
    config = h.KturndServer.config_for(settings)
    config["admin"].update(extra_admin)
    return h.KturndServer(args.kturnd, config, workdir=workdir, settings=settings,
                          loglevel=loglevel, extra_args=extra_args)


def metric_samples(port: int):
    """{(name, sorted label items): value} from /metrics, parsed by prometheus_client."""
    from prometheus_client.parser import text_string_to_metric_families
    status, text = http_get(port, "/metrics")
    h.check(status == 200, f"/metrics answered {status}")
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def run_uclient(workdir, argv, timeout=60.0):
    proc = h.Proc("turnutils_uclient", argv, workdir)
    h.register_log(proc.log_path)
    proc.start()
    rc = proc.wait(timeout=timeout)
    out = proc.output()
    h.check(rc == 0, f"turnutils_uclient exited with {rc}:\n" + "\n".join(out.splitlines()[-6:]))
    return uclient_test.parse_summary(out)


def case_metrics(args, workdir):
    port = h.free_port()
    with start_kturnd(args, workdir, {"metrics_endpoint": f"http://127.0.0.1:{port}/metrics"}) as s:
        _, peer_port = h.start_udp_echo_peer(workdir)
        summary = run_uclient(workdir, uclient_argv(s, peer_port, 5, 40, 5))
        h.check(summary["sent"] == 200 and summary["recv"] == 200, f"uclient: {summary}")
        samples = metric_samples(port)

        def value(series, **labels):
            key = (series, tuple(sorted(labels.items())))
            h.check(key in samples, f"/metrics lacks {series}{labels}")
            return samples[key]

        relayed_rx = value("kturn_relayed_packets_total", listener="udp", direction="rx")
        relayed_tx = value("kturn_relayed_packets_total", listener="udp", direction="tx")
        h.check(relayed_rx == summary["sent"],
                f"kturn_relayed_packets_total rx={relayed_rx}, uclient sent {summary['sent']}")
        h.check(relayed_tx == summary["recv"],
                f"kturn_relayed_packets_total tx={relayed_tx}, uclient got {summary['recv']}")
        h.check(value("kturn_relayed_bytes_total", listener="udp", direction="rx") == 200 * 100,
                "relayed rx bytes differ from 200 x 100 B")
        listener_rx = value("stunner_listener_packets_total", name="udp", direction="rx")
        listener_tx = value("stunner_listener_packets_total", name="udp", direction="tx")
        # The listener also carries the TURN control traffic (Allocate, ChannelBind, ...).
        h.check(listener_rx > summary["sent"] and listener_tx > summary["recv"],
                f"stunner_listener_packets_total rx={listener_rx} tx={listener_tx}")
        # uclient (without -y) makes two allocations per client and deletes one of them at the
        # end; the other waits for its lifetime.
        created = value("kturn_allocations_created_total", listener="udp")
        h.check(created == 10, f"kturn_allocations_created_total is {created}, want 2 x 5")
        active = value("stunner_allocations_active")
        h.check(active == 5, f"stunner_allocations_active is {active}, want 5")
        # STUNner's cluster series: tx to the cluster's peers, rx from them.
        cluster_tx = value("stunner_cluster_packets_total", name="allowed", direction="tx")
        cluster_rx = value("stunner_cluster_packets_total", name="allowed", direction="rx")
        h.check(cluster_tx == summary["sent"] and cluster_rx == summary["recv"],
                f"stunner_cluster_packets_total tx={cluster_tx} rx={cluster_rx}, uclient {summary}")
        h.check(value("stunner_cluster_bytes_total", name="allowed", direction="tx") == 200 * 100,
                "cluster tx bytes differ from 200 x 100 B")
        deleted = value("kturn_allocations_ended_total", listener="udp", reason="deleted")
        h.check(deleted == 5, f"kturn_allocations_ended_total{{reason=deleted}} is {deleted}")
        # Every Allocate was timed: 10 challenged (401) and 10 granted.
        timed = value("kturn_request_duration_seconds_count", method="allocate")
        h.check(timed == 20, f"kturn_request_duration_seconds_count{{allocate}} is {timed}")
        h.check(value("kturn_request_duration_seconds_bucket", method="allocate", le="+Inf")
                == timed, "the +Inf bucket differs from the count")
        print(f"metrics: relayed rx={relayed_rx} tx={relayed_tx}, listener rx={listener_rx} "
              f"tx={listener_tx}")


def reload_scenario(args, workdir, watch: bool):
    """Bad config kept out, withdrawn route refused; reloads by SIGHUP or by the file watcher."""
    with start_kturnd(args, workdir, {}, ["-w"] if watch else []) as s:
        user, password = s.settings.credentials()
        peer = ("127.0.0.1", 40000)

        def write_config(text):
            if watch:  # replace the file by rename, as editors and ConfigMap updates do
                tmp = s.config_path + ".new"
                with open(tmp, "w") as f:
                    f.write(text)
                os.rename(tmp, s.config_path)
            else:
                with open(s.config_path, "w") as f:
                    f.write(text)
                os.kill(s.proc.proc.pid, signal.SIGHUP)
            time.sleep(0.8)

        with h.TurnClient(s.address, user, password) as client:
            client.allocate()
            h.check(client.create_permission(peer).error_code() is None,
                    "permission for the routed peer refused")
            good = open(s.config_path).read()
            write_config(good.replace('"TURN-UDP"', '"TURN-SCTP"'))
            s.check_alive()
            h.check("listeners[0].protocol" in s.proc.output(),
                    "the rejected config's error does not name the field")
            h.check(client.create_permission(peer).error_code() is None,
                    "the running config was not kept after a rejected reload")
            write_config(good.replace("127.0.0.1/32", "127.0.0.9/32"))
            err = client.create_permission(peer).error_code()
            h.check(err is not None and err[0] == 403, f"after reload expected 403, got {err}")
            h.check(client.refresh(600).error_code() is None,
                    "the allocation made before the reload is gone")


def case_reload(args, workdir):
    reload_scenario(args, workdir, watch=False)


def case_watch(args, workdir):
    reload_scenario(args, workdir, watch=True)


def allocation_count(health_port: int) -> int:
    status, body = http_get(health_port, "/status")
    h.check(status == 200, f"/status answered {status}")
    return int(json.loads(body).get("allocationCount", 0))


def case_drain(args, workdir):
    # Traffic during the drain: a uclient session started before SIGTERM completes, zero loss.
    health = h.free_port()
    # uclient's 100 allocations ask for even ports with the next one reserved (EVEN-PORT with
    # the R bit) for most of them: about 170 ports of a 200-port window (a run held 72 even and
    # 29 odd relays), leaving no room for a port another test's server happens to hold there.
    with start_kturnd(args, workdir, {"healthcheck_endpoint": f"http://127.0.0.1:{health}"},
                      ["--grace-period", "60"], relay_ports=400) as s:
        _, peer_port = h.start_udp_echo_peer(workdir)
        status, _ = http_get(health, "/ready")
        h.check(status == 200, f"/ready is {status} before SIGTERM")
        # 50 clients (100 allocations: uclient makes two per client) x 150 messages every 20 ms:
        # about 3 s of traffic.
        proc = h.Proc("turnutils_uclient", uclient_argv(s, peer_port, 50, 150, 20), workdir)
        h.register_log(proc.log_path)
        proc.start()
        wait_for(lambda: allocation_count(health) >= 100, 10, "100 allocations")
        os.kill(s.proc.proc.pid, signal.SIGTERM)
        time.sleep(0.2)
        status, body = http_get(health, "/ready")
        h.check(status == 503, f"/ready is {status} while draining: {body}")
        rc = proc.wait(timeout=60)
        h.check(rc == 0, f"uclient failed during the drain (rc={rc})")
        summary = uclient_test.parse_summary(proc.output())
        h.check(summary["sent"] == 7500 and summary["recv"] == 7500 and summary["lost"] == 0,
                f"traffic lost during the drain: {summary}")
        # uclient leaves half its allocations to expire; a second SIGTERM ends the drain now.
        h.check(s.proc.running(), "kturnd stopped while uclient's allocations were alive")
        os.kill(s.proc.proc.pid, signal.SIGTERM)
        h.check(s.proc.wait(timeout=10) == 0, "kturnd did not exit 0 on the second SIGTERM")
        print(f"drain traffic: {summary['recv']}/{summary['sent']} echoed during the drain")

    # Exit when the last allocation ends: one allocation relaying through a channel.
    health = h.free_port()
    with start_kturnd(args, workdir, {"healthcheck_endpoint": f"http://127.0.0.1:{health}"}) as s:
        peer = h.start_udp_echo_peer(workdir)[1]
        user, password = s.settings.credentials()
        with h.TurnClient(s.address, user, password) as client:
            client.allocate()
            h.check(client.channel_bind(0x4001, (h.LOOPBACK, peer)).error_code() is None,
                    "ChannelBind refused")
            os.kill(s.proc.proc.pid, signal.SIGTERM)
            time.sleep(0.3)
            h.check(http_get(health, "/ready")[0] == 503, "/ready is not 503 while draining")
            client.send_channel_data(0x4001, b"still relayed while draining")
            echoed = [d for d in client.drain(1.0) if b"still relayed" in d]
            h.check(len(echoed) == 1, "the allocation was not served during the drain")
            h.check(s.proc.running(), "kturnd exited with an allocation alive")
            h.check(client.refresh(0).error_code() is None, "Refresh(0) failed")
        h.check(s.proc.wait(timeout=5) == 0, "kturnd did not exit 0 after the last allocation")
        print("drain: served until the last allocation ended, then exited 0")

    # --ready-while-draining: /ready stays 200 through the drain (a BGP route per ready pod stays
    # with it), and the process still exits with its last allocation.
    health = h.free_port()
    with start_kturnd(args, workdir, {"healthcheck_endpoint": f"http://127.0.0.1:{health}"},
                      ["--ready-while-draining"]) as s:
        user, password = s.settings.credentials()
        with h.TurnClient(s.address, user, password) as client:
            client.allocate()
            os.kill(s.proc.proc.pid, signal.SIGTERM)
            time.sleep(0.3)
            status, body = http_get(health, "/ready")
            h.check(status == 200, f"/ready is {status} while draining with "
                    f"--ready-while-draining: {body}")
            h.check(s.proc.running(), "kturnd exited with an allocation alive")
            h.check(client.refresh(0).error_code() is None, "Refresh(0) failed")
        h.check(s.proc.wait(timeout=5) == 0, "kturnd did not exit 0 after the last allocation")
        print("drain with --ready-while-draining: /ready 200 until the last allocation ended")


def replace_config(path: str, config: dict) -> None:
    """Writes a config the way ConfigMap updates and editors do: a new file renamed over."""
    with open(path + ".new", "w") as f:
        f.write(h.to_yaml(config) + "\n")
    os.rename(path + ".new", path)


def wait_for(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        h.check(time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def case_reconfig(args, workdir):
    # No -l: the config's admin.loglevel is in force and follows config changes.
    with start_kturnd(args, workdir, {}, ["-w"], loglevel="") as s:
        _, peer_port = h.start_udp_echo_peer(workdir)
        extra_port = h.free_port(udp_only=True)
        config = copy.deepcopy(s.config)
        user, password = s.settings.credentials()
        new_password = password + "-rotated"
        new_realm = "rotated." + s.settings.realm

        def applied_count():
            return s.proc.output().count("config applied from")

        def no_answer(port):
            return h.stun_binding_probe((h.LOOPBACK, port), timeout=0.3) is None

        def check_new_credentials():
            with h.TurnClient(s.address, user, new_password) as c:
                c.allocate()
                h.check(c.realm == config["auth"]["realm"],
                        f"new clients see realm {c.realm}, want {config['auth']['realm']}")
                c.refresh(0)
            with h.TurnClient(s.address, user, password) as c:
                resp = c.request(h.ALLOCATE, lambda m: m.add(h.A_REQUESTED_TRANSPORT,
                                                               bytes([17, 0, 0, 0])))
                h.check((resp.error_code() or (0,))[0] == 401,
                        f"the old password still allocates: {resp.describe()}")

        steps = [
            ("routes", lambda c: (c["clusters"].append(
                {"name": "more", "type": "STATIC", "endpoints": ["127.0.0.2/32"]}),
                c["listeners"][0]["routes"].append("more")), None),
            ("endpoints", lambda c: c["clusters"][0]["endpoints"].append("127.0.0.3/32"), None),
            ("credentials", lambda c: c["auth"]["credentials"].update(password=new_password),
             check_new_credentials),
            ("realm", lambda c: c["auth"].update(realm=new_realm), check_new_credentials),
            ("log level", lambda c: c["admin"].update(loglevel="all:DEBUG"),
             lambda: h.check("log levels: all:DEBUG" in s.proc.output(),
                             "the new log level was not applied")),
            ("add listener", lambda c: c["listeners"].append(
                {"name": "extra", "protocol": "TURN-UDP", "address": h.LOOPBACK,
                 "port": extra_port, "routes": ["allowed"]}),
             lambda: h.check(not no_answer(extra_port), "the added listener does not answer")),
            ("remove listener", lambda c: c["listeners"].pop(),
             lambda: wait_for(lambda: no_answer(extra_port), 3, "the removed listener to close")),
        ]
        # 10 clients x 400 messages every 20 ms: 8 s of traffic; the changes start after 1.5 s.
        proc = h.Proc("turnutils_uclient", uclient_argv(s, peer_port, 10, 400, 20), workdir)
        h.register_log(proc.log_path)
        proc.start()
        time.sleep(1.5)
        for name, change, verify in steps:
            before = applied_count()
            change(config)
            replace_config(s.config_path, config)
            wait_for(lambda: applied_count() > before, 5, f"kturnd to apply the {name} change")
            if verify:
                verify()
            h.check(proc.running(), f"uclient finished before the {name} change: make it longer")
            print(f"applied during traffic: {name}")
            time.sleep(0.3)
        rc = proc.wait(timeout=60)
        h.check(rc == 0, f"uclient failed (rc={rc})")
        summary = uclient_test.parse_summary(proc.output())
        h.check(summary["sent"] == 4000 and summary["recv"] == 4000 and summary["lost"] == 0,
                f"packets lost across live config changes: {summary}")
        s.check_alive()
        print(f"reconfig: {len(steps)} changes, {summary['recv']}/{summary['sent']} echoed")


def case_tcp(args, workdir):
    metrics = h.free_port()
    settings = h.ServerSettings(auth="static", tcp=True)
    config = h.KturndServer.config_for(settings)
    config["admin"]["metrics_endpoint"] = f"http://127.0.0.1:{metrics}/metrics"
    with h.KturndServer(args.kturnd, config, workdir=workdir, settings=settings,
                        loglevel="all:INFO") as s:
        def connections():
            samples = metric_samples(metrics)
            return (samples.get(("stunner_listener_connections", (("name", "tcp"),))),
                    samples.get(("stunner_listener_connections_total", (("name", "tcp"),))))

        with socket.create_connection(s.address, timeout=2) as conn:
            request = h.StunMessage(h.BINDING, h.REQUEST)
            conn.sendall(request.encode())
            answer = h.StunMessage.decode(conn.recv(2048))
            h.check(answer is not None and answer.cls == h.SUCCESS and answer.tid == request.tid,
                    "no Binding success over TCP")
            mapped = answer.get_xor_address(h.A_XOR_MAPPED_ADDRESS)
            h.check(mapped == conn.getsockname(), f"XOR-MAPPED-ADDRESS {mapped} is not the "
                                                  f"client's {conn.getsockname()}")
            h.check(connections() == (1, 1), f"while connected: {connections()}")
        wait_for(lambda: connections() == (0, 1), 3, "the closed connection to be counted")
        print("tcp: Binding answered over TCP; connections gauge 1 -> 0, total 1")


def flood(server, stop, stats, source="127.0.0.7", rate=4000, max_packets=40000):
    """Allocate requests with a wrong password from one address, paced, bounded."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((source, 0))
    sock.setblocking(False)
    probe = h.StunMessage(h.ALLOCATE, h.REQUEST)
    probe.add(h.A_REQUESTED_TRANSPORT, bytes([17, 0, 0, 0]))
    sock.sendto(probe.encode(), server)
    realm, nonce = None, None
    deadline = time.monotonic() + 2
    while nonce is None and time.monotonic() < deadline:
        try:
            resp = h.StunMessage.decode(sock.recv(2048))
        except BlockingIOError:
            time.sleep(0.01)
            continue
        if resp is not None and resp.has(h.A_NONCE):
            realm, nonce = resp.get_str(h.A_REALM), resp.get(h.A_NONCE)
    h.check(nonce is not None, "the flooder got no 401 challenge")
    wrong_key = h.long_term_key(h.STATIC_USER, realm, "not-the-password")
    start = time.monotonic()
    while not stop.is_set() and stats["sent"] < max_packets:
        m = h.StunMessage(h.ALLOCATE, h.REQUEST)
        m.add(h.A_REQUESTED_TRANSPORT, bytes([17, 0, 0, 0]))
        m.add_str(h.A_USERNAME, h.STATIC_USER)
        m.add_str(h.A_REALM, realm)
        m.add(h.A_NONCE, nonce)
        sock.sendto(m.encode(key=wrong_key), server)
        stats["sent"] += 1
        try:
            while True:
                sock.recv(2048)
                stats["answers"] += 1
        except BlockingIOError:
            pass
        ahead = stats["sent"] / rate - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(ahead)
    sock.close()


def case_authflood(args, workdir):
    metrics = h.free_port()
    with start_kturnd(args, workdir,
                      {"metrics_endpoint": f"http://127.0.0.1:{metrics}/metrics"}) as s:
        _, peer_port = h.start_udp_echo_peer(workdir)
        user, password = s.settings.credentials()
        stop = threading.Event()
        stats = {"sent": 0, "answers": 0}
        flooder = threading.Thread(target=flood, args=(s.address, stop, stats), daemon=True)
        flooder.start()
        try:
            time.sleep(0.5)
            relay = h.Proc("turnutils_uclient", uclient_argv(s, peer_port, 10, 150, 20), workdir)
            h.register_log(relay.log_path)
            relay.start()
            failures, attempts = 0, 40
            for _ in range(attempts):  # allocations from the well-behaved address
                with h.TurnClient(s.address, user, password) as c:
                    try:
                        c.allocate()
                        c.refresh(0)
                    except h.TestFailure as e:
                        failures += 1
                        print(f"well-behaved allocation failed during the flood: {e}")
            rc = relay.wait(timeout=60)
        finally:
            stop.set()
            flooder.join(timeout=10)
        summary = uclient_test.parse_summary(relay.output())
        h.check(rc == 0 and summary["lost"] == 0 and summary["recv"] == 1500,
                f"uclient suffered from the flood (rc={rc}): {summary}")
        h.check(failures == 0, f"{failures}/{attempts} well-behaved allocations failed")
        h.check(stats["sent"] >= 2000, f"the flooder sent only {stats['sent']} requests")
        samples = metric_samples(metrics)
        throttled = samples.get(("kturn_auth_failures_total",
                                 (("listener", "udp"), ("reason", "throttled"))), 0)
        bad = samples.get(("kturn_auth_failures_total",
                           (("listener", "udp"), ("reason", "bad_integrity"))), 0)
        h.check(throttled > 0, "no request counted as throttled")
        h.check(throttled + bad >= stats["sent"] * 0.9,
                f"flood of {stats['sent']} not accounted: throttled={throttled} bad={bad}")
        # The flooder draws an answer for its first failures only, then silence.
        h.check(stats["answers"] <= 100,
                f"the flooder drew {stats['answers']} answers to {stats['sent']} requests")
        print(f"authflood: {stats['sent']} bad requests ({stats['answers']} answered, "
              f"{throttled:.0f} throttled); well-behaved: {attempts}/{attempts} allocations, "
              f"{summary['recv']}/{summary['sent']} relayed")


def case_fdlimit(args, workdir):
    # Started under the usual soft descriptor limit of 1024, kturnd raises it to the hard limit
    # (its own caps need thousands: a relay socket per allocation, a descriptor per connection).
    import resource
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    h.check(hard > 1024, f"the hard descriptor limit here is {hard}: nothing to raise")
    s = start_kturnd(args, workdir, {})
    argv = ["prlimit", f"--nofile=1024:{hard}", "--"] + s.argv()
    proc = h.Proc("kturnd", argv, workdir)
    h.register_log(proc.log_path)
    proc.start()
    try:
        s.proc = proc
        s.wait_ready()
        with open(f"/proc/{proc.proc.pid}/limits") as f:
            line = next(x for x in f if x.startswith("Max open files"))
        soft_now, hard_now = (int(v) for v in line.split()[3:5])
        h.check(soft_now == hard_now == hard,
                f"kturnd runs with descriptor limits {soft_now}/{hard_now}, want {hard}/{hard}")
        h.check("file descriptor limit raised from 1024" in proc.output(),
                "kturnd did not log the raised descriptor limit")
        print(f"descriptor limit: 1024 raised to {soft_now}")
    finally:
        proc.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--case", required=True,
                   choices=("metrics", "reload", "watch", "drain", "reconfig", "authflood", "fdlimit",
                            "tcp"))
    args, _ = p.parse_known_args()
    cases = {"metrics": case_metrics, "reload": case_reload, "watch": case_watch,
             "drain": case_drain, "reconfig": case_reconfig, "authflood": case_authflood,
             "fdlimit": case_fdlimit,
             "tcp": case_tcp}
    h.run_test(f"ops-{args.case}", lambda a, w: cases[a.case](a, w), p)


if __name__ == "__main__":
    main()
