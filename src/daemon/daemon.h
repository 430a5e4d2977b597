// kturnd's process: loads the config, runs one Worker per core, re-reads a file config on SIGHUP,
// resolves STRICT_DNS clusters in the background, and stops on SIGINT/SIGTERM.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/config_source.h"
#include "daemon/dataplane_builder.h"
#include "daemon/reservation_pool.h"
#include "daemon/worker.h"

namespace kturn::daemon {

class Daemon {
 public:
  struct Options {
    std::string origin;  // see config_source.h
    size_t workers = 0;  // 0: one per core
    std::chrono::seconds dns_interval{5};
  };

  explicit Daemon(Options options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Loads the config and binds every worker's sockets. Errors name the config field or socket.
  Result<void> start();
  // Blocks until SIGINT or SIGTERM (which the caller must have blocked in every thread).
  void waitForSignals();
  void stop();

  // Sums the workers' counters (each read on its own thread).
  WorkerStats collectStats();
  const config::StunnerConfig& config() const { return loaded_.config; }
  const LoadedConfig& loaded() const { return loaded_; }

 private:
  // Re-reads the config; a bad one is logged with its field and the running one kept.
  void reload();
  void applyToWorkers();
  void dnsLoop();

  Options options_;
  LoadedConfig loaded_;
  DataplaneBuilder builder_;
  DnsCache dns_;  // guarded by mutex_
  DataplanePtr dataplane_;
  ReservationPool reservations_;
  std::vector<std::unique_ptr<Worker>> workers_;

  std::mutex mutex_;  // config, dns_ and dataplane_: the control path, never the data path
  std::condition_variable dns_wakeup_;
  bool stopping_ = false;
  std::thread dns_thread_;
};

}  // namespace kturn::daemon
