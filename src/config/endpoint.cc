#include "config/endpoint.h"

#include <algorithm>

#include "common/utf8.h"
#include "config/text_util.h"

namespace kturn::config {
namespace {

struct PortRange {
  uint16_t min_port = 1;
  uint16_t max_port = 65535;
  bool present = false;
};

// Splits a trailing ":<min-max>" off text. STUNner matches ^(.*):<([0-9]+)-([0-9]+)>$; the range
// holds no ':' or '<', so the last ":<" is the only candidate. Text without a well-formed suffix
// is left whole, exactly as STUNner does, and then fails as an address.
Result<PortRange> splitPortRange(std::string_view& text) {
  PortRange range;
  if (text.empty() || text.back() != '>') return range;
  const size_t open = text.rfind(":<");
  if (open == std::string_view::npos) return range;
  const std::string_view body = text.substr(open + 2, text.size() - open - 3);
  const size_t dash = body.find('-');
  if (dash == std::string_view::npos) return range;
  const std::string_view lo_text = body.substr(0, dash);
  const std::string_view hi_text = body.substr(dash + 1);
  auto digits = [](std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(lo_text) || !digits(hi_text)) return range;
  const auto lo = parseDecimal(lo_text, 65535);
  const auto hi = parseDecimal(hi_text, 65535);
  if (!lo || !hi) {
    return makeError(Error::Code::kInvalidArgument,
                     "invalid port range " + quoteText(text.substr(open)) + ": ports are 0-65535");
  }
  if (*lo > *hi) {
    return makeError(Error::Code::kInvalidArgument,
                     "invalid port range " + quoteText(text.substr(open)) + ": min > max");
  }
  range.min_port = static_cast<uint16_t>(*lo);
  range.max_port = static_cast<uint16_t>(*hi);
  range.present = true;
  text = text.substr(0, open);
  return range;
}

void maskToPrefix(std::span<const uint8_t> in, uint8_t prefix_len, std::array<uint8_t, 16>& out) {
  for (size_t i = 0; i < in.size(); ++i) {
    const int bits = std::clamp(static_cast<int>(prefix_len) - static_cast<int>(i) * 8, 0, 8);
    const uint8_t mask = bits == 0 ? 0 : static_cast<uint8_t>(0xff << (8 - bits));
    out[i] = in[i] & mask;
  }
}

}  // namespace

Result<Endpoint> parseEndpoint(std::string_view text) {
  std::string_view rest = text;
  auto range = splitPortRange(rest);
  if (!range) return range.error();

  Endpoint ep;
  ep.min_port = range->min_port;
  ep.max_port = range->max_port;
  ep.has_port_range = range->present;

  const auto invalid = [&] {
    return makeError(Error::Code::kInvalidArgument, "invalid address " + quoteText(text));
  };
  std::string_view addr_text = rest;
  std::optional<uint32_t> len;
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    addr_text = rest.substr(0, slash);
    len = parseDecimal(rest.substr(slash + 1), 128);
    if (!len) return invalid();
  }
  const auto ip = IpAddress::parse(addr_text);
  if (!ip) return invalid();
  const uint32_t max_len = ip->isV4() ? 32 : 128;
  if (len && *len > max_len) return invalid();

  ep.prefix_len = static_cast<uint8_t>(len.value_or(max_len));
  ep.has_prefix_len = len.has_value();
  std::array<uint8_t, 16> masked{};
  maskToPrefix(ip->bytes(), ep.prefix_len, masked);
  ep.prefix = IpAddress::fromBytes(ip->family(), {masked.data(), ip->bytes().size()});
  return ep;
}

Result<DnsEndpoint> parseDnsEndpoint(std::string_view text) {
  std::string_view host = text;
  auto range = splitPortRange(host);
  if (!range) return range.error();
  const bool bad_char = std::any_of(host.begin(), host.end(), [](char c) {
    return static_cast<unsigned char>(c) <= ' ' || c == '/' || c == '<' || c == '>' || c == 0x7f;
  });
  // Not UTF-8: no resolver could look it up, and serialized (JSON replaces each bad byte with
  // U+FFFD) it would no longer be the same name, nor necessarily a valid one.
  if (host.empty() || host.size() > 253 || bad_char || !isValidUtf8(host)) {
    return makeError(Error::Code::kInvalidArgument, "invalid host name " + quoteText(text));
  }
  return DnsEndpoint{
      .host = std::string(host), .min_port = range->min_port, .max_port = range->max_port};
}

bool Endpoint::containsAddress(const IpAddress& peer) const {
  if (peer.family() != prefix.family()) return false;
  std::array<uint8_t, 16> masked{};
  maskToPrefix(peer.bytes(), prefix_len, masked);
  const auto want = prefix.bytes();
  return std::equal(want.begin(), want.end(), masked.begin());
}

bool Endpoint::contains(const TransportAddress& peer) const {
  return peer.port >= min_port && peer.port <= max_port && containsAddress(peer.ip);
}

std::string Endpoint::toString() const {
  std::string out = prefix.toString();
  if (has_prefix_len) out.append("/").append(std::to_string(prefix_len));
  if (has_port_range) {
    out.append(":<").append(std::to_string(min_port)).append("-");
    out.append(std::to_string(max_port)).append(">");
  }
  return out;
}

}  // namespace kturn::config
