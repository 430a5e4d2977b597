#include "cds/watcher.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <exception>
#include <type_traits>

#include "cds/protocol.h"
#include "cds/transport.h"

namespace kturn::cds {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using namespace asio::experimental::awaitable_operators;  // NOLINT(build/namespaces): a || b
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kMaxMessage = 16 << 20;  // configs carry base64 certificates
constexpr auto kToken = asio::as_tuple(asio::use_awaitable);

// Why a session ended, for the error callback.
std::string describe(const beast::error_code& ec) {
  if (ec == websocket::error::closed) return "server closed the connection";
  if (ec == beast::error::timeout) return "timed out";
  return ec.message();
}

// The three loops of a session share the stream and the two timers; the first to end calls
// teardown(), which makes the other two end too (their operations are aborted).
template <class Ws>
struct SessionParts {
  Ws& ws;
  asio::steady_timer& ping_timer;
  asio::steady_timer& watchdog_timer;

  void teardown() {
    beast::error_code ignored;
    beast::get_lowest_layer(ws).socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(ws).close();
    ping_timer.cancel();
    watchdog_timer.cancel();
  }
};

}  // namespace

CdsClientStats WatcherStats::snapshot() const {
  return CdsClientStats{
      .connects = connects.load(),
      .syncs = syncs.load(),
      .disconnects = disconnects.load(),
      .configs = configs.load(),
      .deletes = deletes.load(),
      .rejected = rejected.load(),
      .deletes_suppressed = deletes_suppressed.load(),
      .pings_sent = pings_sent.load(),
      .pongs_received = pongs_received.load(),
  };
}

Result<void> checkTimings(const CdsClientOptions& options) {
  if (options.ping_period <= std::chrono::milliseconds::zero() ||
      options.pong_wait <= std::chrono::milliseconds::zero() ||
      options.retry_period < std::chrono::milliseconds::zero() ||
      options.request_timeout <= std::chrono::milliseconds::zero()) {
    return makeError(Error::Code::kInvalidArgument, "CDS client: timings must be positive");
  }
  return {};
}

Result<WatcherSettings> makeWatcherSettings(const CdsClientOptions& options, const Origin& origin,
                                            std::string target) {
  if (auto ok = checkTimings(options); !ok) return ok.error();
  std::shared_ptr<asio::ssl::context> tls;
  if (origin.tls) {
    auto ctx = makeClientTlsContext(options.tls_ca_file, options.tls_ca_pem,
                                    options.tls_insecure_skip_verify);
    if (!ctx) return ctx.error();
    tls = std::move(ctx).value();
  }
  return WatcherSettings{
      .origin = origin,
      .target = std::move(target),
      .ping_period = options.ping_period,
      .pong_wait = options.pong_wait,
      .retry_period = options.retry_period,
      .handshake_timeout = options.request_timeout,
      .suppress_delete = options.suppress_delete,
      .expand_env = options.expand_env,
      .tls = std::move(tls),
      .verify_host = !options.tls_insecure_skip_verify,
      .token = options.bearer_token_file.empty()
                   ? nullptr
                   : std::make_shared<BearerToken>("", options.bearer_token_file),
  };
}

Watcher::Watcher(WatcherSettings settings, WatcherSink sink, std::shared_ptr<WatcherStats> stats)
    : settings_(std::move(settings)),
      sink_(std::move(sink)),
      stats_(std::move(stats)),
      url_(std::string(settings_.tls ? "wss://" : "ws://") + settings_.origin.hostPort() +
           settings_.target) {}

Watcher::~Watcher() {
  ioc_.stop();
  if (thread_.joinable()) {
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();
    } else {
      thread_.join();
    }
  }
}

Result<std::shared_ptr<Watcher>> Watcher::start(WatcherSettings settings, WatcherSink sink,
                                                std::shared_ptr<WatcherStats> stats) {
  std::shared_ptr<Watcher> watcher(
      new Watcher(std::move(settings), std::move(sink), std::move(stats)));
  try {
    asio::co_spawn(watcher->ioc_, watcher->run(), [](std::exception_ptr) {});
    watcher->thread_ = std::thread([self = watcher] {
      try {
        self->ioc_.run();
      } catch (...) {  // a callback that throws ends the watch rather than the process
      }
    });
  } catch (const std::exception& e) {
    return makeError(Error::Code::kInternal, std::string("CDS watch: ") + e.what());
  }
  return watcher;
}

void Watcher::stop() {
  ioc_.stop();
  if (!thread_.joinable()) return;
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();  // we are inside a callback; run() returns when it does
  } else {
    thread_.join();
  }
}

void Watcher::report(Error::Code code, std::string message) {
  if (!sink_.on_error) return;
  try {
    sink_.on_error(makeError(code, "CDS watch " + url_ + ": " + std::move(message)));
  } catch (...) {
  }
}

void Watcher::onMessage(std::string_view text) {
  if (text.empty()) {  // STUNner's client ignores these too
    ++stats_->rejected;
    report(Error::Code::kMalformed, "ignoring zero-length config");
    return;
  }
  Result<config::StunnerConfig> parsed = parseServedConfig(text, settings_.expand_env);
  if (!parsed) {
    ++stats_->rejected;
    report(parsed.error().code, "invalid config ignored: " + parsed.error().message);
    return;
  }
  if (settings_.suppress_delete && isConfigDeleted(*parsed)) {
    ++stats_->deletes_suppressed;
    if (sink_.on_delete_suppressed) sink_.on_delete_suppressed();
    return;
  }
  try {
    sink_.on_config(std::move(parsed).value());
  } catch (const std::exception& e) {
    report(Error::Code::kInternal, std::string("config callback threw: ") + e.what());
  } catch (...) {
    report(Error::Code::kInternal, "config callback threw");
  }
}

void Watcher::deliverResync(std::vector<std::string> ids) {
  if (!sink_.on_resync) return;
  try {
    sink_.on_resync(std::move(ids));
  } catch (const std::exception& e) {
    report(Error::Code::kInternal, std::string("resync callback threw: ") + e.what());
  } catch (...) {
    report(Error::Code::kInternal, "resync callback threw");
  }
}

template <class Stream>
asio::awaitable<Result<std::vector<std::string>>> Watcher::fetchIds() {
  Result<HttpReply> reply = makeError(Error::Code::kInternal, "no reply");
  const std::string token = settings_.token ? settings_.token->current() : std::string();
  const GetHeaders headers{.bearer_token = token};
  if constexpr (std::is_same_v<Stream, TlsStream>) {
    TlsStream stream(ioc_, *settings_.tls);
    reply = co_await fetchDocument(stream, settings_.origin, settings_.resync_target,
                                   settings_.handshake_timeout, settings_.verify_host, headers);
  } else {
    PlainStream stream(ioc_);
    reply = co_await fetchDocument(stream, settings_.origin, settings_.resync_target,
                                   settings_.handshake_timeout, headers);
  }
  const std::string where = "GET " + settings_.resync_target;
  if (!reply) co_return makeError(reply.error().code, where + ": " + reply.error().message);
  if (reply->status != 200) {
    co_return makeError(Error::Code::kIo, where + ": HTTP status " + std::to_string(reply->status));
  }
  Result<std::vector<std::string>> ids = parseListIds(reply->body);
  if (!ids) co_return makeError(ids.error().code, where + ": " + ids.error().message);
  co_return ids;
}

asio::awaitable<void> Watcher::run() {
  asio::steady_timer retry_timer(ioc_);
  for (;;) {
    if (settings_.tls) {
      co_await session<TlsStream>();
    } else {
      co_await session<PlainStream>();
    }
    retry_timer.expires_after(settings_.retry_period);
    co_await retry_timer.async_wait(kToken);
  }
}

template <class Stream>
asio::awaitable<void> Watcher::session() {
  using Ws = websocket::stream<Stream>;
  std::optional<Ws> ws_storage;
  if constexpr (std::is_same_v<Stream, TlsStream>) {
    ws_storage.emplace(ioc_, *settings_.tls);
  } else {
    ws_storage.emplace(ioc_);
  }
  Ws& ws = *ws_storage;

  beast::error_code ec;
  if constexpr (std::is_same_v<Stream, TlsStream>) {
    ec = co_await openStream(ws.next_layer(), settings_.origin, settings_.handshake_timeout,
                             settings_.verify_host);
  } else {
    ec = co_await openStream(ws.next_layer(), settings_.origin, settings_.handshake_timeout);
  }
  if (ec) {
    report(Error::Code::kIo, "connect: " + describe(ec));
    co_return;
  }
  const std::string origin_header = "http://" + settings_.origin.hostPort();
  const std::string token = settings_.token ? settings_.token->current() : std::string();
  ws.set_option(websocket::stream_base::decorator([&](websocket::request_type& request) {
    request.set(beast::http::field::user_agent, "kturn-cds-client");
    request.set(beast::http::field::origin, origin_header);  // as STUNner's client sends
    if (!token.empty()) request.set(beast::http::field::authorization, "Bearer " + token);
  }));
  ws.read_message_max(kMaxMessage);
  websocket::response_type response;
  auto [handshake_ec] =
      co_await ws.async_handshake(response, settings_.origin.hostPort(), settings_.target, kToken);
  if (handshake_ec) {
    std::string why = describe(handshake_ec);
    if (response.result_int() != 0 && response.result_int() != 101) {
      why = "HTTP status " + std::to_string(response.result_int()) + " " + response.body();
      while (!why.empty() && std::isspace(static_cast<unsigned char>(why.back()))) why.pop_back();
    }
    report(Error::Code::kIo, "handshake: " + why);
    co_return;
  }
  // From here on the keepalive below decides when the peer is dead (Beast's advice: no stream
  // timeout on an open WebSocket).
  beast::get_lowest_layer(ws).expires_never();
  ++stats_->connects;
  if (!settings_.resync_target.empty()) {
    // Configs the server pushes meanwhile wait in the socket: the ids reach the sink first.
    Result<std::vector<std::string>> ids = co_await fetchIds<Stream>();
    if (!ids) {
      ++stats_->disconnects;
      report(ids.error().code, "listing the configs after connecting: " + ids.error().message);
      co_return;
    }
    deliverResync(std::move(ids).value());
  }
  ++stats_->syncs;
  last_rx_ = Clock::now();
  ws.control_callback([this](websocket::frame_type kind, beast::string_view) {
    last_rx_ = Clock::now();
    if (kind == websocket::frame_type::pong) ++stats_->pongs_received;
  });

  asio::steady_timer ping_timer(ioc_);
  asio::steady_timer watchdog_timer(ioc_);
  SessionParts<Ws> parts{ws, ping_timer, watchdog_timer};

  auto read_loop = [this, &parts]() -> asio::awaitable<beast::error_code> {
    for (;;) {
      beast::flat_buffer buffer;
      auto [read_ec, n] = co_await parts.ws.async_read(buffer, kToken);
      if (read_ec) {
        parts.teardown();
        co_return read_ec;
      }
      last_rx_ = Clock::now();
      if (!parts.ws.got_text()) {  // STUNner's client drops the connection too
        parts.teardown();
        co_return beast::error_code(beast::errc::protocol_error, beast::generic_category());
      }
      onMessage(beast::buffers_to_string(buffer.data()));
    }
  };
  auto ping_loop = [this, &parts]() -> asio::awaitable<beast::error_code> {
    for (;;) {
      parts.ping_timer.expires_after(settings_.ping_period);
      auto [wait_ec] = co_await parts.ping_timer.async_wait(kToken);
      if (wait_ec) co_return wait_ec;
      auto [ping_ec] = co_await parts.ws.async_ping(
          websocket::ping_data(kKeepalivePayload.data(), kKeepalivePayload.size()), kToken);
      if (ping_ec) {
        parts.teardown();
        co_return ping_ec;
      }
      ++stats_->pings_sent;
    }
  };
  // STUNner's PongWait: the connection is dead when nothing at all (config, pong) arrived for
  // pong_wait.
  auto watchdog_loop = [this, &parts]() -> asio::awaitable<beast::error_code> {
    for (;;) {
      const Clock::time_point deadline = last_rx_ + settings_.pong_wait;
      if (Clock::now() >= deadline) {
        parts.teardown();
        co_return beast::error::timeout;
      }
      parts.watchdog_timer.expires_at(deadline);
      auto [wait_ec] = co_await parts.watchdog_timer.async_wait(kToken);
      if (wait_ec) co_return wait_ec;
    }
  };

  auto ended = co_await (read_loop() || ping_loop() || watchdog_loop());
  ++stats_->disconnects;
  const beast::error_code why = std::visit([](const auto& e) { return e; }, ended);
  report(Error::Code::kIo, "disconnected: " + describe(why));
}

}  // namespace kturn::cds
