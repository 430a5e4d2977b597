// CdsServer: the config discovery service the operator runs (STUNner's pkg/config/server): serves
// every Gateway's dataplane config over HTTP and pushes changes over WebSockets.
//
//   auto server = CdsServer::start({.address = "0.0.0.0", .port = kDefaultPort});
//   (*server)->upsert("stunner/udp-gateway", config);   // validated, then pushed to watchers
//   (*server)->remove("stunner/udp-gateway");           // watchers get the zero config
//
// Endpoints (docs/cds.md): GET /api/v1/configs, /api/v1/configs/{ns}, /api/v1/configs/{ns}/{name}
// (JSON; 404 for an unknown name), each with ?watch=true to upgrade to a WebSocket that carries
// the current configs and then every change, one whole config per text message;
// /api/v1/configs/{ns}/{name} takes ?node=<node> for the node patcher. GET /api/v1/license
// answers STUNner's free-tier license status.
//
// kturn's authenticated config discovery (docs/cds.md#authentication): with an Authorizer
// (cds/access.h) a request is served only for an open config or with a bearer token the
// Authorizer allows; with a certificate the port speaks TLS, and plain HTTP too unless
// allow_plaintext is off (the two are told apart by the first byte a client sends).
//
// Threads: one server thread runs every connection; two more run the Authorizer.
// upsert()/remove()/update()/pushNode()/setOpen()/setCertificate() may be called from any thread;
// they never wait for the network. Nothing throws out of this class.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cds/access.h"
#include "cds/config_store.h"
#include "cds/protocol.h"
#include "config/stunner_config.h"
#include "kturn/result.h"

namespace boost::asio {
class io_context;
class thread_pool;
}  // namespace boost::asio

namespace kturn::cds {

struct ServerTls;

struct CdsServerOptions {
  std::string address = "0.0.0.0";  // IPv4 or IPv6 literal
  uint16_t port = kDefaultPort;     // 0: an ephemeral port, see port()
  // Optional: patches the config served to a client that names its node (?node=...).
  NodePatcher node_patcher{};
  // Do not push the zero config to watchers when a config is removed (STUNner's
  // SuppressConfigDeletion).
  bool suppress_deletion = false;
  // A watch connection from which nothing at all arrives for this long is closed; the server
  // pings at half this time. STUNner clients ping every 5 s.
  std::chrono::milliseconds watch_idle_timeout{30000};
  // A plain HTTP connection is closed after this long without a complete request.
  std::chrono::milliseconds request_timeout{10000};

  // Who may read what (cds/access.h). Empty: everyone reads everything, as from STUNner.
  Authorizer authorizer{};
  // A decision is kept this long for the same token and request (never past its expiry).
  std::chrono::milliseconds authorization_cache_ttl{5000};
  // Authorizer calls in flight at most; a request beyond them is answered 503.
  size_t max_pending_reviews = 32;
  // A watch opened with a token is closed after this long at most (sooner when the token
  // expires): the client connects again and is authorized again, so a deleted pod or a revoked
  // grant ends its watches too.
  std::chrono::milliseconds max_watch_age{std::chrono::minutes(10)};
  // TLS certificate chain and private key (PEM). Empty: plain HTTP only.
  std::string tls_cert_pem{};
  std::string tls_key_pem{};
  // With a certificate: accept plain HTTP on the same port too.
  bool allow_plaintext = true;
  // Open connections at most, and per client IP address; one more is closed at once.
  size_t max_connections = 4096;
  size_t max_connections_per_source = 128;
  // Answer config requests 503 (Retry-After: 1) until the first update(), the state of the
  // world. An operator replica that has not rendered yet would otherwise answer a list with no
  // configs, and a list watcher resyncing from it (CdsListClient) would take every config it
  // had for deleted. kturn-operator sets it; a server fed by upsert() alone must not.
  bool wait_for_state = false;
};

class CdsServer {
 public:
  // Binds and listens before returning (errors name the address), then serves on its own thread.
  static Result<std::unique_ptr<CdsServer>> start(CdsServerOptions options);
  ~CdsServer();  // stop()
  CdsServer(const CdsServer&) = delete;
  CdsServer& operator=(const CdsServer&) = delete;

  // Closes the listener and every connection and joins the thread. Prompt and idempotent. The
  // stored configs stay readable through get(); the server cannot be restarted (start a new one).
  void stop();

  uint16_t port() const { return port_; }

  // Validates `config` (config::validate: defaults, normalization) and stores it under `id`
  // ("namespace/name"), pushing it to the watchers of the id, of its namespace and of all
  // configs. Storing a config equal to the current one pushes nothing. Errors: a bad id or an
  // invalid config (nothing stored).
  Result<void> upsert(std::string_view id, config::StunnerConfig config);
  // Forgets the config; its watchers get the zero config (protocol.h zeroConfig(id)) unless
  // suppress_deletion. False if there was none.
  bool remove(std::string_view id);
  // State of the world (STUNner's UpdateConfig): upserts every entry, removes every stored id
  // not in `configs`. Stops at, and returns, the first invalid entry, having applied none. The
  // first one that succeeds ends wait_for_state's 503s.
  Result<void> update(const std::map<std::string, config::StunnerConfig>& configs);
  // Pushes the configs again to watchers on `node` (the node's addresses changed).
  void pushNode(std::string_view node);

  // The configs a client without a token may read (by id, "namespace/name"); replaces the
  // previous set. Only matters with an Authorizer.
  void setOpen(const std::vector<std::string>& ids);
  // A new certificate for connections accepted from now on (a renewed one). Errors: the PEM
  // does not load (the old one stays).
  Result<void> setCertificate(const std::string& cert_pem, const std::string& key_pem);
  AccessStats accessStats() const { return gate_.stats(); }

  std::optional<config::StunnerConfig> get(std::string_view id) const;
  std::vector<std::string> ids() const;
  // Open watch connections.
  size_t watcherCount() const { return store_.subscriberCount(); }
  // Whether config requests are served: always, or with wait_for_state once update() succeeded.
  bool serving() const { return serving_.load(std::memory_order_acquire); }

 private:
  CdsServer(CdsServerOptions options, std::unique_ptr<boost::asio::io_context> ioc);

  const CdsServerOptions options_;
  ConfigStore store_;
  AccessGate gate_;
  std::shared_ptr<ServerTls> tls_;
  uint16_t port_ = 0;
  std::atomic<bool> serving_;
  std::thread thread_;
  std::unique_ptr<boost::asio::thread_pool> reviewers_;
  // Destroyed before the store: sessions unsubscribe as they die.
  std::unique_ptr<boost::asio::io_context> ioc_;
};

}  // namespace kturn::cds
