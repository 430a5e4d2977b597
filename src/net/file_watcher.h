// Watches a config file with inotify and calls back when its content may have changed. Watches
// the directory, not the file: editors and Kubernetes ConfigMap updates replace the file (rename
// or symlink swap), which a watch on the old inode would miss.
#pragma once

#include <functional>
#include <string>
#include <thread>

#include "kturn/result.h"
#include "net/file_descriptor.h"

namespace kturn::net {

class FileWatcher {
 public:
  // `on_change` runs on the watcher's thread, at most once per `debounce` burst of events.
  FileWatcher(std::string path, std::function<void()> on_change,
              std::chrono::milliseconds debounce = std::chrono::milliseconds(200));
  ~FileWatcher();
  FileWatcher(const FileWatcher&) = delete;
  FileWatcher& operator=(const FileWatcher&) = delete;

  Result<void> start();
  void stop();

 private:
  void run();

  std::string path_;
  std::string directory_;
  std::string name_;
  std::function<void()> on_change_;
  std::chrono::milliseconds debounce_;
  net::FileDescriptor inotify_;
  net::FileDescriptor stop_event_;
  std::thread thread_;
};

}  // namespace kturn::net
