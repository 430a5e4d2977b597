// `kturnctl config` against a real CdsServer on a loopback ephemeral port: one-shot get in both
// output formats, --all, a watch (of one config, or --all) that sees pushed changes and deletions,
// and the error paths.
#include "cli/config_command.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cds/cds_server.h"
#include "cli/exit_codes.h"
#include "cli/test_support.h"  // tests/cli
#include "config/parser.h"
#include "config/serializer.h"
#include "config/validator.h"

namespace kturn::cli {
namespace {

using nlohmann::json;
using testing::SyncOutput;

config::StunnerConfig gatewayConfig(const std::string& id, int port) {
  config::StunnerConfig c{
      .version = "v1",
      .admin = {.name = id},
      .auth = {.type = "ephemeral", .realm = "kturn.test", .credentials = {{"secret", "s3cr3t"}}},
      .listeners = {{.name = id + "/udp",
                     .protocol = "TURN-UDP",
                     .public_address = "198.51.100.7",
                     .address = "0.0.0.0",
                     .port = port,
                     .routes = {"media/backend"}}},
      .clusters = {{.name = "media/backend", .type = "STATIC", .endpoints = {"10.244.0.0/16"}}},
  };
  EXPECT_TRUE(config::validate(c));
  return c;
}

// A server port nothing listens on: a server started and stopped at once.
uint16_t closedPort() {
  auto server = cds::CdsServer::start({.address = "127.0.0.1", .port = 0});
  const uint16_t port = server ? (*server)->port() : 1;
  return port;  // the server stops with `server`
}

class ConfigCommandTest : public ::testing::Test {
 protected:
  ConfigCommandTest() {
    auto server = cds::CdsServer::start({.address = "127.0.0.1", .port = 0});
    EXPECT_TRUE(server) << server.error().message;
    if (server) server_ = std::move(*server);
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

  int run(ConfigCommand command) {
    if (command.server.empty()) command.server = url();
    out_.str("");
    err_.str("");
    return runConfig(command, out_, err_);
  }

  std::unique_ptr<cds::CdsServer> server_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST(ConfigCommandAuthTest, ATokenFileReadsFromAnAuthenticatingServer) {
  auto server = cds::CdsServer::start(
      {.address = "127.0.0.1",
       .port = 0,
       .authorizer = [](const std::string& token, const cds::AccessRequest&) {
         return cds::Decision{.authenticated = token == "reader", .allowed = token == "reader"};
       }});
  ASSERT_TRUE(server) << server.error().message;
  ASSERT_TRUE((*server)->upsert("media/gw", gatewayConfig("media/gw", 3478)));
  const std::string url = "http://127.0.0.1:" + std::to_string((*server)->port());
  std::ostringstream out, err;
  EXPECT_EQ(runConfig({.id = "media/gw", .server = url}, out, err), kExitFailure);
  EXPECT_NE(err.str().find("401"), std::string::npos) << err.str();
  const std::string file = ::testing::TempDir() + "kturnctl-config-token";
  std::ofstream(file) << "reader\n";
  out.str("");
  err.str("");
  EXPECT_EQ(runConfig({.id = "media/gw", .server = url, .token_file = file}, out, err), kExitOk)
      << err.str();
  EXPECT_NE(out.str().find("media/gw/udp"), std::string::npos) << out.str();
  std::remove(file.c_str());
}

TEST_F(ConfigCommandTest, GetPrintsTheConfigAsYaml) {
  ASSERT_TRUE(server_->upsert("media/gw", gatewayConfig("media/gw", 3478)));
  ASSERT_EQ(run({.id = "media/gw"}), kExitOk) << err_.str();
  EXPECT_EQ(err_.str(), "");
  EXPECT_EQ(out_.str().rfind("---", 0), std::string::npos) << "one document, no separator";
  auto printed = config::parseConfig(out_.str());
  ASSERT_TRUE(printed) << printed.error().message << "\n" << out_.str();
  EXPECT_EQ(printed->admin.name, "media/gw");
  EXPECT_EQ(printed->auth.type, "ephemeral");
  EXPECT_EQ(printed->auth.realm, "kturn.test");
  EXPECT_EQ(printed->auth.secret(), "s3cr3t");
  ASSERT_EQ(printed->listeners.size(), 1u);
  EXPECT_EQ(printed->listeners[0].name, "media/gw/udp");
  EXPECT_EQ(printed->listeners[0].protocol, "TURN-UDP");
  EXPECT_EQ(printed->listeners[0].port, 3478);
  EXPECT_EQ(printed->listeners[0].public_address, "198.51.100.7");
  EXPECT_EQ(printed->listeners[0].routes, std::vector<std::string>{"media/backend"});
  ASSERT_EQ(printed->clusters.size(), 1u);
  EXPECT_EQ(printed->clusters[0].endpoints, std::vector<std::string>{"10.244.0.0/16"});
  EXPECT_EQ(*printed, *server_->get("media/gw"));
}

TEST_F(ConfigCommandTest, GetPrintsTheConfigAsOneJsonLine) {
  ASSERT_TRUE(server_->upsert("media/gw", gatewayConfig("media/gw", 3478)));
  ASSERT_EQ(run({.id = "media/gw", .output = "json"}), kExitOk) << err_.str();
  // Exactly what the server sends: the wire JSON on one line.
  EXPECT_EQ(out_.str(), config::toJson(*server_->get("media/gw")) + "\n");
  const json j = json::parse(out_.str());
  EXPECT_EQ(j["admin"]["name"], "media/gw");
  EXPECT_EQ(j["listeners"][0]["port"], 3478);
  EXPECT_EQ(j["listeners"][0]["public_address"], "198.51.100.7");
  EXPECT_EQ(j["clusters"][0]["type"], "STATIC");
}

// The operator serves "$STUNNER_ADDR" for the pod to fill in; this machine's environment must
// not: the config is shown as served.
TEST_F(ConfigCommandTest, ShowsVariablesAsServed) {
  config::StunnerConfig c = gatewayConfig("media/gw", 3478);
  c.listeners[0].address = "$STUNNER_ADDR";
  ASSERT_TRUE(server_->upsert("media/gw", c));
  ::setenv("STUNNER_ADDR", "192.0.2.99", 1);
  const int yaml = run({.id = "media/gw"});
  const std::string yaml_out = out_.str();
  const int json_all = run({.all = true, .output = "json"});
  const std::string json_out = out_.str();
  ::unsetenv("STUNNER_ADDR");
  ASSERT_EQ(yaml, kExitOk) << err_.str();
  ASSERT_EQ(json_all, kExitOk) << err_.str();
  EXPECT_NE(yaml_out.find("address: \"$STUNNER_ADDR\""), std::string::npos) << yaml_out;
  EXPECT_EQ(yaml_out.find("192.0.2.99"), std::string::npos) << yaml_out;
  EXPECT_EQ(json::parse(json_out)["items"][0]["listeners"][0]["address"], "$STUNNER_ADDR");
}

TEST_F(ConfigCommandTest, UnknownIdFailsNamingIt) {
  ASSERT_TRUE(server_->upsert("media/gw", gatewayConfig("media/gw", 3478)));
  EXPECT_EQ(run({.id = "media/nope"}), kExitFailure);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), "kturnctl config: no config media/nope at " + url() + " (404)\n");
}

TEST_F(ConfigCommandTest, UnreachableServerFails) {
  const uint16_t port = closedPort();
  EXPECT_EQ(run({.id = "media/gw", .server = "http://127.0.0.1:" + std::to_string(port)}),
            kExitFailure);
  EXPECT_NE(err_.str().find("Connection refused"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("127.0.0.1:" + std::to_string(port)), std::string::npos);
}

TEST_F(ConfigCommandTest, UsageErrors) {
  EXPECT_EQ(run({}), kExitUsage);
  EXPECT_NE(err_.str().find("give a <namespace>/<name>, or --all"), std::string::npos);
  EXPECT_EQ(run({.id = "media/gw", .all = true}), kExitUsage);
  EXPECT_NE(err_.str().find("not both"), std::string::npos);
  EXPECT_EQ(run({.id = "gw"}), kExitUsage);
  EXPECT_NE(err_.str().find("want <namespace>/<name>"), std::string::npos) << err_.str();
  EXPECT_EQ(run({.id = "media/gw", .namespace_ = "media"}), kExitUsage);
  EXPECT_EQ(run({.id = "media/gw", .server = "file:///etc/kturn.yaml"}), kExitUsage);
  EXPECT_NE(err_.str().find("-c: CDS origin \"file:///etc/kturn.yaml\""), std::string::npos)
      << err_.str();
  EXPECT_EQ(out_.str(), "");
}

TEST_F(ConfigCommandTest, AllListsEveryConfig) {
  ASSERT_TRUE(server_->upsert("media/gw", gatewayConfig("media/gw", 3478)));
  ASSERT_TRUE(server_->upsert("media/gw2", gatewayConfig("media/gw2", 3479)));
  ASSERT_TRUE(server_->upsert("other/gw", gatewayConfig("other/gw", 3480)));

  ASSERT_EQ(run({.all = true, .output = "json"}), kExitOk) << err_.str();
  const json list = json::parse(out_.str());
  EXPECT_EQ(list["version"], "v1");
  ASSERT_EQ(list["items"].size(), 3u);
  EXPECT_EQ(list["items"][0]["admin"]["name"], "media/gw");
  EXPECT_EQ(list["items"][1]["admin"]["name"], "media/gw2");
  EXPECT_EQ(list["items"][1]["listeners"][0]["port"], 3479);
  EXPECT_EQ(list["items"][2]["admin"]["name"], "other/gw");

  ASSERT_EQ(run({.all = true, .namespace_ = "media"}), kExitOk) << err_.str();
  EXPECT_EQ(SyncOutput::occurrences(out_.str(), "---\n"), 2u) << out_.str();
  std::vector<std::string> names;
  for (size_t at = 0; (at = out_.str().find("---\n", at)) != std::string::npos; at += 4) {
    const size_t end = out_.str().find("---\n", at + 4);
    auto doc = config::parseConfig(out_.str().substr(at + 4, end - at - 4));
    ASSERT_TRUE(doc) << doc.error().message;
    names.push_back(doc->admin.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"media/gw", "media/gw2"}));

  ASSERT_EQ(run({.all = true, .namespace_ = "empty"}), kExitOk);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), "kturnctl config: no configs at " + url() + "\n");
}

// A watch on its own thread, as main() runs it, stopped through the latch as SIGINT would.
class Watch {
 public:
  explicit Watch(ConfigCommand command)
      : thread_([this, command] {
          status_ = runConfig(command, out_.stream(), err_.stream(), &stop_);
        }) {}
  ~Watch() { stop(); }
  int stop() {
    stop_.requestStop();
    if (thread_.joinable()) thread_.join();
    return status_;
  }
  SyncOutput& out() { return out_; }
  SyncOutput& err() { return err_; }

 private:
  SyncOutput out_;
  SyncOutput err_;
  StopLatch stop_;
  int status_ = -1;
  std::thread thread_;
};

TEST_F(ConfigCommandTest, WatchPrintsEveryPushedConfig) {
  ASSERT_TRUE(server_->upsert("media/gw", gatewayConfig("media/gw", 3478)));
  Watch watch({.id = "media/gw", .server = url(), .watch = true, .output = "json"});
  ASSERT_TRUE(watch.out().waitForCount("\n", 1)) << watch.err().text();
  ASSERT_TRUE(server_->upsert("media/gw", gatewayConfig("media/gw", 3479)));
  ASSERT_TRUE(watch.out().waitForCount("\n", 2)) << watch.out().text();
  // Another gateway's change is not this watch's business.
  ASSERT_TRUE(server_->upsert("media/other", gatewayConfig("media/other", 4000)));
  server_->remove("media/gw");
  ASSERT_TRUE(watch.err().waitFor([](const std::string& t) {
    return t.find("media/gw: deleted") != std::string::npos;
  })) << watch.err().text();
  EXPECT_EQ(watch.stop(), kExitOk);

  std::istringstream lines(watch.out().text());
  std::vector<json> docs;
  for (std::string line; std::getline(lines, line);) docs.push_back(json::parse(line));
  ASSERT_EQ(docs.size(), 2u) << watch.out().text();
  EXPECT_EQ(docs[0]["admin"]["name"], "media/gw");
  EXPECT_EQ(docs[0]["listeners"][0]["port"], 3478);
  EXPECT_EQ(docs[1]["admin"]["name"], "media/gw");
  EXPECT_EQ(docs[1]["listeners"][0]["port"], 3479);
  EXPECT_EQ(watch.err().text(), "kturnctl config: media/gw: deleted\n");
}

TEST_F(ConfigCommandTest, WatchWaitsForAConfigThatDoesNotExistYet) {
  Watch watch({.id = "media/later", .server = url(), .watch = true});
  ASSERT_TRUE(watch.err().waitFor([](const std::string& t) {
    return t.find("media/later: no such config yet, waiting for it") != std::string::npos;
  })) << watch.err().text();
  ASSERT_TRUE(testing::SyncOutput::occurrences(watch.out().text(), "---") == 0);
  ASSERT_TRUE(server_->upsert("media/later", gatewayConfig("media/later", 3478)));
  ASSERT_TRUE(watch.out().waitForCount("---\n", 1)) << watch.err().text();
  EXPECT_EQ(watch.stop(), kExitOk);
  const std::string text = watch.out().text();
  auto doc = config::parseConfig(text.substr(4));
  ASSERT_TRUE(doc) << doc.error().message << "\n" << text;
  EXPECT_EQ(*doc, *server_->get("media/later"));
}

TEST_F(ConfigCommandTest, WatchOfAnUnreachableServerFailsAtOnce) {
  StopLatch never;
  const std::string server = "http://127.0.0.1:" + std::to_string(closedPort());
  EXPECT_EQ(runConfig({.id = "media/gw", .server = server, .watch = true}, out_, err_, &never),
            kExitFailure);
  EXPECT_NE(err_.str().find("Connection refused"), std::string::npos) << err_.str();
  err_.str("");
  EXPECT_EQ(runConfig({.all = true, .server = server, .watch = true}, out_, err_, &never),
            kExitFailure);
  EXPECT_NE(err_.str().find("Connection refused"), std::string::npos) << err_.str();
}

TEST_F(ConfigCommandTest, WatchAllPrintsEveryConfigOfTheNamespaceAndItsDeletions) {
  ASSERT_TRUE(server_->upsert("media/gw", gatewayConfig("media/gw", 3478)));
  ASSERT_TRUE(server_->upsert("other/gw", gatewayConfig("other/gw", 3480)));
  Watch watch(
      {.all = true, .namespace_ = "media", .server = url(), .watch = true, .output = "json"});
  ASSERT_TRUE(watch.out().waitForCount("\n", 1)) << watch.err().text();
  ASSERT_TRUE(server_->upsert("media/gw2", gatewayConfig("media/gw2", 3479)));
  ASSERT_TRUE(server_->upsert("other/gw", gatewayConfig("other/gw", 3481)));  // not -n media
  ASSERT_TRUE(server_->upsert("media/gw", gatewayConfig("media/gw", 4000)));
  ASSERT_TRUE(watch.out().waitForCount("\n", 3)) << watch.out().text();
  server_->remove("media/gw2");
  ASSERT_TRUE(watch.err().waitFor([](const std::string& t) {
    return t.find("media/gw2: deleted") != std::string::npos;
  })) << watch.err().text();
  EXPECT_EQ(watch.stop(), kExitOk);

  std::istringstream lines(watch.out().text());
  std::vector<std::string> seen;
  for (std::string line; std::getline(lines, line);) {
    const json doc = json::parse(line);
    seen.push_back(doc["admin"]["name"].get<std::string>() + " " +
                   doc["listeners"][0]["port"].dump());
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"media/gw 3478", "media/gw2 3479", "media/gw 4000"}));
  EXPECT_EQ(watch.err().text(), "kturnctl config: media/gw2: deleted\n");
}

}  // namespace
}  // namespace kturn::cli
