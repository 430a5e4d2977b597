// STUNner's dataplane defaults (pkg/apis/v1/default.go), kept verbatim so a config that relies on a
// default means the same thing to kturnd as to stunnerd, and the bounds validate() enforces. The
// config reference (schema.cc, docs/config-reference.md) is built from these constants.
#pragma once

#include <limits>
#include <string_view>

namespace kturn::config {

inline constexpr std::string_view kApiVersion = "v1";
// stunnerd's previous config version: v1's fields, with the auth type spelled plaintext or
// longterm. stunnerd converts it to v1 on read (pkg/config/client), and so does validate().
inline constexpr std::string_view kLegacyApiVersion = "v1alpha1";
inline constexpr std::string_view kDefaultStunnerName = "default-stunnerd";
inline constexpr std::string_view kDefaultLogLevel = "all:INFO";
inline constexpr std::string_view kDefaultRealm = "stunner.l7mp.io";
inline constexpr std::string_view kDefaultAuthType = "static";
inline constexpr std::string_view kDefaultListenerProtocol = "TURN-UDP";
inline constexpr std::string_view kDefaultListenerAddress = "0.0.0.0";
inline constexpr int kDefaultPort = 3478;
inline constexpr std::string_view kDefaultClusterType = "STATIC";
inline constexpr std::string_view kDefaultClusterProtocol = "UDP";
inline constexpr std::string_view kDefaultOffloadEngine = "None";
inline constexpr int kDefaultHealthCheckPort = 8086;
inline constexpr int kDefaultMetricsPort = 8080;
// "http://:8086": what STUNner enables when admin.healthcheck_endpoint is absent.
inline constexpr std::string_view kDefaultHealthCheckEndpoint = "http://:8086";
// The relay port range STUNner's first v1 API defaulted to when only one bound was given.
inline constexpr int kDefaultMinRelayPort = 1;
inline constexpr int kDefaultMaxRelayPort = 65535;
// admin.offload_engine's values as validate() writes them back; input may use any letter case.
inline constexpr std::string_view kOffloadEngines[] = {"None", "XDP", "TC", "Auto"};

// The bounds validate() enforces on integer fields, inclusive. Ports are STUNner's; the rest are
// kturn's (admin.limits is a kturn extension).
struct IntRange {
  int min;
  int max;

  constexpr bool contains(int value) const { return value >= min && value <= max; }
};
inline constexpr IntRange kPortRange{1, 65535};
inline constexpr IntRange kNonNegative{0, std::numeric_limits<int>::max()};
// admin.limits, in seconds. Below 30 s of nonce lifetime clients loop on 438 (RFC 8489 leaves
// the lifetime to the server).
inline constexpr IntRange kAuthFailureWindowRange{1, 3600};
inline constexpr IntRange kNonceLifetimeRange{30, 86400};
inline constexpr IntRange kIdleTimeoutRange{5, 3600};
inline constexpr IntRange kHandshakeTimeoutRange{1, 300};
// admin.limits.max_permissions and max_channels: both lists are scanned per relayed packet, hence
// the upper bound; 0 would make the allocation useless, hence the lower one.
inline constexpr IntRange kPerAllocationRange{1, 1024};
inline constexpr IntRange kBlockSecondsRange{0, 86400};
// admin.capacity: a CPU mark in percent of the CPUs kturnd may use, and the resume point in
// percent of each mark (below 100, or there would be no hysteresis).
inline constexpr IntRange kCpuPercentRange{0, 100};
inline constexpr IntRange kResumePercentRange{1, 99};

// Environment variables the config text may reference; STUNNER_PORT gets a fallback (see
// env_substitution.h).
inline constexpr std::string_view kEnvPort = "STUNNER_PORT";
inline constexpr std::string_view kEnvPublicPort = "STUNNER_PUBLIC_PORT";
inline constexpr std::string_view kEnvAddr = "STUNNER_ADDR";

}  // namespace kturn::config
