// kturn-bench: a TURN load generator for loopback benchmarks (bench/README.md).
//
//   kturn-bench --server 127.0.0.1:3478 -n 100 --rate 50000 --size 100 -d 10 --json
//   kturn-bench --mode alloc-rate -n 64 -d 10
//   kturn-bench --mode many -n 20000 --active 100 --rate 5000
//   kturn-bench --raw --server 127.0.0.1:4478 --peer-bind 127.0.0.1:5000   (udp-forwarder)
//   kturn-bench --direct -n 100 --rate 20000      (no relay: the same packets, peer to clients)
//   kturn-bench --transport tls --server 127.0.0.1:5349 -n 100 --rate 20000    (TURN-TLS)
//
// Each client owns a UDP socket (or a TCP connection, or a TLS one), allocates (long-term static or
// REST credentials), creates a permission and binds a channel to the echo peer, then sends stamped
// ChannelData (or Send indications) at a paced aggregate rate; the echoes give loss and round-trip
// percentiles.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "client_group.h"
#include "clock.h"
#include "echo_peer.h"
#include "options.h"
#include "stamp.h"

namespace kturn::bench {
namespace {

void raiseFileLimit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

const char* modeName(Mode m) {
  switch (m) {
    case Mode::kTraffic:
      return "traffic";
    case Mode::kAllocRate:
      return "alloc-rate";
    case Mode::kMany:
      return "many";
  }
  return "?";
}

const char* transportName(Transport t) {
  switch (t) {
    case Transport::kUdp:
      return "udp";
    case Transport::kTcp:
      return "tcp";
    case Transport::kTls:
      return "tls";
  }
  return "?";
}

double us(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

int run(BenchOptions& o) {
  raiseFileLimit();
  rlimit r{};
  ::getrlimit(RLIMIT_NOFILE, &r);
  if (o.clients + 64 > r.rlim_cur) {
    std::fprintf(stderr, "kturn-bench: %zu clients need %zu descriptors, RLIMIT_NOFILE is %llu\n",
                 o.clients, o.clients + 64, static_cast<unsigned long long>(r.rlim_cur));
    return 2;
  }

  EchoPeer peer;
  TransportAddress peer_address;
  const bool builtin_peer = !o.peer && o.mode != Mode::kAllocRate;
  if (o.peer) {
    peer_address = *o.peer;
  } else if (builtin_peer) {
    if (auto ok = peer.start(o.peer_bind, o.peer_threads, o.peer_netns); !ok) {
      std::fprintf(stderr, "kturn-bench: echo peer: %s\n", ok.error().message.c_str());
      return 1;
    }
    peer_address = peer.address();
  }
  if (o.direct) o.server = peer_address;  // the clients' sockets talk to the peer itself

  const size_t groups = std::max<size_t>(1, std::min(o.threads, o.clients));
  std::vector<std::unique_ptr<ClientGroup>> group;
  for (size_t g = 0; g < groups; ++g) {
    const size_t first = g * o.clients / groups;
    const size_t last = (g + 1) * o.clients / groups;
    group.push_back(std::make_unique<ClientGroup>(o, g, groups, first, last - first, peer_address));
    if (auto ok = group.back()->open(); !ok) {
      std::fprintf(stderr, "kturn-bench: %s\n", ok.error().message.c_str());
      return 1;
    }
  }

  RunControl control;
  std::atomic<size_t> finished{0};
  std::vector<std::thread> threads;
  const int64_t t0 = monoNs();
  for (auto& g : group) {
    threads.emplace_back([&control, &finished, gp = g.get()] {
      gp->run(control);
      finished.fetch_add(1);
    });
  }

  // Every phase is bounded: setup by --setup-timeout, traffic by its duration, teardown by its
  // own deadline; this watchdog is the last resort.
  const int64_t setup_deadline = t0 + secondsToNs(o.setup_timeout + 10);
  while (control.setup_finished.load() < groups && monoNs() < setup_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double setup_wall = static_cast<double>(monoNs() - t0) / 1e9;
  control.traffic_start_ns = monoNs() + 20'000'000;
  const int64_t hard_deadline = monoNs() + secondsToNs(o.warmup + o.duration + o.drain + 40) +
                                static_cast<int64_t>(o.clients) * 2'000'000;
  while (finished.load() < groups && monoNs() < hard_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (finished.load() < groups) {
    std::fprintf(stderr, "kturn-bench: watchdog: aborting\n");
    control.abort = true;
  }
  for (auto& t : threads) t.join();
  peer.stop();

  GroupResult total;
  double setup_seconds = 0;
  for (auto& g : group) {
    const GroupResult& r = g->result();
    total.allocated += r.allocated;
    total.failed += r.failed;
    setup_seconds = std::max(setup_seconds, r.setup_seconds);
    total.sent_total += r.sent_total;
    total.received_total += r.received_total;
    total.sent_measured += r.sent_measured;
    total.received_measured += r.received_measured;
    total.send_failed += r.send_failed;
    total.foreign += r.foreign;
    total.cycles += r.cycles;
    total.transactions += r.transactions;
    total.retransmissions += r.retransmissions;
    total.timeouts += r.timeouts;
    total.refreshes += r.refreshes;
    total.released += r.released;
    total.abandoned += r.abandoned;
    total.connections_lost += r.connections_lost;
    if (total.tls.empty()) total.tls = r.tls;
    for (auto [code, n] : r.errors) total.errors[code] += n;
    total.rtt.merge(r.rtt);
    total.transaction_rtt.merge(r.transaction_rtt);
  }

  const double d = std::max(o.duration, 1e-9);
  const double offered = static_cast<double>(total.sent_measured) / d;
  const double delivered = static_cast<double>(total.received_measured) / d;
  const double loss = total.sent_measured == 0
                          ? 0.0
                          : 1.0 - static_cast<double>(total.received_measured) /
                                      static_cast<double>(total.sent_measured);
  const uint64_t peer_rx = builtin_peer ? peer.received() : 0;
  // Datagrams the server relayed in either direction over the whole run (warmup included).
  const uint64_t relayed = builtin_peer ? peer_rx + total.received_total : 2 * total.received_total;

  nlohmann::json j;
  j["mode"] = modeName(o.mode);
  j["transport"] = transportName(o.transport);
  j["tls"] = total.tls;
  j["connections_lost"] = total.connections_lost;
  j["server"] = o.server.toString();
  j["raw"] = o.raw;
  j["direct"] = o.direct;
  j["send_indications"] = o.send_indications;
  j["clients"] = o.clients;
  j["active"] = o.mode == Mode::kAllocRate ? 0 : o.activeClients();
  j["allocations"] = total.allocated;
  j["allocation_failures"] = total.failed;
  j["setup_s"] = setup_seconds;
  j["setup_wall_s"] = setup_wall;
  j["setup_allocations_per_s"] =
      setup_seconds > 0 ? static_cast<double>(total.allocated) / setup_seconds : 0.0;
  j["payload"] = o.payload;
  j["target_pps"] = o.mode == Mode::kAllocRate ? 0.0 : o.rate;
  j["offered_pps"] = offered;
  j["delivered_pps"] = delivered;
  j["loss"] = loss;
  j["rtt_p50_us"] = us(total.rtt.quantile(0.50));
  j["rtt_p99_us"] = us(total.rtt.quantile(0.99));
  j["rtt_p999_us"] = us(total.rtt.quantile(0.999));
  j["rtt_max_us"] = us(total.rtt.max());
  j["duration"] = o.duration;
  j["sent_measured"] = total.sent_measured;
  j["received_measured"] = total.received_measured;
  j["sent_total"] = total.sent_total;
  j["received_total"] = total.received_total;
  j["send_failed"] = total.send_failed;
  j["peer_received"] = peer_rx;
  j["relayed_total"] = relayed;
  j["foreign"] = total.foreign;
  j["alloc_cycles"] = total.cycles;
  j["alloc_rate"] = o.mode == Mode::kAllocRate ? static_cast<double>(total.cycles) / d : 0.0;
  j["transactions"] = total.transactions;
  j["transaction_p50_us"] = us(total.transaction_rtt.quantile(0.50));
  j["transaction_p99_us"] = us(total.transaction_rtt.quantile(0.99));
  j["retransmissions"] = total.retransmissions;
  j["timeouts"] = total.timeouts;
  j["refreshes"] = total.refreshes;
  j["released"] = total.released;
  j["abandoned"] = total.abandoned;
  nlohmann::json errors = nlohmann::json::object();
  for (auto [code, n] : total.errors) {
    errors[code == 0 ? "timeout" : code < 0 ? "connection-lost" : std::to_string(code)] = n;
  }
  j["errors"] = errors;

  if (!o.quiet) {
    std::printf(
        "kturn-bench %s against %s over %s%s: %zu clients, %zu allocated (%zu failed) in %.2f "
        "s\n",
        modeName(o.mode), o.server.toString().c_str(), transportName(o.transport),
        o.raw      ? " (raw)"
        : o.direct ? " (direct)"
                   : "",
        o.clients, total.allocated, total.failed, setup_seconds);
    if (!total.tls.empty()) std::printf("  %s\n", total.tls.c_str());
    if (o.mode == Mode::kAllocRate) {
      std::printf(
          "  %llu Allocate+Refresh(0) cycles in %.1f s: %.0f allocations/s; "
          "transaction p50 %.0f us p99 %.0f us; %llu timeouts\n",
          static_cast<unsigned long long>(total.cycles), o.duration,
          static_cast<double>(total.cycles) / d, us(total.transaction_rtt.quantile(0.5)),
          us(total.transaction_rtt.quantile(0.99)),
          static_cast<unsigned long long>(total.timeouts));
    } else {
      std::printf(
          "  %zu B payload, target %.0f pps, offered %.0f pps, delivered %.0f pps, "
          "loss %.3f%%\n",
          o.payload, o.rate, offered, delivered, 100.0 * loss);
      std::printf(
          "  RTT p50 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us; "
          "%llu send failures, %llu relayed datagrams in total\n",
          us(total.rtt.quantile(0.5)), us(total.rtt.quantile(0.99)), us(total.rtt.quantile(0.999)),
          us(total.rtt.max()), static_cast<unsigned long long>(total.send_failed),
          static_cast<unsigned long long>(relayed));
    }
    if (total.refreshes > 0 || total.abandoned > 0) {
      std::printf("  %llu refreshes; at the end %llu released, %llu left to expire\n",
                  static_cast<unsigned long long>(total.refreshes),
                  static_cast<unsigned long long>(total.released),
                  static_cast<unsigned long long>(total.abandoned));
    }
    if (!total.errors.empty()) std::printf("  errors: %s\n", errors.dump().c_str());
  }
  if (o.json) std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace kturn::bench

int main(int argc, char** argv) {
  using kturn::bench::Mode;
  kturn::bench::BenchOptions o;
  CLI::App app{"kturn-bench: TURN load generator (loopback benchmarks)"};
  std::string mode = "traffic";
  std::string server = "127.0.0.1:3478";
  std::string peer;
  std::string peer_bind;
  app.add_option("--mode", mode, "traffic | alloc-rate | many")
      ->check(CLI::IsMember({"traffic", "alloc-rate", "many"}));
  app.add_option("--server", server, "TURN server (or udp-forwarder with --raw), IP:port");
  std::string transport = "udp";
  app.add_option("--transport", transport,
                 "client to server: udp | tcp (TURN-TCP) | tls (TURN-TLS); the relay leg is UDP")
      ->check(CLI::IsMember({"udp", "tcp", "tls"}));
  std::string tls_version = "any";
  app.add_option("--tls-version", tls_version,
                 "highest TLS version the clients offer: 1.2 | 1.3 | any (--transport tls)")
      ->check(CLI::IsMember({"1.2", "1.3", "any"}));
  app.add_flag("--raw", o.raw, "no TURN: ChannelData frames to a udp-forwarder");
  app.add_flag("--direct", o.direct,
               "no relay: bare payloads straight to the echo peer and back (--server unused)");
  app.add_flag("--send", o.send_indications, "Send/Data indications instead of ChannelData");
  app.add_option("--auth", o.auth, "static | rest")->check(CLI::IsMember({"static", "rest"}));
  app.add_option("-u,--user", o.username, "static username");
  app.add_option("-p,--password", o.password, "static password");
  app.add_option("--secret", o.secret, "REST shared secret (--auth rest)");
  app.add_option("-n,--clients", o.clients, "clients, one allocation each")
      ->check(CLI::Range(1, 1'000'000));
  app.add_option("--active", o.active, "clients that send traffic (0: all; many: 100)");
  app.add_option("-r,--rate", o.rate, "offered aggregate packets/s towards the peer")
      ->check(CLI::Range(1.0, 1e8));
  app.add_option("-s,--size", o.payload, "relayed payload bytes (24-1400)")
      ->check(CLI::Range(24, 1400));
  app.add_option("-d,--duration", o.duration, "measured seconds (alloc-rate: cycling seconds)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--warmup", o.warmup, "unmeasured seconds before")->check(CLI::Range(0.0, 600.0));
  app.add_option("--drain", o.drain, "seconds to collect echoes after sending stops")
      ->check(CLI::Range(0.0, 60.0));
  app.add_option("--max-packets", o.max_packets, "hard bound on datagrams sent");
  app.add_option("-t,--threads", o.threads, "client threads")->check(CLI::Range(1, 64));
  app.add_option("--peer-threads", o.peer_threads, "built-in echo peer threads")
      ->check(CLI::Range(1, 64));
  app.add_option("--peer", peer, "external UDP echo peer IP:port (default: built-in)");
  app.add_option("--peer-bind", peer_bind, "built-in echo peer address (default 127.0.0.1:0)");
  app.add_option("--peer-netns", o.peer_netns,
                 "network namespace (/run/netns/NAME) the built-in echo peer's sockets live in");
  std::string client_bind;
  app.add_option("--client-bind", client_bind,
                 "address the clients' sockets bind (default 127.0.0.1 or ::1)");
  app.add_option("--lifetime", o.lifetime, "requested allocation lifetime, s");
  app.add_option("--refresh-after", o.refresh_after,
                 "seconds from allocation (or refresh) to the next Refresh (0: lifetime/2, "
                 "at most 120)")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--release-fraction", o.release_fraction,
                 "share of allocations released with Refresh(0) at the end; the rest are left "
                 "for the server to expire (churn)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--window", o.window, "transactions in flight per thread")
      ->check(CLI::Range(1, 100000));
  app.add_option("--setup-timeout", o.setup_timeout, "seconds allowed for setting up")
      ->check(CLI::Range(1.0, 3600.0));
  app.add_flag("--json", o.json, "print one JSON line with the results");
  app.add_flag("-q,--quiet", o.quiet, "no human summary");
  CLI11_PARSE(app, argc, argv);

  o.mode = mode == "alloc-rate" ? Mode::kAllocRate : mode == "many" ? Mode::kMany : Mode::kTraffic;
  o.transport = transport == "tcp"   ? kturn::bench::Transport::kTcp
                : transport == "tls" ? kturn::bench::Transport::kTls
                                     : kturn::bench::Transport::kUdp;
  o.tls_max_version = tls_version == "1.2" ? 0x0303 : tls_version == "1.3" ? 0x0304 : 0;
  if (o.stream() && o.mode != Mode::kTraffic) {
    std::fprintf(stderr, "kturn-bench: --transport %s works with --mode traffic only\n",
                 transport.c_str());
    return 2;
  }
  if (o.direct && (o.raw || o.send_indications || o.stream() || o.mode != Mode::kTraffic)) {
    std::fprintf(stderr,
                 "kturn-bench: --direct works with --mode traffic over UDP only, "
                 "without --raw or --send\n");
    return 2;
  }
  auto s = kturn::TransportAddress::parse(server);
  if (!s) {
    std::fprintf(stderr, "kturn-bench: --server: not IP:port: %s\n", server.c_str());
    return 2;
  }
  o.server = *s;
  if (!peer.empty()) {
    auto p = kturn::TransportAddress::parse(peer);
    if (!p) {
      std::fprintf(stderr, "kturn-bench: --peer: not IP:port: %s\n", peer.c_str());
      return 2;
    }
    o.peer = *p;
  }
  if (peer_bind.empty()) {
    o.peer_bind = kturn::TransportAddress{
        o.server.ip.isV4() ? kturn::IpAddress::v4(0x7F000001) : *kturn::IpAddress::parse("::1"), 0};
  } else {
    auto p = kturn::TransportAddress::parse(peer_bind);
    if (!p) {
      std::fprintf(stderr, "kturn-bench: --peer-bind: not IP:port: %s\n", peer_bind.c_str());
      return 2;
    }
    o.peer_bind = *p;
  }
  if (!client_bind.empty()) {
    auto ip = kturn::IpAddress::parse(client_bind);
    if (!ip || ip->isV4() != o.server.ip.isV4()) {
      std::fprintf(stderr, "kturn-bench: --client-bind: not an IP of the server's family: %s\n",
                   client_bind.c_str());
      return 2;
    }
    o.client_bind = *ip;
  }
  if (o.auth == "rest" && o.secret.empty()) {
    std::fprintf(stderr, "kturn-bench: --auth rest needs --secret\n");
    return 2;
  }
  if (o.mode == Mode::kAllocRate) o.window = std::max(o.window, o.clients);
  return kturn::bench::run(o);
}
