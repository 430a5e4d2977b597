// Starts kturn-test-apiserver (kturn_test_apiserver.py in this folder) for a gtest: a child
// process on 127.0.0.1 with an ephemeral port, HTTPS with a fresh self-signed certificate and a
// bearer token unless told otherwise, stopped (SIGTERM, then SIGKILL) when the object dies.
//
//   TestApiServer server({.manifests = {dir}});
//   ASSERT_TRUE(server.ready()) << server.error();
//   auto config = k8s::loadKubeconfig(server.kubeconfig());
//
// KTURN_TEST_APISERVER (the script) and KTURN_TEST_PYTHON are compile definitions set by
// tests/CMakeLists.txt.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace kturn::testing {

struct TestApiServerOptions {
  bool tls = true;
  std::string token = "kturn-test-token";
  std::vector<std::string> manifests{};
  double bookmarkInterval = 1.0;
  int history = 10000;
  // Kinds as "<plural>[.<group>]": not served (404, a CRD not installed), or answered 403.
  std::vector<std::string> notServed{};
  std::vector<std::string> forbidden{};
};

class TestApiServer {
 public:
  explicit TestApiServer(TestApiServerOptions options = {}) : options_(std::move(options)) {
    char tmpl[] = "/tmp/kturn-apiserver-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      error_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    start();
  }
  ~TestApiServer() {
    stop();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  TestApiServer(const TestApiServer&) = delete;
  TestApiServer& operator=(const TestApiServer&) = delete;

  bool ready() const { return port_ != 0; }
  const std::string& error() const { return error_; }
  uint16_t port() const { return port_; }
  std::string kubeconfig() const { return (dir_ / "kubeconfig").string(); }
  std::string caFile() const { return (dir_ / "apiserver.crt").string(); }
  const std::string& token() const { return options_.token; }
  const std::filesystem::path& dir() const { return dir_; }
  std::string url() const {
    return std::string(options_.tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
  }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 50; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  void start() {
    std::vector<std::string> args = {KTURN_TEST_PYTHON,
                                     KTURN_TEST_APISERVER,
                                     "--ready-file",
                                     (dir_ / "port").string(),
                                     "--kubeconfig-out",
                                     kubeconfig(),
                                     "--token",
                                     options_.token,
                                     "--bookmark-interval",
                                     std::to_string(options_.bookmarkInterval),
                                     "--history",
                                     std::to_string(options_.history)};
    if (options_.tls) {
      args.insert(args.end(), {"--tls", "--cert-dir", dir_.string()});
    }
    for (const std::string& m : options_.manifests) args.insert(args.end(), {"--manifests", m});
    for (const std::string& k : options_.notServed) args.insert(args.end(), {"--not-served", k});
    for (const std::string& k : options_.forbidden) args.insert(args.end(), {"--forbid", k});
    const std::string log = (dir_ / "apiserver.log").string();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      FILE* out = std::freopen(log.c_str(), "w", stdout);
      (void)out;
      ::dup2(::fileno(stdout), 2);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      std::_Exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in(dir_ / "port");
      int port = 0;
      if (in >> port && port > 0) {
        port_ = static_cast<uint16_t>(port);
        return;
      }
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::ifstream in(log);
    error_ = "kturn-test-apiserver did not start: " +
             std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  const TestApiServerOptions options_;
  std::filesystem::path dir_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string error_;
};

}  // namespace kturn::testing
