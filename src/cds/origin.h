// Where a CDS client connects: the `-c` origin of stunnerd, parsed the way
// pkg/config/client/util.go getURI does it. An origin without a scheme is HTTP
// ("10.0.0.1:13478" means "http://10.0.0.1:13478"); http/ws are plain, https/wss use TLS. The
// scheme only picks TLS or not: the one-shot GET is always HTTP(S) and the watch always a
// WebSocket, whichever of the two spellings the user wrote.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kturn/result.h"

namespace kturn::cds {

struct Origin {
  bool tls = false;
  std::string host = "127.0.0.1";  // no brackets around IPv6 literals
  uint16_t port = 80;              // Go's URL default: 80, or 443 with TLS

  // "host:port" with brackets for IPv6: the HTTP Host header value.
  std::string hostPort() const;
  // "http://host:port" / "https://host:port".
  std::string toString() const;
  friend bool operator==(const Origin&, const Origin&) = default;
};

// Accepts http://, https://, ws://, wss:// (any case) or a bare "host[:port]"; an empty host
// ("http://:13478", stunnerd's default origin ":13478") means the local host. A path, query or
// fragment is ignored: the API paths are absolute. Refuses file:// and anything else.
Result<Origin> parseOrigin(std::string_view origin);

// True for origins that CdsClient serves (http, https, ws, wss, any case): what kturnd checks to
// pick a CDS client over a file or a TURN URI.
bool isCdsOrigin(std::string_view origin);

}  // namespace kturn::cds
