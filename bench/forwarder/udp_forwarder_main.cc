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
#include <signal.h>
#include <sys/epoll.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <unordered_map>
#include <vector>

#include "net/event_loop.h"
#include "net/udp_receive_batch.h"
#include "net/udp_send_batch.h"
#include "net/udp_socket.h"
#include "stun/byte_order.h"
#include "stun/channel_data.h"

namespace kturn::bench {
namespace {

// Same bound as kturnd's worker: one busy socket cannot starve the loop.
constexpr int kMaxBatchesPerEvent = 16;

struct ForwarderOptions {
  TransportAddress listen;
  TransportAddress peer;
  size_t batch = 64;            // kturnd's default batch
  size_t max_datagram = 65535;  // kturnd's default receive slot
  int socket_buffer = 4 << 20;  // kturnd's listener SO_RCVBUF/SO_SNDBUF
  int idle_seconds = 30;
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

  const ForwarderOptions& opts_;
  net::EventLoop loop_;
  net::UdpSocket listener_;
  net::UdpReceiveBatch rx_;
  net::UdpSendBatch tx_;
  std::unordered_map<TransportAddress, std::unique_ptr<Flow>> flows_;
  std::atomic<uint64_t> flows_created_{0};
  std::thread thread_;
};

}  // namespace
}  // namespace kturn::bench

int main(int argc, char** argv) {
  kturn::bench::ForwarderOptions o;
  CLI::App app{"udp-forwarder: kturnd's UDP structure without TURN, the benchmark's reference"};
  std::string listen = "127.0.0.1:4478";
  std::string peer;
  size_t threads = std::max(1u, std::thread::hardware_concurrency());
  app.add_option("--listen", listen, "listener address IP:port (IPv4)");
  app.add_option("--peer", peer, "where payloads go, IP:port (IPv4)")->required();
  app.add_option("--threads", threads, "worker threads (SO_REUSEPORT sockets)")
      ->check(CLI::Range(1, 256));
  app.add_option("--batch", o.batch, "datagrams per recvmmsg/sendmmsg")->check(CLI::Range(1, 1024));
  app.add_option("--idle", o.idle_seconds, "seconds before an idle flow is closed");
  CLI11_PARSE(app, argc, argv);
  auto l = kturn::TransportAddress::parse(listen);
  auto p = kturn::TransportAddress::parse(peer);
  if (!l || !p || !l->ip.isV4() || !p->ip.isV4()) {
    std::fprintf(stderr, "udp-forwarder: --listen and --peer must be IPv4 IP:port\n");
    return 2;
  }
  o.listen = *l;
  o.peer = *p;

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  std::vector<std::unique_ptr<kturn::bench::ForwarderWorker>> workers;
  for (size_t i = 0; i < threads; ++i) {
    workers.push_back(std::make_unique<kturn::bench::ForwarderWorker>(o));
    if (auto ok = workers.back()->bind(); !ok) {
      std::fprintf(stderr, "udp-forwarder: %s: %s\n", listen.c_str(), ok.error().message.c_str());
      return 1;
    }
  }
  for (auto& w : workers) w->start();
  std::printf("udp-forwarder: %s -> %s, %zu threads\n", listen.c_str(), peer.c_str(), threads);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  uint64_t flows = 0;
  for (auto& w : workers) {
    w->stop();
    flows += w->flows();
  }
  std::printf("udp-forwarder: stopped, %llu flows\n", static_cast<unsigned long long>(flows));
  return 0;
}
