// kturnd's command line takes stunnerd's: every flag STUNner's Dataplanes and docs pass.
#include "daemon/command_line.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace kturn::daemon {
namespace {

struct Parsed {
  CommandLine line;
  std::vector<std::string> ignored;
  std::string error;
};

Parsed parse(std::vector<std::string> args) {
  Parsed out;
  CLI::App app;
  addOptions(app, out.line);
  std::vector<const char*> argv = {"kturnd"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    out.error = e.what();
  }
  out.ignored = ignoredFlags(app);
  return out;
}

TEST(CommandLine, StunnerDataplaneDefaults) {
  // STUNner's default Dataplane: stunnerd -w --udp-thread-num=16.
  Parsed p = parse({"-w", "--udp-thread-num=16"});
  ASSERT_EQ(p.error, "");
  EXPECT_TRUE(p.line.watch);
  EXPECT_EQ(p.line.workers, 16u);
  EXPECT_TRUE(p.ignored.empty());
}

TEST(CommandLine, StunnerdShortFlags) {
  // STUNner's local manifests and docs: stunnerd -v -w -c cmd/stunnerd/stunnerd.conf.
  Parsed p = parse({"-v", "-w", "-c", "stunnerd.conf", "-u", "4", "-d", "-i", "ns/gw", "-l",
                    "all:WARN", "--log-format", "json", "--force-ready-status"});
  ASSERT_EQ(p.error, "");
  EXPECT_TRUE(p.line.verbose);
  EXPECT_EQ(p.line.origin, "stunnerd.conf");
  EXPECT_EQ(p.line.workers, 4u);
  EXPECT_TRUE(p.line.dry_run);
  EXPECT_EQ(p.line.id, "ns/gw");
  EXPECT_EQ(p.line.log_format, "json");
  EXPECT_TRUE(p.line.force_ready);
  EXPECT_EQ(p.line.initialLogSpec(), "all:WARN");  // -l wins over -v
  EXPECT_EQ(p.ignored, std::vector<std::string>{"--dry-run"});
  EXPECT_EQ(parse({"-v"}).line.initialLogSpec(), "all:DEBUG");
  EXPECT_EQ(parse({}).line.initialLogSpec(), "all:INFO");
}

TEST(CommandLine, KubernetesAndDiscoveryFlags) {
  Parsed p = parse({"-c",
                    "k8s",
                    "--kubeconfig",
                    "/k",
                    "--context",
                    "kind",
                    "-s",
                    "https://10.0.0.1:6443",
                    "--token",
                    "t",
                    "--insecure-skip-tls-verify",
                    "--cds-server-namespace",
                    "stunner-system",
                    "--cds-server-port",
                    "13479",
                    "-n",
                    "media",
                    "--as",
                    "me",
                    "--request-timeout",
                    "5s",
                    "--disable-compression"});
  ASSERT_EQ(p.error, "");
  EXPECT_EQ(p.line.origin, "k8s");
  EXPECT_EQ(p.line.discovery.kube.kubeconfig, "/k");
  EXPECT_EQ(p.line.discovery.kube.context, "kind");
  EXPECT_EQ(p.line.discovery.kube.server, "https://10.0.0.1:6443");
  EXPECT_EQ(p.line.discovery.kube.token, "t");
  EXPECT_TRUE(p.line.discovery.kube.insecureSkipTlsVerify);
  EXPECT_EQ(p.line.discovery.cdsServerNamespace, "stunner-system");
  EXPECT_EQ(p.line.discovery.cdsServerPort, 13479);
  EXPECT_EQ(k8s::explicitCdsOrigin(p.line.discovery), "");  // looked up through the API
  EXPECT_EQ(p.ignored, (std::vector<std::string>{"--disable-compression", "--namespace", "--as",
                                                 "--request-timeout"}));
}

TEST(CommandLine, AnExplicitDiscoveryServerNeedsNoLookup) {
  EXPECT_EQ(k8s::explicitCdsOrigin(
                parse({"-c", "k8s", "--cds-server-address", "10.1.2.3"}).line.discovery),
            "http://10.1.2.3:13478");
  EXPECT_EQ(
      k8s::explicitCdsOrigin(
          parse({"--cds-server-address", "fd00::1", "--cds-server-port", "8080"}).line.discovery),
      "http://[fd00::1]:8080");
}

TEST(CommandLine, UnknownFlagsAreStillRefused) {
  EXPECT_NE(parse({"--no-such-flag"}).error, "");
  EXPECT_NE(parse({"--log-format", "xml"}).error, "");
}

}  // namespace
}  // namespace kturn::daemon
