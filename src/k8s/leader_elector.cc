#include "k8s/leader_elector.h"

#include <ctime>

#include "common/log.h"

namespace kturn::k8s {

namespace {

std::shared_ptr<spdlog::logger> logger() { return log::scope("k8s"); }

}  // namespace

std::string microTimeNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%06lldZ", static_cast<long long>(micros));
  return buf;
}

LeaderElector::LeaderElector(ApiClient& client, LeaderElectionOptions options,
                             std::function<void(bool)> onChange)
    : client_(client), options_(std::move(options)), onChange_(std::move(onChange)) {}

LeaderElector::~LeaderElector() { stop(); }

void LeaderElector::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { run(); });
}

void LeaderElector::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LeaderElector::setLeading(bool leading) {
  if (leading_.exchange(leading) == leading) return;
  logger()->info("leader election {}/{}: {} {}", options_.ns, options_.name, options_.identity,
                 leading ? "started leading" : "stopped leading");
  if (onChange_) onChange_(leading);
}

void LeaderElector::run() {
  for (;;) {
    const bool held = tryAcquireOrRenew();
    const auto now = std::chrono::steady_clock::now();
    if (held) {
      renewedAt_ = now;
      setLeading(true);
    } else if (leading_ && now - renewedAt_ > options_.renewDeadline) {
      setLeading(false);
    } else if (!leading_) {
      setLeading(false);
    }
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, options_.retryPeriod, [this] { return stopping_; })) break;
  }
  if (leading_ && options_.releaseOnStop) release();
  setLeading(false);
}

Json LeaderElector::leaseBody(const Json& previous, bool takeover) const {
  Json lease = previous;
  const std::string now = microTimeNow();
  Json& spec = lease["spec"];
  if (!spec.is_object()) spec = Json::object();
  spec["holderIdentity"] = options_.identity;
  spec["leaseDurationSeconds"] =
      std::chrono::duration_cast<std::chrono::seconds>(options_.leaseDuration).count();
  spec["renewTime"] = now;
  if (takeover) {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + (previous.empty() ? 0 : 1);
  }
  return lease;
}

bool LeaderElector::tryAcquireOrRenew() {
  const ResourceType type = resources::lease();
  Result<ApiResponse> got = client_.get(type, options_.ns, options_.name);
  if (!got) {
    logger()->warn("leader election: get lease: {}", got.error().message);
    return false;
  }
  if (got->status == 404) {
    Json lease = leaseBody(Json(), true);
    lease["apiVersion"] = type.apiVersion();
    lease["kind"] = type.kind;
    lease["metadata"] = {{"name", options_.name}, {"namespace", options_.ns}};
    Result<ApiResponse> created = client_.create(type, lease);
    if (!created || !created->ok()) {
      logger()->info("leader election: create lease: {}",
                     created ? created->describe() : created.error().message);
      return false;
    }
    observedRecord_ = created->body["spec"].dump();
    observedAt_ = std::chrono::steady_clock::now();
    return true;
  }
  if (!got->ok() || !got->body.is_object()) {
    logger()->warn("leader election: get lease: {}", got->describe());
    return false;
  }
  const Json spec = got->body.value("spec", Json::object());
  const std::string holder = spec.is_object() ? spec.value("holderIdentity", "") : "";
  const std::string record = spec.dump();
  const auto now = std::chrono::steady_clock::now();
  if (record != observedRecord_) {
    observedRecord_ = record;
    observedAt_ = now;
  }
  const int64_t durationSeconds = spec.is_object() ? spec.value("leaseDurationSeconds", 0) : 0;
  const bool expired = now - observedAt_ > std::chrono::seconds(durationSeconds);
  if (!holder.empty() && holder != options_.identity && !expired) return false;

  // The resourceVersion read above travels in metadata: a concurrent writer makes this a 409.
  Result<ApiResponse> updated =
      client_.update(type, leaseBody(got->body, holder != options_.identity));
  if (!updated || !updated->ok()) {
    logger()->info("leader election: update lease: {}",
                   updated ? updated->describe() : updated.error().message);
    return false;
  }
  observedRecord_ = updated->body.value("spec", Json::object()).dump();
  observedAt_ = now;
  return true;
}

void LeaderElector::release() {
  const ResourceType type = resources::lease();
  Result<ApiResponse> got = client_.get(type, options_.ns, options_.name);
  if (!got || !got->ok()) return;
  Json lease = got->body;
  if (lease["spec"].value("holderIdentity", "") != options_.identity) return;
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["leaseDurationSeconds"] = 1;
  lease["spec"]["renewTime"] = microTimeNow();
  Result<ApiResponse> updated = client_.update(type, lease);
  if (updated && updated->ok()) logger()->info("leader election: released the lease");
}

}  // namespace kturn::k8s
