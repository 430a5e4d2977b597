#include "uring_forwarder.h"

#include <liburing.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "net/sockaddr.h"
#include "net/udp_socket.h"
#include "stun/byte_order.h"
#include "stun/channel_data.h"

namespace kturn::bench {

bool uringForwarderBuilt() { return true; }

namespace {

constexpr size_t kBufferSize = 2048;
constexpr unsigned kSubmissionEntries = 1024;
constexpr unsigned kCompletionEntries = 16384;  // multishot receives post many per submission
constexpr uint16_t kBufferGroup = 0;

// What a completion is about: the top byte of its user_data.
enum class Kind : uint8_t { kListenerReceive = 1, kRelayReceive, kSend, kCancel };

constexpr uint64_t userData(Kind kind, uint64_t value) {
  return (static_cast<uint64_t>(kind) << 56) | value;
}
constexpr Kind kindOf(uint64_t user_data) { return static_cast<Kind>(user_data >> 56); }
constexpr uint64_t valueOf(uint64_t user_data) { return user_data & ((uint64_t{1} << 56) - 1); }

// A relay receive names its flow by slot and generation, so that a completion for a flow that
// was closed, and its slot reused, is recognised.
constexpr uint64_t flowValue(uint32_t slot, uint32_t generation) {
  return (static_cast<uint64_t>(generation) << 24) | slot;
}

sockaddr_in toSockaddrIn(const TransportAddress& address) {
  sockaddr_storage storage;
  net::toSockaddr(address, storage);
  sockaddr_in in;
  std::memcpy(&in, &storage, sizeof in);
  return in;
}

}  // namespace

class UringForwarder::Impl {
 public:
  explicit Impl(const UringForwarderOptions& o)
      : opts_(o),
        peer_(toSockaddrIn(o.peer)),
        buffers_(static_cast<size_t>(o.buffers) * kBufferSize),
        sends_(o.buffers) {
    // Receive headers: the source address is asked for, no control messages.
    receive_msg_.msg_namelen = sizeof(sockaddr_in);
  }

  ~Impl() { stop(); }

  Result<void> start() {
    if (opts_.buffers == 0 || (opts_.buffers & (opts_.buffers - 1)) != 0 || opts_.buffers > 32768) {
      return makeError(Error::Code::kInvalidArgument, "buffers must be a power of two <= 32768");
    }
    net::UdpSocketOptions so;
    so.reuse_port = true;
    so.recv_buffer = opts_.socket_buffer;
    so.send_buffer = opts_.socket_buffer;
    auto listener = net::UdpSocket::bind(opts_.listen, so);
    if (!listener) return listener.error();
    listener_ = std::move(*listener);
    std::promise<std::string> ready;
    auto set_up = ready.get_future();
    thread_ = std::thread([this, ready = std::move(ready)]() mutable {
      std::string error = setUp();
      const bool ok = error.empty();
      ready.set_value(std::move(error));
      if (ok) run();
      tearDown();
    });
    std::string error = set_up.get();
    if (!error.empty()) {
      thread_.join();
      return makeError(Error::Code::kIo, "io_uring: " + error);
    }
    return {};
  }

  void stop() {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
  }

  uint64_t flows() const { return flows_created_.load(std::memory_order_relaxed); }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Flow {
    net::UdpSocket relay;  // empty once the flow is closed
    sockaddr_in client{};
    TransportAddress client_address;
    uint16_t channel = stun::kMinChannelNumber;
    uint32_t generation = 0;
    bool closing = false;  // cancelled; the slot is free when its receive's last completion comes
    std::chrono::steady_clock::time_point last_active;
  };

  // Where a received datagram goes back out: the sendmsg header lives in the slot of the
  // buffer it was received in, until the send completes and the buffer goes back to the ring.
  struct SendSlot {
    msghdr msg{};
    iovec iov{};
    sockaddr_in to{};
  };

  // On the worker thread: the ring and its buffers, then the listener's receive.
  std::string setUp() {
    io_uring_params params{};
    params.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    params.cq_entries = kCompletionEntries;
    if (int r = io_uring_queue_init_params(kSubmissionEntries, &ring_, &params); r < 0) {
      return std::string("io_uring_setup: ") + std::strerror(-r);
    }
    ring_ready_ = true;
    const size_t ring_bytes = opts_.buffers * sizeof(io_uring_buf);
    void* mem =
        mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (mem == MAP_FAILED) return std::string("mmap: ") + std::strerror(errno);
    buffer_ring_ = static_cast<io_uring_buf_ring*>(mem);
    buffer_ring_bytes_ = ring_bytes;
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<uint64_t>(buffer_ring_);
    reg.ring_entries = opts_.buffers;
    reg.bgid = kBufferGroup;
    if (int r = io_uring_register_buf_ring(&ring_, &reg, 0); r < 0) {
      return std::string("provided buffer ring: ") + std::strerror(-r);
    }
    io_uring_buf_ring_init(buffer_ring_);
    mask_ = io_uring_buf_ring_mask(opts_.buffers);
    for (unsigned bid = 0; bid < opts_.buffers; ++bid) recycle(static_cast<uint16_t>(bid));
    publishRecycled();
    armReceive(listener_.fd(), userData(Kind::kListenerReceive, 0));
    return {};
  }

  void tearDown() {
    if (ring_ready_) io_uring_queue_exit(&ring_);
    ring_ready_ = false;
    if (buffer_ring_ != nullptr) munmap(buffer_ring_, buffer_ring_bytes_);
    buffer_ring_ = nullptr;
  }

  void run() {
    auto last_sweep = std::chrono::steady_clock::now();
    while (!stop_.load(std::memory_order_relaxed)) {
      // One system call: the sends queued by the last batch go out, and the next completions
      // come in (or a second passes, for the idle sweep and stop()).
      __kernel_timespec timeout{.tv_sec = 1, .tv_nsec = 0};
      io_uring_cqe* first = nullptr;
      io_uring_submit_and_wait_timeout(&ring_, &first, 1, &timeout, nullptr);
      now_ = std::chrono::steady_clock::now();
      unsigned head;
      unsigned seen = 0;
      io_uring_cqe* cqe;
      io_uring_for_each_cqe(&ring_, head, cqe) {
        onCompletion(*cqe);
        ++seen;
      }
      io_uring_cq_advance(&ring_, seen);
      publishRecycled();
      if (now_ - last_sweep >= std::chrono::seconds(1)) {
        expireIdle();
        last_sweep = now_;
      }
    }
  }

  void onCompletion(const io_uring_cqe& cqe) {
    const uint64_t value = valueOf(cqe.user_data);
    switch (kindOf(cqe.user_data)) {
      case Kind::kListenerReceive:
        if (const auto bid = receivedBuffer(cqe)) fromClient(*bid, cqe.res);
        if (!(cqe.flags & IORING_CQE_F_MORE) && !stop_.load(std::memory_order_relaxed)) {
          armReceive(listener_.fd(), cqe.user_data);
        }
        return;
      case Kind::kRelayReceive: {
        const uint32_t slot = value & 0xFFFFFF;
        Flow* f = slot < flows_.size() ? &flows_[slot] : nullptr;
        const bool current = f != nullptr && flowValue(slot, f->generation) == value;
        if (const auto bid = receivedBuffer(cqe)) {
          if (current && !f->closing) {
            fromPeer(*f, *bid, cqe.res);
          } else {
            recycle(*bid);
          }
        }
        if (current && !(cqe.flags & IORING_CQE_F_MORE)) {
          if (f->closing) {
            ++f->generation;
            free_slots_.push_back(slot);
          } else {
            armReceive(f->relay.fd(), cqe.user_data);
          }
        }
        return;
      }
      case Kind::kSend:
        if (cqe.res < 0) dropped_.fetch_add(1, std::memory_order_relaxed);
        recycle(static_cast<uint16_t>(value));
        return;
      case Kind::kCancel:
        return;
    }
  }

  // The buffer a receive completion filled, if any; a failed receive (other than running out of
  // buffers, after which the receive is simply armed again) counts as a drop.
  std::optional<uint16_t> receivedBuffer(const io_uring_cqe& cqe) {
    if (cqe.res < 0) {
      if (cqe.res != -ENOBUFS && cqe.res != -ECANCELED) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
      }
      return std::nullopt;
    }
    if (!(cqe.flags & IORING_CQE_F_BUFFER)) return std::nullopt;
    return static_cast<uint16_t>(cqe.flags >> IORING_CQE_BUFFER_SHIFT);
  }

  // A client's ChannelData: its payload to the peer from the client's relay socket.
  void fromClient(uint16_t bid, int bytes) {
    uint8_t* buffer = bufferAt(bid);
    auto* out = io_uring_recvmsg_validate(buffer, bytes, &receive_msg_);
    if (out == nullptr || (out->flags & MSG_TRUNC) || out->namelen < sizeof(sockaddr_in)) {
      return drop(bid);
    }
    auto* payload = static_cast<uint8_t*>(io_uring_recvmsg_payload(out, &receive_msg_));
    const size_t length = io_uring_recvmsg_payload_length(out, bytes, &receive_msg_);
    if (length < stun::kChannelDataHeaderSize || !stun::isChannelDataByte(payload[0])) {
      return drop(bid);
    }
    const size_t data = std::min<size_t>(stun::load16(payload + 2), length - 4);
    sockaddr_in client;
    std::memcpy(&client, io_uring_recvmsg_name(out), sizeof client);
    Flow* f = flowFor(client, stun::load16(payload));
    if (f == nullptr) return drop(bid);
    f->last_active = now_;
    send(f->relay.fd(), peer_, payload + stun::kChannelDataHeaderSize, data, bid);
  }

  // The peer's datagram: framed as ChannelData in place (the header goes over the end of the
  // source address io_uring wrote in front of the payload) and sent to the client.
  void fromPeer(const Flow& f, uint16_t bid, int bytes) {
    uint8_t* buffer = bufferAt(bid);
    auto* out = io_uring_recvmsg_validate(buffer, bytes, &receive_msg_);
    if (out == nullptr || (out->flags & MSG_TRUNC)) return drop(bid);
    auto* payload = static_cast<uint8_t*>(io_uring_recvmsg_payload(out, &receive_msg_));
    const size_t length = io_uring_recvmsg_payload_length(out, bytes, &receive_msg_);
    uint8_t* framed = payload - stun::kChannelDataHeaderSize;
    if (framed < reinterpret_cast<uint8_t*>(out + 1) || length > 0xFFFF) return drop(bid);
    stun::writeChannelDataHeader(framed, f.channel, static_cast<uint16_t>(length));
    send(listener_.fd(), f.client, framed, length + stun::kChannelDataHeaderSize, bid);
  }

  void send(int fd, const sockaddr_in& to, uint8_t* data, size_t length, uint16_t bid) {
    SendSlot& s = sends_[bid];
    s.to = to;
    s.iov = {data, length};
    s.msg = {};
    s.msg.msg_name = &s.to;
    s.msg.msg_namelen = sizeof s.to;
    s.msg.msg_iov = &s.iov;
    s.msg.msg_iovlen = 1;
    io_uring_sqe* sqe = submissionEntry();
    io_uring_prep_sendmsg(sqe, fd, &s.msg, 0);
    io_uring_sqe_set_data64(sqe, userData(Kind::kSend, bid));
  }

  void drop(uint16_t bid) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    recycle(bid);
  }

  Flow* flowFor(const sockaddr_in& client, uint16_t channel) {
    const TransportAddress address = net::fromSockaddr(reinterpret_cast<const sockaddr*>(&client));
    if (const auto it = by_client_.find(address); it != by_client_.end()) {
      return &flows_[it->second];
    }
    auto relay = net::UdpSocket::bind(TransportAddress{opts_.listen.ip, 0}, {});
    if (!relay) return nullptr;
    uint32_t slot;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      if (flows_.size() >= 0xFFFFFF) return nullptr;
      slot = static_cast<uint32_t>(flows_.size());
      flows_.emplace_back();
    }
    Flow& f = flows_[slot];
    f.relay = std::move(*relay);
    f.client = client;
    f.client_address = address;
    f.channel = channel;
    f.closing = false;
    by_client_.emplace(address, slot);
    armReceive(f.relay.fd(), userData(Kind::kRelayReceive, flowValue(slot, f.generation)));
    flows_created_.fetch_add(1, std::memory_order_relaxed);
    return &f;
  }

  // Idle flows: their receive is cancelled and the socket closed (the ring keeps its own
  // reference until the cancelled receive completes, which frees the slot).
  void expireIdle() {
    const auto cutoff = now_ - std::chrono::seconds(opts_.idle_seconds);
    for (uint32_t slot = 0; slot < flows_.size(); ++slot) {
      Flow& f = flows_[slot];
      if (f.closing || f.relay.fd() < 0 || f.last_active >= cutoff) continue;
      io_uring_sqe* sqe = submissionEntry();
      io_uring_prep_cancel64(sqe, userData(Kind::kRelayReceive, flowValue(slot, f.generation)), 0);
      io_uring_sqe_set_data64(sqe, userData(Kind::kCancel, 0));
      io_uring_submit(&ring_);
      f.closing = true;
      f.relay = net::UdpSocket();
      by_client_.erase(f.client_address);
    }
  }

  void armReceive(int fd, uint64_t user_data) {
    io_uring_sqe* sqe = submissionEntry();
    io_uring_prep_recvmsg_multishot(sqe, fd, &receive_msg_, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = kBufferGroup;
    io_uring_sqe_set_data64(sqe, user_data);
  }

  io_uring_sqe* submissionEntry() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    while (sqe == nullptr) {  // the queue is full: hand what is in it to the kernel
      io_uring_submit(&ring_);
      sqe = io_uring_get_sqe(&ring_);
    }
    return sqe;
  }

  uint8_t* bufferAt(uint16_t bid) {
    return buffers_.data() + static_cast<size_t>(bid) * kBufferSize;
  }

  // Buffers go back to the kernel in one step per loop iteration.
  void recycle(uint16_t bid) {
    io_uring_buf_ring_add(buffer_ring_, bufferAt(bid), kBufferSize, bid, mask_, recycled_++);
  }
  void publishRecycled() {
    if (recycled_ == 0) return;
    io_uring_buf_ring_advance(buffer_ring_, recycled_);
    recycled_ = 0;
  }

  const UringForwarderOptions opts_;
  const sockaddr_in peer_;
  net::UdpSocket listener_;
  io_uring ring_{};
  bool ring_ready_ = false;
  io_uring_buf_ring* buffer_ring_ = nullptr;
  size_t buffer_ring_bytes_ = 0;
  int mask_ = 0;
  int recycled_ = 0;
  std::vector<uint8_t> buffers_;
  std::vector<SendSlot> sends_;  // by buffer id
  msghdr receive_msg_{};         // the layout every multishot receive writes into its buffer
  std::vector<Flow> flows_;      // by slot; a slot is reused after its flow is closed
  std::vector<uint32_t> free_slots_;
  std::unordered_map<TransportAddress, uint32_t> by_client_;
  std::chrono::steady_clock::time_point now_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> flows_created_{0};
  std::atomic<uint64_t> dropped_{0};
  std::thread thread_;
};

UringForwarder::UringForwarder(const UringForwarderOptions& options)
    : impl_(std::make_unique<Impl>(options)) {}
UringForwarder::~UringForwarder() = default;
Result<void> UringForwarder::start() { return impl_->start(); }
void UringForwarder::stop() { impl_->stop(); }
uint64_t UringForwarder::flows() const { return impl_->flows(); }
uint64_t UringForwarder::dropped() const { return impl_->dropped(); }

}  // namespace kturn::bench
