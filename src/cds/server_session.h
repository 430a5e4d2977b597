// The CDS server's connections: plain HTTP requests, and the watch sessions they upgrade to.
// Everything runs on the server's io_context thread. Private to src/cds.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "cds/cds_server.h"
#include "cds/config_store.h"

namespace kturn::cds {

struct ServerContext {
  ConfigStore& store;
  const CdsServerOptions& options;
};

// Accepts until the acceptor is closed or the io_context stops; one coroutine per connection.
boost::asio::awaitable<void> acceptLoop(boost::asio::ip::tcp::acceptor acceptor,
                                        ServerContext context);

}  // namespace kturn::cds
