#include "operator/controller.h"

#include <chrono>

#include "common/log.h"
#include "operator/clock.h"
#include "operator/cluster_snapshot.h"

namespace kturn::op {

namespace {

std::shared_ptr<spdlog::logger> logger() { return log::scope("operator"); }

}  // namespace

Controller::Controller(k8s::ApiClient& client, cds::CdsServer& cds, ControllerOptions options)
    : client_(client),
      options_(std::move(options)),
      cluster_(
          client, [this] { markDirty(); }, options_.informer),
      publisher_(cds),
      applier_(client, options_.fieldManager),
      statusWriter_(
          client,
          [this](const StatusUpdate& u) { return cluster_.find(u.apiVersion, u.kind, u.key); },
          options_.fieldManager) {}

Controller::~Controller() { stop(); }

void Controller::start() {
  cluster_.start();
  std::lock_guard lock(mutex_);
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
}

void Controller::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  cluster_.stop();
}

void Controller::setLeading(bool leading) {
  {
    std::lock_guard lock(mutex_);
    if (leading && !leading_) leadershipGained_ = true;
    leading_ = leading;
    dirty_ = true;
  }
  wake_.notify_all();
}

ControllerStats Controller::stats() const {
  const bool synced = cluster_.synced();  // the caches' own locks, not taken under mutex_
  std::lock_guard lock(mutex_);
  ControllerStats stats = stats_;
  stats.leading = leading_;
  stats.synced = synced;
  return stats;
}

void Controller::markDirty() {
  {
    std::lock_guard lock(mutex_);
    if (!dirty_) dirtiedAt_ = std::chrono::steady_clock::now();
    dirty_ = true;
  }
  wake_.notify_all();
}

void Controller::run() {
  std::chrono::milliseconds wait = options_.resync;
  std::chrono::steady_clock::time_point lastRender{};  // long ago
  for (;;) {
    bool changed;
    {
      std::unique_lock lock(mutex_);
      changed = wake_.wait_for(lock, wait, [this] { return stopping_ || dirty_; });
      if (stopping_) return;
      // Debounce: no sooner than one window after the last render, so the rest of a burst of
      // changes folds into one render.
      if (wake_.wait_until(lock, lastRender + options_.debounce, [this] { return stopping_; })) {
        return;
      }
      dirty_ = false;
      answeringSince_ = dirtiedAt_;
    }
    if (!cluster_.synced()) {  // the first lists are not all in; their arrival marks us dirty
      wait = options_.resync;
      continue;
    }
    lastRender = std::chrono::steady_clock::now();
    // Woken by the timer, not a change: the resync (or the retry of failed writes) renders and
    // applies everything.
    wait = reconcile(!changed) ? options_.resync : options_.retry;
  }
}

bool Controller::reconcile(bool full) {
  const auto startedAt = std::chrono::steady_clock::now();
  bool leading;
  bool gained;
  std::chrono::steady_clock::time_point dirtiedAt;
  {
    std::lock_guard lock(mutex_);
    leading = leading_;
    gained = leadershipGained_;
    leadershipGained_ = false;
    dirtiedAt = answeringSince_;
  }
  RenderOptions renderOptions = options_.render;
  renderOptions.now = unixNow();
  renderOptions.transitionTime = rfc3339(renderOptions.now);
  // The changes first: one made during the copy below is then in the next reconcile's.
  std::vector<ObjectUpdate> changes = cluster_.takeChanges();
  const RenderDelta delta =
      full || fullNext_ || gained
          ? renderer_.update(ClusterSnapshot::fromObjects(cluster_.snapshot()), renderOptions, true)
          : renderer_.apply(std::move(changes), renderOptions);
  const auto renderedAt = std::chrono::steady_clock::now();
  const int64_t nowUnix = renderOptions.now;
  ConfigPublisher::Outcome published;
  OwnedObjectApplier::Outcome applied;
  StatusWriter::Outcome statuses;
  std::chrono::steady_clock::time_point publishedAt;
  if (delta.full) {
    const RenderResult result = renderer_.result();
    for (const std::string& problem : result.problems) logger()->warn("render: {}", problem);
    published = publisher_.publish(result.gateways, nowUnix);
    publishedAt = std::chrono::steady_clock::now();
    if (leading) {
      if (gained) applier_.forget();
      applied = applier_.apply(result.gateways);
      statuses = statusWriter_.write(result.statuses);
    }
  } else {
    published = publisher_.publishChanges(delta.gateways, delta.removed, nowUnix);
    publishedAt = std::chrono::steady_clock::now();
    if (leading) {
      applied = applier_.applyChanges(delta.gateways, delta.removed);
      statuses = statusWriter_.write(delta.statuses);
    }
  }
  for (const std::string& problem : published.problems) logger()->error("{}", problem);
  const bool ok = applied.failed == 0 && statuses.failed == 0;
  fullNext_ = !ok;
  logger()->debug(
      "reconciled ({}: {} gateways, {} route statuses rendered): {} gateways, {} configs served "
      "({} rejected); {} objects applied, {} deleted, {} failed; {} statuses written, {} "
      "failed{}",
      delta.full ? "full" : "incremental", delta.gatewaysRendered, delta.routesRendered,
      renderer_.gatewayCount(), published.served, published.rejected, applied.applied,
      applied.deleted, applied.failed, statuses.written, statuses.failed,
      leading ? "" : " (not the leader: no writes)");
  std::lock_guard lock(mutex_);
  ++stats_.reconciles;
  stats_.fullRenders += delta.full;
  stats_.applied += applied.applied;
  stats_.deleted += applied.deleted;
  stats_.statusesWritten += statuses.written;
  stats_.writesFailed += applied.failed + statuses.failed;
  stats_.configsRejected += published.rejected;
  stats_.gateways = renderer_.gatewayCount();
  stats_.configsServed = published.served;
  stats_.dirtiedAt = dirtiedAt;
  stats_.startedAt = startedAt;
  stats_.renderedAt = renderedAt;
  stats_.publishedAt = publishedAt;
  return ok;
}

}  // namespace kturn::op
