// A deliberately dumb blocking HTTP/1.1 client over POSIX sockets for the admin server tests:
// it lets a test send exactly the bytes it wants (half a request, an oversized header) and every
// read is bounded by SO_RCVTIMEO, so no test can hang.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace kturn::admin::testing {

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

class TestConnection {
 public:
  explicit TestConnection(uint16_t port,
                          std::chrono::milliseconds timeout = std::chrono::seconds(3)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    setTimeout(timeout);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~TestConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  TestConnection(const TestConnection&) = delete;
  TestConnection& operator=(const TestConnection&) = delete;

  bool connected() const { return fd_ >= 0; }

  void setTimeout(std::chrono::milliseconds timeout) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }

  bool send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads one response. `head`: the response to a HEAD request has no body whatever its
  // Content-Length says.
  std::optional<HttpReply> readReply(bool head = false) {
    size_t header_end;
    while ((header_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return std::nullopt;
    }
    HttpReply reply;
    const std::string header = buffer_.substr(0, header_end);
    buffer_.erase(0, header_end + 4);
    size_t line_end = header.find("\r\n");
    const std::string status_line = header.substr(0, line_end);
    if (status_line.size() < 12) return std::nullopt;
    reply.status = std::stoi(status_line.substr(9, 3));
    while (line_end != std::string::npos) {
      const size_t start = line_end + 2;
      line_end = header.find("\r\n", start);
      const std::string line = header.substr(start, line_end - start);
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      reply.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    const size_t length = head || !reply.headers.contains("content-length")
                              ? 0
                              : static_cast<size_t>(std::stoul(reply.headers["content-length"]));
    while (buffer_.size() < length) {
      if (!fill()) return std::nullopt;
    }
    reply.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return reply;
  }

  // True when the server closes the connection (EOF or reset) before the receive timeout.
  bool waitClosed() {
    char byte[256];
    for (int i = 0; i < 1000; ++i) {  // bounded: each recv waits at most the receive timeout
      const ssize_t n = ::recv(fd_, byte, sizeof byte, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
    return false;
  }

 private:
  bool fill() {
    char chunk[4096];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  std::string buffer_;
};

// One request on a fresh connection.
inline std::optional<HttpReply> httpRequest(uint16_t port, std::string_view method,
                                            std::string_view target) {
  TestConnection connection(port);
  if (!connection.connected()) return std::nullopt;
  std::string request = std::string(method) + " " + std::string(target) +
                        " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (!connection.send(request)) return std::nullopt;
  return connection.readReply(method == "HEAD");
}

inline std::optional<HttpReply> httpGet(uint16_t port, std::string_view target) {
  return httpRequest(port, "GET", target);
}

}  // namespace kturn::admin::testing
