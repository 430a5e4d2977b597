// One HTTP/1.1 connection to the API server, plain or TLS (Boost.Beast over OpenSSL), used by one
// thread at a time with blocking calls that are bounded in time: every step runs as an async
// operation on the connection's own io_context with a deadline on the socket (the Asio
// "blocking with timeout" pattern), because Asio's synchronous socket calls ignore SO_RCVTIMEO.
// cancel() may be called from any thread to end a blocked call promptly (a watch being stopped).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "k8s/rest_config.h"
#include "kturn/result.h"

namespace kturn::k8s {

struct HttpRequest {
  std::string method = "GET";
  std::string target{};  // path and query
  std::string body{};
  std::string contentType{};
  std::string token{};  // bearer token, "" for none
};

struct HttpResponse {
  int status = 0;
  std::string body{};
  // The Retry-After header, when it is a number of seconds (what the API server sends with 429s
  // of API Priority and Fairness and with some 5xx).
  std::optional<int> retryAfterSeconds{};
};

// A client TLS context for `config`: TLS 1.2+, the CA bundle (or the system store), the client
// certificate, peer verification unless insecureSkipTlsVerify. Shared by every connection.
Result<std::shared_ptr<boost::asio::ssl::context>> makeTlsContext(const RestConfig& config);

class ApiConnection {
 public:
  // Connects (and handshakes) within `timeout`. `tls` is required when config.tls.
  static Result<std::unique_ptr<ApiConnection>> open(const RestConfig& config,
                                                     std::shared_ptr<boost::asio::ssl::context> tls,
                                                     std::chrono::milliseconds timeout);
  ~ApiConnection();
  ApiConnection(const ApiConnection&) = delete;
  ApiConnection& operator=(const ApiConnection&) = delete;

  // One request and its whole response, within `timeout`.
  Result<HttpResponse> roundTrip(const HttpRequest& request, std::chrono::milliseconds timeout);

  // A streamed response (watch): sends the request and reads the status line and headers. A
  // status other than 200 reads the (short) body too and returns it; 200 leaves the body to
  // readLine().
  Result<HttpResponse> startStream(const HttpRequest& request, std::chrono::milliseconds timeout);
  // The next newline-terminated line of the streamed body, without the newline; nullopt at the
  // end of the body. Waits at most `idle` for more bytes (an error after that).
  Result<std::optional<std::string>> readLine(std::chrono::milliseconds idle);

  // Ends whatever call is blocked, now or later, with an error. Thread-safe.
  void cancel();

 private:
  ApiConnection(const RestConfig& config, std::shared_ptr<boost::asio::ssl::context> tls);
  boost::beast::tcp_stream& lowest();
  template <class Start>
  boost::beast::error_code run(Start&& start, std::chrono::milliseconds timeout);
  Result<void> send(const HttpRequest& request, std::chrono::milliseconds timeout);
  Result<size_t> readSome(char* data, size_t size, std::chrono::milliseconds timeout);

  const std::string host_;
  const std::string hostHeader_;
  boost::asio::io_context ioc_;
  std::shared_ptr<boost::asio::ssl::context> tlsContext_;
  std::unique_ptr<boost::beast::tcp_stream> plain_;
  std::unique_ptr<boost::beast::ssl_stream<boost::beast::tcp_stream>> tls_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::response_parser<boost::beast::http::buffer_body>> stream_;
  std::string pending_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace kturn::k8s
