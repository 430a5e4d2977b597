// `kturnctl icetest`: is this TURN server relaying, and how well? It allocates a relay address,
// binds a channel to an echo peer (its own, on loopback, unless --peer names one), sends
// --count packets at --rate, and reports what came back: loss and round-trip-time percentiles,
// with a live progress line on a terminal.
//   kturnctl icetest turn:127.0.0.1:3478 -u USER -p PASS
//   kturnctl icetest 'turns:turn.example.com:443?transport=tcp' -u U -p P --peer udp://10.0.0.9:7
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/turn_target.h"

namespace CLI {
class App;
}

namespace kturn::cli {

class StopLatch;

struct IcetestCommand {
  std::string server{};
  std::string peer{};  // empty: the built-in echo peer
  TurnServerFlags turn{};
  int count = 100;
  double rate = 50;               // packets per second
  int size = 100;                 // payload bytes
  std::string mode = "channel";   // or "send": Send/Data indications instead of a channel
  double wait_seconds = 2;        // after the last packet, for late echoes
  double max_loss = 5;            // percent; more fails the test
  std::string output = "text";    // or "json"
  std::string progress = "auto";  // "auto": on when stderr is a terminal; "always", "never"
};

// Round-trip times in milliseconds, summarised. Percentiles are nearest-rank.
struct RttSummary {
  double min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};
// Empty input gives std::nullopt. Sorts `samples`.
std::optional<RttSummary> summarizeRtts(std::vector<double>& samples);

struct IcetestReport {
  std::string server{};     // RFC 7065 URI
  std::string transport{};  // udp, tcp, tls, dtls
  std::string security{};   // "TLSv1.3 TLS_AES_256_GCM_SHA384" or empty
  std::string relayed{};
  std::string mapped{};
  std::string peer{};
  bool builtin_peer = false;
  std::string mode{};
  double allocate_ms = 0;  // Allocate, with the 401 challenge round trip
  double bind_ms = 0;      // ChannelBind or CreatePermission
  int sent = 0;
  int received = 0;  // distinct packets echoed back
  int duplicates = 0;
  std::optional<RttSummary> rtt{};
  double lossPercent() const;
};

nlohmann::json toJson(const IcetestReport& report);
std::string formatReport(const IcetestReport& report);

// Registers the `icetest` subcommand; `command` must outlive `app`.
CLI::App* addIcetestCommand(CLI::App& app, IcetestCommand& command);

// Exit status: kExitOk when the test ran and lost at most --max-loss percent; kExitFailure when
// the server could not be reached, refused a request, or lost more. `stop` ends the sending
// early (the report covers what was sent).
int runIcetest(const IcetestCommand& command, std::ostream& out, std::ostream& err,
               StopLatch& stop);

}  // namespace kturn::cli
