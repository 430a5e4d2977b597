// Renders one exposition with every kind of family and awkward label values. The gtest checks
// only its shape; metrics_promparse_test.py runs this test with KTURN_PROM_SAMPLE_OUT set and
// parses the file with the Prometheus project's own Python parser, the independent check that
// the text is valid 0.0.4.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "admin/kturn_metrics.h"
#include "admin/process_metrics.h"
#include "admin/prometheus_text.h"
#include "admin/stunner_metrics.h"

namespace kturn::admin {
namespace {

std::vector<MetricFamily> sampleFamilies() {
  std::vector<MetricFamily> families;
  for (const MetricSpec* spec : stunner::kAllSeries) {
    MetricFamily family = familyOf(*spec);
    Labels labels;
    for (std::string_view label : spec->label_names) {
      labels.emplace_back(std::string(label), label == stunner::kLabelDirection
                                                  ? std::string(stunner::kDirectionRx)
                                                  : std::string("udp-listener"));
    }
    family.samples.push_back({.labels = labels, .value = 12});
    families.push_back(std::move(family));
  }
  MetricFamily weird{.name = "kturn_test_weird_labels",
                     .help = "help with \\ backslash\nand newline",
                     .type = MetricType::kGauge,
                     .samples = {{.labels = {{"name", "a\\b\"c\nd"}}, .value = 1.5}},
                     .histograms = {}};
  families.push_back(std::move(weird));
  MetricFamily histogram = familyOf(kturn_series::kRequestDurationSeconds);
  HistogramSample h{.labels = {{"method", "allocate"}}, .buckets = {}, .sum = 0.01, .count = 9};
  for (double bound : kturn_series::kRequestDurationBuckets) h.buckets.push_back({bound, 1});
  histogram.histograms.push_back(std::move(h));
  families.push_back(std::move(histogram));
  for (auto& family : collectProcessMetrics()) families.push_back(std::move(family));
  return families;
}

TEST(ExpositionSampleTest, RendersAndOptionallyWritesForTheExternalParser) {
  const std::string text = renderPrometheus(sampleFamilies());
  EXPECT_NE(text.find("stunner_cluster_bytes_total{direction=\"rx\",name=\"udp-listener\"} 12\n"),
            std::string::npos);
  EXPECT_NE(text.find("le=\"+Inf\"} 11\n"), std::string::npos);
  if (const char* path = std::getenv("KTURN_PROM_SAMPLE_OUT")) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    ASSERT_TRUE(out.good()) << path;
  }
}

}  // namespace
}  // namespace kturn::admin
