// CdsListClient: watches every config of a config discovery server, or every config of one
// namespace: STUNner's AllConfigsAPI and ConfigsNamespaceAPI (pkg/config/client/cds_api.go), the
// watch STUNner's auth service runs. Used by kturn-auth without --id and by
// `kturnctl config --all --watch`.
//
//   auto client = CdsListClient::create({.origin = "http://stunner-cds:13478"});
//   (*client)->watch({.on_config = [](const std::string& id, StunnerConfig c) { ... },
//                     .on_delete = [](const std::string& id) { ... }});
//
// The wire: GET /api/v1/configs[/<namespace>]?watch=true upgraded to a WebSocket (protocol.h);
// every text message is one whole config, named by its admin.name; a config the server drops
// arrives as the zero config of that name. Same keepalive, reconnect and stop() as CdsClient
// (cds_client.h), same threads: both callbacks run on the watcher thread, one at a time.
//
// Reconnects: on every connect the server sends each config it holds, and nothing about those
// deleted while the client was away (an operator restart loses them all). So after each
// handshake, before the session's first config, the client GETs the list and reports every id
// it had delivered that the list lacks as deleted. STUNner's client does not, and its auth
// service keeps serving such a gateway until it restarts.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cds/cds_client.h"
#include "cds/origin.h"
#include "cds/watcher_slot.h"
#include "config/stunner_config.h"
#include "kturn/result.h"

namespace kturn::cds {

struct ListWatchCallbacks {
  // A config added or changed, under its id (admin.name, "<namespace>/<name>" for configs the
  // operator renders). Parsed and validated as CdsClient's on_config.
  std::function<void(const std::string& id, config::StunnerConfig)> on_config{};
  // The config of `id`, delivered before, is gone: the server pushed its zero config, or the
  // list fetched after a reconnect lacks it.
  std::function<void(const std::string& id)> on_delete{};
  // As CdsClient's; also a failed list after a handshake (the session is dropped and retried).
  std::function<void(const Error&)> on_error{};
};

class CdsListClient {
 public:
  // Takes the origin, timings, TLS settings and expand_env of `options`; id, node and
  // suppress_delete are not used (a list watch delivers deletions, and the server patches
  // configs for a node only on per-name watches). `namespace_` empty: every config. Checks the
  // origin and the timings; does not connect.
  static Result<std::unique_ptr<CdsListClient>> create(CdsClientOptions options,
                                                       std::string namespace_ = {});
  ~CdsListClient();  // stop()
  CdsListClient(const CdsListClient&) = delete;
  CdsListClient& operator=(const CdsListClient&) = delete;

  // Starts the watcher thread. Fails if a watch is already running, or `on_config` or
  // `on_delete` is empty.
  Result<void> watch(ListWatchCallbacks callbacks);
  // As CdsClient::stop(). A later watch() starts afresh: it reports no deletions of ids the
  // previous watch delivered.
  void stop();

  bool watching() const;
  CdsClientStats stats() const;
  const Origin& origin() const { return origin_; }
  // "/api/v1/configs?watch=true", "/api/v1/configs/<namespace>?watch=true".
  std::string watchTarget() const;
  // "/api/v1/configs", "/api/v1/configs/<namespace>": what is fetched after each handshake.
  std::string listTarget() const;

 private:
  CdsListClient(CdsClientOptions options, Origin origin, std::string namespace_);

  const CdsClientOptions options_;
  const Origin origin_;
  const std::string namespace_;
  std::shared_ptr<WatcherStats> stats_;  // shared with the watcher thread
  WatcherSlot watcher_;
};

}  // namespace kturn::cds
