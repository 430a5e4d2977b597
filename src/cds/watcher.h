// Watcher: the thread behind CdsClient::watch(). One io_context on one thread runs a loop of
// WebSocket sessions: connect, handshake, then read configs while pinging the server and
// watching for silence; after any failure wait retry_period and start again. Private to
// src/cds.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "cds/cds_client.h"
#include "cds/origin.h"

namespace kturn::cds {

struct WatcherStats {
  std::atomic<uint64_t> connects{0};
  std::atomic<uint64_t> disconnects{0};
  std::atomic<uint64_t> configs{0};
  std::atomic<uint64_t> rejected{0};
  std::atomic<uint64_t> deletes_suppressed{0};
  std::atomic<uint64_t> pings_sent{0};
  std::atomic<uint64_t> pongs_received{0};

  CdsClientStats snapshot() const;
};

struct WatcherSettings {
  Origin origin;
  std::string target;  // "/api/v1/configs/ns/name?watch=true&node=..."
  std::chrono::milliseconds ping_period;
  std::chrono::milliseconds pong_wait;
  std::chrono::milliseconds retry_period;
  std::chrono::milliseconds handshake_timeout;
  bool suppress_delete = true;
  bool expand_env = true;
  std::shared_ptr<boost::asio::ssl::context> tls;  // null: plain TCP
  bool verify_host = true;
};

class Watcher : public std::enable_shared_from_this<Watcher> {
 public:
  // Starts the thread. The thread holds a reference, so the Watcher lives until both the
  // caller dropped it and the thread ended.
  static Result<std::shared_ptr<Watcher>> start(WatcherSettings settings, WatchCallbacks callbacks,
                                                std::shared_ptr<WatcherStats> stats);
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // Stops the io_context (run() returns after the handler in progress) and joins, or only
  // detaches when called on the watcher thread (from a callback).
  void stop();

 private:
  Watcher(WatcherSettings settings, WatchCallbacks callbacks, std::shared_ptr<WatcherStats> stats);

  boost::asio::awaitable<void> run();
  template <class Stream>
  boost::asio::awaitable<void> session();
  // Handles one text message: parse, validate, maybe suppress, deliver.
  void onMessage(std::string_view text);
  void report(Error::Code code, std::string message);

  const WatcherSettings settings_;
  const WatchCallbacks callbacks_;
  const std::shared_ptr<WatcherStats> stats_;
  const std::string url_;  // for messages: "ws://host:port/api/v1/..."
  std::chrono::steady_clock::time_point last_rx_{};
  std::thread thread_;
  // Last: destroyed first, taking the coroutine frames (and their sockets) with it while the
  // TLS context and the callbacks they refer to still exist.
  boost::asio::io_context ioc_{1};
};

}  // namespace kturn::cds
