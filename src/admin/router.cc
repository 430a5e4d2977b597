#include "admin/router.h"

namespace kturn::admin {

void Router::add(std::string pattern, Handler handler) {
  if (pattern.empty()) pattern = "/";
  routes_.insert_or_assign(std::move(pattern), std::move(handler));
}

const Handler* Router::find(std::string_view path) const {
  if (auto exact = routes_.find(path); exact != routes_.end()) return &exact->second;
  // Subtree patterns: try each '/'-terminated prefix of path, longest first. Paths are short
  // (a request line is bounded by the header limit), so this is cheap.
  for (size_t end = path.size(); end > 0; --end) {
    if (path[end - 1] != '/') continue;
    if (auto it = routes_.find(path.substr(0, end)); it != routes_.end()) return &it->second;
  }
  return nullptr;
}

}  // namespace kturn::admin
