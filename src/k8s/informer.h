// List-then-watch of one kind into an ObjectCache (client-go's Reflector), on its own thread:
//
//   list (resourceVersion "" = a consistent read) → cache.replace → watch from the list's
//   resourceVersion with bookmarks → each event into the cache, the resourceVersion advanced by
//   every event and BOOKMARK → when the stream ends (server timeout, connection lost) watch again
//   from the last resourceVersion; a 410 Gone (HTTP status or ERROR event with code 410: the
//   version was compacted away) lists again. Failures back off exponentially, bounded.
//
// onChange is called on the informer's thread after every change to the cache; it must not
// block (the operator only marks itself dirty).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "k8s/api_client.h"
#include "k8s/object_cache.h"

namespace kturn::k8s {

struct InformerOptions {
  std::string ns{};  // "" watches every namespace
  std::string labelSelector{};
  std::chrono::milliseconds initialBackoff{200};
  std::chrono::milliseconds maxBackoff{30000};
  // Asked of the server as timeoutSeconds: the watch ends and is renewed after this.
  std::chrono::seconds watchTimeout{300};
  // A 404 to the list (the kind is not served: its CRD is not installed) stores an empty list
  // and marks the cache synced, then keeps listing at the backoff's pace until it is served.
  bool notServedIsEmpty = false;
};

struct InformerStats {
  uint64_t lists = 0;
  uint64_t watches = 0;  // watch requests answered 200
  uint64_t events = 0;
  uint64_t bookmarks = 0;
  uint64_t expired = 0;  // 410 Gone answers
  uint64_t failures = 0;
};

class Informer {
 public:
  using OnChange = std::function<void(const ResourceType&)>;

  Informer(ApiClient& client, ObjectCache& cache, OnChange onChange, InformerOptions options = {});
  ~Informer();  // stop()
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  void start();
  // Ends the watch and joins the thread. Idempotent.
  void stop();

  const ResourceType& type() const { return cache_.type(); }
  bool synced() const { return cache_.synced(); }
  std::string resourceVersion() const;
  InformerStats stats() const;

 private:
  void run();
  bool listOnce();
  // Watches until the stream ends. Returns false on a failure that wants a backoff.
  bool watchOnce();
  bool handleEvent(const std::string& line);
  void sleepFor(std::chrono::milliseconds delay);

  ApiClient& client_;
  ObjectCache& cache_;
  const OnChange onChange_;
  const InformerOptions options_;

  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  ApiConnection* active_ = nullptr;  // the open watch, cancelled by stop()
  std::string resourceVersion_;
  bool needList_ = true;
  InformerStats stats_;
};

}  // namespace kturn::k8s
