// The kturnctl binary itself: what only main() decides (exit statuses of flag errors and --help,
// signals ending a watch, STUNNER_CONFIG_ORIGIN), against a CdsServer in this process; and
// `render` still printing the golden stream.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cds/cds_server.h"
#include "cli/test_support.h"  // tests/cli
#include "config/validator.h"

namespace kturn::cli {
namespace {

using nlohmann::json;
using testing::Kturnctl;

config::StunnerConfig gatewayConfig(const std::string& id, int port) {
  config::StunnerConfig c{
      .version = "v1",
      .admin = {.name = id},
      .auth = {.type = "static", .credentials = {{"username", "u"}, {"password", "p"}}},
      .listeners = {{.name = "udp", .protocol = "TURN-UDP", .address = "127.0.0.1", .port = port}},
  };
  EXPECT_TRUE(config::validate(c));
  return c;
}

TEST(KturnctlBinaryTest, HelpListsTheSubcommandsAndExitsZero) {
  Kturnctl help({"--help"});
  ASSERT_TRUE(help.started());
  EXPECT_EQ(help.wait(), 0) << help.err();
  for (const char* sub : {"render", "config", "status", "auth"}) {
    EXPECT_NE(help.out().find(sub), std::string::npos) << sub << "\n" << help.out();
  }
  for (const char* sub : {"config", "status", "auth"}) {
    Kturnctl sub_help({sub, "--help"});
    EXPECT_EQ(sub_help.wait(), 0) << sub;
    EXPECT_NE(sub_help.out().find("Exit status"), std::string::npos) << sub_help.out();
  }
}

TEST(KturnctlBinaryTest, BadFlagsExitTwo) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"nosuchcommand"},
      {"config", "--bogus"},
      {"config", "media/gw", "-o", "xml"},
      {"config"},
      {"status", "-o", "yaml"},
      {"status", "--timeout", "-1"},
      {"auth", "--ttl", "-5"},
      {"auth", "--service", "stun"},
      {"auth", "-c", "/x", "--auth-server", "http://127.0.0.1:8088"},
      {"auth", "-c", "/x", "--token-file", "/t"},
  };
  for (const auto& args : cases) {
    Kturnctl run(args, {"STUNNER_CONFIG_ORIGIN="});
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(run.wait(), 2) << joined << "\n" << run.err();
    EXPECT_FALSE(run.err().empty()) << joined;
    EXPECT_EQ(run.out().find("{"), std::string::npos) << joined;
  }
}

class KturnctlCdsTest : public ::testing::Test {
 protected:
  KturnctlCdsTest() {
    auto server = cds::CdsServer::start({.address = "127.0.0.1", .port = 0});
    EXPECT_TRUE(server) << server.error().message;
    if (server) server_ = std::move(*server);
    EXPECT_TRUE(server_->upsert("media/gw", gatewayConfig("media/gw", 3478)));
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

  std::unique_ptr<cds::CdsServer> server_;
};

TEST_F(KturnctlCdsTest, ServerFromTheEnvironmentAsKturnd) {
  Kturnctl run({"config", "media/gw", "-o", "json"}, {"STUNNER_CONFIG_ORIGIN=" + url()});
  EXPECT_EQ(run.wait(), 0) << run.err();
  EXPECT_EQ(json::parse(run.out())["admin"]["name"], "media/gw");
  // -c wins over the environment.
  Kturnctl flag({"config", "media/gw", "-c", url()}, {"STUNNER_CONFIG_ORIGIN=http://127.0.0.1:1"});
  EXPECT_EQ(flag.wait(), 0) << flag.err();
  Kturnctl unknown({"config", "media/nope", "-c", url()});
  EXPECT_EQ(unknown.wait(), 1);
  EXPECT_EQ(unknown.err(), "kturnctl config: no config media/nope at " + url() + " (404)\n");
}

// A watch prints the current config and each change, and ends with status 0 on SIGTERM or
// SIGINT.
TEST_F(KturnctlCdsTest, WatchEndsOnSignals) {
  for (const int signal_number : {SIGTERM, SIGINT}) {
    EXPECT_TRUE(server_->upsert("media/gw", gatewayConfig("media/gw", 3478)));
    Kturnctl watch({"config", "media/gw", "-w", "-o", "json", "-c", url()});
    ASSERT_TRUE(watch.started());
    const auto lines = [](size_t n) {
      return [n](const std::string& out) {
        return static_cast<size_t>(std::count(out.begin(), out.end(), '\n')) >= n;
      };
    };
    ASSERT_TRUE(watch.waitForStdout(lines(1))) << watch.err();
    EXPECT_TRUE(server_->upsert("media/gw", gatewayConfig("media/gw", 3479)));
    ASSERT_TRUE(watch.waitForStdout(lines(2))) << watch.out() << watch.err();
    watch.signal(signal_number);
    EXPECT_EQ(watch.wait(), 0) << watch.err();
    std::istringstream out(watch.out());
    std::string first;
    std::string second;
    std::getline(out, first);
    std::getline(out, second);
    EXPECT_EQ(json::parse(first)["listeners"][0]["port"], 3478);
    EXPECT_EQ(json::parse(second)["listeners"][0]["port"], 3479);
    EXPECT_EQ(watch.err(), "");
  }
}

TEST(KturnctlBinaryTest, RenderPrintsTheGoldenStream) {
  const auto golden =
      std::filesystem::path(__FILE__).parent_path().parent_path() / "golden" / "static-service";
  Kturnctl render({"render", "-f", (golden / "input").string(), "--now", "2024-01-01T00:00:00Z"});
  const int status = render.wait();
  std::ifstream in(golden / "expected.yaml");
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(render.out(), expected.str());
  EXPECT_EQ(status, render.err().empty() ? 0 : 1) << render.err();
  Kturnctl missing({"render", "-f", "/nonexistent/manifests"});
  EXPECT_EQ(missing.wait(), 2) << missing.err();
}

TEST(KturnctlBinaryTest, UnreachableServersExitOne) {
  Kturnctl status({"status", "--admin", "http://127.0.0.1:1"});
  EXPECT_EQ(status.wait(), 1);
  EXPECT_NE(status.err().find("kturnctl status: GET http://127.0.0.1:1/status: connecting:"),
            std::string::npos)
      << status.err();
  Kturnctl auth({"auth", "--auth-server", "http://127.0.0.1:1"});
  EXPECT_EQ(auth.wait(), 1);
  EXPECT_NE(auth.err().find("kturnctl auth: GET http://127.0.0.1:1/?service=turn"),
            std::string::npos)
      << auth.err();
  EXPECT_EQ(status.out() + auth.out(), "");
}

}  // namespace
}  // namespace kturn::cli
