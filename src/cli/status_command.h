// `kturnctl status`: asks a running kturnd (or stunnerd) for its GET /status document on the
// health-check server (admin.healthcheck_endpoint, default http://:8086) and prints it as tables
// (listeners and clusters with their traffic) or as the JSON the server sent.
#pragma once

#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace CLI {
class App;
}

namespace kturn::cli {

inline constexpr const char* kDefaultAdminUrl = "http://127.0.0.1:8086";

struct StatusCommand {
  std::string admin = kDefaultAdminUrl;  // its path is ignored: the document is at /status
  std::string output = "table";          // or "json"
  double timeout_seconds = 5;
  std::string token_file{};  // sent as a bearer token (kturnd --status-token-file)
};

// Registers the `status` subcommand; `command` must outlive `app`.
CLI::App* addStatusCommand(CLI::App& app, StatusCommand& command);

// Returns an exit status (exit_codes.h): an unreachable server, an HTTP error or a body that is
// not a status document is kExitFailure.
int runStatus(const StatusCommand& command, std::ostream& out, std::ostream& err);

// The tables `-o table` prints for a /status document (admin/stunner_status.h has its shape).
// Fields it lacks print as "-". Throws nlohmann::json::exception for a field of the wrong type.
std::string formatStatus(const nlohmann::json& status);

}  // namespace kturn::cli
