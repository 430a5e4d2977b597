#include "cds/cds_client.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <optional>

#include "cds/transport.h"
#include "cds/url_util.h"
#include "cds/watcher.h"
#include "common/bearer_token.h"

namespace kturn::cds {

namespace asio = boost::asio;

namespace {

std::string trimmed(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return std::string(text.substr(0, 200));
}

// One GET of `target`, bounded by options.request_timeout: the body of a 200, kNotFound for a
// 404, kIo for anything else; errors start with "GET <url>".
Result<HttpReply> getDocument(const Origin& origin, const std::string& target,
                              const CdsClientOptions& options) {
  std::shared_ptr<asio::ssl::context> tls;
  if (origin.tls) {
    auto ctx = makeClientTlsContext(options.tls_ca_file, options.tls_ca_pem,
                                    options.tls_insecure_skip_verify);
    if (!ctx) return ctx.error();
    tls = std::move(ctx).value();
  }
  const std::string token =
      options.bearer_token_file.empty() ? "" : BearerToken("", options.bearer_token_file).current();
  const GetHeaders headers{.bearer_token = token};
  std::optional<Result<HttpReply>> reply;
  try {
    asio::io_context ioc;
    auto run = [&]() -> asio::awaitable<void> {
      if (tls) {
        TlsStream stream(ioc, *tls);
        reply = co_await fetchDocument(stream, origin, target, options.request_timeout,
                                       !options.tls_insecure_skip_verify, headers);
      } else {
        PlainStream stream(ioc);
        reply = co_await fetchDocument(stream, origin, target, options.request_timeout, headers);
      }
    };
    asio::co_spawn(ioc, run(), [](std::exception_ptr) {});
    ioc.run();
  } catch (const std::exception& e) {
    return makeError(Error::Code::kInternal, std::string("CDS GET: ") + e.what());
  }
  const std::string where = "GET " + origin.toString() + target;
  if (!reply) return makeError(Error::Code::kInternal, where + ": no result");
  if (!*reply) return makeError(reply->error().code, where + ": " + reply->error().message);
  HttpReply& r = reply->value();
  if (r.status == 404) {
    return makeError(Error::Code::kNotFound, where + ": 404 " + trimmed(r.body));
  }
  if (r.status != 200) {
    return makeError(Error::Code::kIo,
                     where + ": HTTP status " + std::to_string(r.status) + " " + trimmed(r.body));
  }
  return std::move(r);
}

}  // namespace

CdsClient::CdsClient(CdsClientOptions options, Origin origin, ConfigId id)
    : options_(std::move(options)),
      origin_(std::move(origin)),
      id_(std::move(id)),
      stats_(std::make_shared<WatcherStats>()) {}

CdsClient::~CdsClient() { stop(); }

Result<std::unique_ptr<CdsClient>> CdsClient::create(CdsClientOptions options) {
  Result<Origin> origin = parseOrigin(options.origin);
  if (!origin) return origin.error();
  Result<ConfigId> id = parseConfigId(options.id);
  if (!id) return id.error();
  if (auto ok = checkTimings(options); !ok) return ok.error();
  return std::unique_ptr<CdsClient>(
      new CdsClient(std::move(options), std::move(origin).value(), std::move(id).value()));
}

std::string CdsClient::getTarget() const {
  std::string target = configPath(id_);
  if (!options_.node.empty()) target += "?node=" + percentEncode(options_.node);
  return target;
}

std::string CdsClient::watchTarget() const {
  std::string target = configPath(id_) + "?watch=true";
  if (!options_.node.empty()) target += "&node=" + percentEncode(options_.node);
  return target;
}

Result<config::StunnerConfig> CdsClient::get() const {
  const std::string target = getTarget();
  Result<HttpReply> reply = getDocument(origin_, target, options_);
  if (!reply) return reply.error();
  const std::string where = "GET " + origin_.toString() + target;
  Result<config::StunnerConfig> parsed = parseServedConfig(reply->body, options_.expand_env);
  if (!parsed) {
    return makeError(parsed.error().code, where + ": invalid config: " + parsed.error().message);
  }
  return parsed;
}

Result<std::vector<config::StunnerConfig>> listConfigs(const CdsClientOptions& options,
                                                       std::string_view namespace_) {
  Result<Origin> origin = parseOrigin(options.origin);
  if (!origin) return origin.error();
  const std::string target =
      namespace_.empty() ? std::string(kAllConfigsPath) : namespacePath(namespace_);
  Result<HttpReply> reply = getDocument(*origin, target, options);
  if (!reply) return reply.error();
  Result<std::vector<config::StunnerConfig>> parsed =
      parseListJson(reply->body, options.expand_env);
  if (!parsed) {
    return makeError(parsed.error().code, "GET " + origin->toString() + target +
                                              ": invalid config list: " + parsed.error().message);
  }
  return parsed;
}

Result<void> CdsClient::watch(WatchCallbacks callbacks) {
  if (!callbacks.on_config) {
    return makeError(Error::Code::kInvalidArgument, "CDS watch: on_config is required");
  }
  if (watcher_.running()) {
    return makeError(Error::Code::kInvalidArgument, "CDS watch: already watching");
  }
  Result<WatcherSettings> settings = makeWatcherSettings(options_, origin_, watchTarget());
  if (!settings) return settings.error();
  WatcherSink sink{
      .on_config =
          [stats = stats_, on_config = std::move(callbacks.on_config)](config::StunnerConfig c) {
            ++stats->configs;
            on_config(std::move(c));
          },
      .on_error = std::move(callbacks.on_error),
      .on_delete_suppressed = std::move(callbacks.on_delete_suppressed),
  };
  return watcher_.start(
      [&] { return Watcher::start(std::move(settings).value(), std::move(sink), stats_); },
      "CDS watch");
}

void CdsClient::stop() { watcher_.stop(); }

bool CdsClient::watching() const { return watcher_.running(); }

CdsClientStats CdsClient::stats() const { return stats_->snapshot(); }

}  // namespace kturn::cds
