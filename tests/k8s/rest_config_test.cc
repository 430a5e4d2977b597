#include "k8s/rest_config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/bearer_token.h"

namespace kturn::k8s {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/kturn-k8s-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return path_ / name;
  }

 private:
  fs::path path_;
};

TEST(ParseServerUrl, HostPortSchemeAndIpv6) {
  auto a = parseServerUrl("https://10.0.0.1:6443");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "10.0.0.1");
  EXPECT_EQ(a->port, 6443);
  EXPECT_TRUE(a->tls);
  auto b = parseServerUrl("http://[::1]:8080/");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->port, 8080);
  EXPECT_FALSE(b->tls);
  EXPECT_EQ(b->url(), "http://[::1]:8080");
  auto c = parseServerUrl("https://api.example.com");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->port, 443);
  EXPECT_FALSE(parseServerUrl("ftp://x"));
  EXPECT_FALSE(parseServerUrl("https://x:99999"));
  EXPECT_FALSE(parseServerUrl("https://x/prefix"));
}

TEST(LoadKubeconfig, CurrentContextWithTokenAndCaData) {
  TempDir dir;
  // "Q0EtUEVN" is base64("CA-PEM").
  const fs::path path = dir.write("config", R"(
apiVersion: v1
kind: Config
current-context: b
clusters:
- name: one
  cluster: {server: "https://one:1"}
- name: two
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: Q0EtUEVN
    tls-server-name: kubernetes
contexts:
- name: a
  context: {cluster: one, user: u1}
- name: b
  context: {cluster: two, user: u2, namespace: media}
users:
- name: u1
  user: {token: one}
- name: u2
  user: {token: secret-token}
)");
  auto config = loadKubeconfig(path);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->host, "127.0.0.1");
  EXPECT_EQ(config->port, 6443);
  EXPECT_EQ(config->caPem, "CA-PEM");
  EXPECT_EQ(config->token, "secret-token");
  EXPECT_EQ(config->tlsServerName, "kubernetes");
  EXPECT_EQ(config->ns, "media");
  auto other = loadKubeconfig(path, "a");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->host, "one");
  EXPECT_EQ(other->token, "one");
  EXPECT_EQ(other->ns, "default");
}

TEST(LoadKubeconfig, ClientCertFilesRelativeToTheKubeconfigAndInsecure) {
  TempDir dir;
  dir.write("ca.crt", "CA");
  dir.write("client.crt", "CERT");
  dir.write("client.key", "KEY");
  const fs::path path = dir.write("config", R"(
current-context: c
clusters:
- name: k
  cluster: {server: "https://h:1", certificate-authority: ca.crt, insecure-skip-tls-verify: true}
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user: {client-certificate: client.crt, client-key: client.key}
)");
  auto config = loadKubeconfig(path);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->caPem, "CA");
  EXPECT_EQ(config->clientCertPem, "CERT");
  EXPECT_EQ(config->clientKeyPem, "KEY");
  EXPECT_TRUE(config->insecureSkipTlsVerify);
}

TEST(LoadKubeconfig, ErrorsNameTheProblem) {
  TempDir dir;
  auto missing = loadKubeconfig(dir.path() / "nope");
  ASSERT_FALSE(missing);
  const fs::path exec = dir.write("config", R"(
current-context: c
clusters: [{name: k, cluster: {server: "https://h:1"}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users: [{name: u, user: {exec: {command: aws}}}]
)");
  auto unsupported = loadKubeconfig(exec);
  ASSERT_FALSE(unsupported);
  EXPECT_NE(unsupported.error().message.find("exec"), std::string::npos);
  auto noContext = loadKubeconfig(exec, "other");
  ASSERT_FALSE(noContext);
  EXPECT_NE(noContext.error().message.find("context other not found"), std::string::npos);
}

TEST(InClusterConfig, ReadsTheServiceAccountAndEnvironment) {
  TempDir dir;
  dir.write("token", "tok-1\n");
  dir.write("ca.crt", "CA");
  dir.write("namespace", "stunner-system");
  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto config = inClusterConfig({.dir = dir.path()});
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->url(), "https://10.96.0.1:443");
  EXPECT_EQ(config->caPem, "CA");
  EXPECT_EQ(config->ns, "stunner-system");
  EXPECT_EQ(config->tokenFile, dir.path() / "token");
  EXPECT_FALSE(inClusterConfig({.dir = dir.path()}));  // no environment: not in a cluster
}

TEST(BearerToken, FileIsReadAgainWhenItChanges) {
  TempDir dir;
  const fs::path file = dir.write("token", "first\n");
  BearerToken token("ignored", file);
  EXPECT_EQ(token.current(), "first");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // past the 1 s re-check
  dir.write("token", "second-token");
  EXPECT_EQ(token.current(), "second-token");
  BearerToken fixed("static", {});
  EXPECT_EQ(fixed.current(), "static");
}

}  // namespace
}  // namespace kturn::k8s
