// HttpEndpoint: where an admin HTTP server listens, parsed from a STUNner-style endpoint URL.
//
// STUNner's admin.healthcheck_endpoint and admin.metrics_endpoint are URLs of the form
// "http://[address][:port][/path]" (pkg/apis/v1/admin.go, internal/object/admin.go
// getAddrFromURL): an empty address means 0.0.0.0, an absent port means the caller's default
// (8086 for health checks, 8080 for metrics), an absent path means "/". An empty string disables
// the server. kturn reads them the same way so a stunnerd config keeps its meaning.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kturn/result.h"

namespace kturn::admin {

inline constexpr uint16_t kDefaultHealthCheckPort = 8086;  // stnrv1.DefaultHealthCheckPort
inline constexpr uint16_t kDefaultMetricsPort = 8080;      // stnrv1.DefaultMetricsPort

struct HttpEndpoint {
  std::string host = "0.0.0.0";  // literal IPv4/IPv6 address or a host name, no brackets
  uint16_t port = 0;             // 0 asks the kernel for an ephemeral port (tests)
  std::string path = "/";        // always starts with '/'
  bool host_omitted = false;     // the URL named no host ("http://:8086"): every address

  // "0.0.0.0:8086" or "[::1]:8086": the form error messages and logs use.
  std::string hostPort() const;
  // "http://0.0.0.0:8080/metrics".
  std::string toString() const;

  friend bool operator==(const HttpEndpoint&, const HttpEndpoint&) = default;
};

// Parses `url`. Returns std::nullopt for the empty string (the server is disabled) and an error
// naming the URL for anything that is not "http://host[:port][/path]" (https is refused: the
// admin servers speak plain HTTP, as stunnerd's do).
Result<std::optional<HttpEndpoint>> parseHttpEndpoint(std::string_view url, uint16_t default_port);

}  // namespace kturn::admin
