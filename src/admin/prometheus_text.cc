#include "admin/prometheus_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace kturn::admin {
namespace {

constexpr std::string_view kTotalSuffix = "_total";

bool isNameChar(char c, bool first, bool colon_ok) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  return alpha || (colon_ok && c == ':') || (!first && c >= '0' && c <= '9');
}

std::string sanitize(std::string_view name, bool colon_ok) {
  std::string out(name);
  for (size_t i = 0; i < out.size(); ++i) {
    if (!isNameChar(out[i], i == 0, colon_ok)) out[i] = '_';
  }
  if (out.empty()) out = "_";
  return out;
}

std::string familyName(const MetricFamily& family) {
  std::string name = sanitize(family.name, /*colon_ok=*/true);
  if (family.type == MetricType::kCounter && !name.ends_with(kTotalSuffix)) name += kTotalSuffix;
  return name;
}

std::string_view typeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// `{a="x",b="y"}`, with `le` appended for histogram buckets; nothing at all without labels.
void appendLabels(std::string& out, const Labels& labels, const std::string* le = nullptr) {
  if (labels.empty() && le == nullptr) return;
  out += '{';
  bool first = true;
  for (const auto& [name, value] : labels) {
    if (!first) out += ',';
    first = false;
    out += sanitize(name, /*colon_ok=*/false);
    out += "=\"";
    out += escapeLabelValue(value);
    out += '"';
  }
  if (le != nullptr) {
    if (!first) out += ',';
    out += "le=\"";
    out += *le;
    out += '"';
  }
  out += '}';
}

void appendSample(std::string& out, std::string_view name, const Labels& labels, double value,
                  const std::string* le = nullptr) {
  out += name;
  appendLabels(out, labels, le);
  out += ' ';
  out += formatValue(value);
  out += '\n';
}

void appendHistogram(std::string& out, const std::string& name, const HistogramSample& h) {
  const std::string bucket_name = name + "_bucket";
  uint64_t cumulative = 0;
  for (const Bucket& bucket : h.buckets) {
    cumulative += bucket.count;
    const std::string le = formatValue(bucket.upper_bound);
    appendSample(out, bucket_name, h.labels, static_cast<double>(cumulative), &le);
  }
  const uint64_t count = std::max(cumulative, h.count);
  const std::string inf = "+Inf";
  appendSample(out, bucket_name, h.labels, static_cast<double>(count), &inf);
  appendSample(out, name + "_sum", h.labels, h.sum);
  appendSample(out, name + "_count", h.labels, static_cast<double>(count));
}

}  // namespace

std::string escapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string escapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string formatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string renderPrometheus(std::span<const MetricFamily> families) {
  std::string out;
  for (const MetricFamily& family : families) {
    const std::string name = familyName(family);
    out += "# HELP " + name + " " + escapeHelp(family.help) + "\n";
    out += "# TYPE " + name + " ";
    out += typeName(family.type);
    out += '\n';
    if (family.type == MetricType::kHistogram) {
      for (const HistogramSample& h : family.histograms) appendHistogram(out, name, h);
    } else {
      for (const Sample& s : family.samples) appendSample(out, name, s.labels, s.value);
    }
  }
  return out;
}

}  // namespace kturn::admin
