// CdsClient: loads and watches one gateway's dataplane config from a config discovery server
// (STUNner's pkg/config/client CDSClient). Used by kturnd for `-c http://...` / `-c ws://...`.
//
//   auto client = CdsClient::create({.origin = "http://stunner-cds:13478",
//                                    .id = "stunner/udp-gateway", .node = node_name});
//   Result<StunnerConfig> now = (*client)->get();        // one-shot GET, blocking, bounded
//   (*client)->watch({.on_config = ..., .on_error = ...});  // background thread, reconnects
//   ...
//   (*client)->stop();                                  // prompt; joins the thread
//
// Threads: get() runs on the caller's thread with its own io_context. watch() starts one thread
// that owns the WebSocket; both callbacks run on it, one at a time, and must not block for long
// (the next ping waits for them). Nothing throws out of this class.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cds/origin.h"
#include "cds/protocol.h"
#include "cds/watcher_slot.h"
#include "config/stunner_config.h"
#include "kturn/result.h"

namespace kturn::cds {

struct WatcherStats;

struct CdsClientOptions {
  // http://, https://, ws://, wss:// or a bare host:port (HTTP).
  std::string origin{};
  // "namespace/name" of the Gateway whose config to fetch.
  std::string id{};
  // Node the client runs on (stunnerd: STUNNER_NODENAME); sent as ?node= when not empty.
  std::string node{};

  std::chrono::milliseconds ping_period = kPingPeriod;
  // The connection is declared dead when nothing (config or pong) arrived for this long.
  std::chrono::milliseconds pong_wait = kPongWait;
  std::chrono::milliseconds retry_period = kRetryPeriod;
  // Bound on connect + TLS + HTTP/WebSocket handshake, and on the whole of get().
  std::chrono::milliseconds request_timeout{5000};

  // Do not deliver the zero config the server sends when the config is deleted (stunnerd
  // watches with this on, so a Gateway being deleted does not tear down listeners that still
  // carry allocations during graceful shutdown).
  bool suppress_delete = true;

  // Substitute `$VAR`s in the configs from this process's environment, as kturnd and stunnerd do
  // with the config they run (protocol.h parseServedConfig). Off: configs as the server wrote
  // them, for a tool that shows them (kturnctl config).
  bool expand_env = true;

  // https/wss: verify the server certificate against this CA bundle (PEM file); empty: the
  // system's default trust store. The host name is checked and sent as SNI.
  std::string tls_ca_file{};
  // The CA bundle itself (PEM), added to tls_ca_file's: kturn-operator hands its CA to the
  // dataplane pods in an environment variable (KTURN_CDS_CA).
  std::string tls_ca_pem{};
  bool tls_insecure_skip_verify = false;

  // kturn's authenticated config discovery (docs/cds.md#authentication): every request and
  // watch handshake carries "Authorization: Bearer <token>", the token read from this file
  // (re-read when it changes, so a projected ServiceAccount token the kubelet rotates is picked
  // up at the next connect). Empty: no token, as stunnerd.
  std::string bearer_token_file{};
};

// Counters for metrics and tests; monotonic, readable from any thread.
struct CdsClientStats {
  uint64_t connects = 0;  // WebSocket sessions opened
  // Sessions that reached the server's state: the handshake (the server sends a config it has
  // right after it), and for a list watch the list fetched after it, deletions delivered.
  uint64_t syncs = 0;
  uint64_t disconnects = 0;  // sessions that ended (error, server close, dead peer)
  uint64_t configs = 0;      // configs delivered to on_config
  uint64_t deletes = 0;      // list watches: deletions delivered to on_delete
  uint64_t rejected = 0;     // messages that were not a valid config
  uint64_t deletes_suppressed = 0;
  uint64_t pings_sent = 0;
  uint64_t pongs_received = 0;
};

struct WatchCallbacks {
  // A parsed, validated config (config::parseConfig: env substitution outside credentials unless
  // !expand_env, defaults, validation). Called for the initial config and every change the server
  // pushes.
  std::function<void(config::StunnerConfig)> on_config{};
  // Something went wrong: a config that did not parse or validate (it is dropped; the caller
  // keeps its previous config), a failed connection attempt, a lost connection. Informational:
  // the client keeps retrying. May be empty.
  std::function<void(const Error&)> on_error{};
  // The server deleted the config (it pushed the zero config) and suppress_delete kept it from
  // on_config: the caller goes on with what it has. May be empty.
  std::function<void()> on_delete_suppressed{};
};

class CdsClient {
 public:
  // Checks the origin and the id; does not connect.
  static Result<std::unique_ptr<CdsClient>> create(CdsClientOptions options);
  ~CdsClient();  // stop()
  CdsClient(const CdsClient&) = delete;
  CdsClient& operator=(const CdsClient&) = delete;

  // GET /api/v1/configs/<ns>/<name>[?node=...]: the current config, validated. kNotFound for a
  // 404, kIo for network errors and timeouts, the parser's error for a bad config.
  Result<config::StunnerConfig> get() const;

  // Starts the watcher thread: GET ...?watch=true[&node=...] upgraded to a WebSocket; every
  // text message is one whole config. Pings every ping_period; after an error, a server close
  // or a dead peer waits retry_period and connects again, forever, until stop(). Fails if a
  // watch is already running or `on_config` is empty.
  Result<void> watch(WatchCallbacks callbacks);

  // Ends the watch: closes the connection, wakes the thread and joins it. Returns within
  // milliseconds whatever the state of the connection. Idempotent. Called from a callback (the
  // watcher thread itself) it only signals; the destructor then joins.
  void stop();

  bool watching() const;
  CdsClientStats stats() const;
  const Origin& origin() const { return origin_; }
  const ConfigId& id() const { return id_; }
  // The request target of the watch: "/api/v1/configs/ns/name?watch=true&node=n".
  std::string watchTarget() const;

  // The request target of get(): "/api/v1/configs/ns/name?node=n".
  std::string getTarget() const;

 private:
  CdsClient(CdsClientOptions options, Origin origin, ConfigId id);

  const CdsClientOptions options_;
  const Origin origin_;
  const ConfigId id_;
  std::shared_ptr<WatcherStats> stats_;  // shared with the watcher thread
  WatcherSlot watcher_;
};

// GET /api/v1/configs, or /api/v1/configs/<namespace_> when it is not empty: every config the
// server holds, in the server's order, each parsed and validated (protocol.h parseListJson).
// Takes the origin, TLS settings, request_timeout and expand_env of `options`; id and node are
// not used. Errors as CdsClient::get(): the origin's, kIo for network errors, timeouts and
// non-200 answers, the parser's for a bad list.
Result<std::vector<config::StunnerConfig>> listConfigs(const CdsClientOptions& options,
                                                       std::string_view namespace_ = {});

}  // namespace kturn::cds
