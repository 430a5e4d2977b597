// buildMetrics: the workers' counters reach the Prometheus series docs/metrics.md describes,
// under the listener's name and the documented reason labels.
#include "daemon/metrics.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>

namespace kturn::daemon {
namespace {

constexpr turn::ListenerId kListener = 3;

// The value of the sample of `family` with exactly `labels`, if it exists.
std::optional<double> sampleWith(const std::vector<admin::MetricFamily>& families,
                                 std::string_view family, const admin::Labels& labels) {
  for (const admin::MetricFamily& f : families) {
    if (f.name != family) continue;
    for (const admin::Sample& s : f.samples) {
      if (s.labels == labels) return s.value;
    }
  }
  return std::nullopt;
}

// The value of `family`{listener=`listener`, `label`=`value`}, if that sample exists.
std::optional<double> sample(const std::vector<admin::MetricFamily>& families,
                             std::string_view family, std::string_view value,
                             std::string_view label = "reason", std::string_view listener = "udp") {
  return sampleWith(
      families, family,
      {{"listener", std::string(listener)}, {std::string(label), std::string(value)}});
}

TEST(MetricsTest, LimitRefusalsAreExportedByReason) {
  worker::ConfigSnapshot dataplane;
  worker::ListenerSpec listener;
  listener.id = kListener;
  listener.name = "udp";
  dataplane.listeners.push_back(listener);
  dataplane.turn = std::make_shared<const turn::ServerConfig>();
  worker::WorkerStats stats;
  stats.turn_by_listener.resize(kListener + 1);
  turn::ServerStats& s = stats.turn_by_listener[kListener];
  s.allocations_rejected_quota = 1;
  s.allocations_rejected_source_quota = 2;
  s.allocations_rejected_capacity = 3;
  s.permissions_rejected_capacity = 4;
  s.channels_rejected_capacity = 5;

  const auto families = buildMetrics(stats, dataplane);
  EXPECT_EQ(sample(families, "kturn_allocations_rejected_total", "quota_reached"), 1);
  EXPECT_EQ(sample(families, "kturn_allocations_rejected_total", "source_quota_reached"), 2);
  EXPECT_EQ(sample(families, "kturn_allocations_rejected_total", "insufficient_capacity"), 3);
  EXPECT_EQ(sample(families, "kturn_permissions_rejected_total", "permission_limit"), 4);
  EXPECT_EQ(sample(families, "kturn_permissions_rejected_total", "channel_limit"), 5);
}

TEST(MetricsTest, ChannelOffersTheKernelHadNoRoomForAreExportedPerTurnUdpListener) {
  worker::ConfigSnapshot dataplane;
  worker::ListenerSpec udp;
  udp.id = kListener;
  udp.name = "udp";
  worker::ListenerSpec tcp;
  tcp.id = kListener + 1;
  tcp.name = "tcp";
  tcp.protocol = TransportProtocol::kTcp;
  dataplane.listeners = {udp, tcp};
  dataplane.turn = std::make_shared<const turn::ServerConfig>();
  worker::WorkerStats stats;
  stats.turn_by_listener.resize(kListener + 2);
  stats.turn_by_listener[kListener].channels_offload_refused = 9;

  std::vector<admin::Sample> refused;
  for (const admin::MetricFamily& f : buildMetrics(stats, dataplane)) {
    if (f.name == "kturn_offload_refused_total") refused = f.samples;
  }
  ASSERT_EQ(refused.size(), 1u) << "TURN-UDP listeners only: the kernel relays nothing else";
  EXPECT_EQ(refused[0].labels, (admin::Labels{{"listener", "udp"}}));
  EXPECT_EQ(refused[0].value, 9);
}

TEST(MetricsTest, PeerConnectionsOfTcpAllocationsAreExportedByEvent) {
  worker::ConfigSnapshot dataplane;
  worker::ListenerSpec listener;
  listener.id = kListener;
  listener.name = "tcp";
  listener.protocol = TransportProtocol::kTcp;
  dataplane.listeners.push_back(listener);
  dataplane.turn = std::make_shared<const turn::ServerConfig>();
  worker::WorkerStats stats;
  stats.turn_by_listener.resize(kListener + 1);
  turn::ServerStats& s = stats.turn_by_listener[kListener];
  s.peer_connections_connected = 1;
  s.peer_connections_failed = 2;
  s.peer_connections_accepted = 3;
  s.peer_connections_refused = 4;
  s.peer_connections_bound = 5;
  s.peer_connections_unbound = 6;
  stats.traffic.resize(kListener + 1);
  stats.traffic[kListener].handed_over = 7;
  s.connection_reads_held = 8;

  const auto families = buildMetrics(stats, dataplane);
  const auto peer = [&](std::string_view event) {
    return sample(families, "kturn_peer_connections_total", event, "event", "tcp");
  };
  EXPECT_EQ(peer("connected"), 1);
  EXPECT_EQ(peer("failed"), 2);
  EXPECT_EQ(peer("accepted"), 3);
  EXPECT_EQ(peer("refused"), 4);
  EXPECT_EQ(peer("bound"), 5);
  EXPECT_EQ(peer("unbound"), 6);
  EXPECT_EQ(peer("handed_over"), 7);
  EXPECT_EQ(peer("held"), 8);
}

}  // namespace
}  // namespace kturn::daemon

namespace kturn::daemon {
namespace {

// Every series admin/kturn_metrics.h declares comes out of buildMetrics exactly once (HELP and
// TYPE with it), for a config with a TURN-UDP and a TURN-TCP listener; none comes out twice.
// What the workers' UDP sockets did, each count in its own sample (no listener label: the
// sockets of all listeners and relays together).
TEST(MetricsTest, UdpSocketCountsAreExported) {
  worker::WorkerStats stats;
  stats.datagrams_received = 1;
  stats.datagrams_truncated = 2;
  stats.datagrams_sent = 3;
  stats.send_dropped = 4;
  stats.receive_syscalls = 5;
  stats.send_syscalls = 6;
  worker::ConfigSnapshot snapshot;
  snapshot.turn = std::make_shared<const turn::ServerConfig>();
  const auto families = buildMetrics(stats, snapshot);
  const auto value = [&](std::string_view family, std::string_view label, std::string_view v) {
    return sampleWith(families, family, {{std::string(label), std::string(v)}});
  };
  EXPECT_EQ(value("kturn_udp_datagrams_total", "outcome", "received"), 1);
  EXPECT_EQ(value("kturn_udp_datagrams_total", "outcome", "truncated"), 2);
  EXPECT_EQ(value("kturn_udp_datagrams_total", "outcome", "sent"), 3);
  EXPECT_EQ(value("kturn_udp_datagrams_total", "outcome", "send_failed"), 4);
  EXPECT_EQ(value("kturn_udp_syscalls_total", "direction", "rx"), 5);
  EXPECT_EQ(value("kturn_udp_syscalls_total", "direction", "tx"), 6);
}

TEST(MetricsTest, ConfigFaultsAreExportedByKindAndName) {
  worker::ConfigSnapshot snapshot;
  snapshot.turn = std::make_shared<const turn::ServerConfig>();
  const auto families =
      buildMetrics({}, snapshot, {},
                   {{"listener", "tls", "listeners[1].cert: not valid base64"},
                    {"cluster", "media", "clusters[0].endpoints[0]: invalid address"}});
  EXPECT_EQ(sampleWith(families, "kturn_config_faults", {{"kind", "listener"}, {"name", "tls"}}),
            1);
  EXPECT_EQ(sampleWith(families, "kturn_config_faults", {{"kind", "cluster"}, {"name", "media"}}),
            1);
  EXPECT_FALSE(sampleWith(buildMetrics({}, snapshot), "kturn_config_faults",
                          {{"kind", "listener"}, {"name", "tls"}}))
      << "no fault, no sample";
}

TEST(MetricsTest, EveryDeclaredSeriesIsExportedOnce) {
  worker::ConfigSnapshot snapshot;
  worker::ListenerSpec udp;
  udp.id = 1;
  udp.name = "udp";
  worker::ListenerSpec tcp;
  tcp.id = 2;
  tcp.name = "tcp";
  tcp.protocol = TransportProtocol::kTcp;
  snapshot.listeners = {udp, tcp};
  snapshot.turn = std::make_shared<const turn::ServerConfig>();
  const auto families = buildMetrics(worker::WorkerStats{}, snapshot);
  std::map<std::string, int> seen;
  for (const admin::MetricFamily& f : families) ++seen[f.name];
  for (const admin::MetricSpec* spec : admin::kturn_series::kAllSeries) {
    EXPECT_EQ(seen[std::string(spec->name)], 1) << spec->name;
  }
  for (const auto& [name, count] : seen) EXPECT_EQ(count, 1) << name;
}

// Each counter of the TURN core reaches its own sample: set one at a time, only that sample
// moves (a row of the table reading the wrong counter fails here). By design two samples are
// shared or doubled: malformed drops add drop_malformed and drop_not_turn, and an expiry counts
// in kturn_allocations_expired_total and kturn_allocations_ended_total{reason="expired"}.
TEST(MetricsTest, EachTurnCounterMovesOneSample) {
  worker::ConfigSnapshot snapshot;
  worker::ListenerSpec udp;
  udp.id = 1;
  udp.name = "udp";
  snapshot.listeners = {udp};
  snapshot.turn = std::make_shared<const turn::ServerConfig>();
  const auto total = [&](const worker::WorkerStats& stats) {
    std::map<std::string, double> out;
    for (const admin::MetricFamily& f : buildMetrics(stats, snapshot)) {
      if (!f.name.starts_with("kturn_") || f.name == "kturn_dataplane_info") continue;
      for (const admin::Sample& s : f.samples) {
        std::string key = f.name;
        for (const auto& [k, v] : s.labels) key += "," + k + "=" + v;
        out[key] = s.value;
      }
    }
    return out;
  };
  const auto zero = total(worker::WorkerStats{});
  std::set<std::string> moved_samples;
  int exported = 0;
#define KTURN_CHECK_COUNTER(name, help)                                                           \
  {                                                                                               \
    worker::WorkerStats stats;                                                                    \
    stats.turn_by_listener.resize(2);                                                             \
    stats.turn_by_listener[1].name = 7;                                                           \
    std::vector<std::string> moved;                                                               \
    for (const auto& [key, value] : total(stats)) {                                               \
      if (value != zero.at(key)) moved.push_back(key);                                            \
    }                                                                                             \
    EXPECT_LE(moved.size(), std::string_view(#name) == "allocations_expired" ? 2u : 1u) << #name; \
    for (const std::string& key : moved) {                                                        \
      EXPECT_EQ(total(stats).at(key), 7) << #name << " -> " << key;                               \
      EXPECT_TRUE(moved_samples.insert(key).second || key.ends_with("reason=malformed"))          \
          << key << " also moves for " #name;                                                     \
    }                                                                                             \
    exported += moved.empty() ? 0 : 1;                                                            \
  }
  KTURN_SERVER_COUNTERS(KTURN_CHECK_COUNTER)
#undef KTURN_CHECK_COUNTER
  EXPECT_GE(exported, 30);
}

}  // namespace
}  // namespace kturn::daemon
