#include "daemon/daemon.h"

#include <netdb.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <future>

#include "admin/health_handlers.h"
#include "admin/http_endpoint.h"
#include "admin/metrics_handler.h"
#include "admin/stunner_status.h"
#include "config/serializer.h"
#include "daemon/metrics.h"

namespace kturn::daemon {
namespace {

std::vector<IpAddress> resolve(const std::string& host) {
  std::vector<IpAddress> out;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* result = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0) return out;
  for (addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(ai->ai_addr);
      out.push_back(IpAddress::fromBytes(AddressFamily::kIPv4,
                                         {reinterpret_cast<const uint8_t*>(&sin->sin_addr), 4}));
    } else if (ai->ai_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(ai->ai_addr);
      out.push_back(IpAddress::fromBytes(AddressFamily::kIPv6,
                                         {reinterpret_cast<const uint8_t*>(&sin6->sin6_addr), 16}));
    }
  }
  ::freeaddrinfo(result);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

Daemon::Daemon(Options options) : options_(std::move(options)) {
  if (options_.workers == 0) options_.workers = std::max(1u, std::thread::hardware_concurrency());
}

Daemon::~Daemon() { stop(); }

Result<void> Daemon::start() {
  auto loaded = loadConfig(options_.origin);
  if (!loaded) return loaded.error();
  loaded_ = std::move(*loaded);
  for (const std::string& host : DataplaneBuilder::dnsHosts(loaded_.config)) {
    dns_[host] = resolve(host);
  }
  auto dataplane = builder_.build(loaded_.config, dns_);
  if (!dataplane) return dataplane.error();
  dataplane_ = *dataplane;
  if (dataplane_->listeners.empty()) {
    return makeError(Error::Code::kInvalidArgument, "no TURN-UDP listener to serve");
  }
  health_.setForceReady(options_.force_ready);
  if (auto admin = startAdmin(); !admin) return admin;
  for (size_t i = 0; i < options_.workers; ++i) {
    Worker::Options wo;
    wo.index = i;
    wo.session_log = options_.session_log;
    auto worker = std::make_unique<Worker>(wo, dataplane_, reservations_);
    if (auto bound = worker->bindListeners(); !bound) return bound;
    workers_.push_back(std::move(worker));
  }
  for (auto& w : workers_) w->start();
  health_.setReady();
  if (options_.watch && isReloadable(options_.origin)) {
    const std::string path =
        options_.origin.rfind("file://", 0) == 0 ? options_.origin.substr(7) : options_.origin;
    watcher_ = std::make_unique<FileWatcher>(path, [this] { reload(); });
    if (auto watching = watcher_->start(); !watching) return watching;
    spdlog::info("watching {} for changes", path);
  }
  dns_thread_ = std::thread([this] { dnsLoop(); });
  for (const ListenerSpec& l : dataplane_->listeners) {
    spdlog::info("listener {}: TURN-UDP on {} ({} workers)", l.name, l.address.toString(),
                 workers_.size());
  }
  return {};
}

uint16_t Daemon::metricsPort() const {
  if (metrics_server_) return metrics_server_->port();
  return loaded_.config.admin.metrics_endpoint.empty() ? 0 : healthPort();
}

Result<void> Daemon::startAdmin() {
  const config::Admin& a = loaded_.config.admin;
  auto health =
      admin::parseHttpEndpoint(a.healthcheck_endpoint.value_or(""), admin::kDefaultHealthCheckPort);
  if (!health)
    return makeError(health.error().code, "admin.healthcheck_endpoint: " + health.error().message);
  auto metrics = admin::parseHttpEndpoint(a.metrics_endpoint, admin::kDefaultMetricsPort);
  if (!metrics)
    return makeError(metrics.error().code, "admin.metrics_endpoint: " + metrics.error().message);

  auto collect = [this] {
    const WorkerStats stats = collectStats();
    std::lock_guard lock(mutex_);
    return buildMetrics(stats, *dataplane_);
  };
  if (*health) {
    health_server_ = std::make_unique<admin::AdminServer>(**health);
    admin::registerHealthRoutes(*health_server_, health_, [this] { return statusDocument(); });
  }
  if (*metrics) {
    if (health_server_ && (*metrics)->hostPort() == (*health)->hostPort()) {
      health_server_->handle((*metrics)->path, admin::metricsHandler(collect));
    } else {
      metrics_server_ = std::make_unique<admin::AdminServer>(**metrics);
      metrics_server_->handle((*metrics)->path, admin::metricsHandler(collect));
    }
  }
  for (auto* server : {health_server_.get(), metrics_server_.get()}) {
    if (server == nullptr) continue;
    if (auto started = server->start(); !started) return started;
    spdlog::info("admin server on port {}", server->port());
  }
  return {};
}

nlohmann::json Daemon::statusDocument() {
  const WorkerStats stats = collectStats();
  std::lock_guard lock(mutex_);
  admin::StatusDocument doc;
  const auto config_json = nlohmann::json::parse(config::toJson(loaded_.config));
  doc.version = config_json.value("version", "v1");
  doc.admin = config_json.value("admin", nlohmann::json::object());
  doc.auth = config_json.value("auth", nlohmann::json::object());
  // Never publish credentials on a status page.
  if (doc.auth.contains("credentials")) doc.auth.erase("credentials");
  const auto& listeners = config_json.value("listeners", nlohmann::json::array());
  for (const auto& l : listeners) {
    admin::TrafficStats traffic;
    for (const ListenerSpec& spec : dataplane_->listeners) {
      if (spec.name != l.value("name", "") || spec.id >= stats.traffic.size()) continue;
      const ListenerTraffic& t = stats.traffic[spec.id];
      traffic.rx = {t.rx_packets, t.rx_bytes, 0};
      traffic.tx = {t.tx_packets, t.tx_bytes, 0};
    }
    nlohmann::json entry = l;
    entry.erase("cert");
    entry.erase("key");
    doc.listeners.push_back(admin::withStats(entry, traffic));
  }
  doc.clusters = config_json.value("clusters", nlohmann::json::array());
  doc.allocation_count = static_cast<int64_t>(stats.allocations);
  doc.status = health_.status();
  return admin::toJson(doc);
}

void Daemon::waitForSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (sig == SIGHUP) {
      reload();
      continue;
    }
    if (sig == SIGTERM) {
      drain(set);
      return;
    }
    spdlog::info("signal {}: shutting down", sig);
    return;
  }
}

void Daemon::drain(const sigset_t& signals) {
  health_.setTerminating();
  const auto deadline = std::chrono::steady_clock::now() + options_.grace_period;
  spdlog::info(
      "SIGTERM: draining; /ready fails, allocations are served until they end (at most "
      "{} s)",
      options_.grace_period.count());
  for (;;) {
    const uint64_t allocations = collectStats().allocations;
    if (allocations == 0) {
      spdlog::info("drained: no allocation left");
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      spdlog::warn("grace period over with {} allocations left", allocations);
      return;
    }
    const timespec tick{1, 0};
    const int sig = sigtimedwait(&signals, nullptr, &tick);
    if (sig == SIGHUP) {
      reload();
    } else if (sig == SIGTERM || sig == SIGINT) {
      spdlog::warn("signal {} while draining: stopping now with {} allocations", sig, allocations);
      return;
    }
  }
}

void Daemon::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  dns_wakeup_.notify_all();
  if (watcher_) watcher_->stop();
  if (dns_thread_.joinable()) dns_thread_.join();
  for (auto& w : workers_) w->stop();
  if (metrics_server_) metrics_server_->stop();
  if (health_server_) health_server_->stop();
}

void Daemon::reload() {
  std::lock_guard reloading(reload_mutex_);
  if (!isReloadable(options_.origin)) {
    spdlog::warn("SIGHUP: the config origin is not a file; nothing to reload");
    return;
  }
  auto loaded = loadConfig(options_.origin);
  if (!loaded) {
    spdlog::error("config rejected, keeping the running one: {}", loaded.error().message);
    return;
  }
  std::lock_guard lock(mutex_);
  auto dataplane = builder_.build(loaded->config, dns_);
  if (!dataplane) {
    spdlog::error("config rejected, keeping the running one: {}", dataplane.error().message);
    return;
  }
  // Listener sockets are bound at start; adding, moving or removing listeners live comes with
  // the operations issue. Everything else (routes, endpoints, credentials, realm) applies now.
  bool same_listeners = (*dataplane)->listeners.size() == dataplane_->listeners.size();
  for (size_t i = 0; same_listeners && i < dataplane_->listeners.size(); ++i) {
    same_listeners = (*dataplane)->listeners[i].address == dataplane_->listeners[i].address &&
                     (*dataplane)->listeners[i].id == dataplane_->listeners[i].id;
  }
  if (!same_listeners) {
    spdlog::error(
        "config rejected, keeping the running one: listener set changed (restart "
        "kturnd to add, move or remove listeners)");
    return;
  }
  loaded_ = std::move(*loaded);
  dataplane_ = *dataplane;
  applyToWorkers();
  spdlog::info("config reloaded from {}", loaded_.description);
}

void Daemon::applyToWorkers() {
  for (auto& w : workers_) w->applyDataplane(dataplane_);
}

void Daemon::dnsLoop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    dns_wakeup_.wait_for(lock, options_.dns_interval, [this] { return stopping_; });
    if (stopping_) return;
    const auto hosts = DataplaneBuilder::dnsHosts(loaded_.config);
    if (hosts.empty()) continue;
    lock.unlock();
    DnsCache fresh;
    for (const std::string& host : hosts) fresh[host] = resolve(host);
    lock.lock();
    if (fresh == dns_) continue;
    dns_ = std::move(fresh);
    if (auto dataplane = builder_.build(loaded_.config, dns_)) {
      dataplane_ = *dataplane;
      applyToWorkers();
      spdlog::info("STRICT_DNS endpoints changed; routes updated");
    }
  }
}

WorkerStats Daemon::collectStats() {
  WorkerStats total;
  for (auto& w : workers_) {
    std::promise<WorkerStats> p;
    auto f = p.get_future();
    w->collectStats([&p](const WorkerStats& s) { p.set_value(s); });
    if (f.wait_for(std::chrono::seconds(2)) != std::future_status::ready) continue;
    const WorkerStats s = f.get();
    total.turn += s.turn;
    if (total.turn_by_listener.size() < s.turn_by_listener.size()) {
      total.turn_by_listener.resize(s.turn_by_listener.size());
    }
    for (size_t i = 0; i < s.turn_by_listener.size(); ++i) {
      total.turn_by_listener[i] += s.turn_by_listener[i];
    }
    if (total.traffic.size() < s.traffic.size()) total.traffic.resize(s.traffic.size());
    for (size_t i = 0; i < s.traffic.size(); ++i) total.traffic[i] += s.traffic[i];
    total.allocations += s.allocations;
    total.datagrams_received += s.datagrams_received;
    total.datagrams_truncated += s.datagrams_truncated;
    total.datagrams_sent += s.datagrams_sent;
    total.send_dropped += s.send_dropped;
    total.send_syscalls += s.send_syscalls;
    total.receive_syscalls += s.receive_syscalls;
  }
  return total;
}

}  // namespace kturn::daemon
