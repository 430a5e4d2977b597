#include "config/turn_uri.h"

#include "config/text_util.h"
#include "kturn/host_port.h"

namespace kturn::config {
namespace {

Error badUri(std::string_view uri, std::string_view why) {
  return makeError(Error::Code::kInvalidArgument,
                   "invalid TURN URI " + quoteText(uri) + ": " + std::string(why));
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// RFC 3986 §2.1 percent-decoding, as Go's url.Parse applies it to the userinfo.
std::optional<std::string> percentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int hi = hexValue(text[i + 1]);
    const int lo = hexValue(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

// The first value of `key` in a query string ("a=b&transport=tcp").
std::optional<std::string> queryValue(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == key) {
      return percentDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

std::optional<ListenerProtocol> protocolFor(std::string_view scheme, std::string_view transport) {
  if (transport == "tls") return ListenerProtocol::kTurnTls;
  if (transport == "dtls") return ListenerProtocol::kTurnDtls;
  if (scheme == "turn" && transport == "udp") return ListenerProtocol::kTurnUdp;
  if (scheme == "turn" && transport == "tcp") return ListenerProtocol::kTurnTcp;
  if (scheme == "turns" && transport == "udp") return ListenerProtocol::kTurnDtls;
  if (scheme == "turns" && transport == "tcp") return ListenerProtocol::kTurnTls;
  return std::nullopt;
}

}  // namespace

Result<TurnUri> parseTurnUri(std::string_view uri) {
  const size_t sep = uri.find("://");
  if (sep == std::string_view::npos || sep == 0) return badUri(uri, "want scheme://host");
  const std::string scheme = toLower(uri.substr(0, sep));
  std::string_view rest = uri.substr(sep + 3);

  std::string_view query;
  if (const size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (const size_t frag = query.find('#'); frag != std::string_view::npos) {
    query = query.substr(0, frag);
  }
  std::string_view authority = rest.substr(0, rest.find('/'));

  TurnUri out;
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    authority.remove_prefix(at + 1);
    const size_t colon = userinfo.find(':');
    auto user = percentDecode(userinfo.substr(0, colon));
    auto pass = percentDecode(colon == std::string_view::npos ? "" : userinfo.substr(colon + 1));
    if (!user || !pass) return badUri(uri, "bad percent-escape in user info");
    out.username = std::move(*user);
    out.password = std::move(*pass);
  }

  const auto split = splitHostPort(authority);
  if (!split) return badUri(uri, split.error().message + " in host");
  out.host = std::string(split->host);
  const std::string_view port_text = split->port.value_or("");
  if (out.host.empty()) return badUri(uri, "missing host");

  const std::string transport = toLower(queryValue(query, "transport").value_or("udp"));
  const auto protocol = protocolFor(scheme, transport);
  if (!protocol) return badUri(uri, "unknown scheme/transport combination");
  out.protocol = *protocol;

  const bool secure =
      out.protocol == ListenerProtocol::kTurnTls || out.protocol == ListenerProtocol::kTurnDtls;
  out.port = secure ? 443 : 3478;
  if (!port_text.empty()) {
    const auto port = parseDecimal(port_text, 65535);
    if (!port) return badUri(uri, "invalid port " + quoteText(port_text));
    out.port = static_cast<int>(*port);
  }
  return out;
}

std::string formatTurnUri(ListenerProtocol protocol, std::string_view host, int port) {
  std::string_view scheme = "turn";
  std::string_view transport = "udp";
  switch (protocol) {
    case ListenerProtocol::kTurnUdp:
      break;
    case ListenerProtocol::kTurnTcp:
      transport = "tcp";
      break;
    case ListenerProtocol::kTurnTls:
      scheme = "turns";
      transport = "tcp";
      break;
    case ListenerProtocol::kTurnDtls:
      scheme = "turns";
      break;
    case ListenerProtocol::kUnknown:
      return {};
  }
  const bool bracket = host.find(':') != std::string_view::npos;
  std::string uri(scheme);
  uri += ':';
  if (bracket) uri += '[';
  uri += host;
  if (bracket) uri += ']';
  uri += ':' + std::to_string(port) + "?transport=" + std::string(transport);
  return uri;
}

}  // namespace kturn::config
