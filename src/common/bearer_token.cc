#include "common/bearer_token.h"

#include <fstream>
#include <sstream>

namespace kturn {

namespace fs = std::filesystem;

BearerToken::BearerToken(std::string fixed, fs::path file)
    : fixed_(std::move(fixed)), file_(std::move(file)), token_(fixed_) {}

std::string BearerToken::current() {
  if (file_.empty()) return fixed_;
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (!token_.empty() && now - checked_ < std::chrono::seconds(1)) return token_;
  checked_ = now;
  std::error_code ec;
  const fs::file_time_type mtime = fs::last_write_time(file_, ec);
  const uintmax_t size = ec ? 0 : fs::file_size(file_, ec);
  if (ec || (!token_.empty() && mtime == mtime_ && size == size_)) return token_;
  std::ifstream in(file_, std::ios::binary);
  if (!in) return token_;
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  if (!token.empty()) {
    token_ = std::move(token);
    mtime_ = mtime;
    size_ = size;
  }
  return token_;
}

}  // namespace kturn
