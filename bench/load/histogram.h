// A log-linear latency histogram (HDR-style, 32 sub-buckets per power of two, ~3% precision):
// recording is a clz and an increment, no allocation, so it sits on the receive path.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace kturn::bench {

class LatencyHistogram {
 public:
  void record(uint64_t ns) {
    ++counts_[index(ns)];
    ++total_;
    if (ns > max_) max_ = ns;
  }

  void merge(const LatencyHistogram& other) {
    for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
    total_ += other.total_;
    if (other.max_ > max_) max_ = other.max_;
  }

  uint64_t count() const { return total_; }
  uint64_t max() const { return max_; }

  // The value below which a fraction `q` (0..1) of the samples lie, as the bucket midpoint.
  uint64_t quantile(double q) const {
    if (total_ == 0) return 0;
    const auto rank = static_cast<uint64_t>(q * static_cast<double>(total_ - 1)) + 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= rank) return midpoint(i);
    }
    return max_;
  }

 private:
  static constexpr unsigned kSubBits = 5;
  static constexpr uint64_t kSub = 1u << kSubBits;

  static size_t index(uint64_t v) {
    if (v < kSub) return static_cast<size_t>(v);
    const unsigned msb = 63u - static_cast<unsigned>(std::countl_zero(v));
    const unsigned shift = msb - kSubBits;
    const uint64_t top = v >> shift;  // in [kSub, 2 * kSub)
    return static_cast<size_t>(kSub + shift * kSub + (top - kSub));
  }
  static uint64_t midpoint(size_t i) {
    if (i < kSub) return i;
    const uint64_t shift = (i - kSub) / kSub;
    const uint64_t top = kSub + (i - kSub) % kSub;
    return (top << shift) + ((uint64_t{1} << shift) >> 1);
  }

  std::array<uint64_t, kSub * 62> counts_{};
  uint64_t total_ = 0;
  uint64_t max_ = 0;
};

}  // namespace kturn::bench
