#include "cli/icetest_command.h"

#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/exit_codes.h"
#include "cli/stop_latch.h"
#include "net/sockaddr.h"

namespace kturn::cli {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kPrefix = "kturnctl icetest: ";
constexpr size_t kHeaderSize = 12;       // run id (4 bytes), sequence number (4), magic (4)
constexpr uint32_t kMagic = 0x6b746963;  // "ktic"
constexpr auto kProgressEvery = std::chrono::milliseconds(200);

double msBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

void store32(uint8_t* at, uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
uint32_t load32(const uint8_t* at) {
  return (uint32_t{at[0]} << 24) | (uint32_t{at[1]} << 16) | (uint32_t{at[2]} << 8) | at[3];
}

// The built-in peer: a UDP socket on loopback that sends every datagram back to its sender.
class EchoPeer {
 public:
  ~EchoPeer() {
    if (fd_ >= 0) ::close(fd_);
  }
  Result<TransportAddress> open(AddressFamily family) {
    const bool v4 = family == AddressFamily::kIPv4;
    fd_ = ::socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return makeError(Error::Code::kIo, std::string("socket: ") + strerror(errno));
    const TransportAddress any{v4 ? IpAddress::v4(0x7F000001) : *IpAddress::parse("::1"), 0};
    sockaddr_storage ss;
    const socklen_t len = net::toSockaddr(any, ss);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
      return makeError(Error::Code::kIo, "echo peer: bind: " + std::string(strerror(errno)));
    }
    return net::localAddress(fd_);
  }
  int fd() const { return fd_; }
  void echo() {
    uint8_t buffer[65536];
    for (int i = 0; i < 256; ++i) {
      sockaddr_storage from;
      socklen_t len = sizeof from;
      const ssize_t n =
          ::recvfrom(fd_, buffer, sizeof buffer, 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 0) return;
      (void)::sendto(fd_, buffer, static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&from),
                     len);
    }
  }

 private:
  int fd_ = -1;
};

class Prober {
 public:
  Prober(const IcetestCommand& command, client::TurnClient& turn, const TransportAddress& peer,
         IcetestReport& report)
      : command_(command),
        turn_(turn),
        peer_(peer),
        report_(report),
        sent_at_(static_cast<size_t>(command.count)),
        echoed_(static_cast<size_t>(command.count), false),
        payload_(static_cast<size_t>(command.size)) {
    RAND_bytes(reinterpret_cast<uint8_t*>(&run_id_), sizeof run_id_);
    rtts_.reserve(static_cast<size_t>(command.count));
    turn_.setDataHandler(
        [this](const TransportAddress&, std::span<const uint8_t> data) { onEcho(data); });
  }

  Result<void> run(EchoPeer* echo, StopLatch& stop, std::ostream& err, bool progress) {
    const auto interval = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(1.0 / command_.rate));
    const auto wait = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(command_.wait_seconds));
    auto next_send = Clock::now();
    auto last_progress = Clock::time_point{};
    Clock::time_point last_sent{};
    for (;;) {
      auto now = Clock::now();
      while (report_.sent < command_.count && now >= next_send && !stop.stopRequested()) {
        sendProbe(now);
        last_sent = now;
        next_send += interval;
      }
      const bool done_sending = report_.sent == command_.count || stop.stopRequested();
      if (done_sending && (report_.received == report_.sent || now >= last_sent + wait)) break;
      if (progress && now >= last_progress + kProgressEvery) {
        printProgress(err);
        last_progress = now;
      }
      const auto until = done_sending ? last_sent + wait : next_send;
      int timeout = static_cast<int>(std::clamp<int64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count(), 0, 50));
      if (turn_.hasBuffered()) timeout = 0;
      pollfd fds[2] = {{turn_.fd(), POLLIN, 0}, {echo ? echo->fd() : -1, POLLIN, 0}};
      ::poll(fds, echo ? 2 : 1, timeout);
      if (echo && fds[1].revents != 0) echo->echo();
      if (fds[0].revents != 0 || turn_.hasBuffered()) {
        if (auto r = turn_.receive(); !r) return r;
      }
      if (auto r = turn_.maintain(Clock::now()); !r) return r;
    }
    if (progress) {
      printProgress(err);
      err << "\n";
    }
    report_.rtt = summarizeRtts(rtts_);
    return {};
  }

 private:
  void sendProbe(Clock::time_point now) {
    const auto seq = static_cast<uint32_t>(report_.sent);
    std::memcpy(payload_.data(), &run_id_, 4);
    store32(payload_.data() + 4, seq);
    store32(payload_.data() + 8, kMagic);
    sent_at_[seq] = now;
    ++report_.sent;
    // A datagram the socket would not take is lost like one lost on the way.
    (void)turn_.send(peer_, payload_);
  }

  void onEcho(std::span<const uint8_t> data) {
    const auto now = Clock::now();
    if (data.size() != payload_.size() || std::memcmp(data.data(), &run_id_, 4) != 0 ||
        load32(data.data() + 8) != kMagic) {
      return;  // not ours
    }
    const uint32_t seq = load32(data.data() + 4);
    if (seq >= static_cast<uint32_t>(report_.sent)) return;
    if (echoed_[seq]) {
      ++report_.duplicates;
      return;
    }
    echoed_[seq] = true;
    ++report_.received;
    rtts_.push_back(msBetween(sent_at_[seq], now));
  }

  void printProgress(std::ostream& err) {
    char line[160];
    const double loss =
        report_.sent == 0 ? 0 : 100.0 * (report_.sent - report_.received) / report_.sent;
    double p50 = 0;
    if (!rtts_.empty()) {
      std::vector<double> copy = rtts_;
      auto mid = copy.begin() + static_cast<std::ptrdiff_t>(copy.size() / 2);
      std::nth_element(copy.begin(), mid, copy.end());
      p50 = *mid;
    }
    std::snprintf(line, sizeof line,
                  "\rsent %d/%d  received %d  in flight or lost %.1f%%  rtt p50 %.2f ms   ",
                  report_.sent, command_.count, report_.received, loss, p50);
    err << line << std::flush;
  }

  const IcetestCommand& command_;
  client::TurnClient& turn_;
  TransportAddress peer_;
  IcetestReport& report_;
  uint32_t run_id_ = 0;
  std::vector<Clock::time_point> sent_at_;
  std::vector<bool> echoed_;
  std::vector<double> rtts_;
  std::vector<uint8_t> payload_;
};

int usage(std::ostream& err, const std::string& message) {
  err << kPrefix << message << "\nRun with --help for more information.\n";
  return kExitUsage;
}

std::string fixed(double v, int digits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

}  // namespace

std::optional<RttSummary> summarizeRtts(std::vector<double>& samples) {
  if (samples.empty()) return std::nullopt;
  std::sort(samples.begin(), samples.end());
  // Nearest rank: the smallest sample with at least p% of the samples at or below it.
  auto rank = [&samples](double p) {
    const auto n = static_cast<double>(samples.size());
    const auto k = static_cast<size_t>(std::ceil(p / 100.0 * n));
    return samples[k == 0 ? 0 : k - 1];
  };
  RttSummary s;
  s.min = samples.front();
  s.max = samples.back();
  s.p50 = rank(50);
  s.p90 = rank(90);
  s.p99 = rank(99);
  double total = 0;
  for (double v : samples) total += v;
  s.mean = total / static_cast<double>(samples.size());
  return s;
}

double IcetestReport::lossPercent() const {
  return sent == 0 ? 0 : 100.0 * (sent - received) / sent;
}

nlohmann::json toJson(const IcetestReport& r) {
  nlohmann::json out{
      {"server", r.server},
      {"transport", r.transport},
      {"relayedAddress", r.relayed},
      {"mappedAddress", r.mapped},
      {"peer", r.peer},
      {"builtinPeer", r.builtin_peer},
      {"mode", r.mode},
      {"allocateMs", r.allocate_ms},
      {"bindMs", r.bind_ms},
      {"packets",
       {{"sent", r.sent},
        {"received", r.received},
        {"lost", r.sent - r.received},
        {"duplicates", r.duplicates},
        {"lossPercent", r.lossPercent()}}},
      {"rttMs", nullptr},
  };
  if (!r.security.empty()) out["security"] = r.security;
  if (r.rtt) {
    out["rttMs"] = {{"min", r.rtt->min}, {"p50", r.rtt->p50}, {"p90", r.rtt->p90},
                    {"p99", r.rtt->p99}, {"max", r.rtt->max}, {"mean", r.rtt->mean}};
  }
  return out;
}

std::string formatReport(const IcetestReport& r) {
  std::string out;
  auto line = [&out](const char* key, const std::string& value) {
    char head[16];
    std::snprintf(head, sizeof head, "%-10s", key);
    out += head + value + "\n";
  };
  line("server", r.server + (r.security.empty() ? "" : " (" + r.security + ")"));
  line("relayed", r.relayed + " (client seen as " + r.mapped + ")");
  line("peer", r.peer + (r.builtin_peer ? " (built-in echo)" : "") + ", " +
                   (r.mode == "channel" ? "channel" : "Send/Data indications"));
  line("setup", "Allocate " + fixed(r.allocate_ms, 2) + " ms, " +
                    (r.mode == "channel" ? "ChannelBind " : "CreatePermission ") +
                    fixed(r.bind_ms, 2) + " ms");
  line("packets", std::to_string(r.sent) + " sent, " + std::to_string(r.received) + " received, " +
                      std::to_string(r.sent - r.received) + " lost (" + fixed(r.lossPercent(), 1) +
                      "%), " + std::to_string(r.duplicates) + " duplicates");
  if (r.rtt) {
    line("rtt ms", "min " + fixed(r.rtt->min, 3) + "  p50 " + fixed(r.rtt->p50, 3) + "  p90 " +
                       fixed(r.rtt->p90, 3) + "  p99 " + fixed(r.rtt->p99, 3) + "  max " +
                       fixed(r.rtt->max, 3) + "  mean " + fixed(r.rtt->mean, 3));
  } else {
    line("rtt ms", "- (nothing came back)");
  }
  return out;
}

CLI::App* addIcetestCommand(CLI::App& app, IcetestCommand& command) {
  CLI::App* sub = app.add_subcommand(
      "icetest", "Allocate on a TURN server, relay packets to an echo peer, report loss and RTT");
  sub->add_option("server", command.server,
                  "TURN server: turn:HOST[:PORT][?transport=udp|tcp], turns:..., or "
                  "turn://USER:PASS@HOST[:PORT][?transport=udp|tcp|tls|dtls]")
      ->required();
  addTurnServerFlags(*sub, command.turn);
  sub->add_option("--peer", command.peer,
                  "udp://ADDR:PORT of an echo service to relay to (default: a built-in echo peer "
                  "on loopback, for a server on this machine)");
  sub->add_option("-n,--count", command.count, "packets to send")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  sub->add_option("--rate", command.rate, "packets per second")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 100000.0));
  sub->add_option("--size", command.size, "payload bytes per packet")
      ->capture_default_str()
      ->check(CLI::Range(static_cast<int>(kHeaderSize), 1400));
  sub->add_option("--mode", command.mode, "channel (ChannelData) or send (Send/Data indications)")
      ->capture_default_str()
      ->check(CLI::IsMember({"channel", "send"}));
  sub->add_option("--wait", command.wait_seconds, "seconds to wait for echoes after the last send")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 60.0));
  sub->add_option("--max-loss", command.max_loss, "percent of packets that may be lost")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  sub->add_option("-o,--output", command.output, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  sub->add_option("--progress", command.progress,
                  "live progress line on stderr: auto (when a terminal), always, never")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "always", "never"}));
  return sub;
}

int runIcetest(const IcetestCommand& command, std::ostream& out, std::ostream& err,
               StopLatch& stop) {
  auto target = resolveTurnTarget(command.server, command.turn);
  if (!target) return usage(err, target.error().message);

  IcetestReport report;
  report.server = target->uri;
  report.transport = std::string(client::linkTransportName(target->transport));
  report.mode = command.mode;

  EchoPeer echo;
  TransportAddress peer;
  if (command.peer.empty()) {
    auto local = echo.open(target->address.ip.family());
    if (!local) {
      err << kPrefix << local.error().message << "\n";
      return kExitFailure;
    }
    peer = *local;
    report.builtin_peer = true;
  } else {
    auto parsed = resolveUdpAddress(command.peer);
    if (!parsed) return usage(err, "--peer " + parsed.error().message);
    peer = *parsed;
  }
  report.peer = peer.toString();

  auto fail = [&err](const std::string& message) {
    err << kPrefix << message << "\n";
    return kExitFailure;
  };
  auto turn = connectTurn(*target, peer, 600);
  if (!turn) return fail(turn.error().message);
  client::TurnClient& client = **turn;
  report.security = client.link().securityDescription();

  auto start = Clock::now();
  auto allocation = client.allocate();
  if (!allocation) return fail(target->uri + ": " + allocation.error().message);
  report.allocate_ms = msBetween(start, Clock::now());
  report.relayed = allocation->relayed.toString();
  report.mapped = allocation->mapped.toString();

  start = Clock::now();
  Result<void> bound;
  if (command.mode == "channel") {
    if (auto channel = client.bindChannel(peer); !channel) bound = channel.error();
  } else {
    bound = client.createPermission(peer.ip);
  }
  if (!bound) {
    client.release();
    return fail(target->uri + ": peer " + peer.toString() + ": " + bound.error().message);
  }
  report.bind_ms = msBetween(start, Clock::now());

  const bool progress =
      command.progress == "always" || (command.progress == "auto" && ::isatty(STDERR_FILENO) == 1);
  Prober prober(command, client, peer, report);
  auto ran = prober.run(command.peer.empty() ? &echo : nullptr, stop, err, progress);
  client.release();
  if (!ran) return fail(target->uri + ": " + ran.error().message);

  if (command.output == "json") {
    out << toJson(report).dump() << "\n";
  } else {
    out << formatReport(report);
  }
  if (report.lossPercent() > command.max_loss) {
    err << kPrefix << "lost " << fixed(report.lossPercent(), 1) << "% of the packets, more than "
        << "--max-loss " << fixed(command.max_loss, 1) << "%\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace kturn::cli
