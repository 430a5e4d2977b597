// STUNner's dataplane defaults (pkg/apis/v1/default.go), kept verbatim so a config that relies on a
// default means the same thing to kturnd as to stunnerd.
#pragma once

#include <string_view>

namespace kturn::config {

inline constexpr std::string_view kApiVersion = "v1";
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

// Environment variables the config text may reference; STUNNER_PORT gets a fallback (see
// env_substitution.h).
inline constexpr std::string_view kEnvPort = "STUNNER_PORT";
inline constexpr std::string_view kEnvPublicPort = "STUNNER_PUBLIC_PORT";
inline constexpr std::string_view kEnvAddr = "STUNNER_ADDR";

}  // namespace kturn::config
