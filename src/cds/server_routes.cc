#include "cds/server_routes.h"

#include <vector>

#include "cds/url_util.h"

namespace kturn::cds {

Route routeTarget(std::string_view target) {
  Route route;
  const size_t question = target.find('?');
  const std::string_view path = target.substr(0, question);
  const std::string_view query =
      question == std::string_view::npos ? std::string_view{} : target.substr(question + 1);

  // Segments, each percent-decoded; an empty segment (a "//" or a trailing '/') matches nothing,
  // as mux's default [^/]+ patterns.
  if (path.empty() || path.front() != '/') return route;
  std::vector<std::string> segments;
  for (std::string_view rest = path.substr(1);;) {
    const size_t slash = rest.find('/');
    auto segment = percentDecode(rest.substr(0, slash), false);
    if (!segment || segment->empty()) return route;
    segments.push_back(std::move(*segment));
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  if (segments.size() < 3 || segments[0] != "api" || segments[1] != "v1") return route;
  if (segments[2] == "license" && segments.size() == 3) {
    route.kind = Route::Kind::kLicense;
    return route;
  }
  if (segments[2] != "configs" || segments.size() > 5) return route;

  Route::Kind kind = Route::Kind::kListAll;
  if (segments.size() >= 4) route.id.namespace_ = segments[3];
  if (segments.size() == 4) kind = Route::Kind::kListNamespace;
  if (segments.size() == 5) {
    route.id.name = segments[4];
    kind = Route::Kind::kConfig;
  }

  const auto params = parseQuery(query);
  if (!params) {
    route.kind = Route::Kind::kBadRequest;
    route.error = "invalid query string";
    return route;
  }
  if (auto it = params->find("watch"); it != params->end()) {
    const std::optional<bool> watch = parseGoBool(it->second);
    if (!watch) {
      route.kind = Route::Kind::kBadRequest;
      route.error = "Invalid format for parameter watch: \"" + it->second + "\" is not a boolean";
      return route;
    }
    route.watch = *watch;
  }
  if (kind == Route::Kind::kConfig) {
    if (auto it = params->find("node"); it != params->end()) route.node = it->second;
  }
  route.kind = kind;
  return route;
}

}  // namespace kturn::cds
