#include "cds/cds_server.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>
#include <exception>

#include "cds/server_session.h"
#include "config/validator.h"

namespace kturn::cds {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
constexpr int kReviewThreads = 2;  // Authorizer calls (API round trips) in parallel
}  // namespace

CdsServer::CdsServer(CdsServerOptions options, std::unique_ptr<asio::io_context> ioc)
    : options_(std::move(options)),
      store_(options_.node_patcher),
      gate_(options_.authorizer, options_.authorization_cache_ttl),
      tls_(std::make_shared<ServerTls>()),
      serving_(!options_.wait_for_state),
      reviewers_(std::make_unique<asio::thread_pool>(kReviewThreads)),
      ioc_(std::move(ioc)) {}

CdsServer::~CdsServer() { stop(); }

Result<std::unique_ptr<CdsServer>> CdsServer::start(CdsServerOptions options) {
  const std::string where =
      "CDS server on " + options.address + ":" + std::to_string(options.port) + ": ";
  boost::system::error_code ec;
  const asio::ip::address address = asio::ip::make_address(options.address, ec);
  if (ec) return makeError(Error::Code::kInvalidArgument, where + "address must be an IP literal");
  std::shared_ptr<asio::ssl::context> tls;
  if (!options.tls_cert_pem.empty() || !options.tls_key_pem.empty()) {
    auto made = makeServerTlsContext(options.tls_cert_pem, options.tls_key_pem);
    if (!made) return makeError(made.error().code, where + made.error().message);
    tls = std::move(made).value();
  }
  try {
    auto ioc = std::make_unique<asio::io_context>(1);
    tcp::acceptor acceptor(*ioc);
    const tcp::endpoint endpoint(address, options.port);
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return makeError(Error::Code::kIo, where + ec.message());
    const uint16_t port = acceptor.local_endpoint().port();

    std::unique_ptr<CdsServer> server(new CdsServer(std::move(options), std::move(ioc)));
    server->port_ = port;
    server->tls_->context = std::move(tls);
    const ServerContext context{.store = server->store_,
                                .options = server->options_,
                                .gate = server->gate_,
                                .tls = *server->tls_,
                                .serving = server->serving_,
                                .reviewers = server->reviewers_->get_executor()};
    asio::co_spawn(*server->ioc_, acceptLoop(std::move(acceptor), context),
                   [](std::exception_ptr) {});
    server->thread_ = std::thread([ioc = server->ioc_.get()] {
      for (;;) {
        try {
          ioc->run();
          return;
        } catch (...) {  // a handler threw (bad_alloc): keep serving
        }
      }
    });
    return server;
  } catch (const std::exception& e) {
    return makeError(Error::Code::kInternal, where + e.what());
  }
}

void CdsServer::stop() {
  if (!ioc_) return;
  ioc_->stop();
  if (thread_.joinable()) thread_.join();
  // No more deliveries (which post to the io_context) from upserts on other threads.
  store_.unsubscribeAll();
  // Queued Authorizer calls are dropped; one in progress finishes (bounded by the Authorizer's
  // own timeout). Completions are queued to the stopped io_context and destroyed with it.
  reviewers_->stop();
  reviewers_->join();
  // Destroying the io_context destroys every connection (closing its socket) and the listener;
  // watch sessions unsubscribe from the store as they go.
  ioc_.reset();
}

Result<void> CdsServer::upsert(std::string_view id, config::StunnerConfig config) {
  Result<ConfigId> parsed = parseConfigId(id);
  if (!parsed) return parsed.error();
  Result<void> valid = config::validate(config);
  if (!valid) {
    return makeError(valid.error().code,
                     "config " + std::string(id) + ": " + valid.error().message);
  }
  store_.upsert(*parsed, std::move(config));
  return {};
}

bool CdsServer::remove(std::string_view id) {
  Result<ConfigId> parsed = parseConfigId(id);
  if (!parsed) return false;
  if (options_.suppress_deletion) return store_.remove(*parsed, nullptr);
  const config::StunnerConfig zero = zeroConfig(parsed->toString());
  return store_.remove(*parsed, &zero);
}

Result<void> CdsServer::update(const std::map<std::string, config::StunnerConfig>& configs) {
  std::map<ConfigId, config::StunnerConfig> valid;
  for (const auto& [id, config] : configs) {
    Result<ConfigId> parsed = parseConfigId(id);
    if (!parsed) return parsed.error();
    config::StunnerConfig copy = config;
    Result<void> ok = config::validate(copy);
    if (!ok) return makeError(ok.error().code, "config " + id + ": " + ok.error().message);
    valid.emplace(std::move(parsed).value(), std::move(copy));
  }
  for (const ConfigId& id : store_.ids()) {
    if (!valid.contains(id)) remove(id.toString());
  }
  for (auto& [id, config] : valid) store_.upsert(id, std::move(config));
  serving_.store(true, std::memory_order_release);
  return {};
}

void CdsServer::pushNode(std::string_view node) { store_.pushNode(node); }

void CdsServer::setOpen(const std::vector<std::string>& ids) {
  std::set<ConfigId> open;
  for (const std::string& id : ids) {
    if (Result<ConfigId> parsed = parseConfigId(id)) open.insert(std::move(parsed).value());
  }
  gate_.setOpen(std::move(open));
}

Result<void> CdsServer::setCertificate(const std::string& cert_pem, const std::string& key_pem) {
  auto made = makeServerTlsContext(cert_pem, key_pem);
  if (!made) return made.error();
  std::lock_guard lock(tls_->mutex);
  tls_->context = std::move(made).value();
  return {};
}

std::optional<config::StunnerConfig> CdsServer::get(std::string_view id) const {
  Result<ConfigId> parsed = parseConfigId(id);
  if (!parsed) return std::nullopt;
  return store_.get(*parsed);
}

std::vector<std::string> CdsServer::ids() const {
  std::vector<std::string> out;
  for (const ConfigId& id : store_.ids()) out.push_back(id.toString());
  return out;
}

}  // namespace kturn::cds
