#include "config/cluster.h"

#include "config/text_util.h"

namespace kturn::config {
namespace {

template <class T, class Parse>
Result<std::vector<T>> parseAll(const std::vector<std::string>& texts, Parse parse) {
  std::vector<T> out;
  out.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    auto ep = parse(texts[i]);
    if (!ep) {
      return makeError(ep.error().code,
                       "endpoints[" + std::to_string(i) + "]: " + ep.error().message);
    }
    out.push_back(std::move(*ep));
  }
  return out;
}

}  // namespace

ClusterType parseClusterType(std::string_view text) {
  const std::string t = toUpper(text);
  if (t == "STATIC") return ClusterType::kStatic;
  if (t == "STRICT_DNS") return ClusterType::kStrictDns;
  return ClusterType::kUnknown;
}

std::string_view toString(ClusterType type) {
  switch (type) {
    case ClusterType::kStatic:
      return "STATIC";
    case ClusterType::kStrictDns:
      return "STRICT_DNS";
    case ClusterType::kUnknown:
      break;
  }
  return "<unknown>";
}

ClusterProtocol parseClusterProtocol(std::string_view text) {
  const std::string t = toUpper(text);
  if (t == "UDP") return ClusterProtocol::kUdp;
  if (t == "TCP") return ClusterProtocol::kTcp;
  return ClusterProtocol::kUnknown;
}

std::string_view toString(ClusterProtocol protocol) {
  switch (protocol) {
    case ClusterProtocol::kUdp:
      return "UDP";
    case ClusterProtocol::kTcp:
      return "TCP";
    case ClusterProtocol::kUnknown:
      break;
  }
  return "<unknown>";
}

Result<std::vector<Endpoint>> Cluster::staticEndpoints() const {
  return parseAll<Endpoint>(endpoints, parseEndpoint);
}

Result<std::vector<DnsEndpoint>> Cluster::dnsEndpoints() const {
  return parseAll<DnsEndpoint>(endpoints, parseDnsEndpoint);
}

}  // namespace kturn::config
