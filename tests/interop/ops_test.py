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

  /usr/bin/python3 ops_test.py --server kturnd --kturnd build/kturnd --case drain
"""

import argparse
import os
import signal
import sys
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


def start_kturnd(args, workdir, extra_admin, extra_args=()):
    settings = h.ServerSettings(auth="static")
    config = h.KturndServer.config_for(settings)
    config["admin"].update(extra_admin)
    return h.KturndServer(args.kturnd, config, workdir=workdir, settings=settings,
                          loglevel="all:INFO", extra_args=extra_args)


def run_uclient(workdir, argv, timeout=60.0):
    proc = h.Proc("turnutils_uclient", argv, workdir)
    h.register_log(proc.log_path)
    proc.start()
    rc = proc.wait(timeout=timeout)
    out = proc.output()
    h.check(rc == 0, f"turnutils_uclient exited with {rc}:\n" + "\n".join(out.splitlines()[-6:]))
    return uclient_test.parse_summary(out)


def case_metrics(args, workdir):
    from prometheus_client.parser import text_string_to_metric_families
    port = h.free_port()
    with start_kturnd(args, workdir, {"metrics_endpoint": f"http://127.0.0.1:{port}/metrics"}) as s:
        _, peer_port = h.start_udp_echo_peer(workdir)
        summary = run_uclient(workdir, uclient_argv(s, peer_port, 5, 40, 5))
        h.check(summary["sent"] == 200 and summary["recv"] == 200, f"uclient: {summary}")
        status, text = http_get(port, "/metrics")
        h.check(status == 200, f"/metrics answered {status}")
        samples = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value

        def value(series, **labels):
            key = (series, tuple(sorted(labels.items())))
            h.check(key in samples, f"/metrics lacks {series}{labels}:\n{text[:2000]}")
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


def case_drain(args, workdir):
    # Traffic during the drain: a uclient session started before SIGTERM completes, zero loss.
    health = h.free_port()
    with start_kturnd(args, workdir, {"healthcheck_endpoint": f"http://127.0.0.1:{health}"},
                      ["--grace-period", "60"]) as s:
        _, peer_port = h.start_udp_echo_peer(workdir)
        status, _ = http_get(health, "/ready")
        h.check(status == 200, f"/ready is {status} before SIGTERM")
        # 10 clients x 150 messages every 20 ms: about 3 s of traffic.
        proc = h.Proc("turnutils_uclient", uclient_argv(s, peer_port, 10, 150, 20), workdir)
        h.register_log(proc.log_path)
        proc.start()
        time.sleep(1.0)
        os.kill(s.proc.proc.pid, signal.SIGTERM)
        time.sleep(0.2)
        status, body = http_get(health, "/ready")
        h.check(status == 503, f"/ready is {status} while draining: {body}")
        rc = proc.wait(timeout=60)
        h.check(rc == 0, f"uclient failed during the drain (rc={rc})")
        summary = uclient_test.parse_summary(proc.output())
        h.check(summary["sent"] == 1500 and summary["recv"] == 1500 and summary["lost"] == 0,
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_server_args(p)
    p.add_argument("--case", choices=("metrics", "reload", "watch", "drain"), required=True)
    args, _ = p.parse_known_args()
    cases = {"metrics": case_metrics, "reload": case_reload, "watch": case_watch,
             "drain": case_drain}
    h.run_test(f"ops-{args.case}", lambda a, w: cases[a.case](a, w), p)


if __name__ == "__main__":
    main()
