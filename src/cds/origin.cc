#include "cds/origin.h"

#include <algorithm>
#include <cctype>

#include "kturn/host_port.h"

namespace kturn::cds {
namespace {

Error invalid(std::string_view origin, std::string_view why) {
  return makeError(Error::Code::kInvalidArgument,
                   "CDS origin \"" + std::string(origin) + "\": " + std::string(why));
}

// `prefix` is lower case.
bool startsWithNoCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), s.begin(), [](char lower, char c) {
           return std::tolower(static_cast<unsigned char>(c)) == lower;
         });
}

struct Scheme {
  std::string_view prefix;
  bool tls;
};
constexpr Scheme kSchemes[] = {
    {"http://", false}, {"ws://", false}, {"https://", true}, {"wss://", true}};

}  // namespace

std::string Origin::hostPort() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string Origin::toString() const { return (tls ? "https://" : "http://") + hostPort(); }

bool isCdsOrigin(std::string_view origin) {
  return std::any_of(std::begin(kSchemes), std::end(kSchemes),
                     [&](const Scheme& s) { return startsWithNoCase(origin, s.prefix); });
}

Result<Origin> parseOrigin(std::string_view origin) {
  Origin out;
  std::string_view rest = origin;
  bool has_scheme = false;
  for (const Scheme& s : kSchemes) {
    if (startsWithNoCase(origin, s.prefix)) {
      out.tls = s.tls;
      rest = origin.substr(s.prefix.size());
      has_scheme = true;
      break;
    }
  }
  if (!has_scheme && rest.find("://") != std::string_view::npos) {
    return invalid(origin, "scheme must be http, https, ws or wss");
  }
  out.port = out.tls ? 443 : 80;

  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.find('@') != std::string_view::npos)
    return invalid(origin, "user info not allowed");
  if (!authority.starts_with('[') && authority.find(':') != authority.rfind(':')) {
    return invalid(origin, "IPv6 addresses must be written in brackets");
  }
  const auto split = splitHostPort(authority);
  if (!split) return invalid(origin, split.error().message + " in IPv6 address");
  if (!split->host.empty()) out.host = std::string(split->host);
  if (split->port) {
    const auto port = parsePort(*split->port);
    if (!port || *port == 0) return invalid(origin, "port must be 1-65535");
    out.port = *port;
  }
  return out;
}

}  // namespace kturn::cds
