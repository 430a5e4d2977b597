#include "config/schema.h"

#include <algorithm>

#include "config/admin.h"
#include "config/auth.h"
#include "config/cluster.h"
#include "config/listener.h"

namespace kturn::config {
namespace {

std::string text(std::string_view value) { return std::string(value); }
std::string number(int value) { return std::to_string(value); }

void append(std::vector<FieldSpec>& out, std::vector<FieldSpec> more) {
  for (FieldSpec& f : more) out.push_back(std::move(f));
}

std::vector<FieldSpec> topLevelFields() {
  return {
      {.path = "version",
       .presence = Presence::kRequired,
       .values = {kApiVersion},
       .aliases = {kLegacyApiVersion},
       .description = "The config's API version. `v1alpha1` (stunnerd's previous version, with "
                      "the same fields) is read as `v1`, as stunnerd converts it.",
       .sample = R"("v1")"},
      {.path = "admin", .type = FieldType::kObject, .description = "Process-wide settings."},
      {.path = "auth",
       .type = FieldType::kObject,
       .description = "How TURN clients authenticate: RFC 8489 long-term credentials, static or "
                      "ephemeral (TURN REST API)."},
      {.path = "listeners",
       .type = FieldType::kObjectList,
       .description = "The server sockets TURN clients connect to."},
      {.path = "clusters",
       .type = FieldType::kObjectList,
       .description = "The peers relays may reach: a listener relays only to peers inside the "
                      "clusters it routes to."},
  };
}

std::vector<FieldSpec> adminFields() {
  return {
      {.path = "admin.name",
       .default_value = text(kDefaultStunnerName),
       .description = "Name of this dataplane. The operator writes its Gateway's "
                      "`namespace/name`, which kturn-auth reads back.",
       .sample = R"("media-gateway")"},
      {.path = "admin.loglevel",
       .format = "log levels",
       .default_value = text(kDefaultLogLevel),
       .description = "Log level per scope: `all:INFO,turn:DEBUG`.",
       .sample = R"("all:DEBUG")"},
      {.path = "admin.metrics_endpoint",
       .format = "URL",
       .description = "Where to serve Prometheus metrics, `http://address:port/path`; empty or "
                      "absent: no metrics endpoint.",
       .sample = R"("http://:8080/metrics")",
       .bad_sample = R"("http://:eighty/metrics")"},
      {.path = "admin.healthcheck_endpoint",
       .format = "URL",
       .default_value = text(kDefaultHealthCheckEndpoint),
       .description = "Where to serve `/live`, `/ready` and `/status`. Absent: the default; "
                      "`\"\"`: health checks off.",
       .sample = R"("http://:8087")",
       .bad_sample = R"("http://:x")"},
      {.path = "admin.user_quota",
       .type = FieldType::kInteger,
       .default_value = number(Admin{}.user_quota),
       .description = "Allocations per username; 0: unlimited; a negative value reads as 0. "
                      "Counted for the whole process, whatever the number of workers.",
       .sample = "10"},
      {.path = "admin.offload_engine",
       .default_value = text(kDefaultOffloadEngine),
       .values = {std::begin(kOffloadEngines), std::end(kOffloadEngines)},
       .any_case = true,
       .description = "The eBPF fast path ([offload.md](offload.md)): bound UDP channels relayed "
                      "in the kernel. `TC`: TC ingress on every interface; `XDP`: XDP in the "
                      "driver; `Auto`: XDP on NICs that have it, TC elsewhere; `None`: user space "
                      "only. Changing it at run time attaches or detaches; where loading fails "
                      "(no privilege) kturnd logs once and relays in user space.",
       .sample = R"("XDP")"},
      {.path = "admin.offload_interfaces",
       .type = FieldType::kStringList,
       .format = "interface names",
       .description = "Interfaces to attach the eBPF fast path to (those clients and peers reach "
                      "kturnd on); empty: every interface present when the config is applied. "
                      "Sorted on load.",
       .sample = R"(["eth0"])"},
      {.path = "admin.license_config",
       .type = FieldType::kObject,
       .description = "STUNner's premium licensing: kept so the config round-trips, unused."},
      {.path = "admin.license_config.key",
       .description = "License key.",
       .sample = R"("license-key")"},
      {.path = "admin.license_config.hmac",
       .description = "HMAC of the license.",
       .sample = R"("license-hmac")"},
  };
}

// An integer field of kturn's own (admin.limits, admin.capacity).
FieldSpec kturnInteger(std::string_view path, int default_value, IntRange range,
                       std::string_view format, std::string description, std::string_view sample) {
  return FieldSpec{.path = path,
                   .type = FieldType::kInteger,
                   .format = format,
                   .origin = Origin::kKturn,
                   .default_value = number(default_value),
                   .range = range,
                   .description = std::move(description),
                   .sample = sample};
}

std::vector<FieldSpec> limitsFields() {
  constexpr Limits kDefaults{};
  const auto limit = kturnInteger;
  return {
      {.path = "admin.limits",
       .type = FieldType::kObject,
       .origin = Origin::kKturn,
       .description = "Quotas and abuse limits; absent, every default below applies. The "
                      "operator does not render it: set it in the config file kturnd reads. "
                      "Process-wide limits are shared among the workers "
                      "([limits and workers](config.md#limits-and-workers))."},
      limit("admin.limits.max_allocations", kDefaults.max_allocations, kNonNegative, "",
            "Allocations held by one kturnd; beyond it Allocate gets 508. 0: unlimited.", "20000"),
      limit("admin.limits.allocation_kbps", kDefaults.allocation_kbps, kNonNegative, "kbit/s",
            "Per allocation and direction; datagrams over it are dropped "
            "(`kturn_drops_total{reason=\"over_bandwidth\"}`), the peer connections of TCP "
            "allocations (RFC 6062) are paced instead: read no faster than the cap "
            "(`kturn_peer_connections_total{event=\"held\"}`). A burst of 0.5 s at the rate (at "
            "least 16 KiB) passes unshaped. 0: unlimited.",
            "4000"),
      limit("admin.limits.listener_kbps", kDefaults.listener_kbps, kNonNegative, "kbit/s",
            "Per listener and direction, all workers together, datagrams and peer connections "
            "alike. 0: unlimited.",
            "2000000"),
      limit("admin.limits.auth_failures", kDefaults.auth_failures, kNonNegative, "",
            "Failed authentications per source address and `auth_failure_window`; beyond it "
            "the address's authenticated requests are dropped unanswered until the window ends "
            "(`kturn_auth_failures_total{reason=\"throttled\"}`). 0: no throttle.",
            "5"),
      limit("admin.limits.auth_failure_window", kDefaults.auth_failure_window,
            kAuthFailureWindowRange, "seconds", "The window `auth_failures` counts in.", "60"),
      limit("admin.limits.nonce_lifetime", kDefaults.nonce_lifetime, kNonceLifetimeRange, "seconds",
            "Age at which a nonce is stale and answered 438 (coturn's `stale-nonce`).", "3600"),
      limit("admin.limits.max_connections", kDefaults.max_connections, kNonNegative, "",
            "TURN-TCP/TLS connections and TURN-DTLS sessions per listener, all workers "
            "together; connections beyond it are accepted and closed at once, DTLS clients "
            "beyond it get no answer. 0: kturnd's own cap, 8192 per worker.",
            "1000"),
      limit("admin.limits.idle_timeout", kDefaults.idle_timeout, kIdleTimeoutRange, "seconds",
            "How long a connection or DTLS session that holds no allocation may stay silent "
            "before it is closed; also bounds the wait for its first Allocate.",
            "60"),
      limit("admin.limits.handshake_timeout", kDefaults.handshake_timeout, kHandshakeTimeoutRange,
            "seconds",
            "How long a TLS or DTLS handshake may take from accept or cookie exchange; slower "
            "clients are closed.",
            "5"),
      limit("admin.limits.source_quota", kDefaults.source_quota, kNonNegative, "",
            "Allocations per client source IP address (all its ports and transports), all "
            "workers together; beyond it Allocate gets 486 "
            "(`kturn_allocations_rejected_total{reason=\"source_quota_reached\"}`). 0: "
            "unlimited, since all clients behind one NAT share an address; public deployments "
            "should set it ([security.md](security.md)). An IPv6 address counts on its own.",
            "64"),
      limit("admin.limits.max_permissions", kDefaults.max_permissions, kPerAllocationRange, "",
            "Unexpired permissions (peer IP addresses) per allocation; a CreatePermission that "
            "would add more gets 508 and installs none of its peers, as does a ChannelBind that "
            "needs a new permission "
            "(`kturn_permissions_rejected_total{reason=\"permission_limit\"}`). Refreshing a "
            "held permission never counts.",
            "128"),
      limit("admin.limits.max_channels", kDefaults.max_channels, kPerAllocationRange, "",
            "Unexpired channel bindings per allocation; a ChannelBind that would add one more "
            "gets 508 (`kturn_permissions_rejected_total{reason=\"channel_limit\"}`). Rebinding "
            "a held channel never counts.",
            "16"),
      limit("admin.limits.block_seconds", kDefaults.block_seconds, kBlockSecondsRange, "seconds",
            "A source that uses up `auth_failures` is also put in the eBPF fast path's drop list "
            "for this long: its datagrams to that listener port are dropped in the kernel "
            "(`kturn_offload_datagrams_total{outcome=\"blocked\"}`, "
            "`kturn_sources_blocked_total`, `/status` `admin.blocked_sources`). Needs "
            "`offload_engine` attached; UDP listeners (TURN-UDP, TURN-DTLS) only. 0: never.",
            "300"),
      {.path = "admin.limits.trusted_networks",
       .type = FieldType::kStringList,
       .format = "IP[/prefix] list",
       .origin = Origin::kKturn,
       .description = "Sources never throttled nor blocked for failed authentications (your own "
                      "NAT, a monitoring probe).",
       .sample = R"(["10.0.0.0/8", "2001:db8::/32"])",
       .bad_sample = R"(["10.0.0.0/8:<1-2>"])"},
  };
}

std::vector<FieldSpec> capacityFields() {
  constexpr Capacity kDefaults{};
  const auto mark = kturnInteger;
  return {
      {.path = "admin.capacity",
       .type = FieldType::kObject,
       .origin = Origin::kKturn,
       .description = "Readiness marks for load balancers and GeoDNS health checks "
                      "([capacity](operations.md#capacity-aware-readiness)): at or above any "
                      "mark `/ready` answers 503 while every allocation held is still served, "
                      "and 200 again once every measure is under `resume_percent` of its mark; "
                      "meanwhile a new Allocate on a listener with `alternate_servers` is "
                      "redirected there (300). `/capacity` gives the measures and the headroom. "
                      "Absent or 0: no mark."},
      mark("admin.capacity.allocations", kDefaults.allocations, kNonNegative, "",
           "Allocations held by this kturnd (all workers).", "8000"),
      mark("admin.capacity.relay_kbps", kDefaults.relay_kbps, kNonNegative, "kbit/s",
           "Relayed payload, both directions and all listeners, the kernel fast path's "
           "included, averaged over the last 5 s.",
           "400000"),
      mark("admin.capacity.cpu_percent", kDefaults.cpu_percent, kCpuPercentRange, "percent",
           "CPU time kturnd used over the last 5 s, in percent of the CPUs it may use (its "
           "cgroup's `cpu.max` quota, at most the CPUs it may run on).",
           "80"),
      mark("admin.capacity.resume_percent", kDefaults.resume_percent, kResumePercentRange,
           "percent",
           "Where `/ready` answers 200 again: every measure under this share of its "
           "mark.",
           "75"),
  };
}

std::vector<FieldSpec> regionFields() {
  return {{.path = "admin.region",
           .format = "region name",
           .origin = Origin::kKturn,
           .description = "The region this dataplane serves: kturn-auth answers `/ice` with the "
                          "servers of the caller's region first "
                          "([many regions](operations.md#region-aware-ice-servers)), and "
                          "`kturn_dataplane_info` carries it. The operator renders the "
                          "Gateway's `kturn.io/region` annotation.",
           .sample = R"("eu-central")"}};
}

std::vector<FieldSpec> mobilityFields() {
  return {{.path = "admin.mobility",
           .type = FieldType::kBoolean,
           .origin = Origin::kKturn,
           .description = "RFC 8016 mobility: an Allocate that asks for it gets a MOBILITY-TICKET, "
                          "and a Refresh with the ticket from a new client address takes the "
                          "allocation along, with its relayed address, permissions and channels "
                          "([mobility](operations.md#mobility-rfc-8016)). TURN-UDP clients only. "
                          "Off (the default), an Allocate that asks for it gets 405 (Mobility "
                          "Forbidden).",
           .sample = "true",
           .bad_sample = R"("yes")"}};
}

std::vector<FieldSpec> authFields() {
  return {
      {.path = "auth.type",
       .default_value = text(kDefaultAuthType),
       .values = {toString(AuthType::kStatic), toString(AuthType::kEphemeral),
                  toString(AuthType::kNone)},
       .aliases = {"plaintext", "longterm", "timewindowed"},
       .any_case = true,
       .description = "`static`: one username and password; `ephemeral`: credentials minted "
                      "with a shared secret (TURN REST API); `none`. `plaintext` is `static`, "
                      "`longterm` and `timewindowed` are `ephemeral`, written back so. **kturn** "
                      "also takes `timewindowed` (the STUNner auth service's alias) and any "
                      "letter case.",
       .sample = R"("none")"},
      {.path = "auth.realm",
       .default_value = text(kDefaultRealm),
       .description = "The realm of the long-term credentials (RFC 8489 §9.2).",
       .sample = R"("turn.example.org")"},
      {.path = "auth.credentials",
       .type = FieldType::kStringMap,
       .description = "The keys below; other keys are kept. Taken as written, never "
                      "environment-substituted "
                      "([environment substitution](config.md#environment-substitution))."},
      {.path = "auth.credentials.username",
       .presence = Presence::kConditional,
       .required_when = "`auth.type` is `static`",
       .description = "The static username; present, it may be empty (as in stunnerd).",
       .sample = R"("user-1")"},
      {.path = "auth.credentials.password",
       .presence = Presence::kConditional,
       .required_when = "`auth.type` is `static`",
       .description = "The static password; present, it may be empty (as in stunnerd).",
       .sample = R"("pass-1")"},
      {.path = "auth.credentials.secret",
       .presence = Presence::kConditional,
       .required_when = "`auth.type` is `ephemeral`",
       .description = "The shared secret: username `<expiry-unix>:<user-id>`, password "
                      "base64(HMAC-SHA1(secret, username)).",
       .sample = R"("my-shared-secret")"},
      {.path = "auth.credentials.previous_secret",
       .origin = Origin::kKturn,
       .description = "The secret being replaced; it keeps validating until "
                      "`previous_secret_expiry` ([rotating the shared "
                      "secret](config.md#rotating-the-shared-secret-kturn-extension)).",
       .sample = R"("old-secret")"},
      {.path = "auth.credentials.previous_secret_expiry",
       .format = "timestamp",
       .origin = Origin::kKturn,
       .presence = Presence::kConditional,
       .required_when = "`auth.type` is `ephemeral` and `previous_secret` is set",
       .description = "When `previous_secret` stops validating: unix seconds or RFC 3339 UTC "
                      "(`2026-12-01T00:00:00Z`).",
       .sample = R"("2026-12-01T00:00:00Z")",
       .bad_sample = R"("tomorrow")"},
      {.path = "auth.oauth_server_name",
       .origin = Origin::kKturn,
       .description = "Third-party authorization (RFC 7635, "
                      "[auth.md](auth.md#third-party-authorization-oauth)): this server's name, "
                      "sent in THIRD-PARTY-AUTHORIZATION and authenticated in every access "
                      "token. Empty: the realm.",
       .sample = R"("turn.example.org")"},
      {.path = "auth.oauth_keys",
       .type = FieldType::kStringList,
       .format = "kid:alg:base64 list",
       .origin = Origin::kKturn,
       .description = "The keys shared with the authorization server, "
                      "`<kid>:<A256GCM|A128GCM>:<base64 key>`: a request with an ACCESS-TOKEN "
                      "names its kid in USERNAME and signs with the token's mac-key. Empty: no "
                      "OAuth, ACCESS-TOKEN is an unknown attribute (420).",
       .sample = R"(["north:A256GCM:MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="])",
       .bad_sample = R"(["north:A512GCM:MDEy"])"},
  };
}

std::vector<FieldSpec> listenerFields() {
  return {
      {.path = "listeners[].name",
       .presence = Presence::kRequired,
       .description = "Unique among listeners.",
       .sample = R"("udp-listener")"},
      {.path = "listeners[].protocol",
       .default_value = text(kDefaultListenerProtocol),
       .values = {toString(ListenerProtocol::kTurnUdp), toString(ListenerProtocol::kTurnTcp),
                  toString(ListenerProtocol::kTurnTls), toString(ListenerProtocol::kTurnDtls)},
       .aliases = {"UDP", "TCP", "TLS", "DTLS"},
       .any_case = true,
       .description = "The transport TURN runs over. Upper-cased on load; an alias stays an "
                      "alias (`udp` becomes `UDP`).",
       .sample = R"("TURN-TLS")"},
      {.path = "listeners[].public_address",
       .format = "address",
       .description = "Where clients reach the listener from outside (a load balancer's "
                      "address); informational (ICE URIs), not bound.",
       .sample = R"("198.51.100.7")"},
      {.path = "listeners[].public_port",
       .type = FieldType::kInteger,
       .range = kPortRange,
       .zero_is_unset = true,
       .description = "The port that goes with `public_address`; informational.",
       .sample = "30478"},
      {.path = "listeners[].address",
       .format = "IP address",
       .default_value = text(kDefaultListenerAddress),
       .description = "The relay address: the IP that XOR-RELAYED-ADDRESS names (after "
                      "`$STUNNER_ADDR` is expanded); `0.0.0.0` for the address the client "
                      "reached. As in stunnerd it is not bound (see `bind_address`), so it may "
                      "be a 1:1 NAT's public address. **kturn** wants an IP literal where "
                      "stunnerd also resolves a name; `localhost` is read as `127.0.0.1` "
                      "([listener addresses](config.md#listener-addresses)).",
       .sample = R"("127.0.0.1")",
       .bad_sample = R"("turn.example.org")"},
      {.path = "listeners[].port",
       .type = FieldType::kInteger,
       .default_value = number(kDefaultPort),
       .range = kPortRange,
       .zero_is_unset = true,
       .description = "The port to bind.",
       .sample = "3479"},
      {.path = "listeners[].bind_address",
       .format = "IP address",
       .origin = Origin::kKturn,
       .description = "The address the listener binds. Unset: every address (`::`, IPv4 and "
                      "IPv6 clients on one port; `0.0.0.0` on a host without IPv6), as stunnerd "
                      "does, except that a loopback `address` binds only itself. Set it to "
                      "serve one interface ([listener addresses](config.md#listener-addresses)).",
       .sample = R"("10.0.0.5")",
       .bad_sample = R"("eth0")"},
      {.path = "listeners[].min_relay_port",
       .type = FieldType::kInteger,
       .origin = Origin::kKturn,
       .range = kPortRange,
       .zero_is_unset = true,
       .description = "Lowest port of the relay sockets. Both bounds unset: the kernel's "
                      "ephemeral range; one alone: the other is " +
                      number(kDefaultMinRelayPort) + " or " + number(kDefaultMaxRelayPort) +
                      ". STUNner's first v1 API had these fields; stunnerd now ignores them.",
       .sample = "40000"},
      {.path = "listeners[].max_relay_port",
       .type = FieldType::kInteger,
       .origin = Origin::kKturn,
       .range = kPortRange,
       .zero_is_unset = true,
       .description = "Highest port of the relay sockets, not below `min_relay_port`.",
       .sample = "40100"},
      {.path = "listeners[].cert",
       .format = "base64 PEM",
       .presence = Presence::kConditional,
       .required_when = "`protocol` is `TURN-TLS` or `TURN-DTLS`",
       .description = "The certificate chain, leaf first; must decode as base64 (standard "
                      "alphabet, padded, line breaks ignored) "
                      "([TLS material](config.md#tls-material)).",
       .sample = R"("Y2VydGlmaWNhdGU=")",
       .bad_sample = R"("not base64!")"},
      {.path = "listeners[].key",
       .format = "base64 PEM",
       .presence = Presence::kConditional,
       .required_when = "`protocol` is `TURN-TLS` or `TURN-DTLS`",
       .description = "The private key (RSA or EC) of `cert`.",
       .sample = R"("cHJpdmF0ZSBrZXk=")",
       .bad_sample = R"("not base64!")"},
      {.path = "listeners[].routes",
       .type = FieldType::kStringList,
       .format = "cluster names",
       .description = "The clusters this listener relays to. Sorted on load; a name that is no "
                      "cluster's is accepted and admits nothing.",
       .sample = R"(["media-plane"])"},
      {.path = "listeners[].alternate_servers",
       .type = FieldType::kStringList,
       .format = "IP:port list",
       .origin = Origin::kKturn,
       .description = "Siblings serving the same transport, in order of preference: an Allocate "
                      "this kturnd refuses for capacity (`admin.limits.max_allocations`, no relay "
                      "port free) is answered 300 Try Alternate naming the first of the client's "
                      "address family (RFC 8489 §10) instead of 508, and so is every new Allocate "
                      "while the process is over an `admin.capacity` mark (the allocations held, "
                      "their Refreshes and retransmitted Allocates stay; without an alternate of "
                      "the client's family it is granted) "
                      "([redirect when full](operations.md#redirect-when-full)).",
       .sample = R"(["198.51.100.7:3478", "[2001:db8::7]:3478"])",
       .bad_sample = R"(["turn.example.com:3478"])"},
      {.path = "listeners[].alternate_domain",
       .format = "domain name",
       .origin = Origin::kKturn,
       .description = "Sent as ALTERNATE-DOMAIN with the redirect on TURN-TLS and TURN-DTLS "
                      "listeners: the name the client verifies the sibling's certificate "
                      "against. Unused without `alternate_servers`.",
       .sample = R"("turn-fra.example.com")"},
  };
}

std::vector<FieldSpec> clusterFields() {
  return {
      {.path = "clusters[].name",
       .presence = Presence::kRequired,
       .description = "Unique among clusters.",
       .sample = R"("media-plane")"},
      {.path = "clusters[].type",
       .default_value = text(kDefaultClusterType),
       .values = {toString(ClusterType::kStatic), toString(ClusterType::kStrictDns)},
       .any_case = true,
       .description = "`STATIC`: the endpoints are IP prefixes; `STRICT_DNS`: host names, and a "
                      "peer must be one of their addresses.",
       .sample = R"("STRICT_DNS")"},
      {.path = "clusters[].protocol",
       .default_value = text(kDefaultClusterProtocol),
       .values = {toString(ClusterProtocol::kUdp), toString(ClusterProtocol::kTcp)},
       .any_case = true,
       .description = "The transport towards the peers. The endpoints of `TCP` clusters (what "
                      "a TCPRoute renders) are the only peers of TCP allocations (RFC 6062, "
                      "over TURN-TCP and TURN-TLS); UDP allocations relay to the endpoints of "
                      "every cluster, as in STUNner.",
       .sample = R"("TCP")"},
      {.path = "clusters[].endpoints",
       .type = FieldType::kStringList,
       .format = "endpoints",
       .description = "`address[/prefix][:<min-max>]`, or host names for `STRICT_DNS` "
                      "([endpoint syntax](config.md#endpoint-syntax)). Sorted on load.",
       .sample = R"(["192.0.2.1:<1000-2000>"])",
       .bad_sample = R"(["10.0.0.300"])"},
  };
}

std::vector<FieldSpec> buildSchema() {
  std::vector<FieldSpec> out = topLevelFields();
  append(out, adminFields());
  append(out, limitsFields());
  append(out, capacityFields());
  append(out, regionFields());
  append(out, mobilityFields());
  append(out, authFields());
  append(out, listenerFields());
  append(out, clusterFields());
  return out;
}

}  // namespace

std::span<const FieldSpec> configSchema() {
  static const std::vector<FieldSpec> schema = buildSchema();
  return schema;
}

const FieldSpec* findFieldSpec(std::string_view path) {
  const auto schema = configSchema();
  const auto it = std::find_if(schema.begin(), schema.end(),
                               [&](const FieldSpec& f) { return f.path == path; });
  return it == schema.end() ? nullptr : &*it;
}

std::string_view parentPath(std::string_view path) {
  const size_t dot = path.rfind('.');
  if (dot == std::string_view::npos) return {};
  std::string_view parent = path.substr(0, dot);
  if (parent.ends_with("[]")) parent.remove_suffix(2);
  return parent;
}

bool isContainer(FieldType type) {
  return type == FieldType::kObject || type == FieldType::kObjectList ||
         type == FieldType::kStringMap;
}

}  // namespace kturn::config
