#include "admin/admin_server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <thread>

#include "admin/http_session.h"
#include "admin/router.h"

namespace kturn::admin {
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// A failed accept (EMFILE, ENOBUFS) is retried after a pause instead of spinning.
constexpr auto kAcceptRetryDelay = std::chrono::milliseconds(100);

}  // namespace

class AdminServer::Impl {
 public:
  Impl(HttpEndpoint endpoint, Options options)
      : endpoint_(std::move(endpoint)), options_(options) {}
  ~Impl() { stop(); }

  void handle(std::string path, Handler handler) {
    if (running()) {
      spdlog::warn("admin server {}: route {} added while running, ignored", endpoint_.toString(),
                   path);
      return;
    }
    router_.add(std::move(path), std::move(handler));
  }

  Result<void> start() {
    if (running()) return {};
    auto io = std::make_unique<net::io_context>(1);
    auto address = resolve(*io);
    if (!address) return address.error();
    auto acceptor = std::make_unique<tcp::acceptor>(*io);
    const tcp::endpoint bind_to(*address, endpoint_.port);
    boost::system::error_code ec;
    acceptor->open(bind_to.protocol(), ec);
    if (!ec) acceptor->set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor->bind(bind_to, ec);
    if (!ec) acceptor->listen(net::socket_base::max_listen_connections, ec);
    if (ec) return failure(ec.message());

    io_ = std::move(io);
    acceptor_ = std::move(acceptor);
    port_.store(acceptor_->local_endpoint().port());
    accept_timer_ = std::make_unique<net::steady_timer>(*io_);
    accept();
    thread_ = std::thread([this] { io_->run(); });
    spdlog::info("admin server listening on {}", boundUrl());
    return {};
  }

  void stop() {
    if (!running()) return;
    io_->stop();
    thread_.join();
    // Destroying the io_context destroys every pending handler and with them the sessions that
    // own the client sockets: this is what closes connections still open, however slow.
    accept_timer_.reset();
    acceptor_.reset();
    io_.reset();
    port_.store(0);
  }

  bool running() const { return io_ != nullptr; }
  uint16_t port() const { return port_.load(); }
  const HttpEndpoint& endpoint() const { return endpoint_; }

 private:
  Result<net::ip::address> resolve(net::io_context& io) const {
    boost::system::error_code ec;
    auto address = net::ip::make_address(endpoint_.host, ec);
    if (!ec) return address;
    // A host name, as Go's net.Listen would accept: bind to its first address.
    tcp::resolver resolver(io);
    auto results = resolver.resolve(endpoint_.host, std::to_string(endpoint_.port), ec);
    if (ec || results.empty()) return failure("cannot resolve host: " + ec.message());
    return results.begin()->endpoint().address();
  }

  Error failure(const std::string& why) const {
    return makeError(Error::Code::kIo,
                     "cannot start admin server at http://" + endpoint_.hostPort() + ": " + why);
  }

  std::string boundUrl() const {
    HttpEndpoint bound = endpoint_;
    bound.port = port_.load();
    return bound.toString();
  }

  void accept() {
    acceptor_->async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted) return;
      if (ec) {
        spdlog::warn("admin server {}: accept failed: {}", boundUrl(), ec.message());
        accept_timer_->expires_after(kAcceptRetryDelay);
        accept_timer_->async_wait([this](boost::system::error_code wait_ec) {
          if (!wait_ec) accept();
        });
        return;
      }
      if (active_connections_ >= options_.max_connections) {
        boost::system::error_code ignored;
        socket.close(ignored);  // over the cap: refuse rather than queue
      } else {
        std::make_shared<HttpSession>(std::move(socket), router_, options_, active_connections_)
            ->start();
      }
      accept();
    });
  }

  const HttpEndpoint endpoint_;
  const Options options_;
  Router router_;
  size_t active_connections_ = 0;  // server thread only
  std::atomic<uint16_t> port_{0};
  // Declared after what sessions borrow (router_, options_, active_connections_) so that, even
  // without stop(), the io_context and its sessions are destroyed first.
  std::unique_ptr<net::io_context> io_;
  std::unique_ptr<tcp::acceptor> acceptor_;
  std::unique_ptr<net::steady_timer> accept_timer_;
  std::thread thread_;
};

AdminServer::AdminServer(HttpEndpoint endpoint) : AdminServer(std::move(endpoint), Options{}) {}

AdminServer::AdminServer(HttpEndpoint endpoint, Options options)
    : impl_(std::make_unique<Impl>(std::move(endpoint), options)) {}

AdminServer::~AdminServer() = default;

void AdminServer::handle(std::string path, Handler handler) {
  impl_->handle(std::move(path), std::move(handler));
}

Result<void> AdminServer::start() { return impl_->start(); }
void AdminServer::stop() { impl_->stop(); }
bool AdminServer::running() const { return impl_->running(); }
uint16_t AdminServer::port() const { return impl_->port(); }
const HttpEndpoint& AdminServer::endpoint() const { return impl_->endpoint(); }

}  // namespace kturn::admin
