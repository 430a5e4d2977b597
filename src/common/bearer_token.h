// A bearer token, fixed or read from a file: what kturn sends to the API server and to the config
// discovery server. A service account's projected token is rotated by the
// kubelet (about hourly); like client-go's cached token file source, the file is read again when
// its modification time or size changes, checked at most once a second.
#pragma once

#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>

namespace kturn {

class BearerToken {
 public:
  BearerToken(std::string fixed, std::filesystem::path file);

  // The current token, "" for none. Thread-safe. A file that cannot be read keeps the last token.
  std::string current();

 private:
  const std::string fixed_;
  const std::filesystem::path file_;
  std::mutex mutex_;
  std::string token_;
  std::filesystem::file_time_type mtime_{};
  uintmax_t size_ = 0;
  std::chrono::steady_clock::time_point checked_{};
};

}  // namespace kturn
