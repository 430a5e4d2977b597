#include "client_group.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "clock.h"
#include "stamp.h"
#include "stun/byte_order.h"
#include "stun/channel_data.h"
#include "stun/constants.h"
#include "stun/integrity.h"
#include "turn/authenticator.h"

namespace kturn::bench {
namespace {

constexpr int64_t kFirstRto = 250'000'000;  // RFC 8489 §6.2.1 suggests 500 ms; loopback is fast
constexpr int64_t kMaxRto = 2'000'000'000;
constexpr uint8_t kMaxTries = 6;               // about 8 s before a transaction times out
constexpr int64_t kTimerPeriod = 10'000'000;   // retransmission scan
constexpr int64_t kRefreshScan = 100'000'000;  // allocation refresh scan
constexpr int64_t kTick = 200'000;             // pacing tick while sending
constexpr int64_t kMaxRefreshInterval = 120;   // seconds; permissions last 300 s (RFC 8656 §9)

socklen_t fill(const TransportAddress& a, sockaddr_storage& ss) {
  ss = {};
  if (a.ip.isV4()) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(a.port);
    std::memcpy(&sin->sin_addr, a.ip.bytes().data(), 4);
    return sizeof(sockaddr_in);
  }
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
  sin6->sin6_family = AF_INET6;
  sin6->sin6_port = htons(a.port);
  std::memcpy(&sin6->sin6_addr, a.ip.bytes().data(), 16);
  return sizeof(sockaddr_in6);
}

Result<int> connectedSocket(const TransportAddress& server, const std::optional<IpAddress>& bind) {
  const bool v4 = server.ip.isV4();
  const int fd = ::socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return makeError(Error::Code::kIo, std::string("socket: ") + std::strerror(errno));
  // Bind to the loopback address of the server's family (or --client-bind): the generator only
  // talks to loopback.
  TransportAddress local{v4 ? IpAddress::v4(0x7F000001) : *IpAddress::parse("::1"), 0};
  if (bind) local.ip = *bind;
  sockaddr_storage ss;
  socklen_t len = fill(local, ss);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    const int err = errno;
    ::close(fd);
    return makeError(Error::Code::kIo, std::string("bind: ") + std::strerror(err));
  }
  len = fill(server, ss);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    const int err = errno;
    ::close(fd);
    return makeError(Error::Code::kIo, std::string("connect: ") + std::strerror(err));
  }
  return fd;
}

}  // namespace

size_t BenchOptions::activeClients() const {
  if (active != 0) return std::min(active, clients);
  return mode == Mode::kMany ? std::min<size_t>(100, clients) : clients;
}

ClientGroup::ClientGroup(const BenchOptions& options, size_t group, size_t groups, size_t first,
                         size_t count, TransportAddress peer)
    : opts_(options), group_(group), groups_(groups), first_(first), clients_(count) {
  params_.peer = peer;
  params_.lifetime = options.lifetime;
}

ClientGroup::~ClientGroup() {
  for (const TurnClient& c : clients_) {
    if (c.fd >= 0 && !opts_.stream()) ::close(c.fd);  // a connection closes its own
  }
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

Result<void> ClientGroup::open() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return makeError(Error::Code::kIo, "epoll_create1 failed");

  rx_buffer_ = std::make_unique<uint8_t[]>(kBatch * kSlot);
  for (size_t i = 0; i < kBatch; ++i) {
    rx_iov_[i] = {rx_buffer_.get() + i * kSlot, kSlot};
    rx_msgs_[i].msg_hdr = msghdr{};
    rx_msgs_[i].msg_hdr.msg_iov = &rx_iov_[i];
    rx_msgs_[i].msg_hdr.msg_iovlen = 1;
  }
  // Payload after the stamp, plus up to three bytes of DATA padding for Send indications.
  filler_.assign(opts_.payload - kStampSize, 0xA5);
  if (opts_.send_indications && !opts_.raw)
    filler_.resize(filler_.size() + (4 - opts_.payload % 4) % 4, 0);
  for (size_t i = 0; i < kBatch; ++i) {
    tx_msgs_[i].msg_hdr = msghdr{};
    tx_msgs_[i].msg_hdr.msg_iov = tx_iov_[i].data();
    tx_msgs_[i].msg_hdr.msg_iovlen = 3;
  }

  const auto unix_now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  const size_t active_limit = opts_.activeClients();
  for (size_t i = 0; i < clients_.size(); ++i) {
    TurnClient& c = clients_[i];
    c.index = static_cast<uint32_t>(first_ + i);
    c.channel = static_cast<uint16_t>(stun::kMinChannelNumber + (c.index & 0x0FFF));
    if (opts_.stream()) {
      if (auto ok = openStream(c, i); !ok) return ok;
    } else {
      auto fd = connectedSocket(opts_.server, opts_.client_bind);
      if (!fd) {
        return makeError(fd.error().code,
                         "client " + std::to_string(c.index) + ": " + fd.error().message);
      }
      c.fd = *fd;
    }
    epoll_event ev{};
    ev.events = opts_.stream() ? EPOLLIN | EPOLLRDHUP : EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &ev) != 0) {
      return makeError(Error::Code::kIo, "epoll_ctl failed");
    }
    if (opts_.auth == "rest") {
      c.username = std::to_string(unix_now + opts_.rest_ttl) + ":bench" + std::to_string(c.index);
      c.password = turn::restPassword(opts_.secret, c.username);
    } else {
      c.username = opts_.username;
      c.password = opts_.password;
    }
    c.active = c.index < active_limit;
    if (opts_.direct) {
      c.send_head_size = 0;  // the bare payload
    } else if (opts_.send_indications && !opts_.raw) {
      buildSendHead(c, params_.peer, opts_.payload);
    } else {
      stun::writeChannelDataHeader(c.send_head.data(), c.channel,
                                   static_cast<uint16_t>(opts_.payload));
      c.send_head_size = stun::kChannelDataHeaderSize;
    }
    if (opts_.noTurn()) c.step = Step::kReady;
  }
  return {};
}

// ---- transaction engine ---------------------------------------------------------------------

void ClientGroup::enqueue(uint32_t local, Step step) { pending_.emplace_back(local, step); }

void ClientGroup::fillWindow(int64_t now) {
  while (inflight_count_ < opts_.window && pending_head_ < pending_.size()) {
    const auto [local, step] = pending_[pending_head_++];
    begin(clients_[local], step, now);
  }
  if (pending_head_ == pending_.size()) {
    pending_.clear();
    pending_head_ = 0;
  }
}

void ClientGroup::begin(TurnClient& c, Step step, int64_t now) {
  if (!inFlight(c.step)) ++inflight_count_;
  if (!c.listed) {
    c.listed = true;
    inflight_.push_back(static_cast<uint32_t>(&c - clients_.data()));
  }
  c.step = step;
  c.tries = 0;
  c.auth_retries = 0;
  if (!buildRequest(c, params_, txid_counter_)) {
    finish(c, Step::kFailed);
    return;
  }
  transmit(c, now);
}

void ClientGroup::transmit(TurnClient& c, int64_t now) {
  if (opts_.stream()) {
    // Over a stream a request is not lost, yet it is retransmitted on the UDP schedule (RFC 8489
    // §6.2.2 would wait 39.5 s instead): on loopback an answer later than 250 ms means an
    // overloaded server either way, and the bounded retries keep setup time bounded.
    const auto local = static_cast<uint32_t>(&c - clients_.data());
    StreamConnection& s = *streams_[local];
    if (c.fd >= 0 && s.room() >= c.request_size) {
      s.append(std::span<const uint8_t>(c.request.data(), c.request_size));
      flushStream(local);
    }
  } else {
    ::send(c.fd, c.request.data(), c.request_size, MSG_DONTWAIT);
  }
  c.sent_ns = now;
  c.rto_ns = c.tries == 0 ? kFirstRto : std::min(c.rto_ns * 2, kMaxRto);
  ++c.tries;
  if (c.tries > 1) ++result_.retransmissions;
}

void ClientGroup::finish(TurnClient& c, Step final_step) {
  if (inFlight(c.step)) --inflight_count_;
  c.step = final_step;
}

void ClientGroup::checkTimers(int64_t now) {
  if (now < next_timer_check_ns_) return;
  next_timer_check_ns_ = now + kTimerPeriod;
  size_t keep = 0;
  for (size_t i = 0; i < inflight_.size(); ++i) {
    TurnClient& c = clients_[inflight_[i]];
    if (!inFlight(c.step)) {
      c.listed = false;
      continue;
    }
    inflight_[keep++] = inflight_[i];
    if (now - c.sent_ns < c.rto_ns) continue;
    if (c.tries >= kMaxTries) {
      ++result_.timeouts;
      ++result_.errors[0];
      finish(c, c.step == Step::kRelease ? Step::kReleased : Step::kFailed);
      c.listed = false;
      --keep;
      continue;
    }
    transmit(c, now);
  }
  inflight_.resize(keep);
}

void ClientGroup::onResponse(TurnClient& c, std::span<const uint8_t> bytes, int64_t now) {
  auto parsed = stun::MessageView::parse(bytes);
  if (!parsed) {
    ++result_.foreign;
    return;
  }
  const stun::MessageView& m = *parsed;
  if (!inFlight(c.step) || !std::equal(c.txid.begin(), c.txid.end(), m.transactionId().begin())) {
    return;  // a late answer to a retransmission or to an abandoned transaction
  }
  ++result_.transactions;
  if (c.tries == 1) result_.transaction_rtt.record(static_cast<uint64_t>(now - c.sent_ns));
  const ResponseInfo info = readResponse(m);
  if (std::getenv("KTURN_BENCH_TRACE") != nullptr) {
    std::fprintf(stderr, "client %u step %d: %s %d\n", c.index, static_cast<int>(c.step),
                 info.success ? "success" : "error", info.error);
  }
  if (info.success) {
    afterSuccess(c, now);
    return;
  }
  const int code = info.error;
  if ((code == stun::error::kUnauthorized || code == stun::error::kStaleNonce) && info.nonce &&
      c.auth_retries < 3) {
    const uint8_t retries = c.auth_retries;
    const bool realm_changed = info.realm && *info.realm != c.realm;
    if (info.realm) c.realm = *info.realm;
    c.nonce = *info.nonce;
    if (!c.have_key || realm_changed) {
      c.key = stun::longTermKey(c.username, c.realm, c.password);
      c.have_key = true;
    }
    begin(c, c.step == Step::kAllocateProbe ? Step::kAllocate : c.step, now);
    c.auth_retries = static_cast<uint8_t>(retries + 1);
    return;
  }
  ++result_.errors[code];
  c.last_error = code;
  if (c.step == Step::kRelease) {
    c.allocated = false;
    if (cycling_ && now < cycle_window_end_ns_ && reopenSocket(c)) {
      begin(c, Step::kAllocateProbe, now);
    } else {
      finish(c, Step::kReleased);
    }
    return;
  }
  if ((c.step == Step::kAllocate || c.step == Step::kAllocateProbe) &&
      code == stun::error::kAllocationMismatch && cycling_ && now < cycle_window_end_ns_ &&
      reopenSocket(c)) {
    // The server still holds state for this 5-tuple: the kernel handed out a client port that
    // another client released a moment ago (coturn keeps released sessions for a while). Move
    // to another port, as a real client would.
    begin(c, Step::kAllocateProbe, now);
    return;
  }
  finish(c, Step::kFailed);
}

void ClientGroup::afterSuccess(TurnClient& c, int64_t now) {
  const int64_t refresh_ns =
      opts_.refresh_after > 0
          ? secondsToNs(opts_.refresh_after)
          : std::min<int64_t>(std::max<int64_t>(opts_.lifetime / 2, 1), kMaxRefreshInterval) *
                kNsPerSecond;
  switch (c.step) {
    case Step::kAllocateProbe:  // a server without authentication
    case Step::kAllocate:
      c.allocated = true;
      c.refresh_ns = now + refresh_ns;
      if (cycling_) {
        begin(c, Step::kRelease, now);
      } else {
        begin(c, Step::kPermission, now);
      }
      return;
    case Step::kRefresh:
      ++result_.refreshes;
      c.refresh_ns = now + refresh_ns;
      begin(c, Step::kPermission, now);
      return;
    case Step::kPermission:
      if (opts_.send_indications) {
        finish(c, Step::kReady);
      } else {
        begin(c, Step::kChannelBind, now);
      }
      return;
    case Step::kChannelBind:
      finish(c, Step::kReady);
      return;
    case Step::kRelease: {
      const bool counted = c.allocated;
      c.allocated = false;
      if (!cycling_ && counted) ++result_.released;
      if (cycling_) {
        if (counted && now >= cycle_window_start_ns_ && now < cycle_window_end_ns_) {
          ++result_.cycles;
        }
        // The next allocation comes from a new client port, as a new client's would: servers
        // may keep state for a released 5-tuple for a while (coturn answers 437 to a new
        // Allocate on it), and nonces are bound to the client's address.
        if (now < cycle_window_end_ns_ && reopenSocket(c)) {
          begin(c, Step::kAllocateProbe, now);
          return;
        }
      }
      finish(c, Step::kReleased);
      return;
    }
    default:
      return;
  }
}

bool ClientGroup::reopenSocket(TurnClient& c) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  c.fd = -1;
  auto fd = connectedSocket(opts_.server, opts_.client_bind);
  if (!fd) return false;
  c.fd = *fd;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = static_cast<uint32_t>(&c - clients_.data());
  return ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &ev) == 0;
}

// ---- receive path -----------------------------------------------------------------------------

void ClientGroup::poll(int64_t timeout_ns) {
  if (!backlog_.empty()) flushBacklog();
  epoll_event events[256];
  timespec ts{timeout_ns / kNsPerSecond, timeout_ns % kNsPerSecond};
  const int n = ::epoll_pwait2(epoll_fd_, events, 256, &ts, nullptr);
  if (n <= 0) return;
  const int64_t now = monoNs();
  for (int i = 0; i < n; ++i) drainSocket(events[i].data.u32, now);
}

void ClientGroup::drainSocket(uint32_t local, int64_t now) {
  TurnClient& c = clients_[local];
  if (opts_.stream()) {
    drainStream(local, now);
    return;
  }
  const int fd = c.fd;
  for (int round = 0; round < 16 && c.fd == fd; ++round) {
    for (size_t i = 0; i < kBatch; ++i) rx_msgs_[i].msg_hdr.msg_flags = 0;
    const int n = ::recvmmsg(fd, rx_msgs_.data(), kBatch, MSG_DONTWAIT, nullptr);
    if (n <= 0) {
      // ECONNREFUSED: an ICMP error from a server that is not there (yet); nothing to read.
      return;
    }
    for (int i = 0; i < n; ++i) {
      dispatch(c, std::span<const uint8_t>(rx_buffer_.get() + i * kSlot, rx_msgs_[i].msg_len), now);
    }
    if (static_cast<size_t>(n) < kBatch) return;
  }
}

void ClientGroup::dispatch(TurnClient& c, std::span<const uint8_t> bytes, int64_t now) {
  if (opts_.direct) {
    onEcho(c, bytes, now);  // the peer's echo, as sent
    return;
  }
  if (bytes.size() >= stun::kChannelDataHeaderSize && stun::isChannelDataByte(bytes[0])) {
    const size_t length = stun::load16(bytes.data() + 2);
    onEcho(c, bytes.subspan(4, std::min(length, bytes.size() - 4)), now);
    return;
  }
  if (bytes.size() >= stun::kHeaderSize && (bytes[0] & 0xC0) == 0) {
    const uint16_t type = stun::load16(bytes.data());
    if (stun::decodeClass(type) == stun::MessageClass::kIndication) {
      auto m = stun::MessageView::parse(bytes);
      const auto data = m ? m->value(stun::attr::kData) : std::nullopt;
      if (data) {
        onEcho(c, *data, now);
      } else {
        ++result_.foreign;
      }
    } else {
      onResponse(c, bytes, now);
    }
    return;
  }
  ++result_.foreign;
}

void ClientGroup::onEcho(TurnClient& c, std::span<const uint8_t> payload, int64_t now) {
  const auto stamp = readStamp(payload);
  if (!stamp || stamp->client != c.index) {
    ++result_.foreign;
    return;
  }
  ++result_.received_total;
  if ((stamp->seq & Stamp::kMeasured) != 0 && now <= drain_end_ns_) {
    ++result_.received_measured;
    result_.rtt.record(static_cast<uint64_t>(now - stamp->sent_ns));
  }
}

// ---- phases ----------------------------------------------------------------------------------

void ClientGroup::run(RunControl& control) {
  if (opts_.mode != Mode::kAllocRate && !opts_.noTurn()) runSetup(control);
  for (size_t i = 0; i < clients_.size(); ++i) {
    if (clients_[i].step == Step::kReady && clients_[i].active) {
      active_.push_back(static_cast<uint32_t>(i));
    }
  }
  control.setup_finished.fetch_add(1);
  int64_t start = 0;
  while (!control.abort.load() && (start = control.traffic_start_ns.load()) == 0) {
    poll(5'000'000);
    checkTimers(monoNs());
  }
  if (!control.abort.load()) {
    if (opts_.mode == Mode::kAllocRate) {
      runAllocRate(control, start);
    } else {
      runTraffic(control, start);
    }
  }
  if (!opts_.noTurn()) runTeardown(control);
}

void ClientGroup::runSetup(RunControl& control) {
  const int64_t t0 = monoNs();
  const int64_t deadline = t0 + secondsToNs(opts_.setup_timeout);
  for (size_t i = 0; i < clients_.size(); ++i)
    enqueue(static_cast<uint32_t>(i), Step::kAllocateProbe);
  int64_t now = t0;
  while (!control.abort.load() && now < deadline) {
    fillWindow(now);
    if (windowIdle()) break;
    poll(1'000'000);
    now = monoNs();
    checkTimers(now);
  }
  result_.setup_seconds = static_cast<double>(monoNs() - t0) / 1e9;
  for (TurnClient& c : clients_) {
    if (c.step == Step::kReady) {
      ++result_.allocated;
    } else {
      ++result_.failed;
      if (inFlight(c.step)) finish(c, Step::kFailed);
    }
  }
  pending_.clear();
  pending_head_ = 0;
}

void ClientGroup::sendBurst(TurnClient& c, size_t n, int64_t now, bool measured) {
  if (opts_.stream()) {
    sendStreamBurst(c, n, now, measured);
    return;
  }
  while (n > 0) {
    const size_t k = std::min(n, kBatch);
    for (size_t j = 0; j < k; ++j) {
      Stamp s;
      s.client = c.index;
      s.seq = (c.seq + j) | (measured ? Stamp::kMeasured : 0);
      s.sent_ns = now;
      std::memcpy(tx_stamps_[j].data(), &s, kStampSize);
      tx_iov_[j][0] = {c.send_head.data(), c.send_head_size};
      tx_iov_[j][1] = {tx_stamps_[j].data(), kStampSize};
      tx_iov_[j][2] = {filler_.data(), filler_.size()};
    }
    const int sent = ::sendmmsg(c.fd, tx_msgs_.data(), static_cast<unsigned>(k), MSG_DONTWAIT);
    const size_t ok = sent > 0 ? static_cast<size_t>(sent) : 0;
    c.seq += ok;
    result_.sent_total += ok;
    if (measured) result_.sent_measured += ok;
    result_.send_failed += k - ok;
    n -= k;
    if (ok < k) return;  // the socket buffer is full: the rest would fail too
  }
}

void ClientGroup::runTraffic(RunControl& control, int64_t start_ns) {
  measure_start_ns_ = start_ns + secondsToNs(opts_.warmup);
  measure_end_ns_ = measure_start_ns_ + secondsToNs(opts_.duration);
  drain_end_ns_ = measure_end_ns_ + secondsToNs(opts_.drain);

  // This group's share of the offered rate, by its share of the active clients.
  const size_t total_active = std::max<size_t>(opts_.activeClients(), 1);
  const double rate =
      opts_.rate * static_cast<double>(active_.size()) / static_cast<double>(total_active);
  const double per_ns = rate / 1e9;
  const double max_tokens = std::max(64.0, rate * 0.005);  // at most 5 ms of backlog
  const uint64_t budget = opts_.max_packets / std::max<size_t>(groups_, 1);
  double tokens = 0;
  size_t cursor = 0;
  int64_t last = start_ns;
  int64_t next_refresh_scan = start_ns + kRefreshScan;

  // Wait for the common start.
  while (monoNs() < start_ns) poll(std::max<int64_t>(start_ns - monoNs(), 1000));

  for (;;) {
    const int64_t now = monoNs();
    if (now >= drain_end_ns_ || control.abort.load()) break;
    if (now < measure_end_ns_ && !active_.empty() && result_.sent_total < budget) {
      tokens = std::min(tokens + static_cast<double>(now - last) * per_ns, max_tokens);
      last = now;
      auto n = static_cast<size_t>(tokens);
      n = std::min<uint64_t>(n, budget - result_.sent_total);
      if (n > 0) {
        const bool measured = now >= measure_start_ns_;
        const uint64_t before = result_.sent_total + result_.send_failed;
        const size_t a = active_.size();
        const size_t each = n / a;
        size_t extra = n % a;
        const size_t visits = each > 0 ? a : extra;
        for (size_t v = 0; v < visits; ++v) {
          TurnClient& c = clients_[active_[cursor]];
          cursor = cursor + 1 == a ? 0 : cursor + 1;
          size_t k = each;
          if (extra > 0) {
            ++k;
            --extra;
          }
          if (k > 0 && c.step == Step::kReady) sendBurst(c, k, now, measured);
        }
        tokens -= static_cast<double>(result_.sent_total + result_.send_failed - before);
        if (tokens < 0) tokens = 0;
      }
    }
    if (now >= next_refresh_scan) {
      next_refresh_scan = now + kRefreshScan;
      for (size_t i = 0; i < clients_.size(); ++i) {
        if (clients_[i].step == Step::kReady && clients_[i].allocated &&
            clients_[i].refresh_ns <= now) {
          // Stays kReady until the window takes it: not due again until its Refresh answers.
          clients_[i].refresh_ns = std::numeric_limits<int64_t>::max();
          enqueue(static_cast<uint32_t>(i), Step::kRefresh);
        }
      }
      fillWindow(now);
    }
    if (inflight_count_ > 0) checkTimers(now);
    poll(std::min<int64_t>(kTick, std::max<int64_t>(drain_end_ns_ - now, 1000)));
  }
}

void ClientGroup::runAllocRate(RunControl& control, int64_t start_ns) {
  cycling_ = true;
  cycle_window_start_ns_ = start_ns + secondsToNs(opts_.warmup);
  cycle_window_end_ns_ = cycle_window_start_ns_ + secondsToNs(opts_.duration);
  for (size_t i = 0; i < clients_.size(); ++i)
    enqueue(static_cast<uint32_t>(i), Step::kAllocateProbe);
  const int64_t hard_end = cycle_window_end_ns_ + 10 * kNsPerSecond;
  int64_t now = monoNs();
  while (!control.abort.load() && now < hard_end) {
    fillWindow(now);
    if (now >= cycle_window_end_ns_ && windowIdle()) break;
    poll(1'000'000);
    now = monoNs();
    checkTimers(now);
  }
  cycling_ = false;
}

bool ClientGroup::releasesAtEnd(uint32_t index) const {
  const double f = opts_.release_fraction;
  if (f >= 1.0) return true;
  // Exactly round(clients * f) of the clients release, evenly spread: client i releases if
  // floor((i + 1) * f) steps past floor(i * f).
  return std::floor(static_cast<double>(index + 1) * f) >
         std::floor(static_cast<double>(index) * f);
}

void ClientGroup::runTeardown(RunControl& control) {
  cycling_ = false;
  // Refreshes still waiting for the window are moot now; releases go first.
  pending_.clear();
  pending_head_ = 0;
  for (size_t i = 0; i < clients_.size(); ++i) {
    TurnClient& c = clients_[i];
    if (inFlight(c.step)) finish(c, Step::kFailed);
    if (!c.allocated) continue;
    if (releasesAtEnd(c.index)) {
      enqueue(static_cast<uint32_t>(i), Step::kRelease);
    } else {
      ++result_.abandoned;  // the server expires it at the end of its lifetime
    }
  }
  const int64_t deadline =
      monoNs() + 10 * kNsPerSecond + static_cast<int64_t>(clients_.size()) * 1'000'000;
  int64_t now = monoNs();
  while (!control.abort.load() && now < deadline) {
    fillWindow(now);
    if (windowIdle()) break;
    poll(1'000'000);
    now = monoNs();
    checkTimers(now);
  }
}

// ---- TURN-TCP and TURN-TLS ------------------------------------------------------------------

Result<void> ClientGroup::openStream(TurnClient& c, size_t local) {
  if (opts_.transport == Transport::kTls && !tls_) {
    // No verification: the bench servers use a throwaway self-signed certificate.
    auto ctx = ClientTlsContext::make(ClientTlsContext::Kind::kTls, opts_.tls_max_version,
                                      {.insecure = true});
    if (!ctx) return ctx.error();
    tls_ = std::move(*ctx);
  }
  if (streams_.empty()) streams_.resize(clients_.size());
  const IpAddress bind = opts_.client_bind        ? *opts_.client_bind
                         : opts_.server.ip.isV4() ? IpAddress::v4(0x7F000001)
                                                  : *IpAddress::parse("::1");
  auto conn = StreamConnection::open(opts_.server, bind, tls_.get(), 5000);
  if (!conn) {
    return makeError(conn.error().code,
                     "client " + std::to_string(c.index) + ": " + conn.error().message);
  }
  c.fd = (*conn)->fd();
  if (local == 0) result_.tls = (*conn)->tlsDescription();
  streams_[local] = std::move(*conn);
  return {};
}

void ClientGroup::drainStream(uint32_t local, int64_t now) {
  TurnClient& c = clients_[local];
  if (c.fd < 0) return;
  StreamConnection& s = *streams_[local];
  // Bounded rounds, but never leave decrypted bytes behind: epoll would not report them.
  for (int round = 0; round < 16 || s.hasBuffered(); ++round) {
    const int r = s.readMore();
    while (auto frame = s.nextFrame()) dispatch(c, *frame, now);
    if (s.failed()) {
      connectionLost(c);
      return;
    }
    s.compact();
    if (r == 0) return;
  }
}

void ClientGroup::flushStream(uint32_t local) {
  TurnClient& c = clients_[local];
  StreamConnection& s = *streams_[local];
  if (!s.flush()) {
    connectionLost(c);
    return;
  }
  if (s.hasOutput() && !c.backlogged) {
    c.backlogged = true;
    backlog_.push_back(local);
  }
}

void ClientGroup::flushBacklog() {
  size_t keep = 0;
  for (size_t i = 0; i < backlog_.size(); ++i) {
    const uint32_t local = backlog_[i];
    TurnClient& c = clients_[local];
    StreamConnection& s = *streams_[local];
    if (c.fd >= 0 && s.flush() && s.hasOutput()) {
      backlog_[keep++] = local;
      continue;
    }
    c.backlogged = false;
    if (c.fd >= 0 && s.failed()) connectionLost(c);
  }
  backlog_.resize(keep);
}

void ClientGroup::sendStreamBurst(TurnClient& c, size_t n, int64_t now, bool measured) {
  const auto local = static_cast<uint32_t>(&c - clients_.data());
  StreamConnection& s = *streams_[local];
  const size_t message = c.send_head_size + kStampSize + filler_.size();
  const size_t frame = (message + 3) & ~size_t{3};  // ChannelData is padded on streams
  size_t queued = 0;
  for (; queued < n && s.room() >= frame; ++queued) {
    Stamp st;
    st.client = c.index;
    st.seq = (c.seq + queued) | (measured ? Stamp::kMeasured : 0);
    st.sent_ns = now;
    s.append(std::span<const uint8_t>(c.send_head.data(), c.send_head_size));
    s.append(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&st), kStampSize));
    s.append(filler_);
    s.pad(message);
  }
  // What does not fit the output queue is refused, as a full UDP socket buffer refuses it.
  c.seq += queued;
  result_.sent_total += queued;
  if (measured) result_.sent_measured += queued;
  result_.send_failed += n - queued;
  if (queued > 0) flushStream(local);
}

void ClientGroup::connectionLost(TurnClient& c) {
  if (c.fd < 0) return;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  c.fd = -1;  // the StreamConnection keeps (and closes) the socket
  ++result_.connections_lost;
  ++result_.errors[-1];
  c.allocated = false;
  if (inFlight(c.step)) {
    finish(c, Step::kFailed);
  } else {
    c.step = Step::kFailed;
  }
}

}  // namespace kturn::bench
