#include "admin/http_endpoint.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace kturn::admin {
namespace {

Error invalid(std::string_view url, std::string_view why) {
  return makeError(Error::Code::kInvalidArgument,
                   "admin endpoint \"" + std::string(url) + "\": " + std::string(why));
}

// `prefix` is lower case.
bool startsWithNoCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), s.begin(), [](char lower, char c) {
           return std::tolower(static_cast<unsigned char>(c)) == lower;
         });
}

}  // namespace

std::string HttpEndpoint::hostPort() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string HttpEndpoint::toString() const { return "http://" + hostPort() + path; }

Result<std::optional<HttpEndpoint>> parseHttpEndpoint(std::string_view url, uint16_t default_port) {
  if (url.empty()) return std::optional<HttpEndpoint>{};
  constexpr std::string_view kScheme = "http://";
  if (!startsWithNoCase(url, kScheme)) return invalid(url, "must start with http://");

  std::string_view rest = url.substr(kScheme.size());
  // Query and fragment carry no meaning for a listen address; Go's url.Parse drops them too.
  rest = rest.substr(0, rest.find_first_of("?#"));
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  HttpEndpoint out;
  out.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (authority.find('@') != std::string_view::npos) return invalid(url, "user info not allowed");

  std::string_view host;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return invalid(url, "missing ']' in IPv6 address");
    host = authority.substr(1, close - 1);
    std::string_view tail = authority.substr(close + 1);
    if (!tail.empty() && tail.front() != ':') return invalid(url, "junk after IPv6 address");
    if (!tail.empty()) port = tail.substr(1);
  } else {
    const size_t colon = authority.find(':');
    if (colon != std::string_view::npos &&
        authority.find(':', colon + 1) != std::string_view::npos) {
      return invalid(url, "IPv6 addresses must be written in brackets");
    }
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }

  if (!host.empty()) out.host = std::string(host);
  out.host_omitted = host.empty();
  out.port = default_port;
  if (!port.empty()) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc{} || end != port.data() + port.size() || value > 65535) {
      return invalid(url, "port must be 0-65535");
    }
    out.port = static_cast<uint16_t>(value);
  }
  return std::optional<HttpEndpoint>{std::move(out)};
}

}  // namespace kturn::admin
