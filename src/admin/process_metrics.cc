#include "admin/process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace kturn::admin {
namespace {

MetricFamily gauge(std::string name, std::string help, double value) {
  return MetricFamily{.name = std::move(name),
                      .help = std::move(help),
                      .type = MetricType::kGauge,
                      .samples = {{.labels = {}, .value = value}},
                      .histograms = {}};
}

double bootTimeSeconds() {
  std::ifstream in("/proc/stat");
  std::string key;
  double value = 0;
  while (in >> key) {
    if (key == "btime" && in >> value) return value;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

void appendStatMetrics(std::vector<MetricFamily>& out) {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return;
  // Field 2, the command, is parenthesized and may contain spaces: parse after the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return;
  std::istringstream fields(line.substr(close + 2));
  // Fields from 3 (state) on; proc(5) numbers them from 1.
  std::string field;
  double utime = 0, stime = 0, starttime = 0, vsize = 0, rss = 0;
  for (int index = 3; fields >> field; ++index) {
    if (index == 14) utime = std::stod(field);
    if (index == 15) stime = std::stod(field);
    if (index == 22) starttime = std::stod(field);
    if (index == 23) vsize = std::stod(field);
    if (index == 24) {
      rss = std::stod(field);
      break;
    }
  }
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  out.push_back(MetricFamily{.name = "process_cpu_seconds_total",
                             .help = "Total user and system CPU time spent in seconds.",
                             .type = MetricType::kCounter,
                             .samples = {{.labels = {}, .value = (utime + stime) / ticks}},
                             .histograms = {}});
  out.push_back(
      gauge("process_resident_memory_bytes", "Resident memory size in bytes.", rss * page));
  out.push_back(gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", vsize));
  if (const double boot = bootTimeSeconds(); boot > 0) {
    out.push_back(gauge("process_start_time_seconds",
                        "Start time of the process since unix epoch in seconds.",
                        boot + starttime / ticks));
  }
}

}  // namespace

std::vector<MetricFamily> collectProcessMetrics() {
  std::vector<MetricFamily> out;
  try {
    appendStatMetrics(out);
  } catch (const std::exception&) {
    // A malformed /proc line (std::stod) costs those series, not the scrape.
  }
  std::error_code ec;
  size_t fds = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++fds;
  }
  if (!ec) {
    out.push_back(
        gauge("process_open_fds", "Number of open file descriptors.", static_cast<double>(fds)));
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    out.push_back(gauge("process_max_fds", "Maximum number of open file descriptors.",
                        static_cast<double>(limit.rlim_cur)));
  }
  return out;
}

}  // namespace kturn::admin
