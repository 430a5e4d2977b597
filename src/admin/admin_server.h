// AdminServer: the small HTTP/1.1 server behind kturnd's health checks (/live, /ready, /status)
// and Prometheus endpoint (/metrics). One io_context on one thread of its own, so a stuck or slow
// scraper never touches a data-plane worker.
//
// Hardening, because these ports are often reachable from the whole cluster network:
//  - each connection is served asynchronously with one deadline per request (request_timeout,
//    which also bounds keep-alive idle time), so a slowloris client holds one socket, never the
//    server, and is dropped when its deadline passes;
//  - request headers are bounded (431), bodies too (413); malformed requests get 400 and a close;
//  - only GET and HEAD are served (405 with "Allow: GET, HEAD"), unknown paths get 404;
//  - concurrent connections are capped; connections over the cap are closed at once.
//
// Usage (all from one thread, the daemon's main thread):
//   AdminServer server(endpoint);
//   server.handle("/live", liveHandler());
//   if (auto r = server.start(); !r) { ...r.error().message... }
//   ...
//   server.stop();  // or let the destructor do it
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "admin/handler.h"
#include "admin/http_endpoint.h"
#include "kturn/result.h"

namespace kturn::admin {

class AdminServer {
 public:
  struct Options {
    // Time a client has to deliver a complete request, counted from the end of the previous
    // response (or from accept); also bounds how long an idle keep-alive connection is kept.
    std::chrono::milliseconds request_timeout{10'000};
    // Time a client has to read a response before the connection is dropped.
    std::chrono::milliseconds write_timeout{10'000};
    size_t max_header_bytes = 8 * 1024;
    size_t max_body_bytes = 8 * 1024;
    size_t max_connections = 128;
  };

  explicit AdminServer(HttpEndpoint endpoint);
  AdminServer(HttpEndpoint endpoint, Options options);
  ~AdminServer();  // stops the server
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;
  AdminServer(AdminServer&&) = delete;
  AdminServer& operator=(AdminServer&&) = delete;

  // Registers `handler` for `path` (Go ServeMux rules, see router.h). Call before start(): the
  // routes are frozen while the server runs and later calls are ignored.
  void handle(std::string path, Handler handler);

  // Binds and listens synchronously, so a taken port is reported here ("cannot start admin server
  // at http://0.0.0.0:8086: Address already in use") rather than logged later; then starts the
  // server thread. Calling it on a running server is a no-op.
  Result<void> start();
  // Closes the listener and every connection and joins the thread; returns promptly even with
  // clients connected. Idempotent; start() may be called again afterwards.
  void stop();

  bool running() const;
  // The bound port (the ephemeral one when the endpoint says 0); 0 while stopped.
  uint16_t port() const;
  const HttpEndpoint& endpoint() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kturn::admin
