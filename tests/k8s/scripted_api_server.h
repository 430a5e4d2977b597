// A stand-in for the API server in unit tests of the REST client's retries: plain HTTP on
// loopback, one request per connection, answering each request with the next scripted response
// and, once the script is spent, 200 with an empty list. The real API server cannot be made to
// answer 429 on cue; this is what client-go's own tests do for the same behaviour.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <chrono>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace kturn::testing {

class ScriptedApiServer {
 public:
  struct Response {
    int status = 200;
    std::optional<std::string> retryAfter{};  // the Retry-After header, verbatim
    std::string body = R"({"kind":"Status","status":"Failure","message":"scripted"})";
  };

  explicit ScriptedApiServer(std::vector<Response> script)
      : script_(script.begin(), script.end()),
        acceptor_(ioc_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedApiServer() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    boost::system::error_code ignored;
    boost::asio::ip::tcp::socket poke(ioc_);  // wakes the blocking accept()
    poke.connect({boost::asio::ip::make_address("127.0.0.1"), port_}, ignored);
    poke.close(ignored);
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Request targets in arrival order, with when each arrived.
  struct Seen {
    std::string target;
    std::chrono::steady_clock::time_point at;
  };
  std::vector<Seen> seen() const {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  void serve() {
    namespace http = boost::beast::http;
    for (;;) {
      boost::system::error_code ec;
      boost::asio::ip::tcp::socket socket(ioc_);
      acceptor_.accept(socket, ec);
      Response response;
      {
        std::lock_guard lock(mutex_);
        if (done_) return;
      }
      if (ec) continue;
      boost::beast::flat_buffer buffer;
      http::request<http::string_body> request;
      http::read(socket, buffer, request, ec);
      if (ec) continue;
      {
        std::lock_guard lock(mutex_);
        seen_.push_back({std::string(request.target()), std::chrono::steady_clock::now()});
        if (!script_.empty()) {
          response = std::move(script_.front());
          script_.pop_front();
        } else {
          response.body = R"({"kind":"List","metadata":{"resourceVersion":"1"},"items":[]})";
        }
      }
      http::response<http::string_body> out{static_cast<http::status>(response.status), 11};
      out.set(http::field::content_type, "application/json");
      if (response.retryAfter) out.set(http::field::retry_after, *response.retryAfter);
      out.keep_alive(false);
      out.body() = response.body;
      out.prepare_payload();
      http::write(socket, out, ec);
      socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    }
  }

  mutable std::mutex mutex_;
  std::deque<Response> script_;
  std::vector<Seen> seen_{};
  bool done_ = false;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::thread thread_{};
};

}  // namespace kturn::testing
