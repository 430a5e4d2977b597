// udp-forwarder: the kernel-limit reference for bench/compare. It has kturnd's socket and
// batching structure — one worker thread per core with its own SO_REUSEPORT listener socket, an
// epoll loop, one relay socket per client flow, recvmmsg/sendmmsg through the very same
// net::UdpReceiveBatch / net::UdpSendBatch — and none of the TURN logic:
//
//   client --ChannelData(ch, len, payload)--> listener  --payload--> relay socket --> peer
//   client <--ChannelData(ch, len, payload)-- listener <--payload-- relay socket <-- peer
//
// A flow (client address -> relay socket) is created by the client's first datagram, like an
// allocation without the handshake, and closed after --idle seconds without traffic. IPv4 only.
// The difference between kturnd and this program is what the TURN core and kturnd's own
// structure cost; the difference between this program and zero is what the kernel costs.
//
// With --tcp-listen and --tls-listen it does the same for clients over TCP and TLS, kturnd's
// TURN-TCP and TURN-TLS structure without TURN: one relay socket per connection, ChannelData
// framed on the stream and padded to 4 bytes (RFC 8656 §11.5), reads of up to 16 rounds per
// event, what a relay batch brings queued per connection and written (or encrypted, then
// written) once per batch, OpenSSL through the same net::TlsStream.
//
// With --io-uring its UDP path runs on io_uring instead (uring_forwarder.h): the same forwarding,
// one io_uring_enter(2) per wake-up.
#include <signal.h>
#include <sys/epoll.h>

#include <CLI/CLI.hpp>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <vector>

#include "net/event_loop.h"
#include "net/tcp_socket.h"
#include "net/tls_context.h"
#include "net/tls_stream.h"
#include "net/udp_receive_batch.h"
#include "net/udp_send_batch.h"
#include "net/udp_socket.h"
#include "stun/byte_order.h"
#include "stun/channel_data.h"
#include "stun/stream_framing.h"
#ifdef KTURN_BENCH_URING
#include "uring_forwarder.h"
#endif

namespace kturn::bench {
namespace {

// Same bound as kturnd's worker: one busy socket cannot starve the loop.
constexpr int kMaxBatchesPerEvent = 16;
// Same as kturnd's stream listener: read size, and the largest frame (64 KiB ChannelData, padded).
constexpr size_t kStreamInput = 4096;
constexpr size_t kMaxFrame = stun::kChannelDataHeaderSize + 65535 + 3;

struct ForwarderOptions {
  TransportAddress listen;
  TransportAddress peer;
  size_t batch = 64;            // kturnd's default batch
  size_t max_datagram = 65535;  // kturnd's default receive slot
  int socket_buffer = 4 << 20;  // kturnd's listener SO_RCVBUF/SO_SNDBUF
  int idle_seconds = 30;
  std::optional<TransportAddress> tcp_listen;  // clients over TCP
  std::optional<TransportAddress> tls_listen;  // clients over TLS, with `tls`
  std::shared_ptr<const net::TlsContext> tls;
};

class ForwarderWorker {
 public:
  ForwarderWorker(const ForwarderOptions& o)
      : opts_(o), rx_(o.batch, o.max_datagram), tx_(o.batch * 2) {}

  Result<void> bind() {
    net::UdpSocketOptions so;
    so.reuse_port = true;
    so.recv_buffer = opts_.socket_buffer;
    so.send_buffer = opts_.socket_buffer;
    auto s = net::UdpSocket::bind(opts_.listen, so);
    if (!s) return s.error();
    listener_ = std::move(*s);
    auto added = loop_.add(listener_.fd(), EPOLLIN, [this](uint32_t) { onListenerReadable(); });
    if (!added) return added;
    loop_.addTicker(std::chrono::seconds(1), [this] { expireIdle(); });
    if (opts_.tcp_listen) {
      auto tcp = listenStream(*opts_.tcp_listen, false, tcp_listener_);
      if (!tcp) return tcp;
    }
    if (opts_.tls_listen) {
      auto tls = listenStream(*opts_.tls_listen, true, tls_listener_);
      if (!tls) return tls;
    }
    return {};
  }
  void start() {
    thread_ = std::thread([this] { loop_.run(); });
  }
  void stop() {
    loop_.stop();
    if (thread_.joinable()) thread_.join();
  }
  uint64_t flows() const { return flows_created_.load(); }
  uint64_t connections() const { return connections_accepted_.load(); }

 private:
  struct Flow {
    TransportAddress client;
    net::UdpSocket relay;
    uint16_t channel = stun::kMinChannelNumber;
    std::chrono::steady_clock::time_point last_active;
  };

  Flow* flowFor(const TransportAddress& client, uint16_t channel) {
    auto it = flows_.find(client);
    if (it != flows_.end()) return it->second.get();
    auto relay = net::UdpSocket::bind(TransportAddress{opts_.listen.ip, 0}, {});
    if (!relay) return nullptr;
    auto flow = std::make_unique<Flow>();
    flow->client = client;
    flow->relay = std::move(*relay);
    flow->channel = channel;
    Flow* f = flow.get();
    if (!loop_.add(f->relay.fd(), EPOLLIN, [this, f](uint32_t) { onRelayReadable(*f); })) {
      return nullptr;
    }
    flows_.emplace(client, std::move(flow));
    flows_created_.fetch_add(1, std::memory_order_relaxed);
    return f;
  }

  void onListenerReadable() {
    for (int round = 0; round < kMaxBatchesPerEvent; ++round) {
      auto received = rx_.receive(listener_.fd());
      if (!received || *received == 0) return;
      const auto now = std::chrono::steady_clock::now();
      for (size_t i = 0; i < *received; ++i) {
        const auto bytes = rx_.payload(i);
        if (rx_.truncated(i) || bytes.size() < stun::kChannelDataHeaderSize ||
            !stun::isChannelDataByte(bytes[0])) {
          continue;
        }
        const size_t length = std::min<size_t>(stun::load16(bytes.data() + 2), bytes.size() - 4);
        Flow* f = flowFor(rx_.source(i), stun::load16(bytes.data()));
        if (f == nullptr) continue;
        f->last_active = now;
        queue(f->relay.fd(), opts_.peer, bytes.subspan(4, length));
      }
      tx_.flush();
      if (*received < rx_.capacity()) return;
    }
  }

  void onRelayReadable(Flow& f) {
    for (int round = 0; round < kMaxBatchesPerEvent; ++round) {
      auto received = rx_.receive(f.relay.fd());
      if (!received || *received == 0) return;
      for (size_t i = 0; i < *received; ++i) {
        if (rx_.truncated(i)) continue;
        const size_t length = rx_.payload(i).size();
        const auto framed = rx_.expand(i, stun::kChannelDataHeaderSize, 0);
        stun::writeChannelDataHeader(framed.data(), f.channel, static_cast<uint16_t>(length));
        queue(listener_.fd(), f.client, framed);
      }
      tx_.flush();
      if (*received < rx_.capacity()) return;
    }
  }

  void queue(int fd, const TransportAddress& to, std::span<const uint8_t> data) {
    if (!tx_.queue(fd, to, data)) {
      tx_.flush();
      tx_.queue(fd, to, data);
    }
  }

  void expireIdle() {
    const auto cutoff = std::chrono::steady_clock::now() - std::chrono::seconds(opts_.idle_seconds);
    for (auto it = flows_.begin(); it != flows_.end();) {
      if (it->second->last_active < cutoff) {
        loop_.remove(it->second->relay.fd());
        it = flows_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // ---- clients over TCP and TLS ----

  struct Connection {
    net::FileDescriptor fd;
    net::UdpSocket relay;
    uint16_t channel = 0;  // the first frame's
    std::vector<uint8_t> in;
    size_t in_used = 0;
    std::vector<uint8_t> out;  // before tls: TlsStream appends its records here
    size_t out_head = 0;
    std::unique_ptr<net::TlsStream> tls;
    bool want_write = false;
  };

  Result<void> listenStream(const TransportAddress& at, bool tls, net::FileDescriptor& into) {
    auto listening = net::listenTcp(at, {.reuse_port = true});
    if (!listening) return listening.error();
    into = std::move(*listening);
    const int fd = into.get();
    return loop_.add(fd, EPOLLIN, [this, fd, tls](uint32_t) { onAcceptable(fd, tls); });
  }

  void onAcceptable(int listening_fd, bool tls) {
    for (int i = 0; i < 64; ++i) {
      auto accepted = net::acceptTcp(listening_fd);
      if (!accepted || !*accepted) return;
      auto relay = net::UdpSocket::bind(TransportAddress{opts_.listen.ip, 0}, {});
      if (!relay) continue;  // closes the connection
      auto c = std::make_unique<Connection>();
      c->fd = std::move((*accepted)->fd);
      c->relay = std::move(*relay);
      c->in.resize(kStreamInput);
      if (tls) c->tls = std::make_unique<net::TlsStream>(*opts_.tls, c->fd.get(), c->out);
      Connection* raw = c.get();
      const int fd = c->fd.get();
      if (!loop_.add(fd, EPOLLIN | EPOLLRDHUP, [this, fd](uint32_t ev) { onStream(fd, ev); }) ||
          !loop_.add(raw->relay.fd(), EPOLLIN, [this, raw](uint32_t) { onStreamRelay(*raw); })) {
        loop_.remove(fd);
        continue;
      }
      connections_.emplace(fd, std::move(c));
      connections_accepted_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // Plaintext read into c.in: > 0 bytes, 0 closed or failed, -1 nothing more for now.
  ssize_t readSome(Connection& c) {
    const std::span<uint8_t> room(c.in.data() + c.in_used, c.in.size() - c.in_used);
    if (c.tls) {
      const auto r = c.tls->read(room);
      switch (r.status) {
        case net::TlsStream::Status::kData:
          return static_cast<ssize_t>(r.bytes);
        case net::TlsStream::Status::kWouldBlock:
          return -1;
        default:
          return 0;
      }
    }
    const ssize_t n = ::read(c.fd.get(), room.data(), room.size());
    if (n > 0) return n;
    return n < 0 && (errno == EAGAIN || errno == EINTR) ? -1 : 0;
  }

  void onStream(int fd, uint32_t events) {
    const auto it = connections_.find(fd);
    if (it == connections_.end()) return;
    Connection& c = *it->second;
    bool open = true;
    if (events & EPOLLOUT) open = writeOut(c);
    if (open && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) open = readFrames(c);
    // Handshake flights and session tickets.
    if (open && c.tls) open = writeOut(c);
    if (!open) closeStream(fd);
  }

  bool readFrames(Connection& c) {
    for (int round = 0; round < kMaxBatchesPerEvent || (c.tls && c.tls->hasBuffered()); ++round) {
      if (c.in_used == c.in.size()) c.in.resize(std::min(kMaxFrame, c.in.size() * 2));
      const size_t room = c.in.size() - c.in_used;
      const ssize_t n = readSome(c);
      if (n == 0) return false;
      if (n < 0) return true;
      c.in_used += static_cast<size_t>(n);
      size_t offset = 0;
      while (offset < c.in_used) {
        const std::span<const uint8_t> rest(c.in.data() + offset, c.in_used - offset);
        const stun::StreamFrame f = stun::nextStreamFrame(rest);
        if (f.kind == stun::StreamFrame::Kind::kIncomplete) break;
        if (f.kind != stun::StreamFrame::Kind::kChannelData) return false;  // raw clients only
        if (c.channel == 0) c.channel = stun::load16(rest.data());
        queue(c.relay.fd(), opts_.peer,
              rest.subspan(stun::kChannelDataHeaderSize,
                           f.message_size - stun::kChannelDataHeaderSize));
        offset += f.frame_size;
      }
      tx_.flush();  // the payloads point into c.in
      std::copy(c.in.begin() + static_cast<ptrdiff_t>(offset),
                c.in.begin() + static_cast<ptrdiff_t>(c.in_used), c.in.begin());
      c.in_used -= offset;
      if (static_cast<size_t>(n) < room && !(c.tls && c.tls->hasBuffered())) return true;
    }
    return true;
  }

  void onStreamRelay(Connection& c) {
    const int fd = c.fd.get();
    for (int round = 0; round < kMaxBatchesPerEvent; ++round) {
      auto received = rx_.receive(c.relay.fd());
      if (!received || *received == 0) break;
      for (size_t i = 0; i < *received; ++i) {
        if (rx_.truncated(i) || c.channel == 0) continue;
        const size_t length = rx_.payload(i).size();
        const size_t pad = (4 - length % 4) % 4;
        const auto framed = rx_.expand(i, stun::kChannelDataHeaderSize, pad);
        stun::writeChannelDataHeader(framed.data(), c.channel, static_cast<uint16_t>(length));
        std::fill(framed.end() - static_cast<ptrdiff_t>(pad), framed.end(), uint8_t{0});
        if (c.out_head == c.out.size()) {
          c.out.clear();
          c.out_head = 0;
        }
        if (c.tls) {
          if (!c.tls->established() || !c.tls->write(framed)) continue;
        } else {
          c.out.insert(c.out.end(), framed.begin(), framed.end());
        }
      }
      if (*received < rx_.capacity()) break;
    }
    if (!writeOut(c)) closeStream(fd);
  }

  bool writeOut(Connection& c) {
    while (c.out_head < c.out.size()) {
      const ssize_t n = ::send(c.fd.get(), c.out.data() + c.out_head, c.out.size() - c.out_head,
                               MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return false;
        if (!c.want_write) {
          c.want_write = true;
          (void)loop_.modify(c.fd.get(), EPOLLIN | EPOLLRDHUP | EPOLLOUT);
        }
        return true;
      }
      c.out_head += static_cast<size_t>(n);
    }
    c.out.clear();
    c.out_head = 0;
    if (c.want_write) {
      c.want_write = false;
      (void)loop_.modify(c.fd.get(), EPOLLIN | EPOLLRDHUP);
    }
    return true;
  }

  void closeStream(int fd) {
    const auto it = connections_.find(fd);
    if (it == connections_.end()) return;
    loop_.remove(it->second->relay.fd());
    loop_.remove(fd);
    connections_.erase(it);
  }

  const ForwarderOptions& opts_;
  net::EventLoop loop_;
  net::UdpSocket listener_;
  net::FileDescriptor tcp_listener_;
  net::FileDescriptor tls_listener_;
  std::unordered_map<int, std::unique_ptr<Connection>> connections_;  // by the connection's fd
  std::atomic<uint64_t> connections_accepted_{0};
  net::UdpReceiveBatch rx_;
  net::UdpSendBatch tx_;
  std::unordered_map<TransportAddress, std::unique_ptr<Flow>> flows_;
  std::atomic<uint64_t> flows_created_{0};
  std::thread thread_;
};

}  // namespace
}  // namespace kturn::bench

namespace {

// Waits for SIGINT or SIGTERM (blocked in `signals`), stops every worker and returns the sums of
// the `counts` over them, e.g. {flows, connections}.
template <class Worker, class... Counts>
std::array<uint64_t, sizeof...(Counts)> stopOnSignal(const sigset_t& signals,
                                                     std::vector<std::unique_ptr<Worker>>& workers,
                                                     Counts... counts) {
  int sig = 0;
  sigwait(&signals, &sig);
  std::array<uint64_t, sizeof...(Counts)> sums{};
  for (auto& w : workers) {
    w->stop();
    size_t i = 0;
    ((sums[i++] += ((*w).*counts)()), ...);
  }
  return sums;
}

// --io-uring: the UDP path on io_uring workers until SIGINT or SIGTERM (blocked in `signals`).
int runUring(const kturn::bench::ForwarderOptions& o, size_t threads, const std::string& listen,
             const std::string& peer, const sigset_t& signals) {
#ifdef KTURN_BENCH_URING
  if (o.tcp_listen || o.tls_listen) {
    std::fprintf(stderr, "udp-forwarder: --io-uring forwards UDP only\n");
    return 2;
  }
  kturn::bench::UringForwarderOptions u;
  u.listen = o.listen;
  u.peer = o.peer;
  u.socket_buffer = o.socket_buffer;
  u.idle_seconds = o.idle_seconds;
  std::vector<std::unique_ptr<kturn::bench::UringForwarder>> workers;
  for (size_t i = 0; i < threads; ++i) {
    workers.push_back(std::make_unique<kturn::bench::UringForwarder>(u));
    if (auto ok = workers.back()->start(); !ok) {
      std::fprintf(stderr, "udp-forwarder: %s: %s\n", listen.c_str(), ok.error().message.c_str());
      return 1;
    }
  }
  std::printf("udp-forwarder: %s -> %s, %zu io_uring threads\n", listen.c_str(), peer.c_str(),
              threads);
  std::fflush(stdout);
  const auto [flows, dropped] = stopOnSignal(signals, workers, &kturn::bench::UringForwarder::flows,
                                             &kturn::bench::UringForwarder::dropped);
  std::printf("udp-forwarder: stopped, %llu flows, %llu datagrams dropped\n",
              static_cast<unsigned long long>(flows), static_cast<unsigned long long>(dropped));
  return 0;
#else
  (void)o, (void)threads, (void)listen, (void)peer, (void)signals;
  std::fprintf(stderr, "udp-forwarder: built without liburing, no --io-uring\n");
  return 2;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  kturn::bench::ForwarderOptions o;
  CLI::App app{"udp-forwarder: kturnd's structure without TURN, the benchmark's reference"};
  std::string listen = "127.0.0.1:4478";
  std::string peer;
  size_t threads = std::max(1u, std::thread::hardware_concurrency());
  app.add_option("--listen", listen, "listener address IP:port (IPv4)");
  app.add_option("--peer", peer, "where payloads go, IP:port (IPv4)")->required();
  app.add_option("--threads", threads, "worker threads (SO_REUSEPORT sockets)")
      ->check(CLI::Range(1, 256));
  app.add_option("--batch", o.batch, "datagrams per recvmmsg/sendmmsg")->check(CLI::Range(1, 1024));
  app.add_option("--idle", o.idle_seconds, "seconds before an idle flow is closed");
  std::string tcp_listen, tls_listen, cert, key;
  app.add_option("--tcp-listen", tcp_listen, "also clients over TCP on IP:port (IPv4)");
  app.add_option("--tls-listen", tls_listen, "also clients over TLS on IP:port (IPv4)")
      ->needs(app.add_option("--cert", cert, "TLS: PEM certificate file"))
      ->needs(app.add_option("--key", key, "TLS: PEM private key file"));
  bool io_uring = false;
  app.add_flag("--io-uring", io_uring,
               "UDP on io_uring (multishot receives into provided buffers, one io_uring_enter per "
               "wake-up) instead of epoll and recvmmsg/sendmmsg; no --tcp-listen/--tls-listen");
  CLI11_PARSE(app, argc, argv);
  auto l = kturn::TransportAddress::parse(listen);
  auto p = kturn::TransportAddress::parse(peer);
  if (!l || !p || !l->ip.isV4() || !p->ip.isV4()) {
    std::fprintf(stderr, "udp-forwarder: --listen and --peer must be IPv4 IP:port\n");
    return 2;
  }
  o.listen = *l;
  o.peer = *p;
  for (auto [text, into] : {std::pair{&tcp_listen, &o.tcp_listen}, {&tls_listen, &o.tls_listen}}) {
    if (text->empty()) continue;
    auto a = kturn::TransportAddress::parse(*text);
    if (!a || !a->ip.isV4()) {
      std::fprintf(stderr, "udp-forwarder: %s: not an IPv4 IP:port\n", text->c_str());
      return 2;
    }
    *into = *a;
  }
  if (o.tls_listen) {
    auto read = [](const std::string& path) {
      std::ifstream in(path);
      std::stringstream text;
      text << in.rdbuf();
      return text.str();
    };
    auto ctx = kturn::net::TlsContext::server(read(cert), read(key), kturn::net::TlsKind::kTls);
    if (!ctx) {
      std::fprintf(stderr, "udp-forwarder: TLS: %s\n", ctx.error().message.c_str());
      return 2;
    }
    o.tls = std::move(*ctx);
  }

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  if (io_uring) return runUring(o, threads, listen, peer, set);
  std::vector<std::unique_ptr<kturn::bench::ForwarderWorker>> workers;
  for (size_t i = 0; i < threads; ++i) {
    workers.push_back(std::make_unique<kturn::bench::ForwarderWorker>(o));
    if (auto ok = workers.back()->bind(); !ok) {
      std::fprintf(stderr, "udp-forwarder: %s: %s\n", listen.c_str(), ok.error().message.c_str());
      return 1;
    }
  }
  for (auto& w : workers) w->start();
  std::printf("udp-forwarder: %s%s%s%s%s -> %s, %zu threads\n", listen.c_str(),
              tcp_listen.empty() ? "" : ", tcp ", tcp_listen.c_str(),
              tls_listen.empty() ? "" : ", tls ", tls_listen.c_str(), peer.c_str(), threads);
  std::fflush(stdout);
  const auto [flows, connections] =
      stopOnSignal(set, workers, &kturn::bench::ForwarderWorker::flows,
                   &kturn::bench::ForwarderWorker::connections);
  std::printf("udp-forwarder: stopped, %llu flows, %llu connections\n",
              static_cast<unsigned long long>(flows), static_cast<unsigned long long>(connections));
  return 0;
}
