// `kturnctl turncat`: a tunnel from a local UDP socket through a TURN allocation to a peer, as
// STUNner's turncat:
//   kturnctl turncat udp://127.0.0.1:5000 turn://user:pass@192.0.2.1:3478 udp://10.0.0.1:9001
// Every client that sends to the local address gets an allocation of its own on the TURN server,
// with a channel bound to the peer; what the client sends reaches the peer from the relayed
// address, and what the peer sends back reaches the client from the local address. With `-` as
// the local side, standard input is sent (one datagram per read) and what comes back is written
// to standard output, until a second after the input ended.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "cli/turn_target.h"

namespace CLI {
class App;
}

namespace kturn::cli {

class StopLatch;

struct TurncatCommand {
  std::string local{};   // udp://ADDR:PORT to listen on, or "-" for stdin/stdout
  std::string server{};  // TURN URI
  std::string peer{};    // udp://ADDR:PORT
  TurnServerFlags turn{};
  uint32_t lifetime = 600;
  int max_clients = 64;
};

// Registers the `turncat` subcommand; `command` must outlive `app`.
CLI::App* addTurncatCommand(CLI::App& app, TurncatCommand& command);

// Runs until `stop` trips (exit 0, allocations released) or, with "-", until a second after
// standard input ended. A bad argument is kExitUsage; a local address that cannot be bound, or with
// "-" an allocation that fails, is kExitFailure. Sessions are reported on `err`, one line each.
int runTurncat(const TurncatCommand& command, std::ostream& err, StopLatch& stop);

}  // namespace kturn::cli
