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
#include <boost/beast/websocket.hpp>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "cds/server_routes.h"

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
class WatchSession : public Subscriber, public std::enable_shared_from_this<WatchSession> {
 public:
  WatchSession(websocket::stream<beast::tcp_stream> ws, ConfigStore& store)
      : ws_(std::move(ws)), store_(store), wake_(ws_.get_executor()) {}
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
      asio::post(ws_.get_executor(), [weak = weak_from_this()] {
        if (auto self = weak.lock()) self->wake_.cancel();
      });
    }
  }

  asio::awaitable<void> run(const Route& route, const CdsServerOptions& options) {
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
    co_await (readLoop() || writeLoop());
    store_.unsubscribe(handle_);
    handle_ = 0;
  }

 private:
  void teardown() {
    beast::get_lowest_layer(ws_).close();
    wake_.cancel();
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

  websocket::stream<beast::tcp_stream> ws_;
  ConfigStore& store_;
  asio::steady_timer wake_;
  uint64_t handle_ = 0;
  std::mutex mutex_;  // guards pending_ and wake_posted_ (deliver() runs on any thread)
  std::deque<std::pair<ConfigId, std::string>> pending_;
  bool wake_posted_ = false;
};

asio::awaitable<void> serveConnection(tcp::socket socket, ServerContext context) {
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(kMaxRequestBody);
    stream.expires_after(context.options.request_timeout);
    auto [read_ec, n] = co_await http::async_read(stream, buffer, parser, kToken);
    if (read_ec) {
      if (read_ec != http::error::end_of_stream && read_ec != beast::error::timeout &&
          read_ec != asio::error::operation_aborted && read_ec != asio::error::connection_reset) {
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
    const bool is_watch =
        route.watch && request.method() == http::verb::get &&
        (route.kind == Route::Kind::kListAll || route.kind == Route::Kind::kListNamespace ||
         route.kind == Route::Kind::kConfig);
    if (is_watch) {
      if (!websocket::is_upgrade(request)) {
        // gorilla/websocket's answer to a watch that is not a WebSocket handshake.
        Response bad = makeResponse(request, http::status::bad_request, "text/plain; charset=utf-8",
                                    "Bad Request\n");
        auto [write_ec, written] = co_await http::async_write(stream, bad, kToken);
        if (write_ec || !bad.keep_alive()) break;
        continue;
      }
      stream.expires_never();
      websocket::stream<beast::tcp_stream> ws(std::move(stream));
      ws.set_option(websocket::stream_base::decorator([](websocket::response_type& response) {
        response.set(http::field::server, "kturn-cds");
      }));
      auto [accept_ec] = co_await ws.async_accept(request, kToken);
      if (accept_ec) co_return;
      auto session = std::make_shared<WatchSession>(std::move(ws), context.store);
      co_await session->run(route, context.options);
      co_return;
    }
    Response response = answer(request, route, context);
    const bool keep_alive = response.keep_alive();
    auto [write_ec, written] = co_await http::async_write(stream, response, kToken);
    if (write_ec || !keep_alive) break;
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace

asio::awaitable<void> acceptLoop(tcp::acceptor acceptor, ServerContext context) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(kToken);
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      // EMFILE and friends: keep serving the connections we have, retry shortly.
      asio::steady_timer pause(acceptor.get_executor(), std::chrono::milliseconds(100));
      co_await pause.async_wait(kToken);
      continue;
    }
    asio::co_spawn(acceptor.get_executor(), serveConnection(std::move(socket), context),
                   [](std::exception_ptr) {});
  }
}

}  // namespace kturn::cds
