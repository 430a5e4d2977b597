// ConfigFollower: keeps a ConfigHolder on the current dataplane configs of kturn-auth's origin:
//   file://PATH or PATH   one config, loaded at start (an error fails the start), then re-read
//                         whenever the file changes (inotify, net/file_watcher.h); a config
//                         that does not load is logged and the previous one kept
//   http(s)://, ws(s)://  a CDS server. With `id` ("namespace/name"): the config of that one
//                         gateway (cds/cds_client.h), dropped when the server deletes it (its
//                         zero config: requests get 500 again). Without: every config the
//                         server holds, each under its id, added, replaced and dropped as the
//                         server says (cds/cds_list_client.h), as STUNner's auth service
//                         watches. A config that does not validate is logged and that
//                         gateway's previous one kept.
//                         Requests get 500 until the first config arrives.
// synced() says when the follower has its origin's state: the file loaded, or a CDS session
// that reached the server's state (CdsClientStats::syncs); kturn-auth's /ready waits for it.
#pragma once

#include <memory>
#include <string>

#include "auth/config_holder.h"
#include "kturn/result.h"

namespace kturn::cds {
class CdsClient;
class CdsListClient;
}  // namespace kturn::cds
namespace kturn::net {
class FileWatcher;
}

namespace kturn::auth {

struct ConfigFollowerOptions {
  std::string origin{};
  std::string id{};  // CDS only; empty: every gateway
  // CDS only: the bearer token file and the CA (file, PEM) of authenticated config discovery.
  std::string token_file{};
  std::string ca_file{};
  std::string ca_pem{};
};

class ConfigFollower {
 public:
  ConfigFollower(ConfigFollowerOptions options, ConfigHolder& holder);
  ~ConfigFollower();  // stop()
  ConfigFollower(const ConfigFollower&) = delete;
  ConfigFollower& operator=(const ConfigFollower&) = delete;

  Result<void> start();
  void stop();
  // Whether the origin's state has been read once (any thread): the file at start(), or a CDS
  // session that reached the server's state. A server that answers nothing or 503 (an operator
  // replica that has not rendered yet) keeps it false.
  bool synced() const;
  const std::string& origin() const { return options_.origin; }

 private:
  Result<void> reload();
  Result<void> watchOne();
  Result<void> watchAll();

  ConfigFollowerOptions options_;
  ConfigHolder& holder_;
  bool loaded_ = false;  // a file origin loaded at start()
  std::unique_ptr<net::FileWatcher> watcher_;
  std::unique_ptr<cds::CdsClient> cds_;
  std::unique_ptr<cds::CdsListClient> cds_list_;
};

}  // namespace kturn::auth
