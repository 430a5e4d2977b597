// Watcher: the thread behind CdsClient::watch() and CdsListClient::watch(). One io_context on
// one thread runs a loop of WebSocket sessions: connect, handshake, (list watches) fetch the ids
// the server holds, then read configs while pinging the server and watching for silence; after
// any failure wait retry_period and start again. Private to src/cds.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cds/cds_client.h"
#include "cds/origin.h"
#include "common/bearer_token.h"

namespace kturn::cds {

struct WatcherStats {
  std::atomic<uint64_t> connects{0};
  std::atomic<uint64_t> syncs{0};
  std::atomic<uint64_t> disconnects{0};
  std::atomic<uint64_t> configs{0};  // counted by the sink that delivers them
  std::atomic<uint64_t> deletes{0};  // likewise
  std::atomic<uint64_t> rejected{0};
  std::atomic<uint64_t> deletes_suppressed{0};
  std::atomic<uint64_t> pings_sent{0};
  std::atomic<uint64_t> pongs_received{0};

  CdsClientStats snapshot() const;
};

// What the watcher hands its owner. All three run on the watcher thread, one at a time.
struct WatcherSink {
  // A config that parsed and validated (and is not a suppressed deletion).
  std::function<void(config::StunnerConfig)> on_config;
  // List watches: the ids (admin.name) of every config the server holds, fetched after each
  // handshake and delivered before any config of that session.
  std::function<void(std::vector<std::string>)> on_resync{};
  std::function<void(const Error&)> on_error{};
  // A deletion (the zero config) that suppress_delete kept from on_config. May be empty.
  std::function<void()> on_delete_suppressed{};
};

struct WatcherSettings {
  Origin origin;
  std::string target;  // "/api/v1/configs/ns/name?watch=true&node=..."
  // List watches: "/api/v1/configs[/ns]", GET after each handshake for on_resync. Empty: none.
  std::string resync_target{};
  std::chrono::milliseconds ping_period;
  std::chrono::milliseconds pong_wait;
  std::chrono::milliseconds retry_period;
  std::chrono::milliseconds handshake_timeout;
  bool suppress_delete = true;
  bool expand_env = true;
  std::shared_ptr<boost::asio::ssl::context> tls;  // null: plain TCP
  bool verify_host = true;
  std::shared_ptr<BearerToken> token{};  // read at each connect; null: none
};

// kInvalidArgument unless every timing of `options` is positive (retry_period may be zero).
Result<void> checkTimings(const CdsClientOptions& options);

// The settings of a watch of `target` with the timings and TLS options of `options` (the TLS
// context made here for https/wss origins: its errors).
Result<WatcherSettings> makeWatcherSettings(const CdsClientOptions& options, const Origin& origin,
                                            std::string target);

class Watcher : public std::enable_shared_from_this<Watcher> {
 public:
  // Starts the thread. The thread holds a reference, so the Watcher lives until both the
  // caller dropped it and the thread ended.
  static Result<std::shared_ptr<Watcher>> start(WatcherSettings settings, WatcherSink sink,
                                                std::shared_ptr<WatcherStats> stats);
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // Stops the io_context (run() returns after the handler in progress) and joins, or only
  // detaches when called on the watcher thread (from a callback).
  void stop();

 private:
  Watcher(WatcherSettings settings, WatcherSink sink, std::shared_ptr<WatcherStats> stats);

  boost::asio::awaitable<void> run();
  template <class Stream>
  boost::asio::awaitable<void> session();
  // GET resync_target: the ids of the server's configs.
  template <class Stream>
  boost::asio::awaitable<Result<std::vector<std::string>>> fetchIds();
  // Handles one text message: parse, validate, maybe suppress, deliver.
  void onMessage(std::string_view text);
  void deliverResync(std::vector<std::string> ids);
  void report(Error::Code code, std::string message);

  const WatcherSettings settings_;
  const WatcherSink sink_;
  const std::shared_ptr<WatcherStats> stats_;
  const std::string url_;  // for messages: "ws://host:port/api/v1/..."
  std::chrono::steady_clock::time_point last_rx_{};
  std::thread thread_;
  // Last: destroyed first, taking the coroutine frames (and their sockets) with it while the
  // TLS context and the callbacks they refer to still exist.
  boost::asio::io_context ioc_{1};
};

}  // namespace kturn::cds
