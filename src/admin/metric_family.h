// MetricFamily: one Prometheus metric family as plain data, filled by the daemon at scrape time
// from its per-worker stats shards. No registry and no live metric objects: the data plane keeps
// its own counters (docs/architecture.md §3) and this is only the shape they are rendered from.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kturn::admin {

enum class MetricType { kCounter, kGauge, kHistogram };

// Label pairs in the order they are rendered. Values come from config (listener and cluster
// names) or fixed vocabularies, never from client input: a series per client would grow
// without bound.
using Labels = std::vector<std::pair<std::string, std::string>>;

struct Sample {
  Labels labels;
  double value = 0;
};

struct Bucket {
  double upper_bound = 0;  // rendered as le="<upper_bound>"
  // Observations in (previous bucket's upper_bound, upper_bound]: NOT cumulative, so per-worker
  // shards add up bucket by bucket. The renderer accumulates.
  uint64_t count = 0;
};

struct HistogramSample {
  Labels labels;
  std::vector<Bucket> buckets;  // ascending upper_bound, without +Inf
  double sum = 0;
  // All observations, including those above the last bound. The +Inf bucket shows this (or
  // the buckets' total when shards raced and it is smaller, keeping the series consistent).
  uint64_t count = 0;
};

struct MetricFamily {
  std::string name;  // a counter's name ends in "_total" (the renderer appends it if missing)
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<Sample> samples;              // counter, gauge
  std::vector<HistogramSample> histograms;  // histogram
};

// A series declared once, at compile time (stunner_metrics.h, kturn_metrics.h): the daemon
// builds families from these so names, help strings and label names cannot drift.
struct MetricSpec {
  std::string_view name;
  std::string_view help;
  MetricType type;
  std::span<const std::string_view> label_names;
};

// An empty family carrying `spec`'s name, help and type.
inline MetricFamily familyOf(const MetricSpec& spec) {
  return MetricFamily{.name = std::string(spec.name),
                      .help = std::string(spec.help),
                      .type = spec.type,
                      .samples = {},
                      .histograms = {}};
}

}  // namespace kturn::admin
