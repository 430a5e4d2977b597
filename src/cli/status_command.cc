#include "cli/status_command.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>

#include "admin/http_endpoint.h"
#include "auth/token_file.h"
#include "cli/exit_codes.h"
#include "cli/http_get.h"
#include "cli/table.h"

namespace kturn::cli {
namespace {

using nlohmann::json;
constexpr const char* kPrefix = "kturnctl status: ";

std::string text(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "-";
  if (it->is_string()) return it->get<std::string>().empty() ? "-" : it->get<std::string>();
  return it->dump();
}

std::string joined(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_array() || it->empty()) return "-";
  std::string out;
  for (const json& item : *it) {
    if (!out.empty()) out += ",";
    out += item.is_string() ? item.get<std::string>() : item.dump();
  }
  return out;
}

// "host:port" with brackets around an IPv6 host; "-" without a host.
std::string hostPort(const json& object, const char* host_key, const char* port_key) {
  const std::string host = text(object, host_key);
  if (host == "-") return "-";
  const std::string port = text(object, port_key);
  const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return port == "-" || port == "0" ? shown : shown + ":" + port;
}

// rx packets, rx bytes, tx packets, tx bytes of an element's "stats".
std::vector<std::string> traffic(const json& object) {
  const json stats = object.value("stats", json::object());
  std::vector<std::string> cells;
  for (const char* direction : {"rx", "tx"}) {
    const json d = stats.value(direction, json::object());
    cells.push_back(text(d, "pkts"));
    cells.push_back(text(d, "bytes"));
  }
  return cells;
}

std::string listenerTable(const json& listeners) {
  std::vector<TableRow> rows{{"LISTENER", "PROTOCOL", "ADDRESS", "PUBLIC", "ROUTES", "RX-PKTS",
                              "RX-BYTES", "TX-PKTS", "TX-BYTES"}};
  for (const json& l : listeners) {
    TableRow row{text(l, "name"), text(l, "protocol"), hostPort(l, "address", "port"),
                 hostPort(l, "public_address", "public_port"), joined(l, "routes")};
    for (std::string& cell : traffic(l)) row.push_back(std::move(cell));
    rows.push_back(std::move(row));
  }
  return formatTable(rows);
}

std::string clusterTable(const json& clusters) {
  std::vector<TableRow> rows{
      {"CLUSTER", "TYPE", "PROTOCOL", "ENDPOINTS", "RX-PKTS", "RX-BYTES", "TX-PKTS", "TX-BYTES"}};
  for (const json& c : clusters) {
    TableRow row{text(c, "name"), text(c, "type"), text(c, "protocol"), joined(c, "endpoints")};
    for (std::string& cell : traffic(c)) row.push_back(std::move(cell));
    rows.push_back(std::move(row));
  }
  return formatTable(rows);
}

}  // namespace

std::string formatStatus(const json& status) {
  const json admin = status.value("admin", json::object());
  const json auth = status.value("auth", json::object());
  const json listeners = status.value("listeners", json::array());
  const json clusters = status.value("clusters", json::array());
  std::string out = formatTable({{"name:", text(admin, "name")},
                                 {"status:", text(status, "status")},
                                 {"allocations:", text(status, "allocationCount")},
                                 {"auth:", text(auth, "type")},
                                 {"realm:", text(auth, "realm")}});
  out += "\n";
  out += listeners.empty() ? "no listeners\n" : listenerTable(listeners);
  out += "\n";
  out += clusters.empty() ? "no clusters\n" : clusterTable(clusters);
  return out;
}

CLI::App* addStatusCommand(CLI::App& app, StatusCommand& command) {
  CLI::App* sub = app.add_subcommand(
      "status",
      "Show a running kturnd's status (GET /status on its health-check server): readiness, "
      "allocations, and each listener and cluster with the traffic it carried. Exit status: 0 "
      "ok, 1 unreachable or an error answer, 2 bad usage.");
  sub->add_option("--admin", command.admin,
                  "kturnd's health-check server (admin.healthcheck_endpoint), http://host[:port]")
      ->capture_default_str();
  sub->add_option("-o,--output", command.output,
                  "table, or json (the /status document as the server sent it)")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  sub->add_option("--timeout", command.timeout_seconds, "seconds to connect and get an answer")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--token-file", command.token_file,
                  "a file holding the bearer token /status requires (kturnd --status-token-file)");
  return sub;
}

int runStatus(const StatusCommand& command, std::ostream& out, std::ostream& err) {
  auto server = parseServerUrl("--admin", command.admin, admin::kDefaultHealthCheckPort);
  if (!server) {
    err << kPrefix << server.error().message << "\nRun with --help for more information.\n";
    return kExitUsage;
  }
  std::string token;
  if (!command.token_file.empty()) {
    auto read = auth::readTokenFile(command.token_file);
    if (!read) {
      err << kPrefix << "--token-file: " << read.error().message << "\n";
      return kExitUsage;
    }
    token = std::move(read).value();
  }
  auto reply = httpGet({
      .server = *server,
      .target = "/status",
      .bearer_token = token,
      .timeout = std::chrono::milliseconds(static_cast<int64_t>(command.timeout_seconds * 1000)),
  });
  if (!reply) {
    err << kPrefix << reply.error().message << "\n";
    return kExitFailure;
  }
  const std::string where = "GET http://" + server->hostPort() + "/status";
  if (reply->status != 200) {
    err << kPrefix << where << ": HTTP " << reply->status << ": " << errorMessage(reply->body)
        << "\n";
    return kExitFailure;
  }
  const json status = json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
  if (!status.is_object()) {
    err << kPrefix << where << ": not a JSON status document\n";
    return kExitFailure;
  }
  if (command.output == "json") {
    out << reply->body;
    if (reply->body.empty() || reply->body.back() != '\n') out << "\n";
  } else {
    try {
      out << formatStatus(status);
    } catch (const json::exception& e) {
      err << kPrefix << where << ": unexpected status document: " << e.what() << "\n";
      return kExitFailure;
    }
  }
  out.flush();
  return out ? kExitOk : kExitFailure;
}

}  // namespace kturn::cli
