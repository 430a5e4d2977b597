#include "daemon/daemon.h"

#include <netdb.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <future>
#include <map>
#include <set>
#include <tuple>

#include "admin/health_handlers.h"
#include "admin/http_endpoint.h"
#include "admin/metrics_handler.h"
#include "admin/stunner_status.h"
#include "common/bearer_token.h"
#include "common/crypto.h"
#include "common/log.h"
#include "config/serializer.h"
#include "config/validator.h"
#include "daemon/metrics.h"
#include "net/port_probe.h"

namespace kturn::daemon {
namespace {

// Relayed addresses the shared relay sockets hold at once (the lookup's map allocates an entry
// per address held, not up front).
constexpr uint32_t kSharedRelayAddresses = KTURN_RELAY_LOOKUP_DEFAULT_PORTS;

// Whether a listener needs new sockets: another bind address, or another transport (TCP and TLS are
// both TCP sockets, but a plain connection cannot become a TLS one). A new certificate alone
// does not: the running listener takes the new context.
bool movedOrChanged(const worker::ListenerSpec& before, const worker::ListenerSpec& now) {
  return before.bind != now.bind || before.protocol != now.protocol ||
         (before.tls == nullptr) != (now.tls == nullptr);
}

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
  // A CONNECTION-ID names its worker in one byte (RFC 6062 hand-off between workers).
  options_.workers = std::min<size_t>(options_.workers, kMaxWorkers);
  builder_ = DataplaneBuilder(options_.workers);
  builder_.setLifetimes(options_.permission_lifetime, options_.channel_lifetime);
  auto& key = options_.session_log.user_key;
  if (std::all_of(key.begin(), key.end(), [](uint8_t b) { return b == 0; })) {
    crypto::randomBytes(key);
  }
}

Daemon::~Daemon() { stop(); }

Result<void> Daemon::start() {
  health_.setForceReady(options_.force_ready);
  health_.setReadyWhileDraining(options_.ready_while_draining);
  // Workers start with no listener; apply() hands each its sockets.
  auto empty = std::make_shared<worker::ConfigSnapshot>();
  empty->turn = std::make_shared<turn::ServerConfig>();
  dataplane_ = empty;
  if (options_.shared_relay_sockets) {
    // The workers send from the relayed addresses through raw sockets: see that one opens
    // before the lookup is attached, so that /status never says shared where workers cannot.
    auto raw = net::RawUdpSender::open(1);
    auto opened = raw ? worker::SharedRelayPorts::open(kSharedRelayAddresses)
                      : Result<std::unique_ptr<worker::SharedRelayPorts>>(raw.error());
    if (opened) {
      shared_relays_ = std::move(*opened);
      reservations_.setOnExpired(
          [ports = shared_relays_.get()](const TransportAddress& a) { ports->release(a); });
      spdlog::info(
          "relay sockets: shared (one socket per worker and family, up to {} relayed "
          "addresses)",
          kSharedRelayAddresses);
    } else {
      spdlog::warn("relay sockets: {}; a socket per allocation", opened.error().message);
    }
  }
  // One nonce key and one MOBILITY-TICKET key for every worker: a client's new address may
  // reach another worker than the one its nonce and ticket came from.
  std::array<uint8_t, 32> nonce_key;
  std::array<uint8_t, 32> mobility_key;
  crypto::randomBytes(nonce_key);
  crypto::randomBytes(mobility_key);
  for (size_t i = 0; i < options_.workers; ++i) {
    worker::Worker::Options wo;
    wo.nonce_key = nonce_key;
    wo.mobility_key = mobility_key;
    wo.shared_relays = shared_relays_.get();
    wo.index = i;
    wo.session_log = options_.session_log;
    wo.udp_segmentation = options_.udp_segmentation;
    wo.user_quota = &user_quota_;
    wo.over_capacity = &health_.overCapacityFlag();
    workers_.push_back(std::make_unique<worker::Worker>(wo, dataplane_, reservations_));
  }
  std::vector<worker::Worker*> siblings;
  for (auto& w : workers_) siblings.push_back(w.get());
  for (auto& w : workers_) w->setSiblings(siblings);
  for (auto& w : workers_) w->start();

  if (cds::isCdsOrigin(options_.origin)) {
    if (auto started = startCds(); !started) return started;
  } else {
    auto loaded = config::loadConfig(options_.origin);
    if (!loaded) return loaded.error();
    if (loaded->config.listeners.empty() && !options_.watch) {
      return makeError(Error::Code::kInvalidArgument,
                       loaded->description + ": no TURN-UDP or TURN-TCP listener to serve");
    }
    std::lock_guard reloading(reload_mutex_);
    // A taken admin port fails the start before any listener is bound; apply() then finds
    // the admin servers already running.
    if (auto admin = reconcileAdmin(loaded->config.admin); !admin) return admin;
    if (auto applied = apply(std::move(*loaded)); !applied) return applied;
  }
  if (!options_.watch && dataplane_->listeners.empty() && !faults_.empty()) {
    // A config that cannot change again (no -w) and serves nothing: say why and stop.
    std::string why;
    for (const Fault& f : faults_) why += (why.empty() ? "" : "; ") + f.fault.error;
    return makeError(Error::Code::kIo, "no listener could be opened: " + why);
  }
  if (options_.watch && config::isReloadable(options_.origin)) {
    const std::string path =
        options_.origin.rfind("file://", 0) == 0 ? options_.origin.substr(7) : options_.origin;
    watcher_ = std::make_unique<net::FileWatcher>(path, [this] { reloadAndLog(); });
    if (auto watching = watcher_->start(); !watching) return watching;
    spdlog::info("watching {} for changes", path);
  }
  dns_thread_ = std::thread([this] { dnsLoop(); });
  capacity_thread_ = std::thread([this] { capacityLoop(); });
  return {};
}

Result<void> Daemon::startCds() {
  cds::CdsClientOptions co;
  co.origin = options_.origin;
  co.id = options_.cds_id;
  co.node = options_.cds_node;
  co.bearer_token_file = options_.cds_token_file;
  co.tls_ca_file = options_.cds_ca_file;
  co.tls_ca_pem = options_.cds_ca_pem;
  auto client = cds::CdsClient::create(co);
  if (!client)
    return makeError(client.error().code, options_.origin + ": " + client.error().message);
  cds_ = std::move(*client);
  const std::string description = "CDS " + options_.origin + " " + options_.cds_id;
  std::lock_guard reloading(reload_mutex_);
  if (!options_.watch) {
    auto config = cds_->get();
    if (!config) return makeError(config.error().code, description + ": " + config.error().message);
    return apply(config::LoadedConfig{std::move(*config), description});
  }
  // Like stunnerd -w: serve the admin endpoints (not ready) until the first config arrives,
  // then apply every config the server pushes. While the server is away the running config stays.
  // A taken health port is not fatal here: the first config may name another one.
  if (auto admin = reconcileAdmin(cds::zeroConfig(options_.cds_id).admin); !admin) {
    spdlog::error("admin endpoints: {}", admin.error().message);
  }
  auto failing = std::make_shared<bool>(false);
  cds::WatchCallbacks callbacks;
  callbacks.on_config = [this, description, failing](config::StunnerConfig config) {
    *failing = false;
    std::lock_guard reloading(reload_mutex_);
    if (auto applied = apply(config::LoadedConfig{std::move(config), description}); !applied) {
      spdlog::error("config rejected, keeping the running one: {}", applied.error().message);
    }
  };
  callbacks.on_error = [failing](const Error& e) {
    // The client retries every second; say it once per outage, not once per attempt.
    if (*failing) return;
    *failing = true;
    spdlog::warn("config discovery: {} (retrying; the running config stays)", e.message);
  };
  callbacks.on_delete_suppressed = [description] {
    spdlog::info(
        "{}: the server deleted this config (zero config); serving the running one until "
        "this process ends, as stunnerd does",
        description);
  };
  spdlog::info("watching {} for configs", description);
  return cds_->watch(std::move(callbacks));
}

config::LoadedConfig Daemon::loaded() const {
  std::lock_guard lock(mutex_);
  return loaded_;
}

std::vector<Daemon::Fault> Daemon::faults() const {
  std::lock_guard lock(mutex_);
  return faults_;
}

Result<void> Daemon::reconcileAdmin(const config::Admin& a) {
  if (admin_started_ && a.healthcheck_endpoint == health_endpoint_ &&
      a.metrics_endpoint == metrics_endpoint_) {
    return {};
  }
  auto health =
      admin::parseHttpEndpoint(a.healthcheck_endpoint.value_or(""), admin::kDefaultHealthCheckPort);
  if (!health)
    return makeError(health.error().code, "admin.healthcheck_endpoint: " + health.error().message);
  auto metrics = admin::parseHttpEndpoint(a.metrics_endpoint, admin::kDefaultMetricsPort);
  if (!metrics)
    return makeError(metrics.error().code, "admin.metrics_endpoint: " + metrics.error().message);
  // Probes see a refused connection for the moment between the old server and the new one.
  stopAdmin();
  admin_started_ = true;
  health_endpoint_ = a.healthcheck_endpoint;
  metrics_endpoint_ = a.metrics_endpoint;

  auto collect = [this] {
    const worker::WorkerStats stats = collectStats();
    std::lock_guard lock(mutex_);
    std::vector<config::ConfigFault> faults;
    for (const Fault& f : faults_) faults.push_back(f.fault);
    return buildMetrics(stats, *dataplane_, capacity_.report(), faults);
  };
  // An endpoint that names no host: the admin address (and loopback, below) if one is set.
  const bool pinned = !options_.admin_address.empty();
  for (auto* endpoint : {&*health, &*metrics}) {
    if (*endpoint && (*endpoint)->host_omitted && pinned)
      (*endpoint)->host = options_.admin_address;
  }
  auto statusToken =
      options_.status_token_file.empty() && options_.status_token.empty()
          ? nullptr
          : std::make_shared<BearerToken>(options_.status_token, options_.status_token_file);
  if (statusToken && statusToken->current().empty()) {
    return makeError(Error::Code::kInvalidArgument, "--status-token-file " +
                                                        options_.status_token_file +
                                                        ": cannot be read, or holds no token");
  }
  // The routes of one endpoint (health, metrics or both), on `server`.
  auto addRoutes = [&](admin::AdminServer& server, bool withHealth, bool withMetrics) {
    if (withHealth) {
      admin::registerHealthRoutes(
          server, health_, [this] { return statusDocument(); }, statusToken);
      server.handle("/capacity", admin::capacityHandler(capacity_));
    }
    if (withMetrics) server.handle((*metrics)->path, admin::metricsHandler(collect));
  };
  const bool shared = *health && *metrics && (*metrics)->hostPort() == (*health)->hostPort();
  if (*health) {
    health_server_ = std::make_unique<admin::AdminServer>(**health);
    addRoutes(*health_server_, true, shared);
  }
  if (*metrics && !shared) {
    metrics_server_ = std::make_unique<admin::AdminServer>(**metrics);
    addRoutes(*metrics_server_, false, true);
  }
  // The loopback twins, for kubectl port-forward (which connects to the pod's 127.0.0.1).
  if (pinned) {
    const bool v6 = options_.admin_address.find(':') != std::string::npos;
    const std::string loopback = v6 ? "::1" : "127.0.0.1";
    for (auto [endpoint, withHealth, withMetrics] :
         {std::tuple{&*health, true, shared}, std::tuple{&*metrics, false, !shared}}) {
      if (!*endpoint || !(*endpoint)->host_omitted || !(withHealth || withMetrics)) continue;
      if (options_.admin_address == loopback) continue;
      admin::HttpEndpoint twin = **endpoint;
      twin.host = loopback;
      auto& server =
          loopback_admin_servers_.emplace_back(std::make_unique<admin::AdminServer>(twin));
      addRoutes(*server, withHealth, withMetrics);
    }
  }
  std::vector<admin::AdminServer*> servers = {health_server_.get(), metrics_server_.get()};
  for (auto& twin : loopback_admin_servers_) servers.push_back(twin.get());
  for (auto* server : servers) {
    if (server == nullptr) continue;
    if (auto started = server->start(); !started) {
      stopAdmin();
      admin_started_ = false;  // the next config tries again
      return started;
    }
  }
  return {};
}

void Daemon::stopAdmin() {
  for (auto& twin : loopback_admin_servers_) twin->stop();
  loopback_admin_servers_.clear();
  if (metrics_server_) metrics_server_->stop();
  if (health_server_) health_server_->stop();
  metrics_server_.reset();
  health_server_.reset();
}

nlohmann::json Daemon::statusDocument() {
  const worker::WorkerStats stats = collectStats();
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
    for (const worker::ListenerSpec& spec : dataplane_->listeners) {
      if (spec.name != l.value("name", "") || spec.id >= stats.traffic.size()) continue;
      const worker::ListenerTraffic& t = stats.traffic[spec.id];
      traffic.rx = {t.rx_packets, t.rx_bytes, 0};
      traffic.tx = {t.tx_packets, t.tx_bytes, 0};
    }
    nlohmann::json entry = l;
    entry.erase("cert");
    entry.erase("key");
    doc.listeners.push_back(admin::withStats(entry, traffic));
  }
  const auto& cluster_names = dataplane_->turn->cluster_names;
  for (const auto& c : config_json.value("clusters", nlohmann::json::array())) {
    admin::TrafficStats traffic;
    for (size_t id = 1; id < cluster_names.size() && id < stats.clusters.size(); ++id) {
      if (cluster_names[id] != c.value("name", "")) continue;
      const turn::TrafficCounters& t = stats.clusters[id];
      traffic.rx = {t.rx_packets, t.rx_bytes, 0};
      traffic.tx = {t.tx_packets, t.tx_bytes, 0};
    }
    doc.clusters.push_back(admin::withStats(c, traffic));
  }
  if (const auto engine = xdp::parseEngine(loaded_.config.admin.offload_engine);
      engine && *engine != xdp::Engine::kNone) {
    // kturn's own, beside STUNner's admin fields: where the kernel path is and why it is idle.
    doc.admin["offload_status"] = {{"attached", offload_.describe()},
                                   {"problems", offload_.problems()}};
    // Sources dropped in the kernel for failing authentication (admin.limits.block_seconds).
    nlohmann::json blocked = nlohmann::json::array();
    for (const OffloadManager::BlockedSource& b : offload_.blockedSources()) {
      blocked.push_back({{"address", b.address.toString()},
                         {"port", b.port},
                         {"expires_in_seconds", b.expires_in_seconds},
                         {"dropped", b.dropped}});
    }
    doc.admin["blocked_sources"] = std::move(blocked);
  }
  if (shared_relays_) {
    // kturn's own too: relayed addresses held without a socket each (--relay-sockets shared).
    doc.admin["relay_sockets"] = {{"mode", "shared"},
                                  {"shared_addresses", shared_relays_->inUse()}};
  }
  doc.allocation_count = static_cast<int64_t>(stats.allocations);
  doc.status = health_.status();
  nlohmann::json out = admin::toJson(doc);
  // kturn's own: what of the last config does not run as it says, and why.
  nlohmann::json faults = nlohmann::json::array();
  for (const Fault& f : faults_) {
    faults.push_back({{"kind", f.fault.kind},
                      {"name", f.fault.name},
                      {"error", f.fault.error},
                      {"running", f.kept ? "previous" : "none"}});
  }
  out["faults"] = std::move(faults);
  return out;
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
      reloadAndLog();
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
  // As stunnerd: no new config while draining (a Gateway deleted mid-drain must not close the
  // listeners that still carry calls).
  if (cds_) cds_->stop();
  const auto deadline = std::chrono::steady_clock::now() + options_.grace_period;
  spdlog::info("SIGTERM: draining; /ready {}, allocations are served until they end (at most {} s)",
               options_.ready_while_draining || options_.force_ready ? "stays 200" : "fails",
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
      reloadAndLog();
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
  wakeup_.notify_all();
  if (cds_) cds_->stop();
  if (watcher_) watcher_->stop();
  if (dns_thread_.joinable()) dns_thread_.join();
  if (capacity_thread_.joinable()) capacity_thread_.join();
  for (auto& w : workers_) w->stop();
  std::lock_guard reloading(reload_mutex_);
  stopAdmin();
}

Result<void> Daemon::reload() {
  std::lock_guard reloading(reload_mutex_);
  Result<config::LoadedConfig> loaded = makeError(Error::Code::kUnsupported, "");
  if (cds_) {
    auto config = cds_->get();
    if (!config)
      return makeError(config.error().code, "config discovery: " + config.error().message);
    loaded =
        config::LoadedConfig{std::move(*config), "CDS " + options_.origin + " " + options_.cds_id};
  } else if (config::isReloadable(options_.origin)) {
    loaded = config::loadConfig(options_.origin);
  } else {
    return makeError(Error::Code::kUnsupported,
                     "the config origin is neither a file nor a CDS server; nothing to reload");
  }
  if (!loaded) return loaded.error();
  return apply(std::move(*loaded));
}

void Daemon::reloadAndLog() {
  if (auto reloaded = reload(); !reloaded) {
    spdlog::error("config rejected, keeping the running one: {}", reloaded.error().message);
  }
}

Result<void> Daemon::apply(config::LoadedConfig loaded) {
  // What is wrong for the whole config rejects it; a bad listener or cluster costs only itself.
  auto isolated = config::validateIsolating(loaded.config);
  if (!isolated) {
    return makeError(isolated.error().code, loaded.description + ": " + isolated.error().message);
  }
  std::vector<config::ConfigFault> faults = std::move(*isolated);
  // Resolve STRICT_DNS hosts the resolver thread has not seen yet, so that a new cluster admits
  // its peers at once instead of at the next resolver round.
  DnsCache fresh;
  {
    std::lock_guard lock(mutex_);
    for (const std::string& host : DataplaneBuilder::dnsHosts(loaded.config)) {
      if (!dns_.contains(host)) fresh[host];
    }
  }
  for (auto& [host, addresses] : fresh) addresses = resolve(host);
  std::unique_lock lock(mutex_);
  dns_.merge(fresh);

  // A listener or cluster of the new config that failed and has a running version keeps that
  // version: its clients and allocations stay, as when a whole config was rejected. One that has
  // none is left out.
  std::set<std::string> restored;
  auto restore = [](auto& items, const auto& running, const std::string& name) {
    std::erase_if(items, [&](const auto& item) { return item.name == name; });
    for (const auto& item : running) {
      if (item.name != name) continue;
      items.push_back(item);
      return true;
    }
    return false;
  };
  auto named = [](const auto& items, const std::string& name) {
    return std::any_of(items.begin(), items.end(), [&](const auto& i) { return i.name == name; });
  };
  for (config::ConfigFault& f : faults) {
    // (A repeated name is served by its first, valid, holder.)
    const bool kept = f.kind == "listener"
                          ? !named(loaded.config.listeners, f.name) &&
                                restore(loaded.config.listeners, loaded_.config.listeners, f.name)
                          : !named(loaded.config.clusters, f.name) &&
                                restore(loaded.config.clusters, loaded_.config.clusters, f.name);
    if (kept) restored.insert(f.kind + "/" + f.name);
  }

  // Build, then bind what is new. A listener that cannot be built or bound is taken out (or
  // back to its running version) and the rest built again: at most once per listener, as a
  // restored listener is one that built and bound before.
  using PerWorker = std::vector<worker::Worker::BoundListener>;
  std::map<turn::ListenerId, PerWorker> bound;
  worker::ConfigSnapshotPtr next;
  std::vector<turn::ListenerId> removed;
  const size_t rounds = loaded.config.listeners.size() + 1;
  for (size_t round = 0; round < rounds; ++round) {
    std::vector<config::ConfigFault> failed;
    auto built = builder_.build(loaded.config, dns_, &failed);
    if (!built)
      return makeError(built.error().code, loaded.description + ": " + built.error().message);
    next = *built;

    // The listener diff, by id (stable per name): a listener whose address changed is closed
    // and opened again; one whose address stayed keeps its sockets and its allocations.
    removed.clear();
    std::vector<const worker::ListenerSpec*> added;
    auto find = [](const worker::ConfigSnapshot& d,
                   turn::ListenerId id) -> const worker::ListenerSpec* {
      for (const worker::ListenerSpec& l : d.listeners) {
        if (l.id == id) return &l;
      }
      return nullptr;
    };
    for (const worker::ListenerSpec& old : dataplane_->listeners) {
      const worker::ListenerSpec* now = find(*next, old.id);
      if (now == nullptr || movedOrChanged(old, *now)) removed.push_back(old.id);
    }
    for (const worker::ListenerSpec& l : next->listeners) {
      const worker::ListenerSpec* before = find(*dataplane_, l.id);
      if (before == nullptr || movedOrChanged(*before, l)) added.push_back(&l);
    }
    // Sockets bound in an earlier round for the same address stay; others close.
    std::erase_if(bound, [&](const auto& entry) {
      return std::none_of(added.begin(), added.end(), [&](const worker::ListenerSpec* l) {
        return l->id == entry.first && !movedOrChanged(entry.second.front().spec, *l);
      });
    });
    for (const worker::ListenerSpec* spec : added) {
      if (bound.contains(spec->id)) {
        for (auto& b : bound[spec->id]) b.spec = *spec;
        continue;
      }
      auto sockets = bindEveryWorker(*spec);
      if (!sockets) {
        failed.push_back({"listener", spec->name, sockets.error().message});
        continue;
      }
      bound[spec->id] = std::move(*sockets);
    }
    if (failed.empty()) break;
    for (config::ConfigFault& f : failed) {
      const std::string key = f.kind + "/" + f.name;
      const bool kept = !restored.contains(key) &&
                        restore(loaded.config.listeners, loaded_.config.listeners, f.name);
      if (kept) {
        restored.insert(key);
      } else {
        restored.erase(key);
        std::erase_if(loaded.config.listeners,
                      [&](const config::Listener& l) { return l.name == f.name; });
      }
      faults.push_back(std::move(f));
    }
  }
  faults_.clear();
  for (config::ConfigFault& f : faults) {
    const bool kept = restored.contains(f.kind + "/" + f.name);
    spdlog::error("{} {}: {}; {}", f.kind, f.name.empty() ? "(no name)" : f.name, f.error,
                  kept ? "its running version is kept" : "left out");
    faults_.push_back({std::move(f), kept});
  }

  std::vector<std::vector<worker::Worker::BoundListener>> per_worker(workers_.size());
  std::vector<const worker::ListenerSpec*> opened;
  for (auto& [id, sockets] : bound) {
    for (size_t w = 0; w < workers_.size(); ++w) per_worker[w].push_back(std::move(sockets[w]));
    for (const worker::ListenerSpec& l : next->listeners) {
      if (l.id == id) opened.push_back(&l);
    }
  }
  for (size_t w = 0; w < workers_.size(); ++w) {
    workers_[w]->reconfigure(next, std::move(per_worker[w]), removed);
  }
  for (turn::ListenerId id : removed) {
    for (const worker::ListenerSpec& old : dataplane_->listeners) {
      if (old.id == id) spdlog::info("listener {} on {} closed", old.name, old.bind.toString());
    }
  }
  for (const worker::ListenerSpec* l : opened) {
    const bool tcp = l->protocol == TransportProtocol::kTcp;
    const std::string relay =
        l->relay_ip.isUnspecified() || l->relay_ip == l->bind.ip
            ? std::string()
            : ", relay address " + l->relay_ip.toString() +
                  (l->relay_ip_local ? "" : " (not this host's: relays bind the address reached)");
    spdlog::info("listener {}: TURN-{} on {}{} ({} workers)", l->name,
                 l->tls ? (tcp ? "TLS" : "DTLS") : (tcp ? "TCP" : "UDP"), l->bind.toString(), relay,
                 workers_.size());
  }
  const bool first = loaded_.description.empty();
  const std::string previous_levels = loaded_.config.admin.loglevel;
  dataplane_ = next;
  loaded_ = std::move(loaded);
  const config::Admin admin = loaded_.config.admin;
  if (options_.log_levels_from_config && admin.loglevel != previous_levels) {
    if (auto levels = log::configure(admin.loglevel); !levels) {
      spdlog::warn("admin.loglevel: {}; log levels unchanged", levels.error().message);
    } else {
      spdlog::info("log levels: {}", admin.loglevel);
    }
  }
  spdlog::info("config {} from {}", first ? "loaded" : "applied", loaded_.description);
  const config::Capacity marks = admin.capacity.value_or(config::Capacity{});
  capacity_.setMarks({.allocations = static_cast<uint64_t>(marks.allocations),
                      .relay_kbps = static_cast<uint64_t>(marks.relay_kbps),
                      .cpu_percent = static_cast<uint32_t>(marks.cpu_percent),
                      .resume_percent = static_cast<uint32_t>(marks.resume_percent)});
  applyOffload(admin);
  lock.unlock();

  // Admin servers take mutex_ in their handlers: (re)start them outside it. The data plane
  // config is committed by now, so an admin failure is reported, not returned.
  if (auto started = reconcileAdmin(admin); !started) {
    spdlog::error("admin endpoints: {}; the rest of the config is applied",
                  started.error().message);
  }
  // Ready while some listener serves, or when the config asks for none (a Gateway without
  // listeners yet): a pod whose every listener failed takes no clients (docs/metrics.md).
  const bool serving = !dataplane_->listeners.empty() ||
                       std::none_of(faults_.begin(), faults_.end(),
                                    [](const Fault& f) { return f.fault.kind == "listener"; });
  if (serving) {
    health_.setReady();
  } else {
    health_.setNotReady();
  }
  return {};
}

Result<std::vector<worker::Worker::BoundListener>> Daemon::bindEveryWorker(
    const worker::ListenerSpec& spec) {
  // A port one of the running listeners holds is shared on purpose (a listener moving onto
  // another's port, their SO_REUSEPORT group); any other holder is a process that is not us.
  const bool ours = std::any_of(
      dataplane_->listeners.begin(), dataplane_->listeners.end(), [&](const auto& running) {
        return running.protocol == spec.protocol && running.bind.port == spec.bind.port;
      });
  if (!ours) {
    if (auto free = net::probePort(spec.protocol, spec.bind); !free) return free.error();
  }
  std::vector<worker::Worker::BoundListener> sockets;
  for (size_t w = 0; w < workers_.size(); ++w) {
    auto socket = worker::Worker::bindListener(spec, worker::Worker::Options{}.socket_buffer,
                                               options_.udp_segmentation);
    if (!socket) return socket.error();
    sockets.push_back(std::move(*socket));
  }
  return sockets;
}

void Daemon::applyOffload(const config::Admin& admin) {
  xdp::OffloadMaps* maps = offload_.reconcile(admin.offload_engine, admin.offload_interfaces);
  if (maps == offload_maps_) return;
  offload_maps_ = maps;
  // Each worker gets a range of counter slots of its own, an even number (two per channel).
  const uint32_t slots = maps != nullptr ? maps->counterSlots() : 0;
  const uint32_t share = slots / static_cast<uint32_t>(workers_.size()) & ~1u;
  for (size_t w = 0; w < workers_.size(); ++w) {
    workers_[w]->setOffload(maps, static_cast<uint32_t>(w) * share, share);
  }
}

void Daemon::dnsLoop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wakeup_.wait_for(lock, options_.dns_interval, [this] { return stopping_; });
    if (stopping_) return;
    const auto hosts = DataplaneBuilder::dnsHosts(loaded_.config);
    if (hosts.empty()) continue;
    lock.unlock();
    DnsCache fresh;
    for (const std::string& host : hosts) fresh[host] = resolve(host);
    lock.lock();
    if (fresh == dns_) continue;
    dns_ = std::move(fresh);
    // Same listeners, new peers: swap the config in place.
    if (auto dataplane = builder_.build(loaded_.config, dns_)) {
      dataplane_ = *dataplane;
      for (auto& w : workers_) w->reconfigure(dataplane_, {}, {});
      spdlog::info("STRICT_DNS endpoints changed; routes updated");
    }
  }
}

void Daemon::capacityLoop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wakeup_.wait_for(lock, options_.capacity_interval, [this] { return stopping_; });
    if (stopping_) return;
    lock.unlock();  // collectStats() takes mutex_ too
    sampleCapacity();
    lock.lock();
  }
}

void Daemon::sampleCapacity() {
  const worker::WorkerStats stats = collectStats();
  const bool over = capacity_.update(
      {.at = std::chrono::steady_clock::now(),
       .allocations = stats.allocations,
       .relayed_bytes = stats.turn.client_bytes_relayed + stats.turn.peer_bytes_relayed,
       .cpu_seconds = admin::processCpuSeconds()});
  if (over == health_.overCapacity()) return;
  health_.setOverCapacity(over);
  const admin::CapacityReport r = capacity_.report();
  const auto show = [](const admin::CapacityMeasure& m) {
    return m.mark == 0 ? std::string("-") : fmt::format("{:.0f}/{}", m.value, m.mark);
  };
  spdlog::info(
      "{} (allocations {}, relay kbit/s {}, CPU % {}): /ready answers {}, new Allocates on "
      "listeners with alternate_servers are {}, the allocations held are served",
      over ? "over capacity" : "back under capacity", show(r.allocations), show(r.relay_kbps),
      show(r.cpu_percent), health_.ready() ? 200 : 503, over ? "redirected" : "granted");
}

worker::WorkerStats Daemon::collectStats() {
  worker::WorkerStats total;
  for (auto& w : workers_) {
    std::promise<worker::WorkerStats> p;
    auto f = p.get_future();
    w->collectStats([&p](const worker::WorkerStats& s) { p.set_value(s); });
    if (f.wait_for(std::chrono::seconds(2)) != std::future_status::ready) continue;
    const worker::WorkerStats s = f.get();
    total.turn += s.turn;
    if (total.turn_by_listener.size() < s.turn_by_listener.size()) {
      total.turn_by_listener.resize(s.turn_by_listener.size());
    }
    for (size_t i = 0; i < s.turn_by_listener.size(); ++i) {
      total.turn_by_listener[i] += s.turn_by_listener[i];
    }
    if (total.clusters.size() < s.clusters.size()) total.clusters.resize(s.clusters.size());
    for (size_t i = 0; i < s.clusters.size(); ++i) total.clusters[i] += s.clusters[i];
    if (total.traffic.size() < s.traffic.size()) total.traffic.resize(s.traffic.size());
    for (size_t i = 0; i < s.traffic.size(); ++i) total.traffic[i] += s.traffic[i];
    total.allocations += s.allocations;
    total.datagrams_received += s.datagrams_received;
    total.datagrams_truncated += s.datagrams_truncated;
    total.datagrams_sent += s.datagrams_sent;
    total.send_dropped += s.send_dropped;
    total.send_syscalls += s.send_syscalls;
    total.send_gso_trains += s.send_gso_trains;
    total.send_gso_fallbacks += s.send_gso_fallbacks;
    total.receive_syscalls += s.receive_syscalls;
    total.receive_gro_trains += s.receive_gro_trains;
    total.request_times += s.request_times;
    total.offload_channels += s.offload_channels;
  }
  std::lock_guard lock(mutex_);
  total.offload_outcomes = offload_.outcomes();
  return total;
}

}  // namespace kturn::daemon
