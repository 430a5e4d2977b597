// The host and port of "host:port" text: listener and server addresses, URI authorities, CLI
// targets. One splitter for all of them (what each accepts around it, such as a default port or
// a required one, stays the caller's).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "kturn/result.h"

namespace kturn {

struct HostPort {
  std::string_view host;                 // without the brackets of "[ipv6]"
  std::optional<std::string_view> port;  // the text after the ':', if there is one (maybe empty)
};

// "host:port", "[ipv6]:port", "host" and "[ipv6]". Without brackets the last ':' splits, so an
// IPv6 address with a port needs its brackets. kMalformed ("missing ']'", "junk after ']'") for
// an unclosed bracket or anything but ":port" after it.
Result<HostPort> splitHostPort(std::string_view text);

// A port written in decimal digits only, 0 to 65535; nullopt for anything else ("", "+1", "1x").
std::optional<uint16_t> parsePort(std::string_view digits);

}  // namespace kturn
