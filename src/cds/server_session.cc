#include "cds/server_session.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "cds/server_routes.h"
#include "common/log.h"

namespace kturn::cds {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;  // NOLINT(build/namespaces): a || b

namespace {

constexpr auto kToken = asio::as_tuple(asio::use_awaitable);
constexpr uint64_t kMaxRequestBody = 64 << 10;
// Clients send nothing but pings on a watch (STUNner's: "keepalive"); anything larger ends it.
constexpr size_t kMaxWatchMessage = 4096;
constexpr unsigned char kTlsHandshakeRecord = 0x16;  // the first byte of a TLS ClientHello

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// What the server's connections share; touched on the I/O thread only. Each connection holds
// it, so it outlives them all when the io_context is destroyed.
struct ServerState {
  size_t connections = 0;
  std::map<asio::ip::address, size_t> per_source;
  size_t pending_reviews = 0;
};

// Counts one connection for as long as it lives.
class ConnectionSlot {
 public:
  ConnectionSlot(std::shared_ptr<ServerState> state, asio::ip::address source)
      : state_(std::move(state)), source_(source) {
    ++state_->connections;
    ++state_->per_source[source_];
  }
  ~ConnectionSlot() {
    --state_->connections;
    if (auto it = state_->per_source.find(source_); it != state_->per_source.end()) {
      if (--it->second == 0) state_->per_source.erase(it);
    }
  }
  ConnectionSlot(const ConnectionSlot&) = delete;
  ConnectionSlot& operator=(const ConnectionSlot&) = delete;

  ServerState& state() { return *state_; }

 private:
  std::shared_ptr<ServerState> state_;
  asio::ip::address source_;
};

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

Response makeResponse(const Request& request, http::status status, std::string content_type,
                      std::string body) {
  Response response{status, request.version()};
  response.set(http::field::server, "kturn-cds");
  if (!content_type.empty()) response.set(http::field::content_type, content_type);
  response.body() = std::move(body);
  response.keep_alive(request.keep_alive());
  response.prepare_payload();
  return response;
}

// STUNner's v1.Error: {"code":404,"message":"..."}.
std::string errorJson(int code, std::string_view message) {
  return nlohmann::json{{"code", code}, {"message", message}}.dump() + "\n";
}

// A plain (non-watch) request.
Response answer(const Request& request, const Route& route, const ServerContext& context) {
  if (route.kind == Route::Kind::kNotFound) {
    return makeResponse(request, http::status::not_found, "text/plain; charset=utf-8",
                        "404 page not found\n");
  }
  if (request.method() != http::verb::get) {
    return makeResponse(request, http::status::method_not_allowed, "", "");
  }
  switch (route.kind) {
    case Route::Kind::kBadRequest:
      return makeResponse(request, http::status::bad_request, "text/plain; charset=utf-8",
                          route.error + "\n");
    case Route::Kind::kLicense:
      return makeResponse(request, http::status::ok, "application/json",
                          R"({"enabledFeatures":[],"subscriptionType":"free",)"
                          R"("lastUpdated":"N/A","lastError":""})"
                          "\n");
    case Route::Kind::kListAll:
    case Route::Kind::kListNamespace: {
      const auto configs =
          context.store.list(route.kind == Route::Kind::kListAll
                                 ? std::nullopt
                                 : std::optional<std::string_view>(route.id.namespace_));
      std::vector<const config::StunnerConfig*> items;
      for (const auto& c : configs) items.push_back(&c);
      return makeResponse(request, http::status::ok, "application/json", toListJson(items));
    }
    case Route::Kind::kConfig: {
      const auto config = context.store.get(route.id);
      if (!config) {
        return makeResponse(request, http::status::not_found, "application/json",
                            errorJson(404, "Config not found for ID " + route.id.toString()));
      }
      return makeResponse(request, http::status::ok, "application/json",
                          context.store.render(*config, route.node) + "\n");
    }
    case Route::Kind::kNotFound:
      break;
  }
  return makeResponse(request, http::status::not_found, "text/plain; charset=utf-8",
                      "404 page not found\n");
}

// One watch connection: subscribed to the store, which queues configs here from any thread;
// the writer sends them in order, the newest per id only (a watcher wants the current state,
// not every intermediate one, and a slow client must not grow the queue without bound).
template <class Stream>
class WatchSession : public Subscriber, public std::enable_shared_from_this<WatchSession<Stream>> {
 public:
  WatchSession(websocket::stream<Stream> ws, ConfigStore& store)
      : ws_(std::move(ws)), store_(store), wake_(ws_.get_executor()), expiry_(ws_.get_executor()) {}
  ~WatchSession() override {
    if (handle_ != 0) store_.unsubscribe(handle_);
  }

  void deliver(const ConfigId& id, std::string json) override {
    std::lock_guard lock(mutex_);
    bool replaced = false;
    for (auto& [queued_id, queued_json] : pending_) {
      if (queued_id == id) {
        queued_json = std::move(json);
        replaced = true;
      }
    }
    if (!replaced) pending_.emplace_back(id, std::move(json));
    if (!wake_posted_) {
      wake_posted_ = true;
      asio::post(ws_.get_executor(), [weak = this->weak_from_this()] {
        if (auto self = weak.lock()) self->wake_.cancel();
      });
    }
  }

  // Serves the watch until either side ends it or, when `expires` is not max(), until then (the
  // credential that opened it is no longer valid; the client connects again with a fresh one).
  // The config was served without a token because it is open: every push checks that it still
  // is, and the watch ends when it is not. Before run(). (Not a parameter of run(): GCC 12
  // mishandles class-type temporaries passed to a coroutine inside co_await.)
  void servedOpen(ConfigId id) { open_ = std::move(id); }

  asio::awaitable<void> run(const Route& route, const CdsServerOptions& options,
                            std::chrono::system_clock::time_point expires, AccessGate& gate,
                            const std::string& peer) {
    gate_ = &gate;
    peer_ = peer;
    Topic topic;
    if (route.kind == Route::Kind::kListNamespace) {
      topic = Topic{Topic::Kind::kNamespace, route.id};
    } else if (route.kind == Route::Kind::kConfig) {
      topic = Topic{Topic::Kind::kConfig, route.id};
    }
    handle_ = store_.subscribe(topic, route.node, *this);
    websocket::stream_base::timeout timeout{};
    timeout.handshake_timeout = options.request_timeout;
    timeout.idle_timeout = options.watch_idle_timeout;
    timeout.keep_alive_pings = true;
    ws_.set_option(timeout);
    ws_.read_message_max(kMaxWatchMessage);
    co_await (readLoop() || writeLoop() || expiryLoop(expires, gate, peer));
    store_.unsubscribe(handle_);
    handle_ = 0;
  }

 private:
  void teardown() {
    beast::get_lowest_layer(ws_).close();
    wake_.cancel();
    expiry_.cancel();
  }

  asio::awaitable<void> expiryLoop(std::chrono::system_clock::time_point expires, AccessGate& gate,
                                   const std::string& peer) {
    if (expires == std::chrono::system_clock::time_point::max()) {
      expiry_.expires_at(asio::steady_timer::time_point::max());
    } else {
      expiry_.expires_after(std::max(expires - std::chrono::system_clock::now(),
                                     std::chrono::system_clock::duration::zero()));
    }
    auto [ec] = co_await expiry_.async_wait(kToken);
    if (ec) co_return;  // teardown() by another loop
    gate.count(AccessGate::Count::kWatchesExpired);
    log::scope("cds")->info("CDS: closing the watch of {}: its credential expired", peer);
    teardown();
  }

  // Reads and drops what the client sends; Beast answers its pings with pongs while a read is
  // pending (STUNner's server runs a dummy reader for the same reason).
  asio::awaitable<void> readLoop() {
    for (;;) {
      beast::flat_buffer buffer;
      auto [ec, n] = co_await ws_.async_read(buffer, kToken);
      if (ec) break;
    }
    teardown();
  }

  asio::awaitable<void> writeLoop() {
    for (;;) {
      std::deque<std::pair<ConfigId, std::string>> batch;
      {
        std::lock_guard lock(mutex_);
        batch.swap(pending_);
        wake_posted_ = false;
      }
      if (batch.empty()) {
        wake_.expires_at(asio::steady_timer::time_point::max());
        co_await wake_.async_wait(kToken);  // woken by deliver() or teardown()
        if (!beast::get_lowest_layer(ws_).socket().is_open()) break;
        continue;
      }
      for (auto& [id, json] : batch) {
        if (open_ && !gate_->isOpen(*open_)) {
          log::scope("cds")->info("CDS: closing the watch of {} on {}: no longer open", peer_,
                                  open_->toString());
          teardown();
          co_return;
        }
        ws_.text(true);
        auto [ec, n] = co_await ws_.async_write(asio::buffer(json), kToken);
        if (ec) {
          teardown();
          co_return;
        }
      }
    }
    teardown();
  }

  websocket::stream<Stream> ws_;
  ConfigStore& store_;
  asio::steady_timer wake_;
  asio::steady_timer expiry_;
  AccessGate* gate_ = nullptr;
  std::optional<ConfigId> open_;
  std::string peer_;
  uint64_t handle_ = 0;
  std::mutex mutex_;  // guards pending_ and wake_posted_ (deliver() runs on any thread)
  std::deque<std::pair<ConfigId, std::string>> pending_;
  bool wake_posted_ = false;
};

// "Authorization: Bearer <token>": the token, "" when absent or of another scheme.
std::string bearerToken(const Request& request) {
  constexpr std::string_view kBearer = "Bearer ";
  auto it = request.find(http::field::authorization);
  if (it == request.end()) return "";
  const std::string_view value = it->value();
  if (value.size() <= kBearer.size() || value.substr(0, kBearer.size()) != kBearer) return "";
  return std::string(value.substr(kBearer.size()));
}

Response refusal(const Request& request, http::status status, std::string_view message) {
  Response response = makeResponse(request, status, "application/json",
                                   errorJson(static_cast<int>(status), message));
  if (status == http::status::unauthorized) {
    response.set(http::field::www_authenticate, R"(Bearer realm="kturn-cds")");
  }
  return response;
}

// Runs on the reviewers' pool. A function, not a lambda: a coroutine lambda's captures die with
// the closure, before the coroutine runs; a function's parameters live in its frame.
asio::awaitable<Decision> review(AccessGate& gate, std::string token, AccessRequest wanted) {
  co_return gate.review(token, wanted);
}

// The gate's answer to a GET of a config route: nullopt when it may be served (`decision` then
// says until when), else the refusal to send. Refusals are counted and logged.
asio::awaitable<std::optional<Response>> checkAccess(const Request& request, const Route& route,
                                                     const ServerContext& context,
                                                     ServerState& state, const std::string& peer,
                                                     bool over_tls, Decision& decision,
                                                     bool& open) {
  AccessGate& gate = context.gate;
  if (!gate.enabled()) co_return std::nullopt;
  const AccessRequest wanted{.verb = route.watch ? AccessRequest::Verb::kWatch
                                     : route.kind == Route::Kind::kConfig
                                         ? AccessRequest::Verb::kGet
                                         : AccessRequest::Verb::kList,
                             .namespace_ = route.id.namespace_,
                             .name = route.id.name};
  if (route.kind == Route::Kind::kConfig && gate.isOpen(route.id)) {
    gate.count(AccessGate::Count::kOpen);
    open = true;
    co_return std::nullopt;
  }
  auto logger = log::scope("cds");
  if (!over_tls && context.tls.current()) {
    // With a certificate, plain HTTP reads open configs only: a token is never sent in clear.
    gate.count(AccessGate::Count::kUnauthenticated);
    logger->warn("CDS: refused {} from {}: plain HTTP", describe(wanted), peer);
    co_return refusal(request, http::status::unauthorized,
                      "this config is served over https only (docs/cds.md#authentication)");
  }
  const std::string token = bearerToken(request);
  if (token.empty()) {
    gate.count(AccessGate::Count::kUnauthenticated);
    logger->warn("CDS: refused {} from {}: no bearer token", describe(wanted), peer);
    co_return refusal(request, http::status::unauthorized,
                      "a bearer token is required (docs/cds.md#authentication)");
  }
  std::optional<Decision> found = gate.cached(token, wanted);
  if (!found) {
    if (state.pending_reviews >= context.options.max_pending_reviews) {
      gate.count(AccessGate::Count::kBusy);
      logger->warn("CDS: refused {} from {}: {} token reviews in flight", describe(wanted), peer,
                   state.pending_reviews);
      co_return refusal(request, http::status::service_unavailable,
                        "too many requests being authorized, try again");
    }
    ++state.pending_reviews;
    try {
      found = co_await asio::co_spawn(context.reviewers, review(gate, token, wanted),
                                      asio::use_awaitable);
    } catch (const std::exception& e) {
      found = Decision{.reason = std::string("authorizer failed: ") + e.what()};
    }
    --state.pending_reviews;
  }
  if (found->transient) {
    gate.count(AccessGate::Count::kBusy);
    logger->warn("CDS: cannot decide {} from {}: {}", describe(wanted), peer, found->reason);
    co_return refusal(request, http::status::service_unavailable, found->reason);
  }
  if (!found->authenticated || !found->allowed) {
    const bool unauthenticated = !found->authenticated;
    gate.count(unauthenticated ? AccessGate::Count::kUnauthenticated
                               : AccessGate::Count::kForbidden);
    logger->warn("CDS: refused {} from {}{}: {}", describe(wanted), peer,
                 found->who.empty() ? "" : " (" + found->who + ")", found->reason);
    co_return refusal(request,
                      unauthenticated ? http::status::unauthorized : http::status::forbidden,
                      found->reason);
  }
  gate.count(AccessGate::Count::kAllowed);
  decision = std::move(*found);
  decision.expires =
      std::min(decision.expires, std::chrono::system_clock::now() + context.options.max_watch_age);
  co_return std::nullopt;
}

// The requests of one connection, over plain TCP or TLS, until it closes or upgrades to a watch.
template <class Stream>
asio::awaitable<void> serveRequests(Stream stream, ServerContext context, ConnectionSlot& slot,
                                    const std::string& peer) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(kMaxRequestBody);
    beast::get_lowest_layer(stream).expires_after(context.options.request_timeout);
    auto [read_ec, n] = co_await http::async_read(stream, buffer, parser, kToken);
    if (read_ec) {
      if (read_ec != http::error::end_of_stream && read_ec != beast::error::timeout &&
          read_ec != asio::error::operation_aborted && read_ec != asio::error::connection_reset &&
          read_ec != asio::ssl::error::stream_truncated) {
        Response bad{http::status::bad_request, 11};
        bad.set(http::field::content_type, "text/plain; charset=utf-8");
        bad.body() = "400 Bad Request\n";
        bad.keep_alive(false);
        bad.prepare_payload();
        co_await http::async_write(stream, bad, kToken);
      }
      break;
    }
    Request request = parser.release();
    const Route route = routeTarget(request.target());
    const bool is_get = request.method() == http::verb::get;
    const bool is_config_route = route.kind == Route::Kind::kListAll ||
                                 route.kind == Route::Kind::kListNamespace ||
                                 route.kind == Route::Kind::kConfig;
    Decision decision;
    bool open = false;
    if (is_get && is_config_route && !context.serving.load(std::memory_order_acquire)) {
      // Before the first state of the world: no answer rather than an empty one. Clients retry
      // (STUNner's and kturn's after their 1 s retry period).
      Response busy = refusal(request, http::status::service_unavailable,
                              "no configs yet: this server has not received its first state");
      busy.set(http::field::retry_after, "1");
      auto [write_ec, written] = co_await http::async_write(stream, busy, kToken);
      if (write_ec || !busy.keep_alive()) break;
      continue;
    }
    if (is_get && is_config_route) {
      std::optional<Response> refused =
          co_await checkAccess(request, route, context, slot.state(), peer,
                               std::is_same_v<Stream, TlsStream>, decision, open);
      // The answer gets its own deadline: a slow decision must not have used up the request's.
      beast::get_lowest_layer(stream).expires_after(context.options.request_timeout);
      if (refused) {
        auto [write_ec, written] = co_await http::async_write(stream, *refused, kToken);
        if (write_ec || !refused->keep_alive()) break;
        continue;
      }
    }
    if (route.watch && is_get && is_config_route) {
      if (!websocket::is_upgrade(request)) {
        // gorilla/websocket's answer to a watch that is not a WebSocket handshake.
        Response bad = makeResponse(request, http::status::bad_request, "text/plain; charset=utf-8",
                                    "Bad Request\n");
        auto [write_ec, written] = co_await http::async_write(stream, bad, kToken);
        if (write_ec || !bad.keep_alive()) break;
        continue;
      }
      beast::get_lowest_layer(stream).expires_never();
      websocket::stream<Stream> ws(std::move(stream));
      ws.set_option(websocket::stream_base::decorator([](websocket::response_type& response) {
        response.set(http::field::server, "kturn-cds");
      }));
      auto [accept_ec] = co_await ws.async_accept(request, kToken);
      if (accept_ec) co_return;
      auto session = std::make_shared<WatchSession<Stream>>(std::move(ws), context.store);
      if (open) session->servedOpen(route.id);
      co_await session->run(route, context.options, decision.expires, context.gate, peer);
      co_return;
    }
    Response response = answer(request, route, context);
    const bool keep_alive = response.keep_alive();
    auto [write_ec, written] = co_await http::async_write(stream, response, kToken);
    if (write_ec || !keep_alive) break;
  }
  beast::error_code ignored;
  beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_send, ignored);
}

// One accepted connection: within the connection limits, TLS when it starts with a ClientHello
// and the server has a certificate, plain HTTP otherwise (when allowed).
asio::awaitable<void> serveConnection(tcp::socket socket, ServerContext context,
                                      std::shared_ptr<ServerState> state) {
  beast::error_code ec;
  const tcp::endpoint remote = socket.remote_endpoint(ec);
  if (ec) co_return;
  const CdsServerOptions& options = context.options;
  if (state->connections >= options.max_connections ||
      state->per_source[remote.address()] >= options.max_connections_per_source) {
    if (state->per_source[remote.address()] == 0) state->per_source.erase(remote.address());
    context.gate.count(AccessGate::Count::kConnectionsRefused);
    socket.close(ec);
    co_return;
  }
  ConnectionSlot slot(state, remote.address());
  const std::string peer = remote.address().to_string();
  PlainStream stream(std::move(socket));
  if (std::shared_ptr<asio::ssl::context> tls = context.tls.current()) {
    unsigned char first = 0;
    asio::steady_timer deadline(stream.get_executor(), options.request_timeout);
    auto peeked = co_await (
        stream.socket().async_receive(asio::buffer(&first, 1), tcp::socket::message_peek, kToken) ||
        deadline.async_wait(kToken));
    if (peeked.index() != 0) co_return;  // nothing arrived in time
    auto [peek_ec, n] = std::get<0>(peeked);
    if (peek_ec || n == 0) co_return;
    if (first == kTlsHandshakeRecord) {
      TlsStream tls_stream(std::move(stream), *tls);
      beast::get_lowest_layer(tls_stream).expires_after(options.request_timeout);
      auto [handshake_ec] =
          co_await tls_stream.async_handshake(asio::ssl::stream_base::server, kToken);
      if (handshake_ec) co_return;
      co_await serveRequests(std::move(tls_stream), context, slot, peer);
      co_return;
    }
    if (!options.allow_plaintext) co_return;
  }
  co_await serveRequests(std::move(stream), context, slot, peer);
}

}  // namespace

Result<std::shared_ptr<asio::ssl::context>> makeServerTlsContext(const std::string& cert_pem,
                                                                 const std::string& key_pem) {
  beast::error_code ec;
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                       asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use,
                   ec);
  if (!ec) ctx->use_certificate_chain(asio::buffer(cert_pem), ec);
  if (!ec) ctx->use_private_key(asio::buffer(key_pem), asio::ssl::context::pem, ec);
  if (ec) return makeError(Error::Code::kInvalidArgument, "CDS TLS certificate: " + ec.message());
  return ctx;
}

asio::awaitable<void> acceptLoop(tcp::acceptor acceptor, ServerContext context) {
  auto state = std::make_shared<ServerState>();
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(kToken);
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      // EMFILE and friends: keep serving the connections we have, retry shortly.
      asio::steady_timer pause(acceptor.get_executor(), std::chrono::milliseconds(100));
      co_await pause.async_wait(kToken);
      continue;
    }
    asio::co_spawn(acceptor.get_executor(), serveConnection(std::move(socket), context, state),
                   [](std::exception_ptr) {});
  }
}

}  // namespace kturn::cds
