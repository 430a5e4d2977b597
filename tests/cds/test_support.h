// Helpers for the CDS tests: configs built with designated initializers, an inbox that collects
// what a watcher delivers with bounded waits, and a scripted WebSocket server that sends
// whatever a test tells it to (to feed a client messages a real CdsServer never would).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/stunner_config.h"
#include "config/validator.h"
#include "kturn/result.h"

namespace kturn::cds::testing {

using namespace std::chrono_literals;

// A validated config named `name` with one UDP listener on `port` and a static cluster.
inline config::StunnerConfig makeConfig(std::string name, int port = 3478) {
  config::StunnerConfig c{
      .version = "v1",
      .admin = {.name = std::move(name)},
      .auth = {.type = "ephemeral", .credentials = {{"secret", "s3cr3t"}}},
      .listeners = {{.name = "udp", .protocol = "TURN-UDP", .port = port, .routes = {"media"}}},
      .clusters = {{.name = "media", .type = "STATIC", .endpoints = {"10.244.0.0/16"}}},
  };
  (void)config::validate(c);
  return c;
}

// Polls `pred` every 5 ms until it holds; false after `timeout`. For state no callback signals
// (counters, the server's watcher count).
inline bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 3s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// Collects configs and errors from watcher callbacks (any thread) and waits for them.
class Inbox {
 public:
  void onConfig(config::StunnerConfig c) {
    std::lock_guard lock(mutex_);
    configs_.push_back(std::move(c));
    cv_.notify_all();
  }
  void onError(const Error& e) {
    std::lock_guard lock(mutex_);
    errors_.push_back(e.message);
    cv_.notify_all();
  }
  // Waits until `pred(configs, errors)` holds; false after `timeout`.
  bool waitFor(const std::function<bool(const std::vector<config::StunnerConfig>&,
                                        const std::vector<std::string>&)>& pred,
               std::chrono::milliseconds timeout = 3s) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return pred(configs_, errors_); });
  }
  bool waitConfigs(size_t n, std::chrono::milliseconds timeout = 3s) {
    return waitFor([n](const auto& c, const auto&) { return c.size() >= n; }, timeout);
  }
  std::vector<config::StunnerConfig> configs() const {
    std::lock_guard lock(mutex_);
    return configs_;
  }
  std::vector<std::string> errors() const {
    std::lock_guard lock(mutex_);
    return errors_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<config::StunnerConfig> configs_;
  std::vector<std::string> errors_;
};

// A one-connection WebSocket server: accepts a single watch, records its request target, then
// sends every message send() queues, in order, until destroyed.
class ScriptedWsServer {
 public:
  ScriptedWsServer() : acceptor_(ioc_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedWsServer() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
      cv_.notify_all();
    }
    if (!accepted_) {  // wake the blocking accept() with a connection that says nothing
      boost::system::error_code ignored;
      boost::asio::ip::tcp::socket poke(ioc_);
      poke.connect({boost::asio::ip::make_address("127.0.0.1"), port_}, ignored);
      poke.close(ignored);
    }
    thread_.join();
  }
  uint16_t port() const { return port_; }
  void send(std::string message) {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(message));
    cv_.notify_all();
  }
  std::string target() const {
    std::lock_guard lock(mutex_);
    return target_;
  }

 private:
  void serve() {
    namespace beast = boost::beast;
    boost::system::error_code ec;
    boost::asio::ip::tcp::socket socket(ioc_);
    acceptor_.accept(socket, ec);
    accepted_ = true;
    if (ec) return;
    beast::flat_buffer buffer;
    beast::http::request<beast::http::string_body> request;
    beast::http::read(socket, buffer, request, ec);
    if (ec) return;
    {
      std::lock_guard lock(mutex_);
      target_ = std::string(request.target());
    }
    beast::websocket::stream<boost::asio::ip::tcp::socket> ws(std::move(socket));
    ws.accept(request, ec);
    if (ec) return;
    for (;;) {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [this] { return done_ || !queue_.empty(); });
      if (done_) return;
      std::string message = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      ws.text(true);
      ws.write(boost::asio::buffer(message), ec);
      if (ec) return;
    }
  }

  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::string target_;
  bool done_ = false;
  std::atomic<bool> accepted_{false};
  std::thread thread_;
};

// A WebSocket client for server tests whose every step is bounded by `timeout`, so a missing
// message fails the test instead of hanging it. (Asio's blocking calls ignore SO_RCVTIMEO, hence
// asynchronous operations run for at most `timeout`.)
class WsTestClient {
 public:
  WsTestClient(uint16_t port, const std::string& target, std::chrono::milliseconds timeout = 3s)
      : ws_(ioc_), timeout_(timeout) {
    boost::system::error_code ec;
    ws_.next_layer().connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
    if (ec) return;
    std::optional<boost::system::error_code> result;
    ws_.async_handshake("127.0.0.1:" + std::to_string(port), target,
                        [&](boost::system::error_code e) { result = e; });
    ok_ = complete(result) && !*result;
  }
  bool ok() const { return ok_; }
  // The next text message, or nullopt on timeout or close.
  std::optional<std::string> read() {
    if (!ok_) return std::nullopt;
    boost::beast::flat_buffer buffer;
    std::optional<boost::system::error_code> result;
    ws_.async_read(buffer, [&](boost::system::error_code e, size_t) { result = e; });
    if (!complete(result) || *result) {
      ok_ = false;  // a timed-out WebSocket read leaves the stream unusable
      return std::nullopt;
    }
    return boost::beast::buffers_to_string(buffer.data());
  }
  // Sends `message` as one text frame, then reads: true when the server ends the connection
  // (close frame, EOF or reset) within the timeout rather than answering or staying silent.
  bool closedAfterSending(const std::string& message) {
    if (!ok_) return false;
    std::optional<boost::system::error_code> result;
    ws_.text(true);
    ws_.async_write(boost::asio::buffer(message),
                    [&](boost::system::error_code e, size_t) { result = e; });
    if (!complete(result)) return false;
    if (*result) return true;  // the server closed while we were still writing
    boost::beast::flat_buffer buffer;
    result.reset();
    ws_.async_read(buffer, [&](boost::system::error_code e, size_t) { result = e; });
    ok_ = false;
    return complete(result) && *result;
  }

 private:
  // Runs the io_context until `result` is set or the timeout passes (then cancels and drains).
  bool complete(std::optional<boost::system::error_code>& result) {
    ioc_.restart();
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    while (!result && std::chrono::steady_clock::now() < deadline) {
      ioc_.run_one_until(deadline);
    }
    if (result) return true;
    boost::system::error_code ignored;
    ws_.next_layer().cancel(ignored);
    ws_.next_layer().close(ignored);
    ioc_.restart();
    ioc_.run_for(std::chrono::seconds(1));
    return false;
  }

  boost::asio::io_context ioc_;
  boost::beast::websocket::stream<boost::asio::ip::tcp::socket> ws_;
  std::chrono::milliseconds timeout_;
  bool ok_ = false;
};

}  // namespace kturn::cds::testing
