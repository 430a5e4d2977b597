// kturnd's process: loads the config (a file, a TURN URI, the embedded default, or a config
// discovery server), runs one Worker per core, applies every new config live (SIGHUP, the file
// watcher, CDS pushes), resolves STRICT_DNS clusters in the background, and drains on SIGTERM.
#pragma once

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "admin/admin_server.h"
#include "admin/capacity_gate.h"
#include "admin/health_state.h"
#include "cds/cds_client.h"
#include "config/config_source.h"
#include "daemon/dataplane_builder.h"
#include "daemon/offload_manager.h"
#include "net/file_watcher.h"
#include "worker/reservation_pool.h"
#include "worker/shared_relay_ports.h"
#include "worker/worker.h"

namespace kturn::daemon {

class Daemon {
 public:
  // At most this many workers: a CONNECTION-ID names its worker in one byte (RFC 6062).
  static constexpr size_t kMaxWorkers = 256;

  struct Options {
    std::string origin{};  // see config_source.h; http(s)/ws(s): a CDS server (cds/origin.h)
    // CDS only: "namespace/name" of the Gateway whose config to fetch, and the node name
    // (stunnerd's --id / STUNNER_NAMESPACE+STUNNER_NAME and STUNNER_NODENAME).
    std::string cds_id{};
    std::string cds_node{};
    // Authenticated config discovery (cds/cds_client.h): the token file, the CA file and PEM.
    std::string cds_token_file{};
    std::string cds_ca_file{};
    std::string cds_ca_pem{};
    // An admin endpoint whose URL names no host ("http://:8086", what the operator renders) binds
    // this address and loopback instead of every address: the pod IP, so that a hostNetwork
    // pod's admin port is not on the node's other interfaces, and loopback for kubectl
    // port-forward. Empty: every address, as stunnerd (--admin-address, $KTURN_ADMIN_ADDRESS).
    std::string admin_address{};
    // /status requires "Authorization: Bearer <the token in this file>" (read again when it
    // changes). Empty: no token (--status-token-file, $KTURN_STATUS_TOKEN_FILE).
    std::string status_token_file{};
    // The token itself, when there is no file: $KTURN_STATUS_TOKEN, which a Dataplane's env can
    // take from a Secret (valueFrom.secretKeyRef). The file wins when both are set.
    std::string status_token{};
    size_t workers = 0;  // 0: one per core
    std::chrono::seconds dns_interval{5};
    // SIGTERM drains: /ready fails, allocations keep being served until none is left or this
    // much time has passed (stunnerd's terminationGracePeriod default;
    // docs/operations.md#draining).
    std::chrono::seconds grace_period{3600};
    bool force_ready = false;           // stunnerd's --force-ready-status
    bool ready_while_draining = false;  // --ready-while-draining
    // Apply each config's admin.loglevel (stunnerd does, unless -l was given).
    bool log_levels_from_config = false;
    // stunnerd's -w: reload a file config when it changes; with a CDS origin, start without a
    // config (not ready) and apply every config the server pushes.
    bool watch = false;
    worker::SessionLogOptions session_log{};
    bool udp_segmentation = true;  // Worker::Options::udp_segmentation
    // --relay-sockets shared: relay ports without a socket each (SharedRelayPorts), where the
    // kernel and the privileges allow it; otherwise (logged once) a socket per allocation.
    bool shared_relay_sockets = false;
    // RFC 8656's permission (§9) and channel (§12) lifetimes, as coturn lets them be changed.
    std::chrono::seconds permission_lifetime{300};
    std::chrono::seconds channel_lifetime{600};
    // How often the load is measured against admin.capacity's marks.
    std::chrono::milliseconds capacity_interval{1000};
  };

  // A listener or cluster of the last config that is not running as that config says: left out,
  // or at its previous version (`kept`). /status lists them under "faults".
  struct Fault {
    config::ConfigFault fault;
    bool kept = false;
  };

  explicit Daemon(Options options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Loads the config and binds every worker's sockets. Errors name the config field or socket.
  Result<void> start();
  // Blocks until SIGINT or SIGTERM (which the caller must have blocked in every thread); SIGHUP
  // reloads meanwhile. SIGTERM drains first (see Options::grace_period); SIGINT or a second
  // SIGTERM ends at once.
  void waitForSignals();
  void stop();

  // Re-reads the file config (or asks the CDS server) and applies it, as SIGHUP does. On error
  // the running config stays and the error names the field or the socket.
  Result<void> reload();

  // Sums the workers' counters (each read on its own thread).
  worker::WorkerStats collectStats();
  // The running config (a copy: a CDS push may replace it at any time).
  config::LoadedConfig loaded() const;
  admin::HealthStatus health() const { return health_.status(); }
  // What of the last config applied does not run as it says.
  std::vector<Fault> faults() const;
  // The health server's bound port (0 when off), for tests that ask for an ephemeral one.
  uint16_t healthPort() const { return health_server_ ? health_server_->port() : 0; }

 private:
  // Validates `loaded` against what is running and applies it: listeners added or removed
  // (only those), everything else swapped in place. On error nothing changes.
  Result<void> apply(config::LoadedConfig loaded);
  // The sockets of a new listener for each worker, after checking that no other process holds
  // its port (net::probePort); with mutex_ held.
  Result<std::vector<worker::Worker::BoundListener>> bindEveryWorker(
      const worker::ListenerSpec& spec);
  Result<void> startCds();
  void reloadAndLog();  // SIGHUP and the file watcher
  // (Re)starts the admin servers if `admin`'s endpoints differ from the running ones.
  Result<void> reconcileAdmin(const config::Admin& admin);
  // admin.offload_engine / offload_interfaces; with mutex_ held.
  void applyOffload(const config::Admin& admin);
  void stopAdmin();
  nlohmann::json statusDocument();
  // Serves until no allocation is left, the grace period ends, or `stop` is signalled.
  void drain(const sigset_t& signals);
  void dnsLoop();
  // Measures the load once per Options::capacity_interval and sets readiness by admin.capacity.
  void capacityLoop();
  void sampleCapacity();

  Options options_;
  // The config as applied: the listeners and clusters that run, each at the version that runs.
  config::LoadedConfig loaded_;
  std::vector<Fault> faults_;  // guarded by mutex_
  DataplaneBuilder builder_;
  DnsCache dns_;  // guarded by mutex_
  worker::ConfigSnapshotPtr dataplane_;
  // Shared relay sockets, when on: before reservations_ and workers_, which release into it.
  std::unique_ptr<worker::SharedRelayPorts> shared_relays_;
  worker::ReservationPool reservations_;
  turn::UserQuota user_quota_;  // shared by the workers' TURN cores
  // The eBPF fast path; before workers_, whose channel offloaders write its maps until they go.
  OffloadManager offload_;  // guarded by mutex_
  xdp::OffloadMaps* offload_maps_ = nullptr;
  // Before workers_, whose TURN cores read its over-capacity flag on each new Allocate.
  admin::HealthState health_;
  std::vector<std::unique_ptr<worker::Worker>> workers_;
  admin::CapacityGate capacity_{admin::availableCpus()};
  std::unique_ptr<admin::AdminServer> health_server_;
  std::unique_ptr<admin::AdminServer> metrics_server_;  // null when sharing health_server_
  // With Options::admin_address: the same routes on loopback.
  std::vector<std::unique_ptr<admin::AdminServer>> loopback_admin_servers_;
  // The endpoints the admin servers were started with (config strings); guarded by
  // reload_mutex_.
  bool admin_started_ = false;
  std::optional<std::string> health_endpoint_;
  std::string metrics_endpoint_;
  std::unique_ptr<cds::CdsClient> cds_;

  std::unique_ptr<net::FileWatcher> watcher_;
  std::mutex reload_mutex_;  // one apply() at a time (SIGHUP, file watcher, CDS)
  // loaded_, builder_, dns_ and dataplane_: the control path, never the data path.
  mutable std::mutex mutex_;
  std::condition_variable wakeup_;  // the DNS and capacity threads, at stop()
  bool stopping_ = false;
  std::thread dns_thread_;
  std::thread capacity_thread_;
};

}  // namespace kturn::daemon
