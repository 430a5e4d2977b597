// The operator's control loop (docs/operator.md): watched cluster → renderer → appliers.
//
//   informer threads ──change──▶ dirty ──debounce──▶ reconcile():
//       the objects that changed (WatchedCluster::takeChanges) → the snapshot updated in place
//       → IncrementalRenderer → CDS (every replica) → owned objects and statuses (the leader
//       only)
//
// One reconcile thread, at most one render per debounce window: a change after a quiet spell
// renders at once, changes arriving within the window after a render (the rest of a burst of
// EndpointSlice updates, our own status writes coming back as watch events) fold into one render
// at its end. Each render is incremental (IncrementalRenderer): only the Gateways and route
// statuses a change reaches, and only their configs, objects and statuses go to the appliers.
// The first render, the periodic resync, a leadership gain and the reconcile after a failed
// write build the snapshot from a copy of every cache and render and apply everything. Writes that
// fail are retried after a delay; nothing is written before every kind has been listed once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cds/cds_server.h"
#include "k8s/api_client.h"
#include "operator/config_publisher.h"
#include "operator/incremental_renderer.h"
#include "operator/owned_object_applier.h"
#include "operator/render_options.h"
#include "operator/status_writer.h"
#include "operator/watched_cluster.h"

namespace kturn::op {

struct ControllerOptions {
  RenderOptions render{};
  std::string fieldManager = "kturn-operator";
  // At most one render per this window (see above).
  std::chrono::milliseconds debounce{100};
  std::chrono::milliseconds retry{1000};
  // Render again this often even without changes (statuses changed by others, lost writes).
  std::chrono::milliseconds resync{60000};
  k8s::InformerOptions informer{};
};

struct ControllerStats {
  // Counters, since start.
  uint64_t reconciles = 0;
  uint64_t applied = 0;
  uint64_t deleted = 0;
  uint64_t statusesWritten = 0;
  uint64_t writesFailed = 0;  // applies, deletions and status writes, retried after `retry`
  uint64_t configsRejected = 0;
  uint64_t fullRenders = 0;  // reconciles that rendered everything (the rest were incremental)
  // The last reconcile's.
  uint64_t gateways = 0;
  uint64_t configsServed = 0;
  // When the first change it answers marked the controller dirty, and when it started, had
  // rendered and had published to CDS (kturn-render-bench breaks a change's latency down so).
  std::chrono::steady_clock::time_point dirtiedAt{};
  std::chrono::steady_clock::time_point startedAt{};
  std::chrono::steady_clock::time_point renderedAt{};
  std::chrono::steady_clock::time_point publishedAt{};
  // Now.
  bool leading = false;
  bool synced = false;  // every watched kind listed once: the operator may render
};

class Controller {
 public:
  Controller(k8s::ApiClient& client, cds::CdsServer& cds, ControllerOptions options);
  ~Controller();  // stop()
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  void start();
  void stop();
  // Leadership (LeaderElector's callback, any thread). Without leader election the controller
  // is told true once, at start.
  void setLeading(bool leading);
  ControllerStats stats() const;

 private:
  void markDirty();
  void run();
  // Returns false when some write failed (retry soon). `full`: render and apply everything.
  bool reconcile(bool full);

  k8s::ApiClient& client_;
  const ControllerOptions options_;
  WatchedCluster cluster_;
  IncrementalRenderer renderer_;  // the reconcile thread's
  bool fullNext_ = true;          // the reconcile thread's: the next render is a full one
  ConfigPublisher publisher_;
  OwnedObjectApplier applier_;
  StatusWriter statusWriter_;

  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool dirty_ = true;
  std::chrono::steady_clock::time_point dirtiedAt_{};       // when dirty_ last became true
  std::chrono::steady_clock::time_point answeringSince_{};  // dirtiedAt_ the reconcile answers
  bool stopping_ = false;
  bool leading_ = false;
  bool leadershipGained_ = false;
  ControllerStats stats_;
};

}  // namespace kturn::op
