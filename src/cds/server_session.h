// The CDS server's connections: plain HTTP or TLS (told apart by the first byte), requests
// checked against the access gate, and the watch sessions they upgrade to. Everything but the
// Authorizer runs on the server's io_context thread. Private to src/cds.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <map>
#include <memory>
#include <mutex>

#include "cds/access.h"
#include "cds/cds_server.h"
#include "cds/config_store.h"

namespace kturn::cds {

// The server's certificate; replaced whole by CdsServer::setCertificate().
struct ServerTls {
  std::mutex mutex;
  std::shared_ptr<boost::asio::ssl::context> context;  // null: no TLS

  std::shared_ptr<boost::asio::ssl::context> current() {
    std::lock_guard lock(mutex);
    return context;
  }
};

// A server TLS context: TLS 1.2+, this certificate chain and key.
Result<std::shared_ptr<boost::asio::ssl::context>> makeServerTlsContext(const std::string& cert_pem,
                                                                        const std::string& key_pem);

struct ServerContext {
  ConfigStore& store;
  const CdsServerOptions& options;
  AccessGate& gate;
  ServerTls& tls;
  const std::atomic<bool>& serving;  // false: config requests are answered 503 (wait_for_state)
  boost::asio::any_io_executor reviewers;  // runs the Authorizer
};

// Accepts until the acceptor is closed or the io_context stops; one coroutine per connection.
boost::asio::awaitable<void> acceptLoop(boost::asio::ip::tcp::acceptor acceptor,
                                        ServerContext context);

}  // namespace kturn::cds
