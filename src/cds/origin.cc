#include "cds/origin.h"

#include <algorithm>
#include <cctype>
#include <charconv>

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
  std::string_view host;
  std::string_view port;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return invalid(origin, "missing ']' in IPv6 address");
    host = authority.substr(1, close - 1);
    const std::string_view tail = authority.substr(close + 1);
    if (!tail.empty() && tail.front() != ':') return invalid(origin, "junk after IPv6 address");
    if (!tail.empty()) {
      port = tail.substr(1);
      has_port = true;
    }
  } else {
    const size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos && authority.find(':') != colon) {
      return invalid(origin, "IPv6 addresses must be written in brackets");
    }
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      has_port = true;
    }
  }
  if (!host.empty()) out.host = std::string(host);
  if (has_port) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value == 0 ||
        value > 65535) {
      return invalid(origin, "port must be 1-65535");
    }
    out.port = static_cast<uint16_t>(value);
  }
  return out;
}

}  // namespace kturn::cds
