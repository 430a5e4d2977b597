#include "k8s/informer.h"

#include "common/log.h"
#include "k8s/backoff.h"

namespace kturn::k8s {

namespace {

std::shared_ptr<spdlog::logger> logger() { return log::scope("k8s"); }

}  // namespace

Informer::Informer(ApiClient& client, ObjectCache& cache, OnChange onChange,
                   InformerOptions options)
    : client_(client),
      cache_(cache),
      onChange_(std::move(onChange)),
      options_(std::move(options)) {}

Informer::~Informer() { stop(); }

void Informer::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { run(); });
}

void Informer::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    if (active_ != nullptr) active_->cancel();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string Informer::resourceVersion() const {
  std::lock_guard lock(mutex_);
  return resourceVersion_;
}

InformerStats Informer::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Informer::sleepFor(std::chrono::milliseconds delay) {
  std::unique_lock lock(mutex_);
  wake_.wait_for(lock, delay, [this] { return stopping_; });
}

void Informer::run() {
  Backoff backoff(options_.initialBackoff, options_.maxBackoff);
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
    }
    bool ok;
    if (needList_) {
      ok = listOnce();
    } else {
      ok = watchOnce();
    }
    if (ok) {
      backoff.reset();
      continue;
    }
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      ++stats_.failures;
    }
    sleepFor(backoff.next());
  }
}

bool Informer::listOnce() {
  const ResourceType& type = cache_.type();
  std::string query;
  if (!options_.labelSelector.empty()) {
    query = "labelSelector=" + urlEncode(options_.labelSelector);
  }
  Result<ApiResponse> response = client_.list(type, options_.ns, query);
  if (!response) {
    logger()->warn("list {}: {}", type.plural, response.error().message);
    return false;
  }
  if (response->status == 404 && options_.notServedIsEmpty) {
    if (!cache_.synced()) logger()->warn("list {}: not served, read as empty", type.plural);
    if (cache_.replace({}) && onChange_) onChange_(type);
    return false;
  }
  if (!response->ok() || !response->body.is_object()) {
    logger()->warn("list {}: {}", type.plural, response->describe());
    return false;
  }
  std::vector<Object> objects = listItems(response->body, type);
  const Json& meta = response->body.value("metadata", Json::object());
  const std::string rv = meta.is_object() ? meta.value("resourceVersion", "") : "";
  logger()->debug("listed {} {} at resourceVersion {}", objects.size(), type.plural, rv);
  const bool changed = cache_.replace(std::move(objects));
  {
    std::lock_guard lock(mutex_);
    ++stats_.lists;
    resourceVersion_ = rv;
  }
  needList_ = false;
  if (changed && onChange_) onChange_(type);
  return true;
}

bool Informer::watchOnce() {
  const ResourceType& type = cache_.type();
  std::string query = "allowWatchBookmarks=true&resourceVersion=" + urlEncode(resourceVersion()) +
                      "&timeoutSeconds=" + std::to_string(options_.watchTimeout.count());
  if (!options_.labelSelector.empty()) {
    query += "&labelSelector=" + urlEncode(options_.labelSelector);
  }
  Result<ApiClient::Watch> watch = client_.watch(type, options_.ns, query);
  if (!watch) {
    logger()->warn("watch {}: {}", type.plural, watch.error().message);
    return false;
  }
  if (watch->status == 410) {  // Gone: the version is older than the server keeps
    std::lock_guard lock(mutex_);
    ++stats_.expired;
    needList_ = true;
    return true;
  }
  if (watch->status != 200) {
    logger()->warn("watch {}: HTTP {}: {}", type.plural, watch->status, watch->body);
    return false;
  }
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return true;
    active_ = watch->connection.get();
    ++stats_.watches;
  }
  // Bookmarks (or the server's own end of the stream at timeoutSeconds) arrive well within this.
  const std::chrono::milliseconds idle = options_.watchTimeout + std::chrono::seconds(30);
  bool ok = true;
  for (;;) {
    Result<std::optional<std::string>> line = watch->connection->readLine(idle);
    if (!line) {
      std::lock_guard lock(mutex_);
      if (!stopping_) logger()->info("watch {} ended: {}", type.plural, line.error().message);
      ok = stopping_;
      break;
    }
    if (!line->has_value()) break;  // the server ended the stream: watch again
    if ((*line)->empty()) continue;
    if (!handleEvent(**line)) break;
  }
  std::lock_guard lock(mutex_);
  active_ = nullptr;
  return ok;
}

// Returns false to end the stream (an ERROR event).
bool Informer::handleEvent(const std::string& line) {
  const ResourceType& type = cache_.type();
  Json event = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!event.is_object() || !event.contains("type") || !event.contains("object") ||
      !event["object"].is_object()) {
    logger()->warn("watch {}: not a WatchEvent: {}", type.plural, line.substr(0, 200));
    return false;
  }
  const std::string kind = event["type"].is_string() ? event["type"].get<std::string>() : "";
  Json& body = event["object"];
  if (kind == "ERROR") {
    const int code = body.value("code", 0);
    logger()->info("watch {}: ERROR {} {}: {}", type.plural, code, body.value("reason", ""),
                   body.value("message", ""));
    std::lock_guard lock(mutex_);
    if (code == 410) {
      ++stats_.expired;
      needList_ = true;
    }
    return false;
  }
  const Json meta = body.value("metadata", Json::object());
  const std::string rv = meta.is_object() ? meta.value("resourceVersion", "") : "";
  bool changed = false;
  if (kind == "BOOKMARK") {
    std::lock_guard lock(mutex_);
    ++stats_.bookmarks;
  } else if (kind == "ADDED" || kind == "MODIFIED") {
    changed = cache_.upsert(typedObject(std::move(body), type));
  } else if (kind == "DELETED") {
    changed = cache_.erase(typedObject(std::move(body), type).key());
  } else {
    logger()->warn("watch {}: unknown event type {}", type.plural, kind);
    return true;
  }
  {
    std::lock_guard lock(mutex_);
    if (kind != "BOOKMARK") ++stats_.events;
    if (!rv.empty()) resourceVersion_ = rv;
  }
  if (changed && onChange_) onChange_(type);
  return true;
}

}  // namespace kturn::k8s
