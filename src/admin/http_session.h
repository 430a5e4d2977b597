// HttpSession: one accepted admin connection (internal to AdminServer). Reads requests with a
// deadline, routes them, writes responses, and keeps the connection alive when the client asks.
// Lives as shared_ptr owned by its pending asynchronous operation; it dies when the connection
// ends or when the server's io_context is destroyed.
#pragma once

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <memory>
#include <optional>

#include "admin/admin_server.h"
#include "admin/router.h"

namespace kturn::admin {

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  // `router`, `options` and `active_connections` belong to the server and outlive the session
  // (the server destroys its io_context, and so every session, before them). The counter is only
  // touched on the server thread.
  HttpSession(boost::asio::ip::tcp::socket socket, const Router& router,
              const AdminServer::Options& options, size_t& active_connections);
  ~HttpSession();
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;

  void start() { readRequest(); }

 private:
  using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;

  void readRequest();
  void onRead(boost::beast::error_code ec);
  Response dispatch(const HttpRequest& request) const;
  void send(Response response, bool head, bool keep_alive);
  void onWrite(boost::beast::error_code ec, bool close);
  // Answers a request the parser refused and closes the connection.
  void reject(unsigned status, const char* reason);
  // Before closing, reads and discards what the client still sends (bounded by a deadline), so
  // the kernel does not answer unread data with a reset that destroys our response in flight.
  void drain();
  void close();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  boost::beast::http::response<boost::beast::http::string_body> response_;
  std::array<char, 1024> drain_buffer_{};
  const Router& router_;
  const AdminServer::Options& options_;
  size_t& active_connections_;
};

}  // namespace kturn::admin
