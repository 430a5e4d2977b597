#include "daemon/daemon.h"

#include <netdb.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <future>

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
  for (size_t i = 0; i < options_.workers; ++i) {
    Worker::Options wo;
    wo.index = i;
    auto worker = std::make_unique<Worker>(wo, dataplane_, reservations_);
    if (auto bound = worker->bindListeners(); !bound) return bound;
    workers_.push_back(std::move(worker));
  }
  for (auto& w : workers_) w->start();
  dns_thread_ = std::thread([this] { dnsLoop(); });
  for (const ListenerSpec& l : dataplane_->listeners) {
    spdlog::info("listener {}: TURN-UDP on {} ({} workers)", l.name, l.address.toString(),
                 workers_.size());
  }
  return {};
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
    spdlog::info("signal {}: shutting down", sig);
    return;
  }
}

void Daemon::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  dns_wakeup_.notify_all();
  if (dns_thread_.joinable()) dns_thread_.join();
  for (auto& w : workers_) w->stop();
}

void Daemon::reload() {
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
