#include "operator/global_annotations.h"

#include <charconv>

#include "config/defaults.h"

namespace kturn::op {
namespace {

std::string trim(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const size_t last = text.find_last_not_of(" \t");
  return std::string(text.substr(first, last - first + 1));
}

Error annotationError(std::string_view annotation, const std::string& what) {
  return Error{Error::Code::kInvalidArgument,
               "metadata.annotations[" + std::string(annotation) + "]: " + what};
}

// An integer annotation in `range`, into `out` (left alone when the annotation is absent).
Result<bool> readInt(const k8s::StringMap& annotations, std::string_view annotation,
                     config::IntRange range, int& out) {
  const auto it = annotations.find(std::string(annotation));
  if (it == annotations.end()) return false;
  const std::string text = trim(it->second);
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      !range.contains(value)) {
    return annotationError(annotation, "want an integer " + std::to_string(range.min) + "-" +
                                           std::to_string(range.max) + ", got \"" + it->second +
                                           "\"");
  }
  out = value;
  return true;
}

}  // namespace

std::vector<std::string> GlobalAnnotations::alternateServers(int port) const {
  std::vector<std::string> out;
  for (const IpAddress& ip : alternate_addresses) {
    out.push_back(TransportAddress{ip, static_cast<uint16_t>(port)}.toString());
  }
  return out;
}

Result<GlobalAnnotations> readGlobalAnnotations(const k8s::ObjectMeta& meta) {
  GlobalAnnotations out;
  config::Capacity capacity;
  bool any = false;
  for (const auto& [annotation, range, field] :
       {std::tuple{kCapacityAllocationsAnnotation, config::kNonNegative, &capacity.allocations},
        {kCapacityRelayKbpsAnnotation, config::kNonNegative, &capacity.relay_kbps},
        {kCapacityCpuPercentAnnotation, config::kCpuPercentRange, &capacity.cpu_percent},
        {kCapacityResumePercentAnnotation, config::kResumePercentRange,
         &capacity.resume_percent}}) {
    auto read = readInt(meta.annotations, annotation, range, *field);
    if (!read) return read.error();
    any = any || *read;
  }
  if (any) out.capacity = capacity;
  // 1024 and up: the pods bind it without privileges; the metrics port after it must exist.
  int healthPort = 0;
  auto health = readInt(meta.annotations, kHealthCheckPortAnnotation, {1024, 65534}, healthPort);
  if (!health) return health.error();
  if (*health) out.health_check_port = healthPort;

  if (const auto it = meta.annotations.find(std::string(kAlternateAddressesAnnotation));
      it != meta.annotations.end()) {
    std::string_view rest = it->second;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string item = trim(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      if (item.empty()) continue;
      const auto ip = IpAddress::parse(item);
      if (!ip || ip->isUnspecified()) {
        return annotationError(kAlternateAddressesAnnotation,
                               "want comma-separated IP addresses, got \"" + item + "\"");
      }
      out.alternate_addresses.push_back(*ip);
    }
  }
  if (const auto it = meta.annotations.find(std::string(kAlternateDomainAnnotation));
      it != meta.annotations.end()) {
    out.alternate_domain = trim(it->second);
  }
  if (const auto it = meta.annotations.find(std::string(kRegionAnnotation));
      it != meta.annotations.end()) {
    out.region = trim(it->second);
  }
  return out;
}

}  // namespace kturn::op
