#include "auth/config_follower.h"

#include <spdlog/spdlog.h>

#include "cds/cds_client.h"
#include "cds/cds_list_client.h"
#include "cds/origin.h"
#include "cds/protocol.h"
#include "config/config_source.h"
#include "net/file_watcher.h"

namespace kturn::auth {

ConfigFollower::ConfigFollower(ConfigFollowerOptions options, ConfigHolder& holder)
    : options_(std::move(options)), holder_(holder) {}

ConfigFollower::~ConfigFollower() { stop(); }

Result<void> ConfigFollower::reload() {
  auto loaded = config::loadConfig(options_.origin);
  if (!loaded) return loaded.error();
  spdlog::info("config loaded from {} (auth: {}, {} listeners)", loaded->description,
               loaded->config.auth.type, loaded->config.listeners.size());
  holder_.set(std::move(loaded->config));
  return {};
}

Result<void> ConfigFollower::watchOne() {
  // A deleted Gateway mints no more credentials (kturnd relays on with its config; kturn-auth
  // does not hand out credentials for it): the zero config is delivered, not suppressed.
  auto client = cds::CdsClient::create({.origin = options_.origin,
                                        .id = options_.id,
                                        .suppress_delete = false,
                                        .tls_ca_file = options_.ca_file,
                                        .tls_ca_pem = options_.ca_pem,
                                        .bearer_token_file = options_.token_file});
  if (!client) return client.error();
  cds_ = std::move(*client);
  return cds_->watch({
      .on_config =
          [this](config::StunnerConfig config) {
            if (cds::isConfigDeleted(config)) {
              spdlog::info("config {} deleted at CDS", config.admin.name);
              holder_.remove(config.admin.name);
              return;
            }
            spdlog::info("config received from CDS (auth: {}, {} listeners)", config.auth.type,
                         config.listeners.size());
            holder_.set(std::move(config));
          },
      .on_error = [](const Error& e) { spdlog::warn("config discovery: {}", e.message); },
  });
}

Result<void> ConfigFollower::watchAll() {
  auto client = cds::CdsListClient::create({.origin = options_.origin,
                                            .tls_ca_file = options_.ca_file,
                                            .tls_ca_pem = options_.ca_pem,
                                            .bearer_token_file = options_.token_file});
  if (!client) return client.error();
  cds_list_ = std::move(*client);
  spdlog::info("watching every config of {}", cds_list_->origin().toString());
  return cds_list_->watch({
      .on_config =
          [this](const std::string& id, config::StunnerConfig config) {
            spdlog::info("config {} received from CDS (auth: {}, {} listeners)", id,
                         config.auth.type, config.listeners.size());
            holder_.upsert(id, std::move(config));
          },
      .on_delete =
          [this](const std::string& id) {
            spdlog::info("config {} deleted at CDS", id);
            holder_.remove(id);
          },
      .on_error = [](const Error& e) { spdlog::warn("config discovery: {}", e.message); },
  });
}

Result<void> ConfigFollower::start() {
  if (options_.origin.empty()) {
    return makeError(Error::Code::kInvalidArgument, "no config origin given (-c)");
  }
  if (cds::isCdsOrigin(options_.origin)) return options_.id.empty() ? watchAll() : watchOne();
  if (auto loaded = reload(); !loaded) return loaded;
  loaded_ = true;
  if (!config::isReloadable(options_.origin)) return {};
  const std::string path =
      options_.origin.rfind("file://", 0) == 0 ? options_.origin.substr(7) : options_.origin;
  watcher_ = std::make_unique<net::FileWatcher>(path, [this] {
    if (auto loaded = reload(); !loaded) {
      spdlog::error("config reload failed, keeping the previous config: {}",
                    loaded.error().message);
    }
  });
  if (auto watching = watcher_->start(); !watching) return watching;
  spdlog::info("watching {} for changes", path);
  return {};
}

bool ConfigFollower::synced() const {
  if (cds_) return cds_->stats().syncs > 0;
  if (cds_list_) return cds_list_->stats().syncs > 0;
  return loaded_;
}

void ConfigFollower::stop() {
  if (watcher_) watcher_->stop();
  if (cds_) cds_->stop();
  if (cds_list_) cds_list_->stop();
}

}  // namespace kturn::auth
