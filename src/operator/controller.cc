#include "operator/controller.h"

#include <chrono>

#include "common/log.h"
#include "operator/clock.h"
#include "operator/cluster_snapshot.h"
#include "operator/renderer.h"

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
    dirty_ = true;
  }
  wake_.notify_all();
}

void Controller::run() {
  std::chrono::milliseconds wait = options_.resync;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, wait, [this] { return stopping_ || dirty_; });
      if (stopping_) return;
      // Debounce: let the rest of a burst of changes arrive before rendering once.
      if (wake_.wait_for(lock, options_.debounce, [this] { return stopping_; })) return;
      dirty_ = false;
    }
    if (!cluster_.synced()) {  // the first lists are not all in; their arrival marks us dirty
      wait = options_.resync;
      continue;
    }
    wait = reconcile() ? options_.resync : options_.retry;
  }
}

bool Controller::reconcile() {
  bool leading;
  bool gained;
  {
    std::lock_guard lock(mutex_);
    leading = leading_;
    gained = leadershipGained_;
    leadershipGained_ = false;
  }
  RenderOptions renderOptions = options_.render;
  renderOptions.transitionTime = utcNowRfc3339();
  const ClusterSnapshot snapshot = ClusterSnapshot::fromObjects(cluster_.snapshot());
  const RenderResult result = render(snapshot, renderOptions);
  for (const std::string& problem : result.problems) logger()->warn("render: {}", problem);

  const int64_t nowUnix = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  const ConfigPublisher::Outcome published = publisher_.publish(result.gateways, nowUnix);
  for (const std::string& problem : published.problems) logger()->error("{}", problem);

  bool ok = true;
  OwnedObjectApplier::Outcome applied;
  StatusWriter::Outcome statuses;
  if (leading) {
    if (gained) applier_.forget();
    applied = applier_.apply(result.gateways);
    statuses = statusWriter_.write(result.statuses);
    ok = applied.failed == 0 && statuses.failed == 0;
  }
  logger()->debug(
      "reconciled: {} gateways, {} configs served ({} rejected); {} objects applied, {} deleted, "
      "{} failed; {} statuses written, {} failed{}",
      result.gateways.size(), published.served, published.rejected, applied.applied,
      applied.deleted, applied.failed, statuses.written, statuses.failed,
      leading ? "" : " (not the leader: no writes)");
  std::lock_guard lock(mutex_);
  ++stats_.reconciles;
  stats_.applied += applied.applied;
  stats_.deleted += applied.deleted;
  stats_.statusesWritten += statuses.written;
  stats_.writesFailed += applied.failed + statuses.failed;
  stats_.configsRejected += published.rejected;
  stats_.gateways = result.gateways.size();
  stats_.configsServed = published.served;
  return ok;
}

}  // namespace kturn::op
