#include "cds/cds_list_client.h"

#include <set>
#include <vector>

#include "cds/protocol.h"
#include "cds/watcher.h"

namespace kturn::cds {
namespace {

// The ids delivered and not deleted since watch(): what a deletion or a resync is checked
// against. Touched only on the watcher thread.
struct ListState {
  ListWatchCallbacks callbacks;
  std::shared_ptr<WatcherStats> stats;
  std::set<std::string> delivered;

  void deleted(const std::string& id) {
    if (delivered.erase(id) == 0) return;  // never delivered: nothing to take back
    ++stats->deletes;
    callbacks.on_delete(id);
  }

  void onConfig(config::StunnerConfig config) {
    std::string id = config.admin.name;
    if (isConfigDeleted(config)) {
      deleted(id);
      return;
    }
    delivered.insert(id);
    ++stats->configs;
    callbacks.on_config(id, std::move(config));
  }

  void onResync(const std::vector<std::string>& held) {
    const std::set<std::string> present(held.begin(), held.end());
    std::vector<std::string> gone;
    for (const std::string& id : delivered) {
      if (present.count(id) == 0) gone.push_back(id);
    }
    for (const std::string& id : gone) deleted(id);
  }
};

}  // namespace

CdsListClient::CdsListClient(CdsClientOptions options, Origin origin, std::string namespace_)
    : options_(std::move(options)),
      origin_(std::move(origin)),
      namespace_(std::move(namespace_)),
      stats_(std::make_shared<WatcherStats>()) {}

CdsListClient::~CdsListClient() { stop(); }

Result<std::unique_ptr<CdsListClient>> CdsListClient::create(CdsClientOptions options,
                                                             std::string namespace_) {
  Result<Origin> origin = parseOrigin(options.origin);
  if (!origin) return origin.error();
  if (namespace_.find('/') != std::string::npos) {
    return makeError(Error::Code::kInvalidArgument,
                     "invalid namespace \"" + namespace_ + "\": must not contain '/'");
  }
  if (auto ok = checkTimings(options); !ok) return ok.error();
  options.suppress_delete = false;
  return std::unique_ptr<CdsListClient>(
      new CdsListClient(std::move(options), std::move(origin).value(), std::move(namespace_)));
}

std::string CdsListClient::listTarget() const {
  return namespace_.empty() ? std::string(kAllConfigsPath) : namespacePath(namespace_);
}

std::string CdsListClient::watchTarget() const { return listTarget() + "?watch=true"; }

Result<void> CdsListClient::watch(ListWatchCallbacks callbacks) {
  if (!callbacks.on_config || !callbacks.on_delete) {
    return makeError(Error::Code::kInvalidArgument,
                     "CDS list watch: on_config and on_delete are required");
  }
  if (watcher_.running()) {
    return makeError(Error::Code::kInvalidArgument, "CDS list watch: already watching");
  }
  Result<WatcherSettings> settings = makeWatcherSettings(options_, origin_, watchTarget());
  if (!settings) return settings.error();
  settings->resync_target = listTarget();
  auto on_error = callbacks.on_error;
  auto state = std::make_shared<ListState>(
      ListState{.callbacks = std::move(callbacks), .stats = stats_, .delivered = {}});
  WatcherSink sink{
      .on_config = [state](config::StunnerConfig c) { state->onConfig(std::move(c)); },
      .on_resync = [state](std::vector<std::string> ids) { state->onResync(ids); },
      .on_error = std::move(on_error),
  };
  return watcher_.start(
      [&] { return Watcher::start(std::move(settings).value(), std::move(sink), stats_); },
      "CDS list watch");
}

void CdsListClient::stop() { watcher_.stop(); }

bool CdsListClient::watching() const { return watcher_.running(); }

CdsClientStats CdsListClient::stats() const { return stats_->snapshot(); }

}  // namespace kturn::cds
