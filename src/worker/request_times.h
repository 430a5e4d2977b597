// Request handling time per TURN method, for kturn_request_duration_seconds: a worker-local
// histogram (no sharing, no locks), summed across workers at scrape time. Only STUN requests are
// timed, never relayed data.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>

#include "admin/kturn_metrics.h"
#include "stun/constants.h"

namespace kturn::worker {

struct RequestTimes {
  static constexpr std::array<stun::Method, 5> kMethods{
      stun::Method::kBinding, stun::Method::kAllocate, stun::Method::kRefresh,
      stun::Method::kCreatePermission, stun::Method::kChannelBind};
  static constexpr auto& kBounds = admin::kturn_series::kRequestDurationBuckets;

  // counts[m][b]: requests of kMethods[m] that took at most kBounds[b] (and more than the bound
  // before); counts[m][kBounds.size()]: longer than every bound. Not cumulative.
  std::array<std::array<uint64_t, kBounds.size() + 1>, kMethods.size()> counts{};
  std::array<double, kMethods.size()> seconds{};

  static std::optional<size_t> indexOf(uint16_t method) {
    for (size_t i = 0; i < kMethods.size(); ++i) {
      if (static_cast<uint16_t>(kMethods[i]) == method) return i;
    }
    return std::nullopt;
  }

  void record(uint16_t method, std::chrono::nanoseconds took) {
    const auto m = indexOf(method);
    if (!m) return;
    const double s = std::chrono::duration<double>(took).count();
    size_t b = 0;
    while (b < kBounds.size() && s > kBounds[b]) ++b;
    ++counts[*m][b];
    seconds[*m] += s;
  }

  RequestTimes& operator+=(const RequestTimes& o) {
    for (size_t m = 0; m < kMethods.size(); ++m) {
      for (size_t b = 0; b < counts[m].size(); ++b) counts[m][b] += o.counts[m][b];
      seconds[m] += o.seconds[m];
    }
    return *this;
  }
};

}  // namespace kturn::worker
