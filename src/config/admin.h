// admin: the process-wide part of STUNner's dataplane config (pkg/apis/v1/admin.go).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kturn::config {

// Licensing info of STUNner's premium tiers. kturn has no use for it but keeps it so a config
// round-trips unchanged.
struct LicenseConfig {
  std::string key{};
  std::string hmac{};

  friend bool operator==(const LicenseConfig&, const LicenseConfig&) = default;
};

// Quotas and abuse limits: a kturn extension (STUNner has none of these). Absent in STUNner
// configs, and then the defaults below apply. 0 means unlimited (or, for auth_failures, no
// throttle), except where noted.
struct Limits {
  int max_allocations = 0;       // allocations held by this kturnd; more are refused with 508
  int allocation_kbps = 0;       // per allocation and direction; excess datagrams are dropped
  int listener_kbps = 0;         // per listener and direction, all workers together
  int auth_failures = 20;        // failed authentications per source address and window...
  int auth_failure_window = 10;  // ...in seconds; then its requests are dropped unanswered
  int nonce_lifetime = 600;      // seconds before a nonce is stale (438)
  // TURN-TCP/TLS connections and TURN-DTLS sessions per listener, all workers together; 0 means
  // kturnd's own cap (8192 per worker).
  int max_connections = 0;
  int idle_timeout = 30;       // seconds a connection or session without allocation may idle
  int handshake_timeout = 10;  // seconds a TLS/DTLS handshake may take
  // Allocations per client source IP address, all workers together (each enforces its share);
  // 0 = unlimited, the default, since many clients may share one NAT address. Over it: 486.
  int source_quota = 0;
  // Per allocation, 1-1024 (no "0 = unlimited": relayed packets scan these lists, so they stay
  // bounded); a CreatePermission or ChannelBind that would add one more gets 508.
  int max_permissions = 64;
  int max_channels = 64;
  // A source that uses up auth_failures is also dropped in the kernel (the eBPF fast path's drop
  // list, when offload_engine attaches it) for this many seconds; 0: never.
  int block_seconds = 60;
  // Sources neither throttled nor blocked: "IP[/prefix]" (a NAT of your own, a monitoring probe).
  std::vector<std::string> trusted_networks{};

  friend bool operator==(const Limits&, const Limits&) = default;
};

// Readiness marks: a kturn extension for load balancers and GeoDNS health checks. At or above
// any mark /ready answers 503, so that new users are sent elsewhere while every allocation held
// keeps being served; it answers 200 again once every measure is under resume_percent of its
// mark (hysteresis, so that a server near a mark does not flap). 0 means no mark.
struct Capacity {
  int allocations = 0;      // allocations held by this kturnd
  int relay_kbps = 0;       // relayed payload, both directions, all listeners, kbit/s
  int cpu_percent = 0;      // CPU time used, in percent of the CPUs kturnd may use
  int resume_percent = 90;  // of each mark: /ready answers 200 again when every measure is under

  friend bool operator==(const Capacity&, const Capacity&) = default;
};

struct Admin {
  std::string name{};      // default "default-stunnerd"
  std::string loglevel{};  // default "all:INFO", e.g. "all:INFO,turn:DEBUG"
  // "http://address:port/path"; empty means no metrics endpoint (STUNner's default).
  std::string metrics_endpoint{};
  // Absent means the default "http://:8086"; present and empty disables health checks. This
  // three-way meaning is STUNner's, hence the optional.
  std::optional<std::string> healthcheck_endpoint{};
  int user_quota = 0;  // allocations per username, 0 = unlimited; negative is clamped to 0
  // "None" | "XDP" | "TC" | "Auto" (case-insensitive on input, normalized by validate()).
  std::string offload_engine{};
  std::vector<std::string> offload_interfaces{};  // empty = all interfaces
  std::optional<LicenseConfig> license_config{};
  std::optional<Limits> limits{};      // kturn extension
  std::optional<Capacity> capacity{};  // kturn extension
  // kturn extension: the region this dataplane serves ("eu-central"), which kturn-auth orders
  // its ICE servers by and the metrics carry; empty: none.
  std::string region{};
  // kturn extension: RFC 8016 mobility. A client that asks for it at Allocate gets a
  // MOBILITY-TICKET and may take its allocation along to a new address; off, such an Allocate
  // gets 405 (Mobility Forbidden), as in coturn without --mobility.
  bool mobility = false;

  friend bool operator==(const Admin&, const Admin&) = default;
};

}  // namespace kturn::config
