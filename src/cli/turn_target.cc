#include "cli/turn_target.h"

#include <netdb.h>
#include <sys/socket.h>

#include <CLI/CLI.hpp>

#include "config/text_util.h"
#include "config/turn_uri.h"
#include "kturn/host_port.h"
#include "net/sockaddr.h"

namespace kturn::cli {
namespace {

Result<IpAddress> resolveHost(const std::string& host) {
  if (auto ip = IpAddress::parse(host)) return *ip;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    return makeError(Error::Code::kNotFound,
                     "cannot resolve " + config::quoteText(host) + ": " + gai_strerror(rc));
  }
  const IpAddress ip = net::fromSockaddr(found->ai_addr).ip;
  ::freeaddrinfo(found);
  return ip;
}

client::LinkTransport linkTransport(config::ListenerProtocol protocol) {
  switch (protocol) {
    case config::ListenerProtocol::kTurnTcp:
      return client::LinkTransport::kTcp;
    case config::ListenerProtocol::kTurnTls:
      return client::LinkTransport::kTls;
    case config::ListenerProtocol::kTurnDtls:
      return client::LinkTransport::kDtls;
    default:
      return client::LinkTransport::kUdp;
  }
}

}  // namespace

void addTurnServerFlags(CLI::App& command, TurnServerFlags& flags) {
  command.add_option("-u,--user", flags.user, "TURN username (overrides the URI's user info)");
  command.add_option("-p,--password", flags.password, "TURN password");
  command.add_flag("--insecure", flags.insecure,
                   "TURN-TLS/DTLS: accept any server certificate (self-signed test servers)");
  command
      .add_option("--ca-file", flags.ca_file,
                  "TURN-TLS/DTLS: PEM file of the CA to trust instead of the system's")
      ->check(CLI::ExistingFile);
  command
      .add_option("--timeout", flags.timeout_seconds,
                  "seconds for the connection and for each TURN transaction")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
}

Result<TurnTarget> resolveTurnTarget(std::string_view uri, const TurnServerFlags& flags) {
  // RFC 7065 writes "turn:host"; STUNner's URIs (and parseTurnUri) want "turn://host".
  std::string text(uri);
  if (text.find("://") == std::string::npos) {
    if (const size_t colon = text.find(':'); colon != std::string::npos) {
      text.insert(colon + 1, "//");
    }
  }
  auto parsed = config::parseTurnUri(text);
  if (!parsed) return parsed.error();
  auto ip = resolveHost(parsed->host);
  if (!ip) return ip.error();

  TurnTarget target;
  target.address = TransportAddress{*ip, static_cast<uint16_t>(parsed->port)};
  target.transport = linkTransport(parsed->protocol);
  target.uri = config::formatTurnUri(parsed->protocol, parsed->host, parsed->port);
  target.username = flags.user.empty() ? parsed->username : flags.user;
  target.password = flags.password.empty() ? parsed->password : flags.password;
  target.link.server_name = parsed->host;
  target.link.tls = {.insecure = flags.insecure, .ca_file = flags.ca_file};
  target.link.timeout_ms = static_cast<int>(flags.timeout_seconds * 1000);
  return target;
}

Result<TransportAddress> resolveUdpAddress(std::string_view text) {
  std::string_view rest = text;
  if (rest.starts_with("udp://")) rest.remove_prefix(6);
  if (rest.find("://") != std::string_view::npos) {
    return makeError(Error::Code::kInvalidArgument,
                     config::quoteText(text) + ": only udp:// addresses are supported");
  }
  const auto split = splitHostPort(rest);
  if (!split || !split->port) {
    return makeError(Error::Code::kInvalidArgument,
                     config::quoteText(text) + (rest.starts_with('[') ? ": want udp://[IPv6]:port"
                                                                      : ": want udp://host:port"));
  }
  const std::string host(split->host);
  const auto port = parsePort(*split->port);
  if (!port) {
    return makeError(Error::Code::kInvalidArgument, config::quoteText(text) + ": bad port");
  }
  auto ip = resolveHost(host);
  if (!ip) return ip.error();
  return TransportAddress{*ip, *port};
}

Result<std::unique_ptr<client::TurnClient>> connectTurn(const TurnTarget& target,
                                                        const TransportAddress& peer,
                                                        uint32_t lifetime) {
  auto link = client::ServerLink::open(target.address, target.transport, target.link);
  if (!link) {
    return makeError(link.error().code, target.uri + ": " + link.error().message);
  }
  client::TurnClientOptions options{
      .username = target.username,
      .password = target.password,
      .lifetime = lifetime,
      .relay_family = peer.ip.family() != target.address.ip.family()
                          ? std::optional(peer.ip.family())
                          : std::nullopt,
      .transaction_timeout_ms = target.link.timeout_ms,
  };
  return std::make_unique<client::TurnClient>(std::move(*link), std::move(options));
}

}  // namespace kturn::cli
