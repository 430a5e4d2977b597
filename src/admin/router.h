// Router: maps a request path to its handler with Go's http.ServeMux rules, which stunnerd's
// admin servers use: a pattern without a trailing slash matches that path exactly; a pattern
// ending in '/' matches every path below it; the longest matching pattern wins. Keeping the rule
// matters for compatibility: stunnerd with metrics_endpoint "http://:8080" (path "/") answers
// Prometheus on /metrics as on any other path.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "admin/handler.h"

namespace kturn::admin {

class Router {
 public:
  // Replaces an earlier handler for the same pattern. An empty pattern means "/".
  void add(std::string pattern, Handler handler);
  // nullptr when nothing matches (the server answers 404).
  const Handler* find(std::string_view path) const;
  bool empty() const { return routes_.empty(); }

 private:
  std::map<std::string, Handler, std::less<>> routes_;
};

}  // namespace kturn::admin
