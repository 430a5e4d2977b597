// ConfigFollower: keeps a ConfigHolder on the current dataplane config of kturn-auth's origin:
//   file://PATH or PATH   loaded at start (an error fails the start), then re-read whenever the
//                         file changes (inotify, daemon/file_watcher.h); a config that does not
//                         load is logged and the previous one kept
//   http(s)://, ws(s)://  a CDS server, watched for the config of one gateway (`id`,
//                         "namespace/name") with the CDS client (cds/cds_client.h); requests get
//                         500 until the first config arrives
#pragma once

#include <memory>
#include <string>

#include "auth/config_holder.h"
#include "kturn/result.h"

namespace kturn::cds {
class CdsClient;
}
namespace kturn::daemon {
class FileWatcher;
}

namespace kturn::auth {

struct ConfigFollowerOptions {
  std::string origin{};
  std::string id{};  // CDS only
};

class ConfigFollower {
 public:
  ConfigFollower(ConfigFollowerOptions options, ConfigHolder& holder);
  ~ConfigFollower();  // stop()
  ConfigFollower(const ConfigFollower&) = delete;
  ConfigFollower& operator=(const ConfigFollower&) = delete;

  Result<void> start();
  void stop();

 private:
  Result<void> reload();

  ConfigFollowerOptions options_;
  ConfigHolder& holder_;
  std::unique_ptr<daemon::FileWatcher> watcher_;
  std::unique_ptr<cds::CdsClient> cds_;
};

}  // namespace kturn::auth
