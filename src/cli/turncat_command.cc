#include "cli/turncat_command.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <optional>
#include <ostream>
#include <vector>

#include "cli/exit_codes.h"
#include "cli/stop_latch.h"
#include "net/sockaddr.h"

namespace kturn::cli {
namespace {

constexpr const char* kPrefix = "kturnctl turncat: ";
constexpr size_t kMaxDatagram = 65536;
constexpr int kStopCheckMs = 200;  // how often a quiet tunnel looks at the stop latch
// With "-": how long answers are still written out after standard input ended, so that
// `echo query | kturnctl turncat - ...` prints the reply.
constexpr auto kLingerAfterInput = std::chrono::seconds(1);

struct Session {
  TransportAddress client{};  // the local application's address; unused with "-"
  std::unique_ptr<client::TurnClient> turn;
};

class Tunnel {
 public:
  Tunnel(const TurncatCommand& command, TurnTarget target, const TransportAddress& peer,
         std::ostream& err)
      : command_(command),
        target_(std::move(target)),
        peer_(peer),
        err_(err),
        buffer_(new uint8_t[kMaxDatagram]) {}

  ~Tunnel() {
    for (Session& s : sessions_) s.turn->release();
    if (local_fd_ >= 0) ::close(local_fd_);
  }

  Result<void> listen(const TransportAddress& local) {
    local_fd_ = ::socket(local.ip.isV4() ? AF_INET : AF_INET6,
                         SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (local_fd_ < 0)
      return makeError(Error::Code::kIo, std::string("socket: ") + strerror(errno));
    sockaddr_storage ss;
    const socklen_t len = net::toSockaddr(local, ss);
    if (::bind(local_fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
      return makeError(Error::Code::kIo,
                       "cannot listen on " + local.toString() + ": " + strerror(errno));
    }
    err_ << kPrefix << "listening on udp://" << local.toString() << ", tunnelling to "
         << peer_.toString() << " through " << target_.uri << "\n";
    return {};
  }

  // Standard input and output as the one client.
  Result<void> openStdio() {
    auto s = openSession(TransportAddress{});
    if (!s) return s.error();
    return {};
  }

  int run(StopLatch& stop) {
    std::vector<pollfd> fds;
    std::optional<client::TurnClient::Clock::time_point> input_ended;
    while (!stop.stopRequested()) {
      const auto now = client::TurnClient::Clock::now();
      if (input_ended && now >= *input_ended + kLingerAfterInput) return kExitOk;
      fds.clear();
      // After the end of standard input, fd -1: poll ignores the entry.
      fds.push_back({local_fd_ >= 0 ? local_fd_ : (input_ended ? -1 : STDIN_FILENO), POLLIN, 0});
      int timeout = kStopCheckMs;
      for (Session& s : sessions_) {
        fds.push_back({s.turn->fd(), POLLIN, 0});
        if (s.turn->hasBuffered()) timeout = 0;
        const auto due = s.turn->nextMaintenance();
        if (due <= now) timeout = 0;
      }
      if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) {
        err_ << kPrefix << "poll: " << strerror(errno) << "\n";
        return kExitFailure;
      }
      // Sessions first: the local side may add one, which moves the vector.
      for (size_t i = 0; i < sessions_.size();) {
        Session& s = sessions_[i];
        const bool readable = fds.size() > i + 1 && (fds[i + 1].revents != 0);
        Result<void> r;
        if (readable || s.turn->hasBuffered()) r = s.turn->receive();
        if (r) r = s.turn->maintain(client::TurnClient::Clock::now());
        if (!r) {
          err_ << kPrefix << describe(s) << ": closed: " << r.error().message << "\n";
          if (local_fd_ < 0) return kExitFailure;  // standard input has no other session
          sessions_.erase(sessions_.begin() + static_cast<std::ptrdiff_t>(i));
          fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i + 1));
          continue;
        }
        ++i;
      }
      if (fds[0].revents != 0) {
        if (local_fd_ >= 0) {
          readLocal();
        } else if (!readStdin()) {
          input_ended = client::TurnClient::Clock::now();
        }
      }
    }
    return kExitOk;
  }

 private:
  std::string describe(const Session& s) const {
    const std::string who = local_fd_ >= 0 ? "client " + s.client.toString() : "stdin";
    const auto& a = s.turn->allocation();
    return who + (a ? " (relay " + a->relayed.toString() + ")" : "");
  }

  Result<Session*> openSession(const TransportAddress& client) {
    auto turn = connectTurn(target_, peer_, command_.lifetime);
    if (!turn) return turn.error();
    auto allocation = (*turn)->allocate();
    if (!allocation) return allocation.error();
    auto channel = (*turn)->bindChannel(peer_);
    if (!channel) {
      (*turn)->release();
      return channel.error();
    }
    const int out_fd = local_fd_;
    (*turn)->setDataHandler(
        [out_fd, client](const TransportAddress& from, std::span<const uint8_t> data) {
          (void)from;  // only the peer has a permission
          if (out_fd < 0) {
            // Standard output: a short write of a datagram is finished, a full pipe waits.
            size_t done = 0;
            while (done < data.size()) {
              const ssize_t n = ::write(STDOUT_FILENO, data.data() + done, data.size() - done);
              if (n < 0 && errno == EINTR) continue;
              if (n <= 0) return;
              done += static_cast<size_t>(n);
            }
            return;
          }
          sockaddr_storage ss;
          const socklen_t len = net::toSockaddr(client, ss);
          (void)::sendto(out_fd, data.data(), data.size(), MSG_DONTWAIT,
                         reinterpret_cast<sockaddr*>(&ss), len);
        });
    sessions_.push_back({client, std::move(*turn)});
    Session& s = sessions_.back();
    char channel_text[8];
    std::snprintf(channel_text, sizeof channel_text, "0x%04x", *channel);
    err_ << kPrefix << describe(s) << ": allocated via " << target_.uri << ", channel "
         << channel_text << " to " << peer_.toString() << "\n";
    return &s;
  }

  void readLocal() {
    // Bounded per round, so a flood from one side cannot starve the other.
    for (int i = 0; i < 64; ++i) {
      sockaddr_storage from;
      socklen_t len = sizeof from;
      const ssize_t n = ::recvfrom(local_fd_, buffer_.get(), kMaxDatagram, 0,
                                   reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 0) return;  // EAGAIN, or an ICMP error for a client that went away
      const TransportAddress client = net::fromSockaddr(reinterpret_cast<sockaddr*>(&from));
      Session* s = find(client);
      if (s == nullptr) {
        if (sessions_.size() >= static_cast<size_t>(command_.max_clients)) {
          if (!full_reported_) {
            err_ << kPrefix << "--max-clients " << command_.max_clients
                 << " reached: datagrams of new clients are dropped\n";
            full_reported_ = true;
          }
          continue;
        }
        auto opened = openSession(client);
        if (!opened) {
          err_ << kPrefix << "client " << client.toString() << ": " << opened.error().message
               << "\n";
          continue;
        }
        s = *opened;
      }
      const std::span<const uint8_t> data(buffer_.get(), static_cast<size_t>(n));
      if (auto r = s->turn->send(peer_, data); !r && r.error().code != Error::Code::kExhausted) {
        err_ << kPrefix << describe(*s) << ": " << r.error().message << "\n";
      }
    }
  }

  // False at the end of standard input.
  bool readStdin() {
    const ssize_t n = ::read(STDIN_FILENO, buffer_.get(), kMaxDatagram);
    if (n < 0 && errno == EINTR) return true;
    if (n <= 0) return false;
    Session& s = sessions_.front();
    if (auto r = s.turn->send(peer_, {buffer_.get(), static_cast<size_t>(n)}); !r) {
      err_ << kPrefix << r.error().message << "\n";
    }
    return true;
  }

  Session* find(const TransportAddress& client) {
    for (Session& s : sessions_) {
      if (s.client == client) return &s;
    }
    return nullptr;
  }

  const TurncatCommand& command_;
  TurnTarget target_;
  TransportAddress peer_;
  std::ostream& err_;
  int local_fd_ = -1;
  std::vector<Session> sessions_;
  std::unique_ptr<uint8_t[]> buffer_;
  bool full_reported_ = false;
};

int usage(std::ostream& err, const std::string& message) {
  err << kPrefix << message << "\nRun with --help for more information.\n";
  return kExitUsage;
}

}  // namespace

CLI::App* addTurncatCommand(CLI::App& app, TurncatCommand& command) {
  CLI::App* sub = app.add_subcommand(
      "turncat", "Tunnel a local UDP socket (or stdin/stdout) through a TURN allocation to a peer");
  sub->add_option("local", command.local, "udp://ADDR:PORT to listen on, or - for stdin/stdout")
      ->required();
  sub->add_option("server", command.server,
                  "TURN server: turn:HOST[:PORT][?transport=udp|tcp], turns:..., or "
                  "turn://USER:PASS@HOST[:PORT][?transport=udp|tcp|tls|dtls]")
      ->required();
  sub->add_option("peer", command.peer, "udp://ADDR:PORT the relay sends to")->required();
  addTurnServerFlags(*sub, command.turn);
  sub->add_option("--lifetime", command.lifetime, "requested allocation lifetime, seconds")
      ->capture_default_str()
      ->check(CLI::Range(60, 3600));
  sub->add_option("--max-clients", command.max_clients,
                  "local clients (allocations) at most; datagrams of more are dropped")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  return sub;
}

int runTurncat(const TurncatCommand& command, std::ostream& err, StopLatch& stop) {
  auto target = resolveTurnTarget(command.server, command.turn);
  if (!target) return usage(err, target.error().message);
  auto peer = resolveUdpAddress(command.peer);
  if (!peer) return usage(err, "peer " + peer.error().message);

  Tunnel tunnel(command, std::move(*target), *peer, err);
  if (command.local == "-") {
    if (auto r = tunnel.openStdio(); !r) {
      err << kPrefix << r.error().message << "\n";
      return kExitFailure;
    }
  } else {
    auto local = resolveUdpAddress(command.local);
    if (!local) return usage(err, "local " + local.error().message);
    if (auto r = tunnel.listen(*local); !r) {
      err << kPrefix << r.error().message << "\n";
      return kExitFailure;
    }
  }
  return tunnel.run(stop);
}

}  // namespace kturn::cli
