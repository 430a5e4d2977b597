#include "auth/config_follower.h"

#include <spdlog/spdlog.h>

#include "cds/cds_client.h"
#include "cds/origin.h"
#include "daemon/config_source.h"
#include "daemon/file_watcher.h"

namespace kturn::auth {

ConfigFollower::ConfigFollower(ConfigFollowerOptions options, ConfigHolder& holder)
    : options_(std::move(options)), holder_(holder) {}

ConfigFollower::~ConfigFollower() { stop(); }

Result<void> ConfigFollower::reload() {
  auto loaded = daemon::loadConfig(options_.origin);
  if (!loaded) return loaded.error();
  spdlog::info("config loaded from {} (auth: {}, {} listeners)", loaded->description,
               loaded->config.auth.type, loaded->config.listeners.size());
  holder_.set(std::move(loaded->config));
  return {};
}

Result<void> ConfigFollower::start() {
  if (options_.origin.empty()) {
    return makeError(Error::Code::kInvalidArgument, "no config origin given (-c)");
  }
  if (cds::isCdsOrigin(options_.origin)) {
    auto client = cds::CdsClient::create({.origin = options_.origin, .id = options_.id});
    if (!client) return client.error();
    cds_ = std::move(*client);
    return cds_->watch({
        .on_config =
            [this](config::StunnerConfig config) {
              spdlog::info("config received from CDS (auth: {}, {} listeners)", config.auth.type,
                           config.listeners.size());
              holder_.set(std::move(config));
            },
        .on_error = [](const Error& e) { spdlog::warn("config discovery: {}", e.message); },
    });
  }
  if (auto loaded = reload(); !loaded) return loaded;
  if (!daemon::isReloadable(options_.origin)) return {};
  const std::string path =
      options_.origin.rfind("file://", 0) == 0 ? options_.origin.substr(7) : options_.origin;
  watcher_ = std::make_unique<daemon::FileWatcher>(path, [this] {
    if (auto loaded = reload(); !loaded) {
      spdlog::error("config reload failed, keeping the previous config: {}",
                    loaded.error().message);
    }
  });
  if (auto watching = watcher_->start(); !watching) return watching;
  spdlog::info("watching {} for changes", path);
  return {};
}

void ConfigFollower::stop() {
  if (watcher_) watcher_->stop();
  if (cds_) cds_->stop();
}

}  // namespace kturn::auth
