#include "admin/prometheus_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <ctime>
#include <limits>

#include "admin/admin_server.h"
#include "admin/kturn_metrics.h"
#include "admin/metrics_handler.h"
#include "admin/process_metrics.h"
#include "admin/stunner_metrics.h"
#include "admin/test_http_client.h"

namespace kturn::admin {
namespace {

MetricFamily listenerPackets() {
  MetricFamily family = familyOf(stunner::kListenerPacketsTotal);
  family.samples = {
      {.labels = {{"direction", "rx"}, {"name", "udp-listener"}}, .value = 42},
      {.labels = {{"direction", "tx"}, {"name", "udp-listener"}}, .value = 40},
  };
  return family;
}

TEST(PrometheusTextTest, CounterWithLabels) {
  const MetricFamily families[] = {listenerPackets()};
  EXPECT_EQ(renderPrometheus(families),
            "# HELP stunner_listener_packets_total Number of datagrams sent or received at a "
            "listener\n"
            "# TYPE stunner_listener_packets_total counter\n"
            "stunner_listener_packets_total{direction=\"rx\",name=\"udp-listener\"} 42\n"
            "stunner_listener_packets_total{direction=\"tx\",name=\"udp-listener\"} 40\n");
}

TEST(PrometheusTextTest, CounterGetsTotalSuffix) {
  const MetricFamily families[] = {{.name = "x_requests",
                                    .help = "h",
                                    .type = MetricType::kCounter,
                                    .samples = {{{}, 1}},
                                    .histograms = {}}};
  EXPECT_EQ(renderPrometheus(families),
            "# HELP x_requests_total h\n# TYPE x_requests_total counter\nx_requests_total 1\n");
}

TEST(PrometheusTextTest, GaugeWithoutLabels) {
  MetricFamily family = familyOf(stunner::kAllocationsActive);
  family.samples = {{.labels = {}, .value = 3}};
  const MetricFamily families[] = {family};
  EXPECT_EQ(renderPrometheus(families),
            "# HELP stunner_allocations_active Number of active allocations\n"
            "# TYPE stunner_allocations_active gauge\n"
            "stunner_allocations_active 3\n");
}

TEST(PrometheusTextTest, HistogramIsCumulativeWithInfSumAndCount) {
  MetricFamily family = familyOf(kturn_series::kRequestDurationSeconds);
  family.help = "h";
  family.histograms = {{
      .labels = {{"method", "allocate"}},
      .buckets = {{0.001, 3}, {0.01, 1}, {0.1, 0}},
      .sum = 0.0125,
      .count = 5,  // one above the last bound
  }};
  const MetricFamily families[] = {family};
  EXPECT_EQ(renderPrometheus(families),
            "# HELP kturn_request_duration_seconds h\n"
            "# TYPE kturn_request_duration_seconds histogram\n"
            "kturn_request_duration_seconds_bucket{method=\"allocate\",le=\"0.001\"} 3\n"
            "kturn_request_duration_seconds_bucket{method=\"allocate\",le=\"0.01\"} 4\n"
            "kturn_request_duration_seconds_bucket{method=\"allocate\",le=\"0.1\"} 4\n"
            "kturn_request_duration_seconds_bucket{method=\"allocate\",le=\"+Inf\"} 5\n"
            "kturn_request_duration_seconds_sum{method=\"allocate\"} 0.0125\n"
            "kturn_request_duration_seconds_count{method=\"allocate\"} 5\n");
}

TEST(PrometheusTextTest, HistogramCountNeverBelowBuckets) {
  // Shards read at slightly different moments: count lags the buckets.
  const MetricFamily families[] = {
      {.name = "h",
       .help = "",
       .type = MetricType::kHistogram,
       .samples = {},
       .histograms = {{.labels = {}, .buckets = {{1, 2}}, .sum = 1, .count = 1}}}};
  EXPECT_EQ(renderPrometheus(families),
            "# HELP h \n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 2\n"
            "h_sum 1\nh_count 2\n");
}

TEST(PrometheusTextTest, Escaping) {
  EXPECT_EQ(escapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(escapeHelp("a\\b\"c\nd"), "a\\\\b\"c\\nd");
  const MetricFamily families[] = {{.name = "g",
                                    .help = "line1\nline2 \\ \"q\"",
                                    .type = MetricType::kGauge,
                                    .samples = {{{{"name", "we\"ird\\\n"}}, 1}},
                                    .histograms = {}}};
  EXPECT_EQ(renderPrometheus(families),
            "# HELP g line1\\nline2 \\\\ \"q\"\n# TYPE g gauge\n"
            "g{name=\"we\\\"ird\\\\\\n\"} 1\n");
}

TEST(PrometheusTextTest, InvalidNamesAreSanitized) {
  const MetricFamily families[] = {{.name = "1bad-name",
                                    .help = "",
                                    .type = MetricType::kGauge,
                                    .samples = {{{{"a-b", "v"}}, 1}},
                                    .histograms = {}}};
  EXPECT_EQ(renderPrometheus(families),
            "# HELP _bad_name \n# TYPE _bad_name gauge\n_bad_name{a_b=\"v\"} 1\n");
}

TEST(PrometheusTextTest, ValueFormatting) {
  EXPECT_EQ(formatValue(0), "0");
  EXPECT_EQ(formatValue(42), "42");
  EXPECT_EQ(formatValue(-1.5), "-1.5");
  EXPECT_EQ(formatValue(0.25), "0.25");
  EXPECT_EQ(formatValue(9007199254740992.0), "9007199254740992");  // 2^53, exact
  EXPECT_EQ(formatValue(1e21), "1e+21");
  EXPECT_EQ(formatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(formatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(formatValue(std::nan("")), "NaN");
}

TEST(StunnerMetricsTest, SevenSeriesWithStunnerNamesAndLabels) {
  ASSERT_EQ(stunner::kAllSeries.size(), 7u);
  for (const MetricSpec* spec : stunner::kAllSeries) {
    EXPECT_TRUE(spec->name.starts_with("stunner_")) << spec->name;
    EXPECT_EQ(spec->type == MetricType::kCounter, spec->name.ends_with("_total")) << spec->name;
    ASSERT_FALSE(spec->help.empty());
  }
  EXPECT_EQ(stunner::kClusterBytesTotal.label_names.size(), 2u);
  EXPECT_EQ(stunner::kListenerConnections.label_names[0], "name");
  EXPECT_TRUE(stunner::kAllocationsActive.label_names.empty());
  for (const MetricSpec* spec : kturn_series::kAllSeries) {
    EXPECT_TRUE(spec->name.starts_with("kturn_")) << spec->name;
    EXPECT_EQ(spec->type == MetricType::kCounter, spec->name.ends_with("_total")) << spec->name;
  }
}

TEST(ProcessMetricsTest, ReportsTheStandardSeries) {
  // Spend measurable CPU first: run alone, the process may not have used one clock tick yet.
  const auto start = std::clock();
  volatile uint64_t sink = 0;
  while (std::clock() - start < CLOCKS_PER_SEC / 20) sink = sink + 1;
  const auto families = collectProcessMetrics();
  const std::string text = renderPrometheus(families);
  for (const char* name : {"process_cpu_seconds_total ", "process_resident_memory_bytes ",
                           "process_virtual_memory_bytes ", "process_open_fds ", "process_max_fds ",
                           "process_start_time_seconds "}) {
    EXPECT_NE(text.find(std::string("\n") + name), std::string::npos) << name << "\n" << text;
  }
  for (const auto& family : families) {
    ASSERT_EQ(family.samples.size(), 1u);
    EXPECT_GT(family.samples[0].value, 0) << family.name;
  }
}

TEST(MetricsHandlerTest, ServesRenderedFamiliesWithPrometheusContentType) {
  AdminServer server(HttpEndpoint{.host = "127.0.0.1", .port = 0, .path = "/metrics"});
  int scrapes = 0;
  server.handle(server.endpoint().path, metricsHandler([&scrapes] {
                  ++scrapes;  // the admin thread only; read after the reply arrived
                  return std::vector<MetricFamily>{listenerPackets()};
                }));
  ASSERT_TRUE(server.start());
  auto reply = testing::httpGet(server.port(), "/metrics");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  const MetricFamily families[] = {listenerPackets()};
  EXPECT_EQ(reply->body, renderPrometheus(families));
  EXPECT_EQ(testing::httpGet(server.port(), "/metrics")->status, 200);
  server.stop();
  EXPECT_EQ(scrapes, 2);
}

}  // namespace
}  // namespace kturn::admin
