// kturnd's process: loads the config, runs one Worker per core, re-reads a file config on SIGHUP,
// resolves STRICT_DNS clusters in the background, and stops on SIGINT/SIGTERM.
#pragma once

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "admin/admin_server.h"
#include "admin/health_state.h"
#include "daemon/config_source.h"
#include "daemon/dataplane_builder.h"
#include "daemon/file_watcher.h"
#include "daemon/reservation_pool.h"
#include "daemon/worker.h"

namespace kturn::daemon {

class Daemon {
 public:
  struct Options {
    std::string origin;  // see config_source.h
    size_t workers = 0;  // 0: one per core
    std::chrono::seconds dns_interval{5};
    // SIGTERM drains: /ready fails, allocations keep being served until none is left or this
    // much time has passed (stunnerd's terminationGracePeriod default, seed 004).
    std::chrono::seconds grace_period{3600};
    bool force_ready = false;  // stunnerd's --force-ready-status
    bool watch = false;        // stunnerd's -w: reload a file config when it changes
    SessionLogOptions session_log;
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

  // Sums the workers' counters (each read on its own thread).
  WorkerStats collectStats();
  const config::StunnerConfig& config() const { return loaded_.config; }
  const LoadedConfig& loaded() const { return loaded_; }
  admin::HealthStatus health() const { return health_.status(); }
  // Bound ports of the admin servers (0 when off), for tests that ask for ephemeral ports.
  uint16_t healthPort() const { return health_server_ ? health_server_->port() : 0; }
  uint16_t metricsPort() const;

 private:
  // Re-reads the config; a bad one is logged with its field and the running one kept.
  void reload();
  Result<void> startAdmin();
  nlohmann::json statusDocument();
  // Serves until no allocation is left, the grace period ends, or `stop` is signalled.
  void drain(const sigset_t& signals);
  void applyToWorkers();
  void dnsLoop();

  Options options_;
  LoadedConfig loaded_;
  DataplaneBuilder builder_;
  DnsCache dns_;  // guarded by mutex_
  DataplanePtr dataplane_;
  ReservationPool reservations_;
  std::vector<std::unique_ptr<Worker>> workers_;
  admin::HealthState health_;
  std::unique_ptr<admin::AdminServer> health_server_;
  std::unique_ptr<admin::AdminServer> metrics_server_;  // null when sharing health_server_

  std::unique_ptr<FileWatcher> watcher_;
  std::mutex reload_mutex_;  // one reload at a time (SIGHUP and the file watcher)
  std::mutex mutex_;         // config, dns_ and dataplane_: the control path, never the data path
  std::condition_variable dns_wakeup_;
  bool stopping_ = false;
  std::thread dns_thread_;
};

}  // namespace kturn::daemon
