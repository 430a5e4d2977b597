#include "kturn/host_port.h"

#include <charconv>

namespace kturn {

Result<HostPort> splitHostPort(std::string_view text) {
  HostPort out;
  if (text.starts_with('[')) {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return makeError(Error::Code::kMalformed, "missing ']'");
    out.host = text.substr(1, close - 1);
    const std::string_view tail = text.substr(close + 1);
    if (!tail.empty() && tail.front() != ':') {
      return makeError(Error::Code::kMalformed, "junk after ']'");
    }
    if (!tail.empty()) out.port = tail.substr(1);
    return out;
  }
  const size_t colon = text.rfind(':');
  out.host = text.substr(0, colon);
  if (colon != std::string_view::npos) out.port = text.substr(colon + 1);
  return out;
}

std::optional<uint16_t> parsePort(std::string_view digits) {
  if (digits.empty() || digits.front() < '0' || digits.front() > '9') return std::nullopt;
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value > 65535) {
    return std::nullopt;
  }
  return static_cast<uint16_t>(value);
}

}  // namespace kturn
